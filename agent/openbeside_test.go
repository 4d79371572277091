package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/hooks"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/tools"
)

// openingStore is a session store whose first writes of a new session the test holds
// (Create waits for release) or fails (fail names the step: create, lease or leg).
type openingStore struct {
	session.Store
	release chan struct{}
	delay   time.Duration
	fail    string
	failErr error // what the failing step returns; nil: errOpening
	created atomic.Bool
}

var errOpening = errors.New("the disk is full")

func (s *openingStore) failure() error {
	if s.failErr != nil {
		return s.failErr
	}
	return errOpening
}

func (s *openingStore) Create(ctx context.Context, in session.Session) (session.Session, error) {
	if s.release != nil {
		select {
		case <-s.release:
		case <-time.After(10 * time.Second):
			return session.Session{}, errors.New("Create was never released")
		}
	}
	time.Sleep(s.delay)
	if s.fail == "create" {
		return session.Session{}, s.failure()
	}
	out, err := s.Store.Create(ctx, in)
	s.created.Store(err == nil)
	return out, err
}

func (s *openingStore) AcquireLease(ctx context.Context, id, holder string, ttl time.Duration) (session.Lease, error) {
	if s.fail == "lease" {
		return session.Lease{}, s.failure()
	}
	return s.Store.AcquireLease(ctx, id, holder, ttl)
}

func (s *openingStore) StartLeg(ctx context.Context, id string) (session.Leg, error) {
	if s.fail == "leg" {
		return session.Leg{}, s.failure()
	}
	return s.Store.StartLeg(ctx, id)
}

// failingOpener is an openingStore that opens a session in one call, and fails it.
type failingOpener struct{ *openingStore }

func (f failingOpener) CreateLeased(context.Context, session.Session, string, time.Duration) (session.Session, session.Leg, error) {
	return session.Session{}, session.Leg{}, f.failure()
}

// announcing is a provider that closes first when the leg's first request goes out.
type announcing struct {
	model.Provider
	first chan struct{}
	once  sync.Once
	n     atomic.Int32
	// hold keeps the first request open until its context ends.
	hold bool
}

