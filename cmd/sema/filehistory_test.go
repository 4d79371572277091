package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/agent"
)

// --file-history reaches the task's seat: off runs without recording (the manifest says
// so), and a word that is neither on nor off is refused before the run starts.
func TestFileHistoryFlag(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	script := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(script, []byte(`{"turns":[
		{"tool_calls":[{"name":"Write","input":{"file_path":"a.txt","content":"x"}}]},
		{"text":"done"}]}`), 0o644)
	for _, tt := range []struct {
		flag     []string
		wantCode int
		want     string // the manifest's file_history, or the refusal's code
	}{
		{nil, exitOK, "on"},
		{[]string{"--file-history", "on"}, exitOK, "on"},
		{[]string{"--file-history", "off"}, exitOK, "disabled"},
		{[]string{"--file-history", "no"}, exitUsage, agent.CodeFileHistoryInvalid},
	} {
		args := []string{"run", "--cwd", t.TempDir(), "--home", t.TempDir(), "--sandbox", "off", "--model", "scripted/" + script,
			"--permission-mode", "acceptEdits", "--output-format", "json"}
		code, out := runCLI(t, append(append(args, tt.flag...), "write a.txt"))
		if code != tt.wantCode {
			t.Fatalf("%v: exit %d, want %d\n%s", tt.flag, code, tt.wantCode, out)
		}
		if code == exitUsage {
			if !strings.Contains(out, tt.want) {
				t.Fatalf("%v: the refusal does not name %s: %s", tt.flag, tt.want, out)
			}
			continue
		}
		var res struct {
			Manifest struct {
				FileHistory string `json:"file_history"`
			} `json:"manifest"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.Manifest.FileHistory != tt.want {
			t.Fatalf("%v: file_history %q, want %q (%v)\n%s", tt.flag, res.Manifest.FileHistory, tt.want, err, out)
		}
	}
}
