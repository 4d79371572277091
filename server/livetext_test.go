package server_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/server"
)

// pieceByPiece answers with its pieces of text as a streaming model does, once release
// is closed: the test connects its stream first, so no piece is sent before anyone
// listens.
type pieceByPiece struct {
	pieces  []string
	release chan struct{}
	// call, when set, is a tool call the first response makes before the text.
	call  *model.Block
	calls int
	// hold, when set, keeps the response open after its text until it is closed.
	hold chan struct{}
}

func (p *pieceByPiece) Name() string { return "pieces" }

func (p *pieceByPiece) Stream(ctx context.Context, _ *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	select {
	case <-p.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if p.calls++; p.call != nil && p.calls == 1 {
		return &model.Response{Model: "pieces", Content: []model.Block{*p.call}, StopReason: model.StopToolUse,
			Usage: model.Usage{InputTokens: 10, OutputTokens: 5}}, nil
	}
	for _, s := range p.pieces {
		if onDelta != nil {
			onDelta(model.Delta{Kind: model.DeltaText, Text: s})
		}
	}
	if p.hold != nil {
		select {
		case <-p.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &model.Response{Model: "pieces", Content: []model.Block{model.TextBlock(strings.Join(p.pieces, ""))},
		StopReason: model.StopEndTurn, Usage: model.Usage{InputTokens: 10, OutputTokens: 5}}, nil
}

// TestStreamCarriesTextAsItStreams: a stream that asks for it (?text=1, client.WithText)
// gets the model's text piece by piece, before the assistant event that has it whole; the
// pieces carry no id, so the stored stream's ids are the same as a stream without them,
// which gets no piece at all. A bad value of text is refused by name.
func TestStreamCarriesTextAsItStreams(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		p := &pieceByPiece{pieces: []string{"The ", "answer ", "is ", "42."}, release: make(chan struct{})}
		f := newFixtureWith(t, st, noTurns, func(c *server.Config) {
			c.OpenProvider = func(string) (model.Provider, string, error) { return p, "pieces", nil }
		})
		c := f.client(t, "acme", f.base)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "what is it?"})
		if err != nil {
			t.Fatal(err)
		}
		var live []client.Event
		var pieces []string
		for ev, err := range c.Events(ctx, task.TaskID, 0, client.WithText()) {
			if err != nil {
				t.Fatal(err)
			}
			if len(live) == 0 {
				close(p.release) // the stream is connected: its first event came through it
			}
			live = append(live, ev)
			if tx, ok := ev.Text(); ok {
				if ev.ID != 0 {
					t.Errorf("a piece of text has id %d; pieces are not stored", ev.ID)
				}
				pieces = append(pieces, tx.Text)
			}
		}
		if got := strings.Join(pieces, ""); got != "The answer is 42." {
			t.Fatalf("the pieces read %q (%d pieces); want the streamed answer", got, len(pieces))
		}
		// Every piece comes before the response that holds it.
		lastPiece, assistant := -1, -1
		for i, ev := range live {
			switch {
			case ev.Type == client.EventText:
				lastPiece = i
			case ev.Type == client.EventAssistant && assistant < 0:
				assistant = i
			}
		}
		if assistant < 0 || lastPiece > assistant {
			t.Errorf("a piece came after the assistant event (piece %d, assistant %d)", lastPiece, assistant)
		}
		// Without asking: the same stored events, with the same ids, and no piece.
		var stored []int64
		for _, ev := range live {
			if ev.Type != client.EventText {
				stored = append(stored, ev.ID)
			}
		}
		var plain []int64
		for _, ev := range follow(t, c, task.TaskID, 0) {
			if ev.Type == client.EventText {
				t.Fatalf("a stream that did not ask got a piece: %s", ev.Data)
			}
			plain = append(plain, ev.ID)
		}
		if len(plain) != len(stored) || len(plain) == 0 {
			t.Fatalf("stored ids %v with pieces, %v without", stored, plain)
		}
		for i := range plain {
			if plain[i] != stored[i] {
				t.Fatalf("stored ids %v with pieces, %v without", stored, plain)
			}
		}
	})
}

