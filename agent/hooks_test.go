package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/tools/files"
)

// hookLog is what the write-lane hooks saw, in order.
type hookLog struct {
	mu     sync.Mutex
	events []string
	// tracked are the TrackFileEdit requests, with whether the file already held the
	// new bytes when the seat was asked.
	tracked []files.TrackEditRequest
	early   bool
	edited  chan files.FileEditedNotice
}

func (h *hookLog) add(e string) {
	h.mu.Lock()
	h.events = append(h.events, e)
	h.mu.Unlock()
}

func (h *hookLog) seen() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.events, ",")
}

// The deployment's write-lane hooks, wired through Deps.Hooks and driven by a model
// through Runner.Run: BeforeWrite sees the final bytes and may refuse them (nothing
// lands, and the result carries the refusal's code; an error or a panic refuses too);
// TrackFileEdit is asked before the write, with the canonical key; OnFileEdited observes
// a landed write after it landed, never a refused one, and its panic is contained.
func TestWriteLaneHooksThroughDeps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		beforeWrite func(files.BeforeWriteRequest) (files.BeforeWriteResult, error)
		wantCode    string // the Write result's code; "" when it lands
		wantSeen    string // the hooks called, in order
	}{
		{"allowed: the seats in order", func(files.BeforeWriteRequest) (files.BeforeWriteResult, error) {
			return files.BeforeWriteResult{OK: true}, nil
		}, "", "before,track,edited"},
		{"refused with the deployment's code", func(req files.BeforeWriteRequest) (files.BeforeWriteResult, error) {
			if strings.Contains(req.Content, "TOKEN=") {
				return files.BeforeWriteResult{Code: "deploy.secret", Reason: "tokens are not written to the workspace"}, nil
			}
			return files.BeforeWriteResult{OK: true}, nil
		}, "deploy.secret", "before"},
		{"a refusal without a code", func(files.BeforeWriteRequest) (files.BeforeWriteResult, error) {
			return files.BeforeWriteResult{}, nil
		}, files.CodeBeforeWriteRefused, "before"},
		{"an error fails closed", func(files.BeforeWriteRequest) (files.BeforeWriteResult, error) {
			return files.BeforeWriteResult{OK: true}, errors.New("scanner down")
		}, files.CodeBeforeWriteFailed, "before"},
		{"a panic fails closed", func(files.BeforeWriteRequest) (files.BeforeWriteResult, error) {
			panic("scanner bug")
		}, files.CodeBeforeWriteFailed, "before"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			key := filepath.Join(root, "a.txt")
			const content = "TOKEN=abc\n"
			log := &hookLog{edited: make(chan files.FileEditedNotice, 1)}
			hooks := &agent.Hooks{
				BeforeWrite: func(_ context.Context, req files.BeforeWriteRequest) (files.BeforeWriteResult, error) {
					log.add("before")
					if req.Key != key || req.Content != content {
						t.Errorf("BeforeWrite saw key %q content %q", req.Key, req.Content)
					}
					return tt.beforeWrite(req)
				},
				TrackFileEdit: func(_ context.Context, req files.TrackEditRequest) (files.TrackEditResult, error) {
					log.add("track")
					_, statErr := os.Stat(req.Key)
					log.mu.Lock()
					log.tracked = append(log.tracked, req)
					log.early = log.early || !os.IsNotExist(statErr)
					log.mu.Unlock()
					return files.TrackEditResult{OK: true}, nil
				},
				OnFileEdited: func(n files.FileEditedNotice) {
					log.add("edited")
					if b, _ := os.ReadFile(n.Key); string(b) != content {
						t.Errorf("OnFileEdited ran before the bytes landed: %q", b)
					}
					log.edited <- n
					panic("the observer's own bug")
				},
			}
			p := scripted.New(scripted.Script{Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{write("a.txt", content)}},
				{Text: "done"},
			}})
			st := newStores(t)
			r := agent.New(agent.Deps{Provider: p, Store: st.sessions, History: st.history, Hooks: hooks})
			var results []*agent.ToolResult
			var res *agent.TaskResult
			for ev, err := range r.Events(context.Background(), agent.TaskSpec{Prompt: "write", Root: root, PermissionMode: permission.ModeAcceptEdits}) {
				if err != nil {
					t.Fatal(err)
				}
				switch ev.Type {
				case agent.EventToolResult:
					results = append(results, ev.ToolResult)
				case agent.EventResult:
					res = ev.Result
				}
			}
			if res.Status != sema.StatusCompleted || len(results) != 1 {
				t.Fatalf("status %s, %d tool results", res.Status, len(results))
			}
			got := results[0]
			_, statErr := os.Stat(key)
			if tt.wantCode != "" {
				if !got.IsError || got.Code != tt.wantCode {
					t.Fatalf("Write result: error %v code %q, want %q (%s)", got.IsError, got.Code, tt.wantCode, got.Text)
				}
				if !os.IsNotExist(statErr) || len(res.EditedFiles) != 0 {
					t.Fatalf("a refused write landed: %v, edited %v", statErr, res.EditedFiles)
				}
				// No observer fires for a refusal; give a stray one the time to show.
				select {
				case n := <-log.edited:
					t.Fatalf("OnFileEdited fired for a refused write: %+v", n)
				case <-time.After(50 * time.Millisecond):
				}
			} else {
				if got.IsError || statErr != nil || len(res.EditedFiles) != 1 {
					t.Fatalf("the write did not land: %+v, %v, edited %v", got, statErr, res.EditedFiles)
				}
				select {
				case n := <-log.edited:
					if n.Tool != files.HookWrite || n.Key != key || n.Path != "a.txt" {
						t.Fatalf("OnFileEdited saw %+v", n)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("OnFileEdited never observed the landed write")
				}
				log.mu.Lock()
				tracked, early := log.tracked, log.early
				log.mu.Unlock()
				if len(tracked) != 1 || tracked[0].Key != key || tracked[0].Tool != files.HookWrite || early {
					t.Fatalf("TrackFileEdit saw %+v (the file existed already: %v)", tracked, early)
				}
				if res.Manifest.FileHistory != "on" {
					t.Fatalf("a deployment's history seat: manifest says %q", res.Manifest.FileHistory)
				}
			}
			// The observer runs off the call: wait for it before reading the order.
			deadline := time.Now().Add(5 * time.Second)
			for log.seen() != tt.wantSeen && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if got := log.seen(); got != tt.wantSeen {
				t.Fatalf("hooks called %q, want %q", got, tt.wantSeen)
			}
			// The deployment's seat replaces the runner's own history: nothing of its own.
			if recs, _ := st.history.Records(context.Background(), res.SessionID, 0); len(recs) != 0 {
				t.Fatalf("the runner recorded %d records beside the deployment's seat", len(recs))
			}
		})
	}
}
