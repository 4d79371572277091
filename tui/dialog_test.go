package tui

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/permission"
)

var bashTest = permission.ApprovalRequest{Tool: "Bash", Input: json.RawMessage(`{"command":"go test ./..."}`)}

// openDialog puts bashTest to the screen and returns where its decision arrives.
func openDialog(t *testing.T, opts Options) (*harness, chan permission.ApprovalDecision) {
	return openDialogFor(t, opts, bashTest)
}

// openDialogFor opens the dialog of req.
func openDialogFor(t *testing.T, opts Options, req permission.ApprovalRequest) (*harness, chan permission.ApprovalDecision) {
	approver := NewApprover()
	opts.Backend, opts.Approver = &fakeBackend{}, approver
	h := newHarness(t, opts, 80, 24)
	got := make(chan permission.ApprovalDecision, 1)
	go func() { d, _ := approver.Approve(context.Background(), req); got <- d }()
	h.until("the dialog", func() bool { return h.m.question != nil })
	return h, got
}

// TestDenyWithSentence: 3 opens a line whose sentence goes with the denial to the
// model; Esc there denies without it; Esc in the dialog denies at once.
func TestDenyWithSentence(t *testing.T) {
	h, got := openDialog(t, Options{})
	h.typeText("3", false)
	if h.m.question == nil || h.m.note == nil {
		t.Fatal("3 did not open the sentence line")
	}
	h.golden("deny_sentence_empty")
	h.typeText("use go vetx", false)
	h.key(tea.KeyBackspace, 0)
	h.golden("deny_sentence")
	h.key(tea.KeyEnter, 0)
	d := <-got
	if d.Behavior != permission.Deny || !strings.HasSuffix(d.Reason, "says: use go vet") {
		t.Fatalf("decision %+v, want a denial carrying the sentence", d)
	}
	if h.m.question != nil || h.m.note != nil {
		t.Error("the dialog stayed open")
	}
	if !strings.Contains(h.frame(), "told the model: use go vet") {
		t.Errorf("the conversation does not record the sentence:\n%s", h.frame())
	}

	h, got = openDialog(t, Options{})
	h.typeText("3", false)
	h.typeText("never mind", false)
	h.key(tea.KeyEscape, 0)
	if d := <-got; d.Behavior != permission.Deny || strings.Contains(d.Reason, "says") {
		t.Errorf("Esc on the line: %+v, want a denial without a sentence", d)
	}

	h, got = openDialog(t, Options{})
	h.key(tea.KeyEscape, 0)
	if d := <-got; d.Behavior != permission.Deny || h.m.note != nil || h.m.question != nil {
		t.Errorf("Esc in the dialog: %+v, want a denial at once", d)
	}
}

// TestAllowAlwaysSaves: after 2 the call is allowed at once, and the next key says where
// the rule is kept; each choice writes its file, and 1 writes none.
func TestAllowAlwaysSaves(t *testing.T) {
	for _, tc := range []struct {
		key  string
		file string // under root, or ~ for home
	}{
		{"1", ""},
		{"2", ".sema/settings.local.json"},
		{"3", ".sema/settings.json"},
		{"4", "~/.sema/settings.json"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			root, home := t.TempDir(), t.TempDir()
			t.Setenv("HOME", home)
			h, got := openDialog(t, Options{Roots: []string{root}})
			h.typeText("2", false)
			if d := <-got; d.Behavior != permission.Allow {
				t.Fatalf("2: %+v", d)
			}
			if h.m.saving == nil {
				t.Fatal("2 did not ask where the rule is kept")
			}
			if tc.key == "2" {
				h.golden("allow_always_where")
			}
			h.typeText(tc.key, false)
			if h.m.saving != nil {
				t.Fatal("the choice stayed open")
			}
			for _, f := range []string{filepath.Join(root, ".sema/settings.local.json"), filepath.Join(root, ".sema/settings.json"), filepath.Join(home, ".sema/settings.json")} {
				wantPath := filepath.Join(root, tc.file)
				if rest, ok := strings.CutPrefix(tc.file, "~/"); ok {
					wantPath = filepath.Join(home, rest)
				}
				want := tc.file != "" && f == wantPath
				data, err := os.ReadFile(f)
				if want != (err == nil) {
					t.Errorf("%s: written=%v, want %v", f, err == nil, want)
				}
				if want && !strings.Contains(string(data), `"Bash(go test ./...)"`) {
					t.Errorf("%s lacks the rule:\n%s", f, data)
				}
				if want && !strings.Contains(h.frame(), "saved Bash(go test ./...) in") {
					t.Errorf("the frame does not say where it went:\n%s", h.frame())
				}
			}
		})
	}
}

