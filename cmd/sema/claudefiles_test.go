package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
)

// Claude Code's user settings are read with no flag; the user's own claudeCompat false
// or --no-claude-compat leaves them out; --claude-compat wins over the user's false; the
// two flags together are refused by name.
func TestClaudeFilesSwitch(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	claude := writeFile(t, filepath.Join(home, ".claude", "settings.json"), `{"permissions": {"deny": ["WebFetch"]}}`)
	read := func(o runOptions) (bool, bool) {
		t.Helper()
		s, err := resolvePermissionsIn(&o, "x", strings.NewReader(""), io.Discard, home, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range s.files {
			if f.Path == claude {
				return true, s.compat
			}
		}
		return false, s.compat
	}
	if got, on := read(runOptions{}); !got || !on {
		t.Errorf("with no flag ~/.claude/settings.json was not read (compat %v)", on)
	}
	if got, on := read(runOptions{noClaudeCompat: true}); got || on {
		t.Errorf("--no-claude-compat read ~/.claude/settings.json")
	}
	writeFile(t, filepath.Join(home, ".sema", "settings.json"), `{"claudeCompat": false}`)
	if got, _ := read(runOptions{}); got {
		t.Errorf("claudeCompat false in ~/.sema/settings.json did not turn Claude Code's files off")
	}
	if got, _ := read(runOptions{claudeCompat: true}); !got {
		t.Errorf("--claude-compat did not win over the user's claudeCompat false")
	}
	o := runOptions{claudeCompat: true, noClaudeCompat: true}
	if _, err := resolvePermissionsIn(&o, "x", strings.NewReader(""), io.Discard, home, false); sema.CodeOf(err) != codeClaudeSwitchConflict {
		t.Errorf("both flags: %v", err)
	}
}
