package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/settings"
)

func writeFile(t *testing.T, path, body string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPermissionDoors: every refusal is a usage error (exit 2) with the code a script
// can branch on.
func TestPermissionDoors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	badSettings := writeFile(t, filepath.Join(dir, "bad.json"), `{"permissions":{"allow":["Read"]},"hookz":{}}`)
	badRule := writeFile(t, filepath.Join(dir, "badrule.json"), `{"permissions":{"deny":["Edit(src/**"]}}`)
	badMode := writeFile(t, filepath.Join(dir, "badmode.json"), `{"permissions":{"defaultMode":"yolo"}}`)
	cases := []struct {
		name   string
		opts   runOptions
		prompt string
		code   string
		inMsg  string
	}{
		{"unknown input format", runOptions{inputFormat: "xml", outputFormat: "text"}, "x", codeInputFormatInvalid, `"xml"`},
		{"stream-json input needs stream-json output", runOptions{inputFormat: "stream-json", outputFormat: "json"}, "x", codeInputFormatInvalid, "--output-format stream-json"},
		{"stream-json input and a prompt from stdin", runOptions{inputFormat: "stream-json", outputFormat: "stream-json"}, "-", codeStdinConflict, "argument"},
		{"stream-json input and prompt answers", runOptions{inputFormat: "stream-json", outputFormat: "stream-json", onAsk: "prompt"}, "x", codeStdinConflict, "--on-ask deny"},
		{"prompt answers and a prompt from stdin", runOptions{inputFormat: "text", outputFormat: "text", onAsk: "prompt"}, "-", codeStdinConflict, "argument"},
		{"unknown mode", runOptions{permissionMode: "yolo"}, "x", permission.CodeModeInvalid, `"yolo"`},
		{"modes are case-sensitive", runOptions{permissionMode: "Plan"}, "x", permission.CodeModeInvalid, `"Plan"`},
		{"bad allow rule", runOptions{allowedTools: []string{"Read,Edit(src/**"}}, "x", permission.CodeRuleInvalid, `"Edit(src/**"`},
		{"bad deny rule", runOptions{disallowed: []string{"Read)"}}, "x", permission.CodeRuleInvalid, `"Read)"`},
		{"missing settings file", runOptions{settings: filepath.Join(dir, "nope.json")}, "x", settings.CodeSettingsInvalid, "nope.json"},
		{"settings key sema does not read", runOptions{settings: badSettings}, "x", settings.CodeSpecUnknownKey, "hookz"},
		{"settings rule", runOptions{settings: badRule}, "x", permission.CodeRuleInvalid, "Edit(src/**"},
		{"settings mode", runOptions{settings: badMode}, "x", permission.CodeModeInvalid, "yolo"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := resolvePermissionsIn(&c.opts, c.prompt, strings.NewReader(""), io.Discard, t.TempDir(), false)
			var ee *exitErr
			if !errors.As(err, &ee) || ee.code != exitUsage {
				t.Fatalf("err %v; want a usage error", err)
			}
			if sema.CodeOf(err) != c.code || !strings.Contains(err.Error(), c.inMsg) {
				t.Fatalf("err %v; want code %s mentioning %s", err, c.code, c.inMsg)
			}
		})
	}
}

// TestOnAskDefault: a person is asked only when stdin is a terminal that carries nothing
// else; an explicit --on-ask wins.
func TestOnAskDefault(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		opts   runOptions
		prompt string
		tty    bool
		want   bool
	}{
		{"terminal", runOptions{}, "x", true, true},
		{"terminal, prompt from stdin", runOptions{}, "-", true, false},
		{"terminal, control lines on stdin", runOptions{inputFormat: "stream-json", outputFormat: "stream-json"}, "x", true, false},
		{"pipe", runOptions{}, "x", false, false},
		{"pipe, explicit prompt", runOptions{onAsk: "prompt"}, "x", false, true},
		{"terminal, explicit deny", runOptions{onAsk: "deny"}, "x", true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, err := resolvePermissionsIn(&c.opts, c.prompt, strings.NewReader(""), io.Discard, t.TempDir(), c.tty)
			if err != nil {
				t.Fatal(err)
			}
			if s.prompt != c.want {
				t.Fatalf("prompt=%v, want %v", s.prompt, c.want)
			}
			var deps agent.Deps
			spec := agent.TaskSpec{Root: "/r"}
			s.apply(&deps, &spec)
			if (deps.Approver != nil) != c.want {
				t.Fatalf("approver %v, want one: %v", deps.Approver, c.want)
			}
		})
	}
}

