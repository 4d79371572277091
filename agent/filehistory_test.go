package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/tools/files"
)

// noticeOf returns the first notice of the result with the code, or nil.
func noticeOf(res *agent.TaskResult, code string) *sema.Notice {
	for i, n := range res.Notices {
		if n.Code == code {
			return &res.Notices[i]
		}
	}
	return nil
}

// writeOnce is a model that writes a.txt and stops.
func writeOnce() *scripted.Provider {
	return scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{write("a.txt", "new bytes")}},
		{Text: "done"},
	}})
}

// The capture switch at each layer: off at either turns recording off (the deployment's
// off also over a task's on, which says so in a notice), the manifest says which, and
// the write itself goes on either way. Bad words and an on that nothing can honour are
// refused by name.
func TestFileHistoryCaptureSwitch(t *testing.T) {
	t.Parallel()
	const ( // the deployment's wiring, as bits
		noHistory = 1 << iota // Deps.History nil
		noStore               // Deps.Store nil
		withHook              // Deps.Hooks.TrackFileEdit set
	)
	tests := []struct {
		name       string
		deployment agent.FileHistoryCapture
		task       agent.FileHistoryCapture
		wiring     int
		readOnly   bool
		wantCode   string // the refusal; "" when the run goes on
		wantFact   string
		wantNotice map[string]any // the history.capture_off notice's detail; nil: none
	}{
		{name: "default: on", wantFact: "on"},
		{name: "deployment on", deployment: agent.FileHistoryOn, wantFact: "on"},
		{name: "task on", task: agent.FileHistoryOn, wantFact: "on"},
		{name: "task off", task: agent.FileHistoryOff, wantFact: "disabled"},
		{name: "deployment off", deployment: agent.FileHistoryOff, wantFact: "disabled"},
		{name: "deployment off beats task on", deployment: agent.FileHistoryOff, task: agent.FileHistoryOn, wantFact: "disabled",
			wantNotice: map[string]any{"layer": "deployment", "seat": "Deps.FileHistoryCapture"}},
		{name: "task on without a store", task: agent.FileHistoryOn, wiring: noHistory, wantFact: "disabled",
			wantNotice: map[string]any{"layer": "deployment", "seat": "Deps.History"}},
		{name: "no store, nothing asked", wiring: noHistory, wantFact: "disabled"},
		{name: "read-only leg", readOnly: true, wantFact: "disabled"},
		{name: "hook seat, default", wiring: withHook, wantFact: "on"},
		{name: "hook seat, task off", wiring: withHook, task: agent.FileHistoryOff, wantFact: "disabled"},
		{name: "deployment on without History", deployment: agent.FileHistoryOn, wiring: noHistory, wantCode: agent.CodeHistoryMissing},
		{name: "deployment on without Store", deployment: agent.FileHistoryOn, wiring: noStore, wantCode: agent.CodeStoreMissing},
		{name: "deployment on with only a hook", deployment: agent.FileHistoryOn, wiring: noHistory | withHook, wantFact: "on"},
		{name: "a bad deployment word", deployment: "On", wantCode: agent.CodeFileHistoryInvalid},
		{name: "a bad task word", task: "true", wantCode: agent.CodeFileHistoryInvalid},
		{name: "a task word that is not off", task: "disabled", wantCode: agent.CodeFileHistoryInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := newStores(t)
			root := t.TempDir()
			deps := agent.Deps{Provider: writeOnce(), Store: st.sessions, History: st.history, FileHistoryCapture: tt.deployment}
			if tt.wiring&noHistory != 0 {
				deps.History = nil
			}
			if tt.wiring&noStore != 0 {
				deps.Store = nil
			}
			var mu sync.Mutex
			var hooked []string
			if tt.wiring&withHook != 0 {
				deps.Hooks = &agent.Hooks{TrackFileEdit: func(_ context.Context, req files.TrackEditRequest) (files.TrackEditResult, error) {
					mu.Lock()
					hooked = append(hooked, req.Key)
					mu.Unlock()
					return files.TrackEditResult{OK: true}, nil
				}}
			}
			spec := agent.TaskSpec{Prompt: "write", Root: root, PermissionMode: permission.ModeAcceptEdits, FileHistory: tt.task, ReadOnly: tt.readOnly}
			res, err := agent.New(deps).Run(context.Background(), spec)
			if tt.wantCode != "" {
				if sema.CodeOf(err) != tt.wantCode {
					t.Fatalf("got %v, want %s", err, tt.wantCode)
				}
				if _, statErr := os.Stat(filepath.Join(root, "a.txt")); !os.IsNotExist(statErr) {
					t.Fatal("a refused run wrote")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Manifest.FileHistory != tt.wantFact {
				t.Fatalf("manifest file_history %q, want %q", res.Manifest.FileHistory, tt.wantFact)
			}
			_, statErr := os.Stat(filepath.Join(root, "a.txt"))
			if tt.readOnly != os.IsNotExist(statErr) {
				t.Fatalf("the write landed: %v; a read-only leg has no Write (%v)", statErr == nil, tt.readOnly)
			}
			n := noticeOf(res, agent.CodeCaptureOff)
			switch {
			case tt.wantNotice == nil && n != nil:
				t.Fatalf("unexpected notice %+v", n)
			case tt.wantNotice != nil && n == nil:
				t.Fatalf("no %s notice among %+v", agent.CodeCaptureOff, res.Notices)
			case n != nil && (n.Detail["layer"] != tt.wantNotice["layer"] || n.Detail["seat"] != tt.wantNotice["seat"]):
				t.Fatalf("notice detail %v, want %v", n.Detail, tt.wantNotice)
			}
			// What the manifest says is what happened: records (or hook calls) exactly when on.
			recorded := len(hooked) > 0
			if deps.History != nil {
				recs, err := st.history.Records(context.Background(), res.SessionID, 0)
				if err != nil {
					t.Fatal(err)
				}
				recorded = recorded || len(recs) > 0
			}
			if recorded != (tt.wantFact == "on") {
				t.Fatalf("recorded %v (hook calls %v), manifest says %s", recorded, hooked, res.Manifest.FileHistory)
			}
		})
	}
}

// A resume that re-supplies a bad capture word is refused before the claim, naming the
// seat; the question stays open.
func TestResumeRefusesABadCaptureWordBeforeTheClaim(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	res, err := st.runner(writeOnce()).Run(context.Background(), agent.TaskSpec{Prompt: "write", Root: root, OnAsk: agent.OnAskPark})
	if err != nil || res.Status != sema.StatusAwaitingApproval {
		t.Fatalf("%v %+v", err, res)
	}
	spec := agent.TaskSpec{Root: root, FileHistory: "maybe", Resume: &agent.Resume{SessionID: res.SessionID}}
	_, err = st.runner(writeOnce()).Resume(context.Background(), spec, agent.Answer{CheckpointID: res.Checkpoint.ID, Allow: true})
	var se *sema.Error
	if sema.CodeOf(err) != agent.CodeConfigRefused || !asErr(err, &se) || se.Detail["code"] != agent.CodeFileHistoryInvalid ||
		se.Detail["field"] != "TaskSpec.FileHistory / Deps.FileHistoryCapture" {
		t.Fatalf("got %v (%+v)", err, se)
	}
	cp, err := st.sessions.Checkpoint(context.Background(), res.Checkpoint.ID)
	if err != nil || cp.Decision != nil {
		t.Fatalf("the refused resume claimed the checkpoint: %v %+v", err, cp.Decision)
	}
}

// otherTree is the host's files seen as another filesystem: an env whose identity is not
// the one the session was created on.
type otherTree struct{ env.ExecutionEnv }

func (otherTree) Identity() string { return "tree:other" }

// A session's history belongs to the filesystem it was created on. A resume (or a fork)
// through an env of another tree records nothing into it, with a notice; a file rewind
// there is refused before anything is written or started, and so is Runner.Rewind of the
// files.
func TestResumeOnAnotherFilesystem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStores(t)
	root := t.TempDir()
	host := agent.New(agent.Deps{Provider: writeOnce(), Store: st.sessions, History: st.history})
	first, err := host.Run(ctx, agent.TaskSpec{Prompt: "write", Root: root, PermissionMode: permission.ModeAcceptEdits})
	if err != nil || first.Manifest.FileHistory != "on" {
		t.Fatalf("%v %+v", err, first)
	}
	records := func(scope string) int {
		recs, err := st.history.Records(ctx, scope, 0)
		if err != nil {
			t.Fatal(err)
		}
		return len(recs)
	}
	before := records(first.SessionID)
	if before == 0 {
		t.Fatal("the first leg recorded nothing")
	}
	legs := func() int {
		ls, err := st.sessions.Legs(ctx, first.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		return len(ls)
	}

	elsewhere := func() *agent.Runner {
		p := scripted.New(scripted.Script{Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{write("b.txt", "elsewhere")}}, {Text: "done"}}})
		return agent.New(agent.Deps{Provider: p, Store: st.sessions, History: st.history, Env: otherTree{env.NewHost()}})
	}
	t.Run("a file rewind is refused", func(t *testing.T) {
		os.WriteFile(filepath.Join(root, "a.txt"), []byte("a person's bytes"), 0o644)
		defer os.WriteFile(filepath.Join(root, "a.txt"), []byte("new bytes"), 0o644)
		n := legs()
		spec := agent.TaskSpec{Prompt: "go on", Root: root, Resume: &agent.Resume{SessionID: first.SessionID, Files: agent.RewindFilesTo(1), AcceptPartialRestore: true}}
		_, err := elsewhere().Run(ctx, spec)
		var se *sema.Error
		if sema.CodeOf(err) != history.CodeFilesystemMismatch || !asErr(err, &se) || se.Detail["recorded"] != env.HostIdentity || se.Detail["current"] != "tree:other" {
			t.Fatalf("got %v", err)
		}
		if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "a person's bytes" || legs() != n {
			t.Fatalf("the refused rewind acted: a.txt %q, legs %d → %d", b, n, legs())
		}
		_, err = elsewhere().Rewind(ctx, agent.RewindSpec{SessionID: first.SessionID, ToTurn: 1, Files: true, Force: true})
		if sema.CodeOf(err) != history.CodeFilesystemMismatch {
			t.Fatalf("Runner.Rewind of the files: %v", err)
		}
		if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "a person's bytes" {
			t.Fatalf("the refused Runner.Rewind wrote a.txt: %q", b)
		}
		// Moving the conversation touches no file: it is not refused.
		if _, err := elsewhere().Rewind(ctx, agent.RewindSpec{SessionID: first.SessionID, ToTurn: 2, Conversation: true}); err != nil {
			t.Fatalf("a conversation rewind: %v", err)
		}
	})
	for _, fork := range []bool{false, true} {
		t.Run(map[bool]string{false: "a resume records nothing", true: "a fork records nothing"}[fork], func(t *testing.T) {
			os.Remove(filepath.Join(root, "b.txt"))
			res, err := elsewhere().Run(ctx, agent.TaskSpec{Prompt: "go on", Root: root, PermissionMode: permission.ModeAcceptEdits,
				Resume: &agent.Resume{SessionID: first.SessionID, Fork: fork}})
			if err != nil || res.Status != sema.StatusCompleted {
				t.Fatalf("%v %+v", err, res)
			}
			if res.Manifest.FileHistory != "disabled" {
				t.Fatalf("manifest file_history %q", res.Manifest.FileHistory)
			}
			n := noticeOf(res, agent.CodeFilesystemChanged)
			if n == nil || n.Detail["recorded"] != env.HostIdentity || n.Detail["current"] != "tree:other" {
				t.Fatalf("notice %+v among %+v", n, res.Notices)
			}
			if b, _ := os.ReadFile(filepath.Join(root, "b.txt")); string(b) != "elsewhere" {
				t.Fatalf("the write did not land: %q", b)
			}
			scope := first.SessionID
			if fork {
				scope = res.SessionID
			}
			if got := records(scope); got != before {
				t.Fatalf("%d records in %s after the leg, %d before", got, scope, before)
			}
		})
	}
	t.Run("the same tree records", func(t *testing.T) {
		p := scripted.New(scripted.Script{Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{write("c.txt", "home")}}, {Text: "done"}}})
		r := agent.New(agent.Deps{Provider: p, Store: st.sessions, History: st.history})
		res, err := r.Run(ctx, agent.TaskSpec{Prompt: "go on", Root: root, PermissionMode: permission.ModeAcceptEdits, Resume: &agent.Resume{SessionID: first.SessionID}})
		if err != nil || res.Manifest.FileHistory != "on" || noticeOf(res, agent.CodeFilesystemChanged) != nil {
			t.Fatalf("%v %+v", err, res)
		}
		if records(first.SessionID) <= before {
			t.Fatal("a resume on the session's own tree recorded nothing")
		}
	})
}

