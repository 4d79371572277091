package openai_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/internal/fakeserver"
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
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(stream))
		// [DONE] is on its way before the body ends, as from a server that does some
		// work after its last event.
		w.(http.Flusher).Flush()
		time.Sleep(20 * time.Millisecond)
	}))
	conns := fakeserver.WatchConns(srv)
	srv.Start()
	defer srv.Close()
	p, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	const wave = 12
	req := &model.Request{Model: "m", Messages: []model.Message{{Role: model.RoleUser, Content: []model.Block{model.TextBlock("hi")}}}}
	conns.Waves(wave, func() {
		if resp, err := p.Stream(context.Background(), req, nil); err != nil || len(resp.Content) != 1 {
			t.Errorf("%v %+v", err, resp)
		}
	})
	if n := conns.Dialled(); n > wave {
		t.Fatalf("two waves of %d concurrent streams dialled %d connections; the second should reuse the first's", wave, n)
	}
}