func (p *announcing) Stream(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	p.n.Add(1)
	p.once.Do(func() { close(p.first) })
	if p.hold {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return p.Provider.Stream(ctx, req, onDelta)
}

func announce(turns ...scripted.Turn) *announcing {
	return &announcing{Provider: scripted.New(scripted.Script{Turns: turns}), first: make(chan struct{})}
}

// A new session that sema names is stored beside the leg's first request: the request
// goes out while the session's Create is still held and its file-history store is still
// opening (history.Deferred: a new scope holds no boundaries, so none is asked for), and
// the session, its leg and its transcript are whole afterwards.
func TestNewSessionStoredBesideTheFirstRequest(t *testing.T) {
	t.Parallel()
	mem := session.NewMemory()
	store := &openingStore{Store: mem, release: make(chan struct{})}
	hist := history.Deferred(func() (history.Store, error) {
		<-store.release
		return history.NewMemory(), nil
	})
	p := announce(scripted.Turn{Text: "done"})
	r := agent.New(agent.Deps{Provider: p, Store: store, History: hist})
	type outcome struct {
		res *agent.TaskResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := r.Run(context.Background(), spec(t))
		done <- outcome{res, err}
	}()
	select {
	case <-p.first:
		// The request is out; the session is not stored yet.
		if store.created.Load() {
			t.Fatal("the session was stored before the first request went out")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first request waited for the new session to be stored")
	}
	close(store.release)
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.res.Status != sema.StatusCompleted || o.res.Result != "done" {
		t.Fatalf("status %s, result %q, error %v", o.res.Status, o.res.Result, o.res.Error)
	}
	ctx := context.Background()
	if _, err := mem.Get(ctx, o.res.SessionID); err != nil {
		t.Fatalf("the session %q is not stored: %v", o.res.SessionID, err)
	}
	legs, err := mem.Legs(ctx, o.res.SessionID)
	if err != nil || len(legs) != 1 || legs[0].Status != sema.StatusCompleted {
		t.Fatalf("legs %+v, %v: want one, completed", legs, err)
	}
	chain, err := mem.Transcript(ctx, o.res.SessionID, "")
	if err != nil || len(chain) != 2 {
		t.Fatalf("transcript of %d entries (%v), want the prompt and the answer", len(chain), err)
	}
	for _, e := range chain {
		if e.LegID != legs[0].ID {
			t.Fatalf("entry %s (%s) belongs to leg %q, not to the leg %s", e.ID, e.Kind, e.LegID, legs[0].ID)
		}
	}
	// The lease was released: another holder takes the session at once.
	if _, err := mem.AcquireLease(ctx, o.res.SessionID, "another run", time.Minute); err != nil {
		t.Fatalf("the session's lease was not released: %v", err)
	}
}

// A new session whose first writes fail stops its leg before any tool runs: the first
// response is dropped, nothing of the leg is stored, the lease is not left held, and
// the result names no session to continue. A store's coded refusal (store.locked) is
// the leg's error as it is; any other failure is session.record_failed wrapping it.
func TestNewSessionThatCannotBeStoredRunsNothing(t *testing.T) {
	t.Parallel()
	locked := sema.Errorf("store.locked", "the state database is locked by another process; try again when it is done")
	for _, step := range []string{"create", "lease", "leg", "create-coded", "leg-coded", "opener", "opener-coded"} {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			mem := session.NewMemory()
			store := &openingStore{Store: mem, fail: strings.TrimSuffix(step, "-coded")}
			wantCode, wantErr := agent.CodeSessionRecordFailed, errOpening
			if strings.HasSuffix(step, "-coded") {
				store.failErr, wantCode, wantErr = locked, "store.locked", locked
			}
			var ran atomic.Bool
			tool := &fakeTool{name: "Touch", effect: tools.EffectRead, run: func(context.Context, json.RawMessage) tools.Result {
				ran.Store(true)
				return tools.Text("touched")
			}}
			p := announce(scripted.Turn{ToolCalls: []scripted.ToolCall{call("Touch", `{}`)}}, scripted.Turn{Text: "done"})
			var deps session.Store = store
			if store.fail == "opener" {
				deps = failingOpener{store}
			}
			r := agent.New(agent.Deps{Provider: p, Store: deps, Tools: []tools.Tool{tool}})
			res, err := r.Run(context.Background(), spec(t))
			if err != nil {
				t.Fatal(err)
			}
			if ran.Load() {
				t.Fatal("a tool ran in a leg whose session could not be stored")
			}
			if res.Status != sema.StatusError || sema.CodeOf(res.Error) != wantCode || !errors.Is(res.Error, wantErr) {
				t.Fatalf("status %s, error %v: want %s, the store's failure", res.Status, res.Error, wantCode)
			}
			if res.SessionID != "" {
				t.Fatalf("the result names session %q, which was never stored whole", res.SessionID)
			}
			if n := p.n.Load(); n != 1 {
				t.Fatalf("%d requests, want the first only", n)
			}
			ctx := context.Background()
			list, err := mem.List(ctx, session.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range list {
				if legs, _ := mem.Legs(ctx, s.ID); len(legs) != 0 {
					t.Fatalf("a leg was stored: %+v", legs)
				}
				if chain, _ := mem.Transcript(ctx, s.ID, ""); len(chain) != 0 {
					t.Fatalf("%d entries were stored", len(chain))
				}
				if _, err := mem.AcquireLease(ctx, s.ID, "another run", time.Minute); err != nil {
					t.Fatalf("the session's lease was left held: %v", err)
				}
			}
		})
	}
}

// A SessionStart hook is told the session's id and may look it up: the new session is
// stored before the hook runs, even when storing it is slow.
func TestSessionStartHookFindsTheNewSession(t *testing.T) {
	t.Parallel()
	mem := session.NewMemory()
	store := &openingStore{Store: mem, delay: 50 * time.Millisecond}
	var found atomic.Int32 // 1 found, 2 missing
	lookup := hooks.Func(func(ctx context.Context, in hooks.Input) (hooks.Output, error) {
		if _, err := mem.Get(ctx, in.SessionID); err != nil {
			found.Store(2)
		} else {
			found.Store(1)
		}
		return hooks.Output{}, nil
	})
	r := agent.New(agent.Deps{Provider: announce(scripted.Turn{Text: "done"}), Store: store,
		Hooks: &agent.Hooks{Events: []hooks.Hook{{Event: hooks.SessionStart, Matcher: "startup", Func: lookup, Source: "test"}}}})
	res, err := r.Run(context.Background(), spec(t))
	if err != nil || res.Status != sema.StatusCompleted {
		t.Fatalf("%v, %+v", err, res)
	}
	if found.Load() != 1 {
		t.Fatalf("the SessionStart hook did not find its session (%d)", found.Load())
	}
}

// A leg cancelled while its new session is still being stored ends that session's leg
// as cancelled and frees the session, once the session is stored.
func TestCancelWhileTheNewSessionIsStored(t *testing.T) {
	t.Parallel()
	mem := session.NewMemory()
	store := &openingStore{Store: mem, release: make(chan struct{})}
	p := announce(scripted.Turn{Text: "done"})
	p.hold = true
	r := agent.New(agent.Deps{Provider: p, Store: store})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-p.first
		cancel()
		time.Sleep(20 * time.Millisecond) // the leg sees its cancellation first
		close(store.release)
	}()
	res, err := r.Run(ctx, spec(t))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sema.StatusCancelled {
		t.Fatalf("status %s (%v), want cancelled", res.Status, res.Error)
	}
	bg := context.Background()
	legs, err := mem.Legs(bg, res.SessionID)
	if err != nil || len(legs) != 1 || legs[0].Status != sema.StatusCancelled {
		t.Fatalf("legs %+v, %v: want one, ended cancelled", legs, err)
	}
	if _, err := mem.AcquireLease(bg, res.SessionID, "another run", time.Minute); err != nil {
		t.Fatalf("the session's lease was not released: %v", err)
	}
}

