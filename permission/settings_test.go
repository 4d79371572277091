package permission

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema"
)

func TestLoadSettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "settings.json")
	doc := `{"permissions":{"allow":["Bash(npm run test:*)","Read"],"deny":["Read(./secrets/**)"],"ask":["Bash(git push:*)"],"defaultMode":"acceptEdits"}}`
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSettings(p)
	if err != nil {
		t.Fatal(err)
	}
	if s.DefaultMode != ModeAcceptEdits || len(s.Rules.Allow) != 2 || len(s.Rules.Deny) != 1 || len(s.Rules.Ask) != 1 {
		t.Fatalf("LoadSettings = %+v", s)
	}
	if s.Rules.Deny[0].String() != "Read(./secrets/**)" {
		t.Errorf("deny rule = %s", s.Rules.Deny[0])
	}
	if _, err := LoadSettings(filepath.Join(dir, "missing.json")); !sema.IsCode(err, CodeSettingsInvalid) {
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
		{"unknown top key", `{"permissions":{},"env":{}}`, CodeSpecUnknownKey, "env"},
		{"unknown permissions key", `{"permissions":{"allow":[],"additionalDirectories":[]}}`, CodeSpecUnknownKey, "permissions.additionalDirectories"},
		{"misspelled key", `{"permissions":{"Allow":["Read"]}}`, CodeSpecUnknownKey, "permissions.Allow"},
		{"bad rule", `{"permissions":{"deny":["Bash(ls *.go)"]}}`, CodeRuleInvalid, ""},
		{"bad mode", `{"permissions":{"defaultMode":"yolo"}}`, CodeModeInvalid, ""},
		{"mode wrong case", `{"permissions":{"defaultMode":"AcceptEdits"}}`, CodeModeInvalid, ""},
		{"allow not a list", `{"permissions":{"allow":"Read"}}`, CodeSettingsInvalid, ""},
		{"not an object", `[]`, CodeSettingsInvalid, ""},
		{"null", `null`, CodeSettingsInvalid, ""},
		{"trailing data", `{} {}`, CodeSettingsInvalid, ""},
		{"broken", `{"permissions":`, CodeSettingsInvalid, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseSettings([]byte(tt.doc), "s.json")
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
