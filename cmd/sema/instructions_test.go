package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The task root's AGENTS.md and the user's ~/.sema/AGENTS.md are listed in the manifest;
// --no-instructions reads neither.
func TestNoInstructionsFlag(t *testing.T) {
	home, _ := filepath.EvalSymlinks(t.TempDir())
	t.Setenv("HOME", home)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	os.MkdirAll(filepath.Join(home, ".sema"), 0o755)
	os.WriteFile(filepath.Join(home, ".sema", "AGENTS.md"), []byte("user"), 0o644)
	os.WriteFile(filepath.Join(root, "AGENTS.md"), []byte("project"), 0o644)
	script := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(script, []byte(`{"turns":[{"text":"done"}]}`), 0o644)
	for _, tt := range []struct {
		flag []string
		want bool
	}{
		{nil, true},
		{[]string{"--no-instructions"}, false},
	} {
		args := []string{"run", "--cwd", root, "--home", t.TempDir(), "--sandbox", "off", "--model", "scripted/" + script, "--output-format", "json"}
		code, out := runCLI(t, append(append(args, tt.flag...), "hello"))
		if code != exitOK {
			t.Fatalf("%v: exit %d\n%s", tt.flag, code, out)
		}
		var res struct {
			Manifest struct {
				Instructions []string `json:"instructions"`
			} `json:"manifest"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v: %v\n%s", tt.flag, err, out)
		}
		for _, f := range []string{filepath.Join(home, ".sema", "AGENTS.md"), filepath.Join(root, "AGENTS.md")} {
			if got := slices.Contains(res.Manifest.Instructions, f); got != tt.want {
				t.Errorf("%v: %s listed %v, want %v: %v", tt.flag, f, got, tt.want, res.Manifest.Instructions)
			}
		}
	}
}
