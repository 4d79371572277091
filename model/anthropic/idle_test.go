package anthropic

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
)

// A provider with no client of its own keeps its connections to the API's host for the
// next requests: two waves of concurrent streams open one wave's connections, not two
// (the default transport keeps two idle per host, and dialled again for the rest).
func TestDefaultClientKeepsConnections(t *testing.T) {
	raw := benchStream()
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
		w.Header().Set("content-type", "text/event-stream")
		w.Write([]byte(raw))
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
	p, err := New(Config{APIKey: "k", BaseURL: srv.URL})
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
				if _, err := p.Stream(context.Background(), req, nil); err != nil {
					t.Error(err)
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
