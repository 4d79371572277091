package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
)

// txCounter counts the write transactions of the stores it wraps.
type txCounter struct{ session, history atomic.Int64 }

// countingSessions counts the session store's write transactions. It forwards a batch
// append when the store it wraps has one, as one transaction.
type countingSessions struct {
	session.Store
	n *txCounter
}

func (s countingSessions) w() { s.n.session.Add(1) }

func (s countingSessions) Create(ctx context.Context, in session.Session) (session.Session, error) {
	s.w()
	return s.Store.Create(ctx, in)
}

func (s countingSessions) Update(ctx context.Context, id string, fn func(*session.Session) error) (session.Session, error) {
	s.w()
	return s.Store.Update(ctx, id, fn)
}

func (s countingSessions) StartLeg(ctx context.Context, id string) (session.Leg, error) {
	s.w()
	return s.Store.StartLeg(ctx, id)
}

func (s countingSessions) EndLeg(ctx context.Context, id string, st sema.Status) (session.Leg, error) {
	s.w()
	return s.Store.EndLeg(ctx, id, st)
}

func (s countingSessions) Append(ctx context.Context, e session.Entry) (string, error) {
	s.w()
	return s.Store.Append(ctx, e)
}

// AppendBatch forwards a batch as one transaction, or appends one entry at a time when the
// wrapped store has no batch.
func (s countingSessions) AppendBatch(ctx context.Context, es []session.Entry) ([]string, error) {
	type batcher interface {
		AppendBatch(context.Context, []session.Entry) ([]string, error)
	}
	if b, ok := s.Store.(batcher); ok {
		s.w()
		return b.AppendBatch(ctx, es)
	}
	var ids []string
	for _, e := range es {
		id, err := s.Append(ctx, e)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func (s countingSessions) AcquireLease(ctx context.Context, id, holder string, ttl time.Duration) (session.Lease, error) {
	s.w()
	return s.Store.AcquireLease(ctx, id, holder, ttl)
}

func (s countingSessions) RenewLease(ctx context.Context, id, holder string, ttl time.Duration) (session.Lease, error) {
	s.w()
	return s.Store.RenewLease(ctx, id, holder, ttl)
}

func (s countingSessions) ReleaseLease(ctx context.Context, id, holder string) error {
	s.w()
	return s.Store.ReleaseLease(ctx, id, holder)
}

// countingHistory counts the file-history store's write transactions.
type countingHistory struct {
	history.Store
	n *txCounter
}

func (h countingHistory) MintBoundary(ctx context.Context, scope string, turn int) (history.Boundary, error) {
	h.n.history.Add(1)
	return h.Store.MintBoundary(ctx, scope, turn)
}

func (h countingHistory) Insert(ctx context.Context, rec history.Record, content []byte) (history.Record, bool, error) {
	h.n.history.Add(1)
	return h.Store.Insert(ctx, rec, content)
}

func (h countingHistory) SetAfter(ctx context.Context, id int64, after string) error {
	h.n.history.Add(1)
	return h.Store.SetAfter(ctx, id, after)
}

func (h countingHistory) SetPending(ctx context.Context, id int64, after string) error {
	h.n.history.Add(1)
	return h.Store.SetPending(ctx, id, after)
}

func (h countingHistory) Delete(ctx context.Context, id int64) error {
	h.n.history.Add(1)
	return h.Store.Delete(ctx, id)
}

// turnProvider answers every request with one tool call that call makes of its turn
// number, so a benchmark runs as many turns as it likes.
type turnProvider struct {
	n    atomic.Int64
	call func(turn int64) model.Block
}

func (*turnProvider) Name() string { return "turns" }

func (p *turnProvider) Stream(ctx context.Context, req *model.Request, _ func(model.Delta)) (*model.Response, error) {
	return &model.Response{Content: []model.Block{p.call(p.n.Add(1))}, StopReason: model.StopToolUse}, nil
}

// BenchmarkTurnWithSQLiteStore is the store's cost per turn through the runner: the
// session store and file history in one SQLite file on disk (as sema keeps them), a
// provider that answers at once, and per turn one Read of a small file ("read") or one
// Write of a new file ("write"). b.N turns run in one task, so the transcript grows as in
// a real run. It reports the write transactions per turn of each store, counted by
// wrappers around them.
func BenchmarkTurnWithSQLiteStore(b *testing.B) {
	for _, kind := range []string{"read", "write"} {
		b.Run(kind, func(b *testing.B) {
			dir := b.TempDir()
			root := filepath.Join(dir, "work")
			if err := os.Mkdir(root, 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("alpha\nbeta\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			ss, err := session.OpenSQLite(filepath.Join(dir, "sema.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer ss.Close()
			hs, err := history.NewSQLite(b.Context(), ss.DB())
			if err != nil {
				b.Fatal(err)
			}
			n := &txCounter{}
			p := &turnProvider{call: func(turn int64) model.Block {
				if kind == "read" {
					return model.Block{Kind: model.KindToolUse, ID: fmt.Sprint("toolu_", turn), Name: "Read", Input: json.RawMessage(`{"file_path":"a.txt"}`)}
				}
				in, _ := json.Marshal(map[string]string{"file_path": fmt.Sprintf("f%d.txt", turn), "content": "turn\n"})
				return model.Block{Kind: model.KindToolUse, ID: fmt.Sprint("toolu_", turn), Name: "Write", Input: in}
			}}
			r := agent.New(agent.Deps{Provider: p, Store: countingSessions{ss, n}, History: countingHistory{hs, n}})
			b.ReportAllocs()
			b.ResetTimer()
			res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: root, MaxTurns: b.N, PermissionMode: permission.ModeAcceptEdits})
			if err != nil {
				b.Fatal(err)
			}
			if res.Status != sema.StatusMaxTurns || res.NumTurns != b.N {
				b.Fatalf("status %s after %d turns: %v", res.Status, res.NumTurns, res.Error)
			}
			b.ReportMetric(float64(n.session.Load())/float64(b.N), "session-tx/turn")
			b.ReportMetric(float64(n.history.Load())/float64(b.N), "history-tx/turn")
		})
	}
}
