package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `sema approve` over a parked plan review: --permission-mode reaches the resumed leg as
// the approver's choice; a settings file's defaultMode is where an approved plan of a
// session started in plan goes, and never takes a denied plan out of plan.
func TestApprovePlanReviewMode(t *testing.T) {
	tests := []struct {
		name         string
		userDefault  string // defaultMode of ~/.sema/settings.json; "" for no file
		args         []string
		wantCode     int
		wantMode     string // the resumed leg's effective mode
		wantWriteRan bool
	}{
		{"approve: the pre-plan default", "", []string{"--allow"}, exitAwaiting, "default", false},
		{"approve with --permission-mode", "", []string{"--allow", "--permission-mode", "acceptEdits"}, exitOK, "acceptEdits", true},
		// A session started in plan has no pre-plan word: the approved exit goes to the
		// settings files' default, the user's as any layer's.
		{"approve: exit to the user's default", "dontAsk", []string{"--allow"}, exitOK, "dontAsk", false},
		{"deny: stays in plan despite a user default", "acceptEdits", []string{"--deny"}, exitAwaiting, "plan", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("HOME", home) // the user settings file is this test's own
			if tt.userDefault != "" {
				os.MkdirAll(filepath.Join(home, ".sema"), 0o755)
				os.WriteFile(filepath.Join(home, ".sema", "settings.json"), []byte(`{"permissions":{"defaultMode":"`+tt.userDefault+`"}}`), 0o644)
			}
			state, root := t.TempDir(), t.TempDir()
			dir := t.TempDir()
			first := filepath.Join(dir, "first.json")
			os.WriteFile(first, []byte(`{"turns":[{"tool_calls":[{"name":"ExitPlanMode","input":{"plan":"write a.txt"}}]}]}`), 0o644)
			second := filepath.Join(dir, "second.json")
			os.WriteFile(second, []byte(`{"turns":[
				{"tool_calls":[{"name":"Write","input":{"file_path":"a.txt","content":"x"}}]},
				{"text":"done"}]}`), 0o644)
			common := []string{"--home", state, "--sandbox", "off", "--on-ask", "park", "--output-format", "json"}

			code, out := runCLI(t, append([]string{"run", "--cwd", root, "--model", "scripted/" + first, "--permission-mode", "plan", "plan it"}, common...))
			if code != exitAwaiting {
				t.Fatalf("run: exit %d\n%s", code, out)
			}
			var parked struct {
				SessionID  string `json:"session_id"`
				Checkpoint struct {
					ID   string `json:"id"`
					Gate string `json:"gate"`
				} `json:"checkpoint"`
			}
			if err := json.Unmarshal([]byte(out), &parked); err != nil || parked.Checkpoint.Gate != "plan_review" {
				t.Fatalf("parked: %v %s", err, out)
			}

			args := append([]string{"approve", parked.SessionID, "--checkpoint", parked.Checkpoint.ID, "--model", "scripted/" + second}, tt.args...)
			code, out = runCLI(t, append(args, common...))
			if code != tt.wantCode {
				t.Fatalf("approve: exit %d, want %d\n%s", code, tt.wantCode, out)
			}
			var res struct {
				Manifest struct {
					Mode struct {
						Effective string `json:"effective"`
					} `json:"permission_mode"`
				} `json:"manifest"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("approve output: %v %s", err, out)
			}
			if res.Manifest.Mode.Effective != tt.wantMode {
				t.Fatalf("the resumed leg runs in %q, want %q", res.Manifest.Mode.Effective, tt.wantMode)
			}
			if _, err := os.Stat(filepath.Join(root, "a.txt")); (err == nil) != tt.wantWriteRan {
				t.Fatalf("a.txt written: %v, want %v", err == nil, tt.wantWriteRan)
			}
		})
	}
}

// An unknown mode on `sema approve` is refused by name before anything is claimed.
func TestApproveRefusesAnUnknownMode(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	code, out := runCLI(t, []string{"approve", "some-session", "--checkpoint", "c", "--allow", "--cwd", t.TempDir(), "--home", t.TempDir(),
		"--permission-mode", "sideways", "--model", "scripted/none", "--output-format", "json"})
	if code != exitUsage || !strings.Contains(out, "config.permission_mode_invalid") {
		t.Fatalf("exit %d: %s", code, out)
	}
}

func runCLI(t *testing.T, args []string) (int, string) {
	t.Helper()
	var out, errw bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errw)
	return code, out.String() + errw.String()
}
