package recorder

import (
	"context"
	"errors"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/internal/transcript"
	"github.com/sema-agent/sema/session"
)

// store is a session store that counts its commits and can refuse them.
type store struct {
	*session.Memory
	commits int
	refuse  []error // the errors the next commits return, in order
}

func (s *store) next() error {
	s.commits++
	if len(s.refuse) == 0 {
		return nil
	}
	err := s.refuse[0]
	s.refuse = s.refuse[1:]
	return err
}

func (s *store) Append(ctx context.Context, e session.Entry) (string, error) {
	if err := s.next(); err != nil {
		return "", err
	}
	return s.Memory.Append(ctx, e)
}

func (s *store) AppendBatch(ctx context.Context, es []session.Entry) ([]string, error) {
	if err := s.next(); err != nil {
		return nil, err
	}
	return s.Memory.AppendBatch(ctx, es)
}

// single hides AppendBatch: a store that commits one entry at a time.
type single struct{ session.Store }

func open(t *testing.T, st session.Store, mem *session.Memory, branchFrom string, reclaim func(context.Context) error) (*Recorder, string) {
	t.Helper()
	ctx := context.Background()
	s, err := mem.Create(ctx, session.Session{Root: "/r"})
	if err != nil {
		t.Fatal(err)
	}
	leg, err := mem.StartLeg(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	r := &Recorder{}
	r.Open(Leg{Store: st, SessionID: s.ID, LegID: leg.ID, BranchFrom: branchFrom, Reclaim: reclaim})
	return r, s.ID
}

func kinds(t *testing.T, mem *session.Memory, id string) []string {
	t.Helper()
	chain, err := mem.Transcript(context.Background(), id, "")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range chain {
		out = append(out, e.Kind)
	}
	return out
}

func TestUnopenedRecordsNothing(t *testing.T) {
	var r Recorder
	if id, ok := r.Record(context.Background(), "user", 1); id != "" || !ok {
		t.Errorf("an unopened recorder: %q %v", id, ok)
	}
	if !r.Flush(context.Background()) || !r.FlushBeforeRequest(context.Background())() || r.Err() != nil {
		t.Error("an unopened recorder reports a failure")
	}
}

// Queued entries commit with the next entry that must be durable, in one transaction.
func TestLaterCommitsWithRecord(t *testing.T) {
	mem := session.NewMemory()
	st := &store{Memory: mem}
	r, id := open(t, st, mem, "", nil)
	ctx := context.Background()
	r.Later(transcript.KindUser, map[string]string{})
	r.Later(transcript.KindAssistant, transcript.Assistant{Turn: 1})
	if st.commits != 0 {
		t.Fatalf("queued entries committed %d times", st.commits)
	}
	got, ok := r.Record(ctx, transcript.KindCallStarted, transcript.CallStarted{ID: "c"})
	if !ok || got == "" || st.commits != 1 {
		t.Fatalf("record: %q %v after %d commits", got, ok, st.commits)
	}
	if k := kinds(t, mem, id); len(k) != 3 || k[0] != "user" || k[2] != "call_started" {
		t.Errorf("stored %v", k)
	}
	if !r.Flush(ctx) || st.commits != 1 {
		t.Errorf("a flush with nothing queued committed (%d)", st.commits)
	}
}

// A branch's first entry names the entry it follows; the ones after follow it.
func TestBranchOneAtATime(t *testing.T) {
	mem := session.NewMemory()
	st := &store{Memory: mem}
	r, id := open(t, single{st}, mem, "", nil)
	ctx := context.Background()
	first, _ := r.Record(ctx, "a", 1)
	r.Record(ctx, "b", 2)
	r2 := &Recorder{}
	r2.Open(Leg{Store: single{st}, SessionID: id, BranchFrom: first})
	r2.Later("c", 3)
	r2.Later("d", 4)
	if !r2.Flush(ctx) {
		t.Fatal(r2.Err())
	}
	if k := kinds(t, mem, id); len(k) != 3 || k[0] != "a" || k[1] != "c" || k[2] != "d" {
		t.Errorf("the branch's chain is %v, want a c d", k)
	}
}

// A write that fails stops the recorder: nothing is tried after it.
func TestFailsClosed(t *testing.T) {
	mem := session.NewMemory()
	st := &store{Memory: mem, refuse: []error{errors.New("disk full")}}
	r, _ := open(t, st, mem, "", nil)
	ctx := context.Background()
	if _, ok := r.Record(ctx, "user", 1); ok {
		t.Fatal("a refused entry reports stored")
	}
	err := r.Err()
	if err == nil || err.Code != CodeRecordFailed || err.Detail["kind"] != "user" {
		t.Fatalf("err %v", err)
	}
	if _, ok := r.Record(ctx, "user", 2); ok || st.commits != 1 {
		t.Errorf("recorded after a failure (%d commits)", st.commits)
	}
	var u Recorder
	u.Open(Leg{Store: st})
	if _, ok := u.Record(ctx, "user", make(chan int)); ok || u.Err().Code != CodeRecordFailed {
		t.Errorf("an entry that cannot be encoded: %v", u.Err())
	}
}

func TestLeaseLost(t *testing.T) {
	ctx := context.Background()
	lost := session.LeaseLost("s", "h")
	// An expired lease, renewed: the entries are tried once more.
	mem := session.NewMemory()
	st := &store{Memory: mem, refuse: []error{lost}}
	renewed := 0
	r, id := open(t, st, mem, "", func(context.Context) error { renewed++; return nil })
	if _, ok := r.Record(ctx, "user", 1); !ok || renewed != 1 || len(kinds(t, mem, id)) != 1 {
		t.Errorf("after a renewal: renewed %d, err %v", renewed, r.Err())
	}
	// Taken by another run: the leg stops.
	st = &store{Memory: mem, refuse: []error{lost}}
	r, _ = open(t, st, mem, "", func(context.Context) error { return lost })
	if _, ok := r.Record(ctx, "user", 1); ok || !sema.IsCode(r.Err(), session.CodeLeaseLost) {
		t.Errorf("a lease another run took: err %v", r.Err())
	}
	// A leg whose context ended for the lost lease writes nothing.
	st = &store{Memory: mem}
	r, _ = open(t, st, mem, "", nil)
	cctx, cancel := context.WithCancelCause(ctx)
	cancel(lost)
	if _, ok := r.Record(cctx, "user", 1); ok || st.commits != 0 || !sema.IsCode(r.Err(), session.CodeLeaseLost) {
		t.Errorf("after the lease was lost: %d commits, err %v", st.commits, r.Err())
	}
}

// Only prompts are committed concurrently with the request; anything else first.
func TestFlushBeforeRequest(t *testing.T) {
	ctx := context.Background()
	mem := session.NewMemory()
	st := &store{Memory: mem}
	r, id := open(t, st, mem, "", nil)
	r.Later(transcript.KindUser, 1)
	stored := r.FlushBeforeRequest(ctx)
	if stored == nil || !stored() || !stored() || len(kinds(t, mem, id)) != 1 {
		t.Fatalf("the prompt: %v", r.Err())
	}
	st.refuse = []error{errors.New("down")}
	r.Later(transcript.KindToolResults, 2)
	if r.FlushBeforeRequest(ctx) != nil {
		t.Error("tool results that could not be stored before the request report stored")
	}
	r2, _ := open(t, &store{Memory: mem, refuse: []error{errors.New("down")}}, mem, "", nil)
	r2.Later(transcript.KindUser, 1)
	if stored := r2.FlushBeforeRequest(ctx); stored == nil || stored() {
		t.Error("a prompt that could not be stored reports stored")
	}
}
