package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/env/envtest"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/tools/files"
)

// editedLog collects what OnFileEdited observed; the observer is not awaited, so a
// reader waits for the count it expects (or for strays).
type editedLog struct {
	mu   sync.Mutex
	keys []string
}

func (e *editedLog) hook(n files.FileEditedNotice) {
	e.mu.Lock()
	e.keys = append(e.keys, n.Key)
	e.mu.Unlock()
}

// settle waits until want notices arrived (failing after a while), then a little more
// for a stray one, and returns what arrived.
func (e *editedLog) settle(t *testing.T, want int) []string {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		e.mu.Lock()
		n := len(e.keys)
		e.mu.Unlock()
		if n >= want || time.Now().After(deadline) {
			break
		}
	}
	time.Sleep(50 * time.Millisecond)
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.keys...)
}

// The runner's annul step (station 8) with its own file history on: a write that fails
// retracts the first-touch record it minted when the failure proves nothing was written
// (EACCES), or when a re-read finds the pre-image still there (an EIO that left the file
// absent); a failure that may have changed the file (a partial write) keeps the record,
// so a rewind can undo what it left. FileEdited fires for the ambiguous failures only,
// never for the proven one.
func TestFailedWriteAnnulsItsHistoryRecord(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		fault      func(key string) envtest.Fault
		wantRecord bool
		wantEdited bool
	}{
		{"proven: EACCES", func(k string) envtest.Fault { return envtest.Errno(envtest.OpWriteFile, k, syscall.EACCES) }, false, false},
		{"verify: EIO, nothing written", func(k string) envtest.Fault { return envtest.Errno(envtest.OpWriteFile, k, syscall.EIO) }, false, true},
		{"verify: EIO after a partial write", func(k string) envtest.Fault { return envtest.PartialWrite(k, 3, syscall.EIO) }, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root, err := filepath.EvalSymlinks(t.TempDir())
			must(t, err)
			key := filepath.Join(root, "a.txt")
			faulty := envtest.NewFaulty(env.NewHost())
			faulty.Inject(tt.fault(key))
			st := newStores(t)
			log := &editedLog{}
			deps := agent.Deps{Provider: writeOnce(), Env: faulty, Store: st.sessions, History: st.history,
				Hooks: &agent.Hooks{OnFileEdited: log.hook}}
			res, err := agent.New(deps).Run(context.Background(), agent.TaskSpec{Prompt: "write", Root: root, PermissionMode: permission.ModeAcceptEdits})
			must(t, err)
			if r := toolResults(t, res, 1)[0]; !r.IsError {
				t.Fatalf("the faulted write succeeded: %+v", r)
			}
			if res.Manifest.FileHistory != "on" {
				t.Fatalf("file history %q, want on", res.Manifest.FileHistory)
			}
			recs, err := st.history.Records(context.Background(), res.SessionID, 0)
			must(t, err)
			kept := 0
			for _, r := range recs {
				if r.Key == key {
					kept++
				}
			}
			if kept != map[bool]int{false: 0, true: 1}[tt.wantRecord] {
				t.Fatalf("%d records of %s after the failed write, want record %v: %+v", kept, key, tt.wantRecord, recs)
			}
			want := 0
			if tt.wantEdited {
				want = 1
			}
			if got := log.settle(t, want); len(got) != want || (want == 1 && got[0] != key) {
				t.Fatalf("FileEdited observed %v, want %d notice of %s", got, want, key)
			}
		})
	}
}

// Bash never fires FileEdited: a command's changes are recorded by the shell's own
// history walk, not by the write lane's observer — while a Write in the same run does
// fire it, so the observer is wired.
func TestBashNeverFiresFileEdited(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("no bash")
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	in, _ := json.Marshal(map[string]string{"command": "printf 'by the shell\\n' > b.txt"})
	model := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "Bash", Input: in}}},
		{ToolCalls: []scripted.ToolCall{write("a.txt", "by the lane\n")}},
		{Text: "done"},
	}})
	log := &editedLog{}
	hs := history.NewMemory()
	t.Cleanup(func() { hs.Close() })
	runner := agent.New(agent.Deps{Provider: model, Store: session.NewMemory(), History: hs,
		Hooks: &agent.Hooks{OnFileEdited: log.hook}, Shell: &agent.ShellOptions{Sandbox: "off"}})
	res, err := runner.Run(context.Background(), agent.TaskSpec{Prompt: "write both", Root: root, PermissionMode: permission.ModeBypassPermissions})
	must(t, err)
	if b, _ := os.ReadFile(filepath.Join(root, "b.txt")); string(b) != "by the shell\n" {
		t.Fatalf("the command did not write b.txt: %q", b)
	}
	recs, err := hs.Records(context.Background(), res.SessionID, 0)
	must(t, err)
	shellRecorded := false
	for _, r := range recs {
		shellRecorded = shellRecorded || r.Key == filepath.Join(root, "b.txt")
	}
	if !shellRecorded {
		t.Fatalf("the shell's change of b.txt left no history record: %+v", recs)
	}
	if got := log.settle(t, 1); len(got) != 1 || got[0] != filepath.Join(root, "a.txt") {
		t.Fatalf("FileEdited observed %v, want only the Write of a.txt", got)
	}
}
