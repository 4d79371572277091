package anthropic

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/internal/fakeserver"
)

// A provider with no client of its own keeps its connections to the API's host for the
// next requests: two waves of concurrent streams open one wave's connections, not two.
// Reading stops at message_stop, and a body closed before its end used to cost its
// connection; the default transport kept two idle per host and dialled again for the
// rest.
func TestDefaultClientKeepsConnections(t *testing.T) {
	raw := benchStream()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "text/event-stream")
		w.Write([]byte(raw))
	}))
	conns := fakeserver.WatchConns(srv)
	srv.Start()
	defer srv.Close()
	p, err := New(Config{APIKey: "k", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	const wave = 12
	req := &model.Request{Model: "m", Messages: []model.Message{{Role: model.RoleUser, Content: []model.Block{model.TextBlock("hi")}}}}
	conns.Waves(wave, func() {
		if _, err := p.Stream(context.Background(), req, nil); err != nil {
			t.Error(err)
		}
	})
	if n := conns.Dialled(); n > wave {
		t.Fatalf("two waves of %d concurrent streams dialled %d connections; the second should reuse the first's", wave, n)
	}
}