func TestStreamRefusesABadTextValue(t *testing.T) {
	f := newFixture(t, "sqlite", func(string) []scripted.Turn { return []scripted.Turn{{Text: "hi"}} })
	tok, err := f.srv.CreateToken(context.Background(), "acme", f.base, server.TenantConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(f.http.URL, tok)
	task, err := c.SubmitTask(context.Background(), client.TaskSpec{Prompt: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, f.http.URL+"/v1/tasks/"+task.TaskID+"/events?text=yes", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "text must be 1") {
		t.Errorf("?text=yes: %d %s; want 400 naming the values text takes", resp.StatusCode, body)
	}
}

func noTurns(string) []scripted.Turn { return nil }

// TestStreamedTextFollowsTheToolCallBeforeIt: the text of the turn after a tool call is
// written after that call's result on the stream, never before it, however the stream's
// reads and the leg's writes interleave.
func TestStreamedTextFollowsTheToolCallBeforeIt(t *testing.T) {
	for i := 0; i < 5; i++ {
		p := &pieceByPiece{pieces: []string{"Found ", "nothing."}, release: make(chan struct{}),
			call: &model.Block{Kind: model.KindToolUse, ID: "call_1", Name: "Glob", Input: []byte(`{"pattern":"*.go"}`)}}
		f := newFixtureWith(t, "sqlite", noTurns, func(c *server.Config) {
			c.OpenProvider = func(string) (model.Provider, string, error) { return p, "pieces", nil }
		})
		c := f.client(t, "acme", f.base)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "look"})
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		for ev, err := range c.Events(ctx, task.TaskID, 0, client.WithText()) {
			if err != nil {
				t.Fatal(err)
			}
			if len(order) == 0 {
				close(p.release)
			}
			order = append(order, ev.Type)
		}
		cancel()
		result, piece := -1, -1
		for i, typ := range order {
			if typ == client.EventToolResult && result < 0 {
				result = i
			}
			if typ == client.EventText && piece < 0 {
				piece = i
			}
		}
		if result < 0 || piece < 0 || piece < result {
			t.Fatalf("the stream's order %v: the text must follow the tool's result", order)
		}
	}
}

// TestTextArrivesBeforeTheTurnEnds: a watcher gets the model's text while the response
// is still arriving — the turn's events are committed with its transcript at the turn's
// end, but the text does not wait for that end (the response here ends only once the
// watcher has every piece) — and after the events of the turn before it.
func TestTextArrivesBeforeTheTurnEnds(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		p := &pieceByPiece{pieces: []string{"Found ", "nothing."}, release: make(chan struct{}), hold: make(chan struct{}),
			call: &model.Block{Kind: model.KindToolUse, ID: "call_1", Name: "Glob", Input: []byte(`{"pattern":"*.go"}`)}}
		f := newFixtureWith(t, st, noTurns, func(c *server.Config) {
			c.OpenProvider = func(string) (model.Provider, string, error) { return p, "pieces", nil }
		})
		c := f.client(t, "acme", f.base)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "look"})
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		var text string
		for ev, err := range c.Events(ctx, task.TaskID, 0, client.WithText()) {
			if err != nil {
				t.Fatalf("the stream after %v: %v (a piece held back until the response ended would leave it waiting)", order, err)
			}
			if len(order) == 0 {
				close(p.release)
			}
			order = append(order, ev.Type)
			if tx, ok := ev.Text(); ok {
				if text += tx.Text; text == "Found nothing." {
					close(p.hold) // every piece is here: the response may end
				}
			}
		}
		want := []string{client.EventToolUse, client.EventToolResult, client.EventText, client.EventText, client.EventAssistant}
		var got []string
		for _, typ := range order {
			if slices.Contains(want, typ) {
				got = append(got, typ)
			}
		}
		// The first response's assistant event comes before its tool_use.
		if len(got) < len(want) || !slices.Equal(got[len(got)-len(want):], want) {
			t.Fatalf("the stream's order %v; want it to end with %v", order, want)
		}
	})
}
