package files

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/env/envtest"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/tools"
)

// laneFix is one session's write tools over a temporary root on the host, behind a
// Faulty env, with every hook recorded.
type laneFix struct {
	t     *testing.T
	root  string
	env   *envtest.Faulty
	fence *fence.Fence
	rs    *ReadState
	rec   *laneRec
	lc    LaneConfig
	lane  *lane
	tools map[string]tools.Tool
}

func newLaneFix(t *testing.T, configure ...func(*LaneConfig)) *laneFix {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &laneFix{t: t, root: root, env: envtest.NewFaulty(env.NewHost()), rs: NewReadState(), rec: &laneRec{}}
	f.fence, err = fence.New(context.Background(), fence.Config{Env: f.env, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	f.lc = LaneConfig{Hooks: f.rec.hooks()}
	for _, c := range configure {
		c(&f.lc)
	}
	f.mount(f.rs)
	return f
}

// mount (re)builds the tools for a session with read-state rs.
func (f *laneFix) mount(rs *ReadState) {
	f.rs = rs
	ts := WriteTools(Config{Env: f.env, Fence: f.fence, ReadState: rs}, f.lc)
	f.lane = ts[0].(*writeTool).lane
	f.tools = map[string]tools.Tool{}
	for _, tl := range ts {
		f.tools[tl.Spec().Name] = tl
	}
}

// session returns a second session's tools over the same env and fence.
func (f *laneFix) session() *laneFix {
	g := *f
	g.mount(NewReadState())
	return &g
}

func (f *laneFix) path(rel string) string { return filepath.Join(f.root, rel) }

// put writes a file behind the lane's back.
func (f *laneFix) put(rel, content string) {
	f.t.Helper()
	p := f.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// bytes returns a file's content, or "<missing>".
func (f *laneFix) bytes(rel string) string {
	f.t.Helper()
	b, err := os.ReadFile(f.path(rel))
	if os.IsNotExist(err) {
		return "<missing>"
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

// markRead records a whole-file read of rel as the Read tool does, and returns the
// content it recorded.
func (f *laneFix) markRead(rel string) string {
	f.t.Helper()
	p, err := filepath.EvalSymlinks(f.path(rel))
	if err != nil {
		f.t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		f.t.Fatal(err)
	}
	fi, _ := os.Stat(p)
	f.rs.Record(p, ReadRecord{Size: int64(len(b)), ModTime: fi.ModTime(), Hash: contentHash(b)})
	return string(b)
}

func (f *laneFix) call(tool string, input any) tools.Result {
	return f.callCtx(context.Background(), tool, input)
}

func (f *laneFix) callCtx(ctx context.Context, tool string, input any) tools.Result {
	f.t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		f.t.Fatal(err)
	}
	return f.tools[tool].Run(ctx, raw)
}

// settle waits for FileEdited observers in flight.
func (f *laneFix) settle() { f.lane.observers.Wait() }

// wantCode fails unless r is an error with code (or a success when code is "").
func wantCode(t *testing.T, r tools.Result, code string) {
	t.Helper()
	if code == "" {
		if r.IsError {
			t.Fatalf("want success, got %s: %s", r.Code, r.TextOf())
		}
		return
	}
	if !r.IsError || r.Code != code {
		t.Fatalf("want error %s, got IsError=%v code=%q: %s", code, r.IsError, r.Code, r.TextOf())
	}
}

// laneRec records every hook call; the fn fields replace a hook's default behaviour
// (allow; Track mints a record whose Annul is recorded).
type laneRec struct {
	mu         sync.Mutex
	perm       []PermissionRequest
	before     []BeforeWriteRequest
	track      []TrackEditRequest
	proofs     []Proof
	edited     []FileEditedNotice
	permFn     func(context.Context, PermissionRequest) error
	beforeFn   func(context.Context, BeforeWriteRequest) (BeforeWriteResult, error)
	trackFn    func(context.Context, TrackEditRequest) (TrackEditResult, error)
	editedFn   func(FileEditedNotice)
	annulCalls chan Proof // optional: every Annul call is also sent here
}

func (r *laneRec) recordAnnul(_ context.Context, p Proof) {
	r.mu.Lock()
	r.proofs = append(r.proofs, p)
	ch := r.annulCalls
	r.mu.Unlock()
	if ch != nil {
		ch <- p
	}
}

func (r *laneRec) hooks() Hooks {
	return Hooks{
		Permission: func(ctx context.Context, req PermissionRequest) error {
			r.mu.Lock()
			r.perm = append(r.perm, req)
			fn := r.permFn
			r.mu.Unlock()
			if fn != nil {
				return fn(ctx, req)
			}
			return nil
		},
		BeforeWrite: func(ctx context.Context, req BeforeWriteRequest) (BeforeWriteResult, error) {
			r.mu.Lock()
			r.before = append(r.before, req)
			fn := r.beforeFn
			r.mu.Unlock()
			if fn != nil {
				return fn(ctx, req)
			}
			return BeforeWriteResult{OK: true}, nil
		},
		TrackFileEdit: func(ctx context.Context, req TrackEditRequest) (TrackEditResult, error) {
			r.mu.Lock()
			r.track = append(r.track, req)
			fn := r.trackFn
			r.mu.Unlock()
			if fn != nil {
				return fn(ctx, req)
			}
			return TrackEditResult{OK: true, Annul: r.recordAnnul}, nil
		},
		FileEdited: func(n FileEditedNotice) {
			r.mu.Lock()
			r.edited = append(r.edited, n)
			fn := r.editedFn
			r.mu.Unlock()
			if fn != nil {
				fn(n)
			}
		},
	}
}

// counts returns how many times each hook ran: permission, before-write, track,
// annul, edited.
func (r *laneRec) counts() [5]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return [5]int{len(r.perm), len(r.before), len(r.track), len(r.proofs), len(r.edited)}
}

func (r *laneRec) set(fn func(r *laneRec)) {
	r.mu.Lock()
	fn(r)
	r.mu.Unlock()
}
