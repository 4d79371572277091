package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRawJSONUndoesOnlyHTMLEscapes(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":"\u003cx\u003e \u0026 y"}`: `{"a":"<x> & y"}`,
		`{"b":"\\u003c"}`:                `{"b":"\\u003c"}`, // an escaped backslash, then text
		`{"c":"\u00e9\n"}`:               `{"c":"\u00e9\n"}`,
		`{"z":1,"a":2}`:                  `{"z":1,"a":2}`, // key order kept
	} {
		if got := rawJSON([]byte(in)); got != want {
			t.Errorf("rawJSON(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestFailedExit(t *testing.T) {
	for in, want := range map[string]string{
		"out\n\nThe command exited with code 2.":  "exit 2",
		"out\n\nThe command exited with code 0.":  "",
		"The command ended by signal 9 (killed).": "signal",
		"just output": "",
		"The command was still running at its timeout of 1000 ms.": "",
	} {
		if got := failedExit(in); got != want {
			t.Errorf("failedExit(%q) = %q, want %q", in, got, want)
		}
	}
}

// `sema sessions list|show --output-format json` print one object each, with the
// documented snake_case fields; `sema rewind --dry-run --output-format json` the ledger.
func TestSessionsJSON(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	home, root := t.TempDir(), t.TempDir()
	id := scriptedRun(t, home, root)

	code, out, errw := cli(t, "", "sessions", "list", "--home", home, "--cwd", root, "--output-format", "json")
	if code != exitOK {
		t.Fatalf("list: exit %d\n%s", code, errw)
	}
	var list struct {
		Sessions []map[string]any `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Sessions) != 1 {
		t.Fatalf("list: %v\n%s", err, out)
	}
	s := list.Sessions[0]
	for _, key := range []string{"id", "root", "title", "mode", "effective_mode", "model", "created_at", "updated_at", "parent_id", "fork_of"} {
		if _, ok := s[key]; !ok {
			t.Errorf("a listed session has no %q: %v", key, s)
		}
	}
	if s["id"] != id || s["title"] != "write a.txt" || s["mode"] != "acceptEdits" {
		t.Fatalf("list: %v", s)
	}
	if _, err := time.Parse(time.RFC3339Nano, s["updated_at"].(string)); err != nil {
		t.Fatalf("updated_at is not RFC 3339: %v", err)
	}
	// An empty listing is an empty array, not null.
	if code, out, _ := cli(t, "", "sessions", "list", "--home", home, "--cwd", t.TempDir(), "--output-format", "json"); code != exitOK || !strings.Contains(out, `"sessions": []`) {
		t.Fatalf("empty list: exit %d %s", code, out)
	}

	code, out, errw = cli(t, "", "sessions", "show", id, "--home", home, "--output-format", "json")
	if code != exitOK {
		t.Fatalf("show: exit %d\n%s", code, errw)
	}
	var show struct {
		Session struct {
			ID string `json:"id"`
		} `json:"session"`
		Agents  []any `json:"agents"`
		Turns   int   `json:"turns"`
		Entries []struct {
			Type      string `json:"type"`
			Turn      int    `json:"turn"`
			Text      string `json:"text"`
			ToolUseID string `json:"tool_use_id"`
			IsError   *bool  `json:"is_error"`
			Content   string `json:"content"`
			Message   struct {
				Content []struct {
					Type string `json:"type"`
					Name string `json:"name"`
					Text string `json:"text"`
				} `json:"content"`
			} `json:"message"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(out), &show); err != nil {
		t.Fatalf("show: %v\n%s", err, out)
	}
	if show.Session.ID != id || show.Turns != 2 || show.Agents == nil || len(show.Entries) != 4 {
		t.Fatalf("show: %s", out)
	}
	e := show.Entries
	if e[0].Type != "user" || e[0].Text != "write a.txt" ||
		e[1].Type != "assistant" || e[1].Turn != 1 || e[1].Message.Content[0].Name != "Write" ||
		e[2].Type != "tool_result" || e[2].Turn != 1 || e[2].ToolUseID == "" || e[2].IsError == nil || *e[2].IsError ||
		e[3].Type != "assistant" || e[3].Turn != 2 || e[3].Message.Content[0].Text != "done" {
		t.Fatalf("show entries: %s", out)
	}

	code, out, errw = cli(t, "", "rewind", id, "--to", "1", "--dry-run", "--home", home, "--output-format", "json")
	if code != exitOK {
		t.Fatalf("rewind --dry-run: exit %d\n%s", code, errw)
	}
	var ledger struct {
		Turn    int  `json:"turn"`
		DryRun  bool `json:"dry_run"`
		Applied bool `json:"applied"`
		Files   []struct {
			Path   string `json:"path"`
			Action string `json:"action"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &ledger); err != nil || !ledger.DryRun || ledger.Applied || ledger.Turn != 1 ||
		len(ledger.Files) != 1 || ledger.Files[0].Action != "deleted" || filepath.Base(ledger.Files[0].Path) != "a.txt" {
		t.Fatalf("rewind --dry-run ledger (%v): %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(root, "a.txt")); err != nil {
		t.Fatalf("a dry run changed the file: %v", err)
	}

	for _, args := range [][]string{
		{"sessions", "list", "--output-format", "stream-json"},
		{"sessions", "show", id, "--output-format", "yaml"},
	} {
		// The same code as sema run's refusal of a format.
		if code, _, errw := cli(t, "", append(args, "--home", home)...); code != exitUsage || !strings.Contains(errw, "use text or json (config.output_format_invalid)") {
			t.Fatalf("%v: exit %d %s", args, code, errw)
		}
	}
}

// prune --dry-run removes nothing; at a terminal prune asks first (no answer, or
// anything but y, removes nothing) unless --yes; from a script it removes without
// asking.
func TestSessionsPrune(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	prev := stdinIsTerminal
	t.Cleanup(func() { stdinIsTerminal = prev })
	count := func(t *testing.T, home string) int {
		t.Helper()
		_, out, _ := cli(t, "", "sessions", "list", "--all", "--home", home, "--output-format", "json")
		var list struct {
			Sessions []any `json:"sessions"`
		}
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatal(err)
		}
		return len(list.Sessions)
	}
	for _, tc := range []struct {
		name     string
		terminal bool
		stdin    string
		flags    []string
		asked    bool
		left     int
	}{
		{"dry run", true, "y\n", []string{"--dry-run"}, false, 2},
		{"a person says no", true, "n\n", nil, true, 2},
		{"a person just presses enter", true, "\n", nil, true, 2},
		{"a person closes stdin", true, "", nil, true, 2},
		{"a person says yes", true, "y\n", nil, true, 0},
		{"a person says YES", true, "YES\n", nil, true, 0},
		{"--yes at a terminal", true, "", []string{"--yes"}, false, 0},
		{"a script", false, "", nil, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdinIsTerminal = func(io.Reader) bool { return tc.terminal }
			home := t.TempDir()
			a, b := scriptedRun(t, home, t.TempDir()), scriptedRun(t, home, t.TempDir())
			code, out, errw := cli(t, tc.stdin, append([]string{"sessions", "prune", "--older-than", "0d", "--home", home}, tc.flags...)...)
			if code != exitOK {
				t.Fatalf("exit %d\n%s%s", code, out, errw)
			}
			if asked := strings.Contains(errw, "Remove 2 sessions? [y/N]"); asked != tc.asked {
				t.Fatalf("asked = %v, want %v; stderr: %q", asked, tc.asked, errw)
			}
			if n := count(t, home); n != tc.left {
				t.Fatalf("%d sessions left, want %d\nstdout: %s\nstderr: %s", n, tc.left, out, errw)
			}
			switch {
			case slices.Contains(tc.flags, "--dry-run"):
				if !strings.Contains(out, a) || !strings.Contains(out, b) || !strings.Contains(out, "would prune 2 sessions") {
					t.Fatalf("the dry run does not list both sessions: %s", out)
				}
			case tc.left == 0:
				if !strings.Contains(out, "pruned 2 sessions") {
					t.Fatalf("stdout: %s", out)
				}
			default:
				if !strings.Contains(errw, "nothing was removed") {
					t.Fatalf("stderr: %s", errw)
				}
			}
		})
	}

	// JSON: what would go, then what went.
	stdinIsTerminal = func(io.Reader) bool { return false }
	home := t.TempDir()
	id := scriptedRun(t, home, t.TempDir())
	for _, dry := range []bool{true, false} {
		args := []string{"sessions", "prune", "--older-than", "0d", "--home", home, "--output-format", "json"}
		if dry {
			args = append(args, "--dry-run")
		}
		code, out, errw := cli(t, "", args...)
		var doc struct {
			DryRun   bool `json:"dry_run"`
			Sessions []struct {
				ID string `json:"id"`
			} `json:"sessions"`
		}
		if err := json.Unmarshal([]byte(out), &doc); code != exitOK || err != nil || doc.DryRun != dry || len(doc.Sessions) != 1 || doc.Sessions[0].ID != id {
			t.Fatalf("prune json (dry %v): exit %d %v\n%s%s", dry, code, err, out, errw)
		}
	}
	if n := count(t, home); n != 0 {
		t.Fatalf("%d sessions left after prune", n)
	}
}
