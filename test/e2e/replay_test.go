package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/model/anthropic/anthropictest"
)

// treeHash is a digest of every entry under dir: names, kinds, modes, modification
// times and bytes, so that any write to the tree changes it.
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		line := rel + " " + fi.Mode().String() + " " + fi.ModTime().String()
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			line += " " + hex.EncodeToString(sum[:])
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:])
}

// replayReport is `sema replay --output-format json`.
type replayReport struct {
	Status      string `json:"status"`
	Turns       int    `json:"turns"`
	Calls       int    `json:"calls"`
	Divergences []struct {
		Turn     int    `json:"turn"`
		Tool     string `json:"tool"`
		Kind     string `json:"kind"`
		Recorded string `json:"recorded"`
		Now      string `json:"now"`
		Reason   string `json:"reason"`
	} `json:"divergences"`
}

func decodeReplay(t *testing.T, r result) replayReport {
	t.Helper()
	var rep replayReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("stdout is not the report: %v\n%s\n%s", err, r.stdout, r.stderr)
	}
	return rep
}

// recordSession runs a session of Read, Write, Bash and Edit against the fake Anthropic
// server and returns the workspace, the state directory's env and the session id.
func recordSession(t *testing.T) (string, []string, string) {
	t.Helper()
	dir := writeTree(t, map[string]string{"notes.txt": "alpha\nbeta\n", "keep.txt": "kept\n"})
	env := home(t)
	srv := anthropictest.NewServer(t,
		anthropictest.Turn{Text: "Reading the notes.", ToolCalls: []anthropictest.ToolCall{
			{Name: "Read", Input: `{"file_path":"notes.txt"}`}, {Name: "Read", Input: `{"file_path":"keep.txt"}`}}},
		anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{{Name: "Write", Input: `{"file_path":"out/summary.txt","content":"two lines\n"}`}}},
		anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{{Name: "Bash", Input: `{"command":"cat out/summary.txt && wc -l < notes.txt"}`}}},
		anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{{Name: "Edit", Input: `{"file_path":"notes.txt","old_string":"beta","new_string":"BETA"}`}}},
		anthropictest.Turn{Text: "Summarised and fixed the notes."},
	)
	r := sema(t, dir, append(env, anthropicEnv(srv)...), "", "-p", "--model", "anthropic/claude-sonnet-4-5",
		"--permission-mode", "acceptEdits", "--output-format", "json", "summarise the notes")
	if r.code != 0 {
		t.Fatalf("recording: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	obj := jsonResult(t, r.stdout)
	if obj["status"] != "completed" || obj["num_turns"] != 5.0 {
		t.Fatalf("recording: %v", obj)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(b) != "alpha\nBETA\n" {
		t.Fatalf("the recorded run left notes.txt as %q", b)
	}
	return dir, env, obj["session_id"].(string)
}

// A session replays with no provider, in a copy of its workspace as it found it: every
// call answers as recorded, the exit is 0, and the workspace is not touched.
func TestReplayIdenticalLeavesTheWorkspaceAlone(t *testing.T) {
	dir, env, id := recordSession(t)
	before := treeHash(t, dir)
	r := sema(t, dir, env, "", "replay", id, "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("replay: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	rep := decodeReplay(t, r)
	if rep.Status != "identical" || rep.Turns != 5 || rep.Calls != 5 || len(rep.Divergences) != 0 {
		t.Fatalf("report %+v", rep)
	}
	if after := treeHash(t, dir); after != before {
		t.Fatal("the replay changed the real workspace")
	}
	// Text output says the same, and --at replays a prefix.
	r = sema(t, dir, env, "", "replay", id, "--at", "2")
	if r.code != 0 || !strings.Contains(r.stdout, "identical — 2 turn(s), 3 call(s) compared") {
		t.Fatalf("replay --at 2: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if after := treeHash(t, dir); after != before {
		t.Fatal("the replay changed the real workspace")
	}
}

// A file the agent read (and did not change) changed since: the replay diverges at
// that Read, naming it and its turn. A file the agent changed comes back from file
// history, whatever the workspace holds now, and does not diverge.
func TestReplayDivergesWhenAReadFileChanged(t *testing.T) {
	dir, env, id := recordSession(t)
	for name, body := range map[string]string{"keep.txt": "changed since\n", "notes.txt": "someone else's bytes\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := treeHash(t, dir)
	r := sema(t, dir, env, "", "replay", id, "--output-format", "json")
	if r.code != 1 || !strings.Contains(r.stderr, "replay.diverged") {
		t.Fatalf("replay: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	rep := decodeReplay(t, r)
	if rep.Status != "diverged" || len(rep.Divergences) != 1 {
		t.Fatalf("report %+v", rep)
	}
	d := rep.Divergences[0]
	if d.Turn != 1 || d.Tool != "Read" || d.Kind != "result" || !strings.Contains(d.Recorded, "kept") || !strings.Contains(d.Now, "changed since") {
		t.Fatalf("divergence %+v", d)
	}
	if treeHash(t, dir) != before {
		t.Fatal("the replay changed the real workspace")
	}
	// Text output names it too.
	r = sema(t, dir, env, "", "replay", id)
	if r.code != 1 || !strings.Contains(r.stdout, "turn 1  Read  result: the result differs") {
		t.Fatalf("text: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// A deny rule added to the workspace's settings since refuses a recorded call: the
// replay diverges, naming the call, its turn and the refusal.
func TestReplayDivergesWhenADenyRuleRefusesACall(t *testing.T) {
	dir, env, id := recordSession(t)
	if err := os.MkdirAll(filepath.Join(dir, ".sema"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".sema", "settings.json"), []byte(`{"permissions":{"deny":["Bash(wc *)"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	before := treeHash(t, dir)
	r := sema(t, dir, env, "", "replay", id, "--output-format", "json")
	if r.code != 1 || !strings.Contains(r.stderr, "replay.diverged") {
		t.Fatalf("replay: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	rep := decodeReplay(t, r)
	if rep.Status != "diverged" || len(rep.Divergences) != 1 {
		t.Fatalf("report %+v", rep)
	}
	d := rep.Divergences[0]
	if d.Turn != 3 || d.Tool != "Bash" || d.Kind != "refused" || !strings.Contains(d.Reason, "Bash(wc *)") {
		t.Fatalf("divergence %+v", d)
	}
	if treeHash(t, dir) != before {
		t.Fatal("the replay changed the real workspace")
	}
}

// A call that now asks — the session ran in acceptEdits, the replay is told default —
// is a divergence of its own kind: nobody answers in a replay. What follows from it (a
// command reading the file the refused Write would have made) diverges too.
func TestReplayNamesACallNowAsked(t *testing.T) {
	dir, env, id := recordSession(t)
	r := sema(t, dir, env, "", "replay", id, "--permission-mode", "default", "--output-format", "json")
	if r.code != 1 {
		t.Fatalf("replay: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	rep := decodeReplay(t, r)
	var got []string
	for _, d := range rep.Divergences {
		got = append(got, fmt.Sprintf("%d %s %s", d.Turn, d.Tool, d.Kind))
	}
	want := []string{"2 Write asked", "3 Bash result", "4 Edit asked"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("divergences %q, want %q\n%s", got, want, r.stdout)
	}
}

func TestReplayRefusals(t *testing.T) {
	dir, env, id := recordSession(t)
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code string
	}{
		{"unknown session", []string{"replay", "no-such-session"}, "session.not_found"},
		{"at past the end", []string{"replay", id, "--at", "6"}, "replay.at_invalid"},
		{"at zero", []string{"replay", id, "--at", "0"}, "replay.at_invalid"},
		{"scratch not empty", []string{"replay", id, "--in", full}, "replay.scratch_invalid"},
		{"bad output format", []string{"replay", id, "--output-format", "yaml"}, "config.output_format_invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sema(t, dir, env, "", append(tc.args, "--output-format", "json")...)
			if tc.name == "bad output format" {
				r = sema(t, dir, env, "", tc.args...)
			}
			if r.code != 2 || !strings.Contains(r.stderr, tc.code) {
				t.Fatalf("exit %d, want 2 with %s\n%s\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
		})
	}
	// A session in which the model never answered has nothing to replay.
	srv := anthropictest.NewServer(t)
	r := sema(t, dir, append(env, anthropicEnv(srv)...), "", "-p", "--model", "anthropic/claude-sonnet-4-5", "--max-budget-usd", "0.000001", "--output-format", "json", "hi")
	empty, _ := jsonResult(t, r.stdout)["session_id"].(string)
	if empty == "" {
		t.Fatalf("the run stopped by its budget kept no session: %s\n%s", r.stdout, r.stderr)
	}
	r = sema(t, dir, env, "", "replay", empty, "--output-format", "json")
	if r.code != 2 || !strings.Contains(r.stderr, "replay.no_turns") {
		t.Fatalf("a session without turns: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// --in replays in a directory of the person's choosing and keeps it: the copy holds what
// the replayed calls left, and the workspace is untouched.
func TestReplayInAGivenDirectoryKeepsIt(t *testing.T) {
	dir, env, id := recordSession(t)
	before := treeHash(t, dir)
	in := filepath.Join(t.TempDir(), "replayed")
	r := sema(t, dir, env, "", "replay", id, "--in", in, "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("replay: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for name, want := range map[string]string{"notes.txt": "alpha\nBETA\n", "out/summary.txt": "two lines\n", "keep.txt": "kept\n"} {
		if b, err := os.ReadFile(filepath.Join(in, name)); err != nil || string(b) != want {
			t.Errorf("%s in the kept copy = %q, %v; want %q", name, b, err, want)
		}
	}
	if treeHash(t, dir) != before {
		t.Fatal("the replay changed the real workspace")
	}
}

// A session that delegated replays its subagent from the subagent's own session: the
// subagent's calls run again and are compared, named by the Task call.
func TestReplayOfASubagentSession(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.txt": "from a\n"})
	env := home(t)
	srv := anthropictest.NewServer(t,
		anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{{ID: "toolu_task", Name: "Task",
			Input: `{"description":"read a","prompt":"SUBAGENT: what does a.txt say?","subagent_type":"general-purpose"}`}}},
		anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{{ID: "toolu_child_read", Name: "Read", Input: `{"file_path":"a.txt"}`}}},
		anthropictest.Turn{Text: "a.txt says: from a"},
		anthropictest.Turn{Text: "The subagent read it."},
	)
	r := sema(t, dir, append(env, anthropicEnv(srv)...), "", "-p", "--model", "anthropic/claude-sonnet-4-5", "--output-format", "json", "delegate the reading")
	if r.code != 0 {
		t.Fatalf("recording: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	id := jsonResult(t, r.stdout)["session_id"].(string)
	r = sema(t, dir, env, "", "replay", id, "--output-format", "json")
	if rep := decodeReplay(t, r); r.code != 0 || rep.Status != "identical" || rep.Calls != 2 {
		t.Fatalf("replay: exit %d %+v\n%s", r.code, rep, r.stderr)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = sema(t, dir, env, "", "replay", id, "--output-format", "json")
	var rep struct {
		Divergences []struct {
			Turn      int    `json:"turn"`
			Tool      string `json:"tool"`
			ToolUseID string `json:"tool_use_id"`
			Subagent  string `json:"subagent"`
		} `json:"divergences"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 1 || len(rep.Divergences) != 1 {
		t.Fatalf("replay after the change: exit %d %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	if d := rep.Divergences[0]; d.Turn != 1 || d.Tool != "Read" || d.ToolUseID != "toolu_child_read" || d.Subagent != "toolu_task" {
		t.Fatalf("divergence %+v", d)
	}
}

// TestReplayOfAServiceSession: a session `sema serve` recorded on SQLite replays from the
// service's state directory (--home), identical, with no model.
func TestReplayOfAServiceSession(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	os.WriteFile(filepath.Join(base, "notes.txt"), []byte("one\n"), 0o644)
	srv := anthropictest.NewServer(t,
		anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{{Name: "Read", Input: `{"file_path":"notes.txt"}`}}},
		anthropictest.Turn{Text: "it says one"},
	)
	state := t.TempDir()
	env := append(anthropicEnv(srv), "SEMA_HOME="+state)
	tok := serveToken(t, env, "acme", base)
	p := startServe(t, env, "--model", "anthropic/claude-sonnet-4-5")
	c := client.New(p.url, tok)
	task, err := c.SubmitTask(context.Background(), client.TaskSpec{Prompt: "read the notes", Cwd: base})
	if err != nil {
		t.Fatal(err)
	}
	done := waitTask(t, c, task.TaskID, "completed", 30*time.Second)
	r := sema(t, base, []string{"SEMA_HOME=" + t.TempDir()}, "", "replay", done.SessionID, "--home", state, "--output-format", "json")
	if r.code != 0 || !strings.Contains(r.stdout, `"status": "identical"`) {
		t.Fatalf("replay of the service's session: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// The service's own replay, under the tenant's policy: the same, and a deny rule
	// the policy gained since refuses the recorded Read (exit 1, named).
	r = sema(t, base, []string{"SEMA_HOME=" + state}, "", "serve", "replay", done.SessionID, "--output-format", "json")
	if r.code != 0 || !strings.Contains(r.stdout, `"status": "identical"`) {
		t.Fatalf("sema serve replay: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	policy := filepath.Join(t.TempDir(), "policy.json")
	os.WriteFile(policy, []byte(`{"deny":["Read(notes.txt)"]}`), 0o644)
	if r := sema(t, base, []string{"SEMA_HOME=" + state}, "", "serve", "tenant", "set", "--tenant", "acme", "--policy", policy); r.code != 0 {
		t.Fatalf("tenant set: exit %d\n%s", r.code, r.stderr)
	}
	r = sema(t, base, []string{"SEMA_HOME=" + state}, "", "serve", "replay", done.SessionID)
	if r.code != 1 || !strings.Contains(r.stdout, "diverged") || !strings.Contains(r.stdout, "Read") || !strings.Contains(r.stderr, "replay.diverged") {
		t.Fatalf("sema serve replay under the new deny rule: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