// TestAllowAlwaysKeepsOnlyANarrowRule: what 2 offers to keep in a settings file is a
// rule that allows the approved call and as little else as rule syntax can say. A
// command with a glob has none (Bash(rm *) would allow every rm): it is allowed always
// in the session and not offered to keep. A file named relative to the task root is
// kept by its absolute path (Edit(main.go) would be every main.go at any depth).
// Calibrated: with the question's own text kept as the rule, both were offered.
func TestAllowAlwaysKeepsOnlyANarrowRule(t *testing.T) {
	root := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	glob := permission.ApprovalRequest{Tool: "Bash", Input: json.RawMessage(`{"command":"rm *"}`), Ask: bashTest.Ask}
	h, got := openDialogFor(t, Options{Roots: []string{root}}, glob)
	h.typeText("2", false)
	if d := <-got; d.Behavior != permission.Allow {
		t.Fatalf("2: %+v", d)
	}
	if h.m.saving != nil {
		t.Fatalf("offered to keep %q, which allows every rm", h.m.saving.rule)
	}
	if !strings.Contains(h.frame(), "kept for this session only") {
		t.Errorf("the frame does not say the rule stays in the session:\n%s", h.frame())
	}

	edit := permission.ApprovalRequest{Tool: "Edit", Input: json.RawMessage(`{"file_path":"main.go","old_string":"a","new_string":"b"}`), Ask: bashTest.Ask}
	h, got = openDialogFor(t, Options{Roots: []string{root}}, edit)
	h.typeText("2", false)
	<-got
	want := "Edit(/" + filepath.Join(root, "main.go") + ")"
	if h.m.saving == nil || h.m.saving.rule != want {
		t.Fatalf("offered to keep %+v, want %s", h.m.saving, want)
	}
	if _, err := permission.ParseRule(want); err != nil {
		t.Fatalf("the rule offered does not parse: %v", err)
	}
}

// TestSaveRuleMerges: the rule joins permissions.allow; every other key stays; a rule
// already there is not added twice; an existing file keeps its mode, a new one gets the
// scope's.
func TestSaveRuleMerges(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, ".sema", "settings.json")
	os.MkdirAll(filepath.Dir(path), 0o755)
	orig := `{"model":"x","permissions":{"deny":["Read(.env)"],"allow":["Read"],"defaultMode":"plan"},"hooks":{"a":[1,2]}}`
	if err := os.WriteFile(path, []byte(orig), 0o640); err != nil {
		t.Fatal(err)
	}
	got, err := saveRule(scopeProject, root, "", "Bash(a && b)")
	if err != nil || got != path {
		t.Fatalf("saved in %q: %v", got, err)
	}
	var doc struct {
		Model       string
		Hooks       map[string][]int
		Permissions struct {
			Allow, Deny []string
			DefaultMode string
		}
	}
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Model != "x" || len(doc.Hooks["a"]) != 2 || doc.Permissions.DefaultMode != "plan" ||
		strings.Join(doc.Permissions.Deny, ",") != "Read(.env)" || strings.Join(doc.Permissions.Allow, ",") != "Read,Bash(a && b)" {
		t.Errorf("merged file:\n%s", data)
	}
	if !strings.Contains(string(data), "a && b") {
		t.Errorf("the rule was escaped:\n%s", data)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want the file's 0640 kept", fi.Mode().Perm())
	}
	if _, err := saveRule(scopeProject, root, "", "Bash(a && b)"); err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(path)
	if strings.Count(string(again), "a && b") != 1 {
		t.Errorf("the rule was added twice:\n%s", again)
	}
	for scope, want := range map[ruleScope]os.FileMode{scopeLocal: 0o600, scopeUser: 0o600} {
		p, err := saveRule(scope, root, t.TempDir(), "Read")
		if err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Stat(p); fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
}

// TestSaveRuleRefuses: a file that is not a JSON object, or whose permissions are not
// an object, is refused by name and left as it was; a symlinked file or .sema directory
// leading out of the project is not followed.
func TestSaveRuleRefuses(t *testing.T) {
	for _, bad := range []string{`{"model": `, `[1]`, `{"permissions": []}`, `{"permissions": {"allow": "Bash"}}`} {
		root := t.TempDir()
		path := filepath.Join(root, ".sema", "settings.local.json")
		os.MkdirAll(filepath.Dir(path), 0o755)
		os.WriteFile(path, []byte(bad), 0o600)
		_, err := saveRule(scopeLocal, root, "", "Read")
		var se *sema.Error
		if !errors.As(err, &se) || se.Code != CodeRuleNotSaved || !strings.Contains(se.Message, path) {
			t.Errorf("%s: %v, want %s naming the file", bad, err, CodeRuleNotSaved)
		}
		if data, _ := os.ReadFile(path); string(data) != bad {
			t.Errorf("%s: the file was changed to %s", bad, data)
		}
	}

	if _, err := saveRule(scopeLocal, "", t.TempDir(), "Read"); err == nil {
		t.Error("a project rule was saved with no project root (an attached session)")
	}

	outside := t.TempDir()
	target := filepath.Join(outside, "victim.json")
	os.WriteFile(target, []byte(`{}`), 0o600)
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, ".sema"), 0o755)
	if err := os.Symlink(target, filepath.Join(root, ".sema", "settings.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := saveRule(scopeProject, root, "", "Read"); err == nil {
		t.Error("a symlinked settings file was followed")
	}
	root2 := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root2, ".sema")); err != nil {
		t.Fatal(err)
	}
	if _, err := saveRule(scopeProject, root2, "", "Read"); err == nil {
		t.Error("a .sema directory leading outside the project was followed")
	}
	if data, _ := os.ReadFile(target); string(data) != `{}` {
		t.Errorf("the file outside the project was written: %s", data)
	}
	if _, err := os.Stat(filepath.Join(outside, "settings.json")); err == nil {
		t.Error("a settings file was created outside the project")
	}
}
