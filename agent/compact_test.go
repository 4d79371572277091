package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model"
)

// longTask is a model for a long task: every turn reads one of five files of 3 KB and
// writes a new file every 50th turn, with a paragraph of reasoning each time; turn 300
// answers. A summary request (the compaction's) is answered with a summary. It reports
// usage as a provider does (the request's size), and records the size of every request.
type longTask struct {
	turns int
	mu    sync.Mutex
	n     int
	sizes []int64 // estimated tokens of every turn request
	sums  int
}

func (*longTask) Name() string { return "long" }

func reqTokens(req *model.Request) int64 {
	n := len(req.System)
	for _, m := range req.Messages {
		for _, b := range m.Content {
			n += len(b.Text) + len(b.Input)
			for _, c := range b.Content {
				n += len(c.Text)
			}
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	return int64(n / 4)
}

func (p *longTask) Stream(ctx context.Context, req *model.Request, _ func(model.Delta)) (*model.Response, error) {
	size := reqTokens(req)
	usage := model.Usage{InputTokens: size, OutputTokens: 120}
	p.mu.Lock()
	defer p.mu.Unlock()
	if strings.Contains(req.System, "summarising a conversation") {
		p.sums++
		return &model.Response{Content: []model.Block{model.TextBlock(fmt.Sprintf("Summary %d: reading the five files in turn and writing out-N.txt every 50 turns; at turn %d of %d.", p.sums, p.n, p.turns))},
			StopReason: model.StopEndTurn, Usage: usage}, nil
	}
	p.n++
	p.sizes = append(p.sizes, size)
	if p.n >= p.turns {
		return &model.Response{Content: []model.Block{model.TextBlock("finished")}, StopReason: model.StopEndTurn, Usage: usage}, nil
	}
	reasoning := model.TextBlock(fmt.Sprintf("Turn %d. %s", p.n, strings.Repeat("Checking the next file against the notes so far. ", 8)))
	var call model.Block
	if p.n%50 == 0 {
		in, _ := json.Marshal(map[string]string{"file_path": fmt.Sprintf("out-%d.txt", p.n), "content": fmt.Sprintf("written at turn %d\n", p.n)})
		call = model.Block{Kind: model.KindToolUse, ID: fmt.Sprintf("w%d", p.n), Name: "Write", Input: in}
	} else {
		in, _ := json.Marshal(map[string]string{"file_path": fmt.Sprintf("f%d.txt", p.n%5)})
		call = model.Block{Kind: model.KindToolUse, ID: fmt.Sprintf("r%d", p.n), Name: "Read", Input: in}
	}
	return &model.Response{Content: []model.Block{reasoning, call}, StopReason: model.StopToolUse, Usage: usage}, nil
}

// The acceptance run: a 300-turn task against a model with a 20k-token window
// completes, compacting as it goes; no request passes the window; the transcript keeps
// the compaction markers; a rewind across a compaction restores the files.
func TestLongTaskCompactsToFitTheWindow(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	for i := range 5 {
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("f%d.txt", i)), []byte(strings.Repeat(fmt.Sprintf("line of file %d\n", i), 200)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := &longTask{turns: 300}
	r := agent.New(agent.Deps{Provider: p, Store: st.sessions, History: st.history, Context: &agent.ContextOptions{Window: 20_000}})
	res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "work through the files", Root: root, PermissionMode: "acceptEdits"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sema.StatusCompleted || res.Result != "finished" || res.NumTurns != 300 {
		t.Fatalf("%s %q after %d turns: %v", res.Status, res.Result, res.NumTurns, res.Error)
	}
	var largest int64
	for _, s := range p.sizes {
		largest = max(largest, s)
	}
	if largest >= 20_000 {
		t.Fatalf("a request of %d tokens passed the 20k window", largest)
	}
	kinds := map[string]int{}
	for _, c := range res.Compactions {
		kinds[c.Kind]++
		if c.TokensAfter >= c.TokensBefore {
			t.Errorf("a compaction that did not shrink the conversation: %+v", c)
		}
	}
	if kinds["clear"] == 0 || kinds["summary"] == 0 || p.sums != kinds["summary"] {
		t.Fatalf("compactions %v, summary requests %d", kinds, p.sums)
	}
	t.Logf("largest request %d tokens; compactions %v", largest, kinds)
	chain, err := st.sessions.Transcript(context.Background(), res.SessionID, "")
	if err != nil {
		t.Fatal(err)
	}
	markers := 0
	for _, e := range chain {
		if e.Kind == "compaction" {
			markers++
		}
	}
	if markers != len(res.Compactions) {
		t.Fatalf("%d compaction markers in the transcript, %d compactions", markers, len(res.Compactions))
	}
	// Rewind to turn 120, across compactions: the files written at 150, 200, 250 go; those
	// of 50 and 100 stay.
	if _, err := r.Rewind(context.Background(), agent.RewindSpec{SessionID: res.SessionID, ToTurn: 120, Files: true}); err != nil {
		t.Fatal(err)
	}
	for turn, want := range map[int]bool{50: true, 100: true, 150: false, 200: false, 250: false} {
		_, err := os.Stat(filepath.Join(root, fmt.Sprintf("out-%d.txt", turn)))
		if (err == nil) != want {
			t.Errorf("out-%d.txt exists=%v after rewinding to turn 120, want %v", turn, err == nil, want)
		}
	}
	// A resume continues from the compacted conversation: its first request is small.
	p2 := &longTask{turns: 1}
	r2 := agent.New(agent.Deps{Provider: p2, Store: st.sessions, History: st.history, Context: &agent.ContextOptions{Window: 20_000}})
	if _, err := r2.Run(context.Background(), agent.TaskSpec{Prompt: "one more", Root: root, Resume: &agent.Resume{SessionID: res.SessionID}}); err != nil {
		t.Fatal(err)
	}
	if p2.sizes[0] >= 20_000 {
		t.Fatalf("the resumed leg's request is %d tokens: the compaction was not replayed", p2.sizes[0])
	}
}

// failingSummary refuses the summary request.
type failingSummary struct{ longTask }

func (p *failingSummary) Stream(ctx context.Context, req *model.Request, d func(model.Delta)) (*model.Response, error) {
	if strings.Contains(req.System, "summarising a conversation") {
		return nil, sema.Errorf(model.CodeOverloaded, "busy")
	}
	return p.longTask.Stream(ctx, req, d)
}

// A compaction whose summary request fails stops the leg with a code and leaves the
// transcript without a half-written compaction.
func TestFailedCompactionStopsTheLegAndKeepsTheTranscript(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	for i := range 5 {
		os.WriteFile(filepath.Join(root, fmt.Sprintf("f%d.txt", i)), []byte(strings.Repeat("x", 3000)), 0o644)
	}
	p := &failingSummary{longTask{turns: 300}}
	r := agent.New(agent.Deps{Provider: p, Store: st.sessions, Context: &agent.ContextOptions{Window: 8_000}})
	res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sema.StatusError || sema.CodeOf(res.Error) != agent.CodeCompactionFailed {
		t.Fatalf("%s %v", res.Status, res.Error)
	}
	chain, _ := st.sessions.Transcript(context.Background(), res.SessionID, "")
	for _, e := range chain {
		var c struct{ Kind string }
		if e.Kind == "compaction" && json.Unmarshal(e.Payload, &c) == nil && c.Kind == "summary" {
			t.Fatal("a summary compaction was recorded though its request failed")
		}
	}
}

// A provider that refuses a request as too long gets the conversation compacted and the
// request once more, even with no window declared.
func TestOverflowCompactsAndRetries(t *testing.T) {
	t.Parallel()
	p := &overflowing{limit: 9_000}
	root := t.TempDir()
	for i := range 5 {
		os.WriteFile(filepath.Join(root, fmt.Sprintf("f%d.txt", i)), []byte(strings.Repeat("y", 3000)), 0o644)
	}
	r := agent.New(agent.Deps{Provider: p})
	res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sema.StatusCompleted || len(res.Compactions) == 0 || res.Compactions[0].Reason != "overflow" {
		t.Fatalf("%s %v %+v", res.Status, res.Error, res.Compactions)
	}
}

// overflowing refuses requests over limit tokens, as a provider does.
type overflowing struct {
	longTask
	limit int64
}

func (p *overflowing) Stream(ctx context.Context, req *model.Request, d func(model.Delta)) (*model.Response, error) {
	if reqTokens(req) > p.limit {
		return nil, sema.Errorf(model.CodeContextTooLong, "prompt is too long")
	}
	p.longTask.turns = 40
	return p.longTask.Stream(ctx, req, d)
}

// Runner.Compact compacts a stored session on request; the next resume starts from it.
func TestManualCompact(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	for i := range 5 {
		os.WriteFile(filepath.Join(root, fmt.Sprintf("f%d.txt", i)), []byte(strings.Repeat("z", 3000)), 0o644)
	}
	p := &longTask{turns: 12}
	r := agent.New(agent.Deps{Provider: p, Store: st.sessions})
	res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: root})
	if err != nil || res.Status != sema.StatusCompleted {
		t.Fatalf("%v %+v", err, res)
	}
	info, err := r.Compact(context.Background(), res.SessionID, "keep the file names")
	if err != nil {
		t.Fatal(err)
	}
	if info.Kind != "summary" || info.Reason != "manual" || info.TokensAfter >= info.TokensBefore || p.sums != 1 {
		t.Fatalf("%+v, %d summaries", info, p.sums)
	}
	if _, err := r.Compact(context.Background(), "no-such-session", ""); sema.CodeOf(err) != "session.not_found" {
		t.Fatalf("unknown session: %v", err)
	}
}

// gapTimer wraps a provider and measures the engine's time before a turn's request:
// from the previous answer's return to this request's arrival (the tools, the
// transcript, the compaction check and the request's assembly), at the turns asked.
type gapTimer struct {
	inner   model.Provider
	at      map[int]bool
	n       int
	last    int64
	gaps    map[int]int64
	nowFunc func() int64
}

func (g *gapTimer) Name() string { return "gap" }

func (g *gapTimer) Stream(ctx context.Context, req *model.Request, d func(model.Delta)) (*model.Response, error) {
	now := g.nowFunc()
	if !strings.Contains(req.System, "summarising a conversation") {
		g.n++
		if g.at[g.n] {
			g.gaps[g.n] += now - g.last
		}
	}
	resp, err := g.inner.Stream(ctx, req, d)
	g.last = g.nowFunc()
	return resp, err
}

// BenchmarkTurnCostAsTheTaskGrows is the engine's cost of turn 10 and of turn 300 of a
// scripted task that reads a 3 KB file every turn (model time excluded), with the
// conversation compacted to a 20k window, and without compaction for comparison.
func BenchmarkTurnCostAsTheTaskGrows(b *testing.B) {
	for _, window := range []int{20_000, 0} {
		name := "compacted-20k"
		if window == 0 {
			name = "uncompacted"
		}
		b.Run(name, func(b *testing.B) {
			root := b.TempDir()
			for i := range 5 {
				os.WriteFile(filepath.Join(root, fmt.Sprintf("f%d.txt", i)), []byte(strings.Repeat(fmt.Sprintf("line of file %d\n", i), 200)), 0o644)
			}
			g := &gapTimer{at: map[int]bool{10: true, 300: true}, gaps: map[int]int64{}, nowFunc: nanotime}
			opts := &agent.ContextOptions{Window: window, Off: window == 0}
			for b.Loop() {
				g.inner, g.n = &longTask{turns: 300}, 0
				r := agent.New(agent.Deps{Provider: g, Context: opts})
				res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "work", Root: root, PermissionMode: "bypassPermissions"})
				if err != nil || res.Status != sema.StatusCompleted {
					b.Fatalf("%v %+v", err, res)
				}
			}
			b.ReportMetric(float64(g.gaps[10])/float64(b.N), "ns/turn10")
			b.ReportMetric(float64(g.gaps[300])/float64(b.N), "ns/turn300")
		})
	}
}

func nanotime() int64 { return time.Now().UnixNano() }