// TestSettingsFilesCarried: the command line reads the user's file and the --settings
// file (a path or an inline document) and hands both to the runner, user first, with
// the --permission-mode word as the task's; the runner folds the hierarchy (its own
// tests say how).
func TestSettingsFilesCarried(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		flag       string
		flagFile   string // defaultMode of the --settings file; "-" for no file
		userFile   string // defaultMode of ~/.sema/settings.json; "-" for no file
		inline     bool
		sources    string
		wantLayers []settings.Layer
		wantModes  []permission.Mode
	}{
		{"nothing", "", "-", "-", false, "", nil, nil},
		{"user file", "", "-", "acceptEdits", false, "", []settings.Layer{settings.User}, []permission.Mode{permission.ModeAcceptEdits}},
		{"both, user first", "", "plan", "acceptEdits", false, "", []settings.Layer{settings.User, settings.Flag}, []permission.Mode{permission.ModeAcceptEdits, permission.ModePlan}},
		{"inline document", "dontAsk", "plan", "-", true, "", []settings.Layer{settings.Flag}, []permission.Mode{permission.ModePlan}},
		{"sources leave the user out", "", "plan", "acceptEdits", false, "project", []settings.Layer{settings.Flag}, []permission.Mode{permission.ModePlan}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			opts := runOptions{permissionMode: c.flag}
			if c.sources != "" {
				opts.settingSources = &c.sources
			}
			if c.flagFile != "-" {
				doc := settingsDoc(c.flagFile, "LS", "Write(secret/**)")
				opts.settings = doc
				if !c.inline {
					opts.settings = writeFile(t, filepath.Join(t.TempDir(), "s.json"), doc)
				}
			}
			if c.userFile != "-" {
				writeFile(t, filepath.Join(home, ".sema", "settings.json"), settingsDoc(c.userFile, "Glob", "Bash(git push *)"))
			}
			s, err := resolvePermissionsIn(&opts, "x", strings.NewReader(""), io.Discard, home, false)
			if err != nil {
				t.Fatal(err)
			}
			deps := agent.Deps{}
			spec := agent.TaskSpec{Root: "/r", PermissionMode: "stale"}
			s.apply(&deps, &spec)
			if spec.PermissionMode != permission.Mode(c.flag) {
				t.Fatalf("mode %q, want the flag's %q", spec.PermissionMode, c.flag)
			}
			var layers []settings.Layer
			var modes []permission.Mode
			for _, f := range deps.Settings.Files {
				layers, modes = append(layers, f.Layer), append(modes, f.DefaultMode)
			}
			if diff := cmp.Diff(c.wantLayers, layers); diff != "" {
				t.Fatalf("layers (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.wantModes, modes); diff != "" {
				t.Fatalf("modes (-want +got):\n%s", diff)
			}
			if c.sources != "" && (deps.Settings.Sources == nil || len(deps.Settings.Sources) != 1) {
				t.Fatalf("sources %v", deps.Settings.Sources)
			}
			if deps.Home != home {
				t.Fatalf("home %q", deps.Home)
			}
		})
	}
}

func settingsDoc(mode, allow, deny string) string {
	m := ""
	if mode != "" {
		m = `,"defaultMode":"` + mode + `"`
	}
	return `{"permissions":{"allow":["` + allow + `"],"deny":["` + deny + `"]` + m + `}}`
}

// TestBrokenUserSettingsRefuse: a user file that exists but cannot be used refuses the
// run rather than being skipped; only a missing one is fine.
func TestBrokenUserSettingsRefuse(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".sema", "settings.json"), `{"permissions":`)
	_, err := resolvePermissionsIn(&runOptions{}, "x", strings.NewReader(""), io.Discard, home, false)
	if sema.CodeOf(err) != settings.CodeSettingsInvalid || !strings.Contains(err.Error(), home) {
		t.Fatalf("err %v", err)
	}
}

// TestApplyCarriesTheFlagsRules: the flags' rules are the task's (the runner parses
// them and names a bad one), and each value may hold several rules.
func TestApplyCarriesTheFlagsRules(t *testing.T) {
	t.Parallel()
	opts := runOptions{allowedTools: []string{"Read,Bash(git diff *)", "Edit(src/**)"}, disallowed: []string{"WebFetch"}}
	s, err := resolvePermissionsIn(&opts, "x", strings.NewReader(""), io.Discard, "", false)
	if err != nil {
		t.Fatal(err)
	}
	var deps agent.Deps
	var spec agent.TaskSpec
	s.apply(&deps, &spec)
	if diff := cmp.Diff(opts.allowedTools, spec.AllowedTools); diff != "" {
		t.Fatal(diff)
	}
	if diff := cmp.Diff(opts.disallowed, spec.DisallowedTools); diff != "" {
		t.Fatal(diff)
	}
	if deps.Home != "" {
		t.Fatalf("no home was known, yet deps.Home = %q", deps.Home)
	}
}

func TestIsTerminal(t *testing.T) {
	t.Parallel()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Skip(err)
	}
	defer null.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	for name, r := range map[string]io.Reader{"null device": null, "pipe": pr, "reader": strings.NewReader("")} {
		if isTerminal(r) {
			t.Errorf("%s is taken for a terminal", name)
		}
	}
}
