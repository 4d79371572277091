package settings

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/permission"
)

func TestLoadSettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "settings.json")
	doc := `{"permissions":{"allow":["Bash(npm run test:*)","Read"],"deny":["Read(./secrets/**)"],"ask":["Bash(git push:*)"],"defaultMode":"acceptEdits"}}`
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Load(p, User)
	if err != nil {
		t.Fatal(err)
	}
	if s.DefaultMode != permission.ModeAcceptEdits || len(s.Rules.Allow) != 2 || len(s.Rules.Deny) != 1 || len(s.Rules.Ask) != 1 {
		t.Fatalf("LoadSettings = %+v", s)
	}
	if s.Rules.Deny[0].String() != "Read(./secrets/**)" {
		t.Errorf("deny rule = %s", s.Rules.Deny[0])
	}
	if _, err := Load(filepath.Join(dir, "missing.json"), User); !sema.IsCode(err, CodeSettingsInvalid) {
		t.Errorf("missing file: %v", err)
	}
}

func TestParseSettingsRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, doc, code, key string
	}{
		{"empty object", `{}`, "", ""},
		{"null permissions", `{"permissions":null}`, "", ""},
		{"empty mode", `{"permissions":{"defaultMode":""}}`, "", ""},
		{"unknown top key", `{"permissions":{},"envs":{}}`, CodeSpecUnknownKey, "envs"},
		{"unknown permissions key", `{"permissions":{"allow":[],"additionalDirectory":[]}}`, CodeSpecUnknownKey, "permissions.additionalDirectory"},
		{"claude interface key", `{"statusLine":{"type":"command"},"theme":"dark"}`, "", ""},
		{"env not strings", `{"env":{"A":1}}`, CodeSettingsInvalid, "env"},
		{"env bad name", `{"env":{"A=B":"x"}}`, CodeSettingsInvalid, "env"},
		{"model not a string", `{"model":3}`, CodeSettingsInvalid, "model"},
		{"disableAllHooks not bool", `{"disableAllHooks":"yes"}`, CodeSettingsInvalid, "disableAllHooks"},
		{"managed-only key", `{"allowManagedHooksOnly":true}`, CodeSettingsInvalid, "allowManagedHooksOnly"},
		{"bypass disable word", `{"permissions":{"disableBypassPermissionsMode":"off"}}`, CodeSettingsInvalid, "permissions.disableBypassPermissionsMode"},
		{"empty directory", `{"permissions":{"additionalDirectories":[""]}}`, CodeSettingsInvalid, "permissions.additionalDirectories"},
		{"misspelled key", `{"permissions":{"Allow":["Read"]}}`, CodeSpecUnknownKey, "permissions.Allow"},
		{"bad rule", `{"permissions":{"deny":["Bash(ls *.go)"]}}`, permission.CodeRuleInvalid, ""},
		{"bad mode", `{"permissions":{"defaultMode":"yolo"}}`, permission.CodeModeInvalid, ""},
		{"mode wrong case", `{"permissions":{"defaultMode":"AcceptEdits"}}`, permission.CodeModeInvalid, ""},
		{"allow not a list", `{"permissions":{"allow":"Read"}}`, CodeSettingsInvalid, ""},
		{"not an object", `[]`, CodeSettingsInvalid, ""},
		{"null", `null`, CodeSettingsInvalid, ""},
		{"trailing data", `{} {}`, CodeSettingsInvalid, ""},
		{"broken", `{"permissions":`, CodeSettingsInvalid, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.doc), "s.json", Project)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if !sema.IsCode(err, tt.code) {
				t.Fatalf("error = %v, want %s", err, tt.code)
			}
			if tt.key != "" {
				se := err.(*sema.Error)
				if se.Detail["key"] != tt.key {
					t.Errorf("error names key %v, want %s", se.Detail["key"], tt.key)
				}
			}
		})
	}
}
