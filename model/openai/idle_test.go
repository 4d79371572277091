package openai_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/openai"
)

// A provider with no client of its own keeps its connections to the server for the
// next requests: two waves of concurrent streams to an HTTP/1.1 server (as Ollama and
// vLLM speak) open one wave's connections, not two. Reading stops at [DONE], and a
// body closed before its end used to cost its connection.
func TestDefaultClientKeepsConnections(t *testing.T) {
	const stream = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\n" +
		"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: [DONE]\n\n"
	var dialled atomic.Int64
	var mu sync.Mutex
	states := map[net.Conn]http.ConnState{}
	idle := func() (n int) {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range states {
			if s == http.StateIdle {
				n++
			}
		}
		return n
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(stream))
		// [DONE] is on its way before the body ends, as from a server that does some
		// work after its last event.
		w.(http.Flusher).Flush()
		time.Sleep(20 * time.Millisecond)
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dialled.Add(1)
		}
		mu.Lock()
		states[c] = s
		mu.Unlock()
	}
	srv.Start()
	defer srv.Close()
	p, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	const wave = 12
	req := &model.Request{Model: "m", Messages: []model.Message{{Role: model.RoleUser, Content: []model.Block{model.TextBlock("hi")}}}}
	for range 2 {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range wave {
			wg.Go(func() {
				<-start
				if resp, err := p.Stream(context.Background(), req, nil); err != nil || len(resp.Content) != 1 {
					t.Errorf("%v %+v", err, resp)
				}
			})
		}
		close(start)
		wg.Wait()
		// The first wave's connections go back to the pool once their bodies are read
		// to the end, which may come a little after the last event.
		for deadline := time.Now().Add(5 * time.Second); idle() < wave && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := dialled.Load(); n > wave {
		t.Fatalf("two waves of %d concurrent streams dialled %d connections; the second should reuse the first's", wave, n)
	}
}