// mintFails is a file-history store whose boundaries cannot be stored from turn failFrom
// on (a locked database, a full disk).
type mintFails struct {
	history.Store
	failFrom int
}

func (h mintFails) MintBoundary(ctx context.Context, scope string, turn int) (history.Boundary, error) {
	if turn >= h.failFrom {
		return history.Boundary{}, errors.New("database is locked")
	}
	return h.Store.MintBoundary(ctx, scope, turn)
}

// A turn whose file-history boundary cannot be stored changes no file: a record made
// without it would land at the turn before's boundary, and a rewind to this turn would
// leave its changes in place (and the bytes from before them nowhere). The write tool's
// edit and the shell command are refused as an edit that cannot be undone is; the turn
// before's edit stays rewindable. Calibrated: with the failure only noticed, both
// changes were made.
func TestATurnWithoutItsBoundaryChangesNothing(t *testing.T) {
	ctx := context.Background()
	root, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	store := session.NewMemory()
	hist := mintFails{Store: history.NewMemory(), failFrom: 2}
	bash := json.RawMessage(`{"command":"echo made > b.txt"}`)
	deps := agent.Deps{Store: store, History: hist, StateDir: t.TempDir(), Shell: &agent.ShellOptions{Sandbox: "off"},
		Provider: scripted.New(scripted.Script{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{write("a.txt", "Y\n")}},
			{ToolCalls: []scripted.ToolCall{write("a.txt", "Z\n"), {Name: "Bash", Input: bash}}},
			{Text: "done"},
		}})}
	res, err := agent.New(deps).Run(ctx, agent.TaskSpec{Prompt: "edit", Root: root, PermissionMode: permission.ModeBypassPermissions})
	must(t, err)
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "Y\n" {
		t.Errorf("a.txt is %q after a turn without its boundary; want turn 1's Y", b)
	}
	if _, err := os.Stat(filepath.Join(root, "b.txt")); !os.IsNotExist(err) {
		t.Errorf("the command of a turn without its boundary ran: %v", err)
	}
	found := false
	for _, n := range res.Notices {
		found = found || n.Code == agent.CodeBoundaryFailed
	}
	if !found {
		t.Errorf("no %s notice: %+v", agent.CodeBoundaryFailed, res.Notices)
	}
}

