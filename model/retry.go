package model

import (
	"context"
	"time"
)

// Retry describes a failed attempt that a provider is about to send again, after Wait.
type Retry struct {
	// Attempt counts the attempts made so far, the failed one included (1 for the first).
	Attempt int
	// Wait is how long the provider waits before the next attempt.
	Wait time.Duration
	// Status is the HTTP status of the failed attempt's response; 0 when there was none
	// (the connection failed, or the stream broke or stalled).
	Status int
	// Reason says what failed when Status is 0 ("the connection failed", "the stream
	// broke"); empty otherwise.
	Reason string
}

// retryObserverKey is the context key of the function WithRetryObserver installs.
type retryObserverKey struct{}

// WithRetryObserver returns a context under which a provider calls observe before each
// retry of a request, as net/http/httptrace does for connections: a run that waits out
// an overloaded API is then not silent. observe may be called from several goroutines
// at once (the calls of parallel agents) and must not block.
func WithRetryObserver(ctx context.Context, observe func(Retry)) context.Context {
	return context.WithValue(ctx, retryObserverKey{}, observe)
}

// ObserveRetry is what a provider calls before it waits to send a request again: it
// passes r to the observer of ctx, if there is one.
func ObserveRetry(ctx context.Context, r Retry) {
	if observe, ok := ctx.Value(retryObserverKey{}).(func(Retry)); ok && observe != nil {
		observe(r)
	}
}
