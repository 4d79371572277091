// Package retry is the retry policy the HTTP providers (anthropic, openai) share: which
// error responses are worth sending again, the backoff between attempts, and the wait
// itself, announced to the caller's retry observer first. How many attempts a call may
// make, and how a server's retry-after is read, stay with each provider: the Anthropic
// provider reads it as its SDK does, since the SDK is what waits.
package retry

import (
	"context"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/sema-agent/sema/model"
)

// Transient reports whether the error response res may pass if the request is sent
// again: what its x-should-retry header says, else 408, 409, 429 and 5xx. It is the rule
// the official SDKs follow.
func Transient(res *http.Response) bool {
	switch res.Header.Get("x-should-retry") {
	case "true":
		return true
	case "false":
		return false
	}
	s := res.StatusCode
	return s == http.StatusRequestTimeout || s == http.StatusConflict || s == http.StatusTooManyRequests || s >= 500
}

// Ceiling is the longest wait before retry n (0-based): 0.5 s doubling per retry, up to
// 8 s.
func Ceiling(n int) time.Duration {
	return min(500*time.Millisecond<<min(max(n, 0), 4), 8*time.Second)
}

// Backoff is the wait before retry n (0-based) when the server advised none: Ceiling(n)
// less up to a quarter of jitter, the official SDKs' schedule.
func Backoff(n int) time.Duration {
	d := Ceiling(n)
	return d - rand.N(d/4)
}

// Wait announces r to ctx's retry observer (model.WithRetryObserver), then waits r.Wait.
// It returns ctx's error when ctx ends first, nil otherwise.
func Wait(ctx context.Context, r model.Retry) error {
	model.ObserveRetry(ctx, r)
	t := time.NewTimer(r.Wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