// sed -i on a symbolic link replaces the link with a file. A rewind cannot put the link
// back (file history keeps no link), so it names the file as one it cannot restore, and
// leaves it; it must not delete it as a file the turn created. Calibrated: before links
// were noted in the walk, the rewind deleted config.yml and called the rewind complete.
func TestRewindOfAFileThatReplacedALinkKeepsIt(t *testing.T) {
	if _, err := exec.LookPath("sed"); err != nil {
		t.Skip("sed is not installed")
	}
	ctx := context.Background()
	root, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	must(t, os.MkdirAll(filepath.Join(root, "configs"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "configs", "dev.yml"), []byte("mode: a\n"), 0o644))
	must(t, os.Symlink("configs/dev.yml", filepath.Join(root, "config.yml")))
	sed := json.RawMessage(`{"command":"sed -i s/a/b/ config.yml"}`)
	deps := agent.Deps{Store: session.NewMemory(), History: history.NewMemory(), StateDir: t.TempDir(), Shell: &agent.ShellOptions{Sandbox: "off"},
		Provider: scripted.New(scripted.Script{Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{{Name: "Bash", Input: sed}}}, {Text: "done"}}})}
	r := agent.New(deps)
	res, err := r.Run(ctx, agent.TaskSpec{Prompt: "edit", Root: root, PermissionMode: permission.ModeBypassPermissions})
	must(t, err)
	if fi, err := os.Lstat(filepath.Join(root, "config.yml")); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("calibration: sed -i did not replace the link with a file (%v)", err)
	}
	rw, err := r.Rewind(ctx, agent.RewindSpec{SessionID: res.SessionID, ToTurn: res.FirstTurn, Files: true, AcceptPartialRestore: true})
	must(t, err)
	b, err := os.ReadFile(filepath.Join(root, "config.yml"))
	if err != nil || string(b) != "mode: b\n" {
		t.Errorf("config.yml after the rewind: %q, %v; want the file left as sed left it", b, err)
	}
	if rw.Ledger == nil || rw.Ledger.Complete() {
		t.Errorf("the rewind called itself complete: %+v", rw.Ledger)
	}
}

