package agent

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/subagent"
)

// instantProvider answers every request at once with a final text: the model's time is
// nothing, so a benchmark measures the runner.
type instantProvider struct{}

func (instantProvider) Name() string { return "instant" }

func (instantProvider) Stream(context.Context, *model.Request, func(model.Delta)) (*model.Response, error) {
	return &model.Response{Content: []model.Block{model.TextBlock("done")}, StopReason: model.StopEndTurn}, nil
}

// benchParent prepares a parent leg that has run one turn, as a Task call finds it.
func benchParent(b *testing.B, deps Deps) *leg {
	b.Helper()
	r := New(deps)
	ctx, stop := context.WithCancelCause(context.Background())
	b.Cleanup(func() { stop(nil) })
	l, err := prepare(ctx, &r.deps, TaskSpec{Prompt: "delegate", Root: b.TempDir()}, nil, func(Event) {}, stop, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.finish(ctx, &TaskResult{}, nil, 0) })
	l.turnsRun.Store(1)
	return l
}

// spawn runs one Explore child under parent to its end and checks it completed.
func spawn(b *testing.B, parent *leg, def subagent.Definition) {
	spec, res := parent.childSpec(def, "look around")
	if res != nil {
		b.Fatal(res.TextOf())
	}
	lk := &link{parent: parent, toolUseID: "toolu_bench", def: def, description: "bench", depth: 1}
	r, err := parent.runChild(context.Background(), spec, nil, lk)
	if err != nil || r.Status != sema.StatusCompleted {
		b.Fatalf("child: %v %+v", err, r)
	}
}

// BenchmarkSpawnChild is the cost of one child leg, model time excluded: prepare (mode
// under the parent's ceiling, fence, gate, session, tools, system prompt), one turn with
// an instant model, and the end — with no store, an in-memory store, and SQLite stores
// on disk (the child's session, its leg, its transcript, its lease).
func BenchmarkSpawnChild(b *testing.B) {
	explore, _ := subagent.NewCatalog(subagent.BuiltIns()).Lookup("Explore")
	general, _ := subagent.NewCatalog(subagent.BuiltIns()).Lookup("general-purpose")
	stores := map[string]func(b *testing.B) Deps{
		"no-store": func(*testing.B) Deps { return Deps{Provider: instantProvider{}} },
		"memory": func(b *testing.B) Deps {
			s, h := session.NewMemory(), history.NewMemory()
			b.Cleanup(func() { s.Close(); h.Close() })
			return Deps{Provider: instantProvider{}, Store: s, History: h}
		},
		"sqlite": func(b *testing.B) Deps {
			dir := b.TempDir()
			s, err := session.OpenSQLite(filepath.Join(dir, "sessions.db"))
			if err != nil {
				b.Fatal(err)
			}
			h, err := history.OpenSQLite(filepath.Join(dir, "history.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close(); h.Close() })
			return Deps{Provider: instantProvider{}, Store: s, History: h}
		},
	}
	for _, name := range []string{"no-store", "memory", "sqlite"} {
		for _, def := range []subagent.Definition{explore, general} {
			b.Run(name+"/"+def.Name, func(b *testing.B) {
				deps := stores[name](b)
				deps.Shell = &ShellOptions{Sandbox: "off"}
				parent := benchParent(b, deps)
				b.ReportAllocs()
				for b.Loop() {
					spawn(b, parent, def)
				}
			})
		}
	}
}

// BenchmarkConcurrentChildren runs four Explore children of one parent at once, as
// four Task calls of one turn do; ns/op is per batch of four. Set beside four times
// BenchmarkSpawnChild's figure, it shows what the children's shared locks (the parent's
// event queue, its controller as their ceiling, the store) cost when they run together.
func BenchmarkConcurrentChildren(b *testing.B) {
	explore, _ := subagent.NewCatalog(subagent.BuiltIns()).Lookup("Explore")
	for _, n := range []int{1, 4} {
		b.Run(map[int]string{1: "1-child", 4: "4-children"}[n], func(b *testing.B) {
			s := session.NewMemory()
			b.Cleanup(func() { s.Close() })
			parent := benchParent(b, Deps{Provider: instantProvider{}, Store: s, Shell: &ShellOptions{Sandbox: "off"}})
			b.ReportAllocs()
			for b.Loop() {
				var wg sync.WaitGroup
				for range n {
					wg.Go(func() { spawn(b, parent, explore) })
				}
				wg.Wait()
				parent.flush(1) // the events the children queued, as the loop would
			}
		})
	}
}
