package acp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/tools/files"
)

// buffersAgent opens sessions whose SessionSetup.Buffers is sent on got.
func buffersAgent(t *testing.T, got chan<- files.Buffers) *peer {
	return startAgent(t, Options{
		Open: func(_ context.Context, s SessionSetup) (*Session, error) {
			got <- s.Buffers
			return &Session{Backend: &fakeBackend{}, Root: s.Cwd, Store: session.NewMemory()}, nil
		},
	})
}

// request reads the agent's next request, past its session/update notifications.
func (p *peer) request() answer {
	p.t.Helper()
	for {
		if a := p.next(); a.Method != MethodSessionUpdate {
			return a
		}
	}
}

func (p *peer) initializeWith(caps string) {
	p.t.Helper()
	p.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1,"clientCapabilities":` + caps + `}}`)
	if a, _ := p.until(`"init"`); a.Error != nil {
		p.t.Fatalf("initialize: %v", a.Error)
	}
}

// A session has buffers only when the client offered both file requests.
func TestBuffersOnlyWhenTheClientServesBothFileRequests(t *testing.T) {
	for _, c := range []struct {
		caps string
		want bool
	}{
		{`{}`, false},
		{`{"fs":{"readTextFile":true}}`, false},
		{`{"fs":{"writeTextFile":true},"terminal":true}`, false},
		{`{"fs":{"readTextFile":true,"writeTextFile":true}}`, true},
	} {
		got := make(chan files.Buffers, 1)
		p := buffersAgent(t, got)
		p.initializeWith(c.caps)
		p.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`)
		if a, _ := p.until("1"); a.Error != nil {
			t.Fatalf("session/new: %v", a.Error)
		}
		if b := <-got; (b != nil) != c.want {
			t.Errorf("capabilities %s: buffers %v, want them %t", c.caps, b, c.want)
		}
	}
}

// The buffers' reads and writes are the client's fs requests, with the session's id;
// the client's refusal is the error, and a read ends with its context.
func TestBuffersCallTheClient(t *testing.T) {
	got := make(chan files.Buffers, 1)
	p := buffersAgent(t, got)
	p.initializeWith(`{"fs":{"readTextFile":true,"writeTextFile":true}}`)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`)
	p.until("1")
	b := <-got

	type outcome struct {
		text string
		err  error
	}
	read := func(ctx context.Context) chan outcome {
		ch := make(chan outcome, 1)
		go func() {
			text, err := b.ReadText(ctx, "/w/a.txt")
			ch <- outcome{text, err}
		}()
		return ch
	}
	ch := read(context.Background())
	a := p.request()
	var rq ReadTextFileRequest
	if a.Method != MethodReadTextFile || json.Unmarshal(a.Params, &rq) != nil || rq.SessionID != "s1" || rq.Path != "/w/a.txt" || rq.Line != nil || rq.Limit != nil {
		t.Fatalf("the read went as %s %s", a.Method, a.Params)
	}
	p.sendJSON(map[string]any{"jsonrpc": "2.0", "id": a.ID, "result": map[string]any{"content": "unsaved\n"}})
	if o := <-ch; o.err != nil || o.text != "unsaved\n" {
		t.Fatalf("ReadText = %q, %v", o.text, o.err)
	}

	done := make(chan error, 1)
	go func() { done <- b.WriteText(context.Background(), "/w/a.txt", "edited\n") }()
	a = p.request()
	var wq WriteTextFileRequest
	if a.Method != MethodWriteTextFile || json.Unmarshal(a.Params, &wq) != nil || wq.SessionID != "s1" || wq.Path != "/w/a.txt" || wq.Content != "edited\n" {
		t.Fatalf("the write went as %s %s", a.Method, a.Params)
	}
	p.sendJSON(map[string]any{"jsonrpc": "2.0", "id": a.ID, "error": map[string]any{"code": -32603, "message": "the buffer is read-only"}})
	if err := <-done; err == nil || !strings.Contains(err.Error(), "the buffer is read-only") {
		t.Fatalf("WriteText = %v, want the client's refusal", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	ch = read(ctx)
	p.request() // never answered
	cancel()
	select {
	case o := <-ch:
		if o.err == nil {
			t.Fatal("a cancelled read succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled read still waits for the client")
	}
}