// callCounter counts a session store's calls that open a session.
type callCounter struct {
	session.Store
	mu sync.Mutex
	n  map[string]int
}

func (c *callCounter) count(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[name]++
}

func (c *callCounter) calls() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}

func (c *callCounter) Create(ctx context.Context, s session.Session) (session.Session, error) {
	c.count("Create")
	return c.Store.Create(ctx, s)
}

func (c *callCounter) AcquireLease(ctx context.Context, id, holder string, ttl time.Duration) (session.Lease, error) {
	c.count("AcquireLease")
	return c.Store.AcquireLease(ctx, id, holder, ttl)
}

func (c *callCounter) StartLeg(ctx context.Context, id string) (session.Leg, error) {
	c.count("StartLeg")
	return c.Store.StartLeg(ctx, id)
}

// openerCounter is a callCounter whose store opens a session in one call.
type openerCounter struct{ *callCounter }

func (o openerCounter) CreateLeased(ctx context.Context, s session.Session, holder string, ttl time.Duration) (session.Session, session.Leg, error) {
	o.count("CreateLeased")
	return o.Store.(session.Opener).CreateLeased(ctx, s, holder, ttl)
}

// A new session is stored with its lease and first leg in one call when the store can
// (session.Opener), and as Create, AcquireLease and StartLeg when it cannot — for a
// session sema names and for one the caller names alike; either way the leg ends
// recorded and the session free.
func TestNewSessionOpenedInOneCall(t *testing.T) {
	t.Parallel()
	for _, opener := range []bool{true, false} {
		for _, named := range []bool{true, false} {
			t.Run(fmt.Sprintf("opener=%v,named=%v", opener, named), func(t *testing.T) {
				t.Parallel()
				mem := session.NewMemory()
				c := &callCounter{Store: mem, n: map[string]int{}}
				var store session.Store = c
				if opener {
					store = openerCounter{c}
				}
				r := agent.New(agent.Deps{Provider: announce(scripted.Turn{Text: "done"}), Store: store})
				sp := spec(t)
				if named {
					sp.SessionID = session.NewID()
				}
				res, err := r.Run(context.Background(), sp)
				if err != nil || res.Status != sema.StatusCompleted {
					t.Fatalf("%v, %+v", err, res)
				}
				want := map[string]int{"Create": 1, "AcquireLease": 1, "StartLeg": 1}
				if opener {
					want = map[string]int{"CreateLeased": 1}
				}
				if got := c.calls(); !maps.Equal(got, want) {
					t.Fatalf("calls %v, want %v", got, want)
				}
				if named && res.SessionID != sp.SessionID {
					t.Fatalf("session %s, want the named %s", res.SessionID, sp.SessionID)
				}
				ctx := context.Background()
				legs, err := mem.Legs(ctx, res.SessionID)
				if err != nil || len(legs) != 1 || legs[0].Status != sema.StatusCompleted {
					t.Fatalf("legs %+v, %v", legs, err)
				}
				if _, err := mem.AcquireLease(ctx, res.SessionID, "another run", time.Minute); err != nil {
					t.Fatalf("the session's lease was not released: %v", err)
				}
			})
		}
	}
}