// leaseTaken is a session store on which, once armed, every renewal of a lease finds it
// taken over by another run.
type leaseTaken struct {
	session.Store
	armed *atomic.Bool
}

func (s leaseTaken) RenewLease(ctx context.Context, id, holder string, ttl time.Duration) (session.Lease, error) {
	if s.armed.Load() {
		return session.Lease{}, session.LeaseLost(id, holder)
	}
	return s.Store.RenewLease(ctx, id, holder, ttl)
}

// slowSave is a file-history store whose rewind save takes a while, as one behind another
// process's transaction does: long enough for a lease to be lost meanwhile.
type slowSave struct {
	history.Store
	during func()
}

func (h slowSave) MintRewind(ctx context.Context, scope string, turn int, saves []history.Saved) (history.Boundary, []history.Record, error) {
	h.during()
	return h.Store.MintRewind(ctx, scope, turn, saves)
}

// A rewind whose lease is lost while it runs (stopped past it; another run took the
// session over) changes no file after that: its checks are stale and the files are the
// other run's. It answers session.lease_lost. Calibrated: with the loss ignored, it
// went on and restored the file.
func TestRewindStopsWhenItsLeaseIsLost(t *testing.T) {
	ctx := context.Background()
	root, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	var armed atomic.Bool
	store := leaseTaken{Store: session.NewMemory(), armed: &armed}
	mem := history.NewMemory()
	deps := agent.Deps{Store: store, History: mem, SessionLease: 60 * time.Millisecond,
		Provider: scripted.New(scripted.Script{Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{write("a.txt", "agent\n")}}, {Text: "done"}}})}
	res, err := agent.New(deps).Run(ctx, agent.TaskSpec{Prompt: "write", Root: root, PermissionMode: permission.ModeAcceptEdits})
	must(t, err)
	deps.History = slowSave{Store: mem, during: func() {
		armed.Store(true)
		time.Sleep(200 * time.Millisecond) // several renewals: the loss is seen
	}}
	_, err = agent.New(deps).Rewind(ctx, agent.RewindSpec{SessionID: res.SessionID, ToTurn: res.FirstTurn, Files: true})
	if sema.CodeOf(err) != session.CodeLeaseLost {
		t.Errorf("the rewind after its lease was lost: %v, want %s", err, session.CodeLeaseLost)
	}
	if b, err := os.ReadFile(filepath.Join(root, "a.txt")); err != nil || string(b) != "agent\n" {
		t.Errorf("a.txt after a rewind that lost its lease: %q, %v; want it left to the run that took over", b, err)
	}
}
