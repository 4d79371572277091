package retry

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/sema-agent/sema/model"
)

// The statuses the SDKs send again, and x-should-retry over the status either way.
func TestTransient(t *testing.T) {
	for _, c := range []struct {
		status int
		header string
		want   bool
	}{
		{400, "", false}, {401, "", false}, {403, "", false}, {404, "", false}, {422, "", false},
		{408, "", true}, {409, "", true}, {429, "", true}, {500, "", true}, {502, "", true}, {503, "", true}, {529, "", true},
		{400, "true", true}, {529, "false", false}, {429, "maybe", true}, {400, "maybe", false},
	} {
		res := &http.Response{StatusCode: c.status, Header: http.Header{}}
		if c.header != "" {
			res.Header.Set("x-should-retry", c.header)
		}
		if got := Transient(res); got != c.want {
			t.Errorf("status %d, x-should-retry %q: %v, want %v", c.status, c.header, got, c.want)
		}
	}
}

// 0.5 s doubling up to 8 s, and a jittered wait within a quarter below the ceiling.
func TestBackoffSchedule(t *testing.T) {
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second, 8 * time.Second}
	for n, w := range want {
		if got := Ceiling(n); got != w {
			t.Errorf("Ceiling(%d) = %v, want %v", n, got, w)
		}
		for range 200 {
			if d := Backoff(n); d > w || d <= w-w/4 {
				t.Fatalf("Backoff(%d) = %v, outside (%v, %v]", n, d, w-w/4, w)
			}
		}
	}
	if got := Ceiling(64); got != 8*time.Second {
		t.Errorf("Ceiling(64) = %v: a large retry count must not overflow the shift", got)
	}
}

// Wait tells the observer before it waits, and ends with the context.
func TestWaitObservesThenWaits(t *testing.T) {
	var seen []model.Retry
	ctx := model.WithRetryObserver(context.Background(), func(r model.Retry) { seen = append(seen, r) })
	r := model.Retry{Attempt: 2, Wait: 20 * time.Millisecond, Status: 529}
	start := time.Now()
	if err := Wait(ctx, r); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < r.Wait {
		t.Errorf("waited %v, want at least %v", took, r.Wait)
	}
	if len(seen) != 1 || seen[0] != r {
		t.Fatalf("observed %+v, want [%+v]", seen, r)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	start = time.Now()
	if err := Wait(cctx, model.Retry{Wait: time.Hour}); err != context.Canceled {
		t.Fatalf("a cancelled wait returned %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("a cancelled wait took %v", took)
	}
}
