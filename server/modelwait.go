package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
)

// A model outage outlasts a provider's own retries (a few seconds: they are for a
// dropped connection or a brief overload), and a task whose model call fails ends in
// error for good. A service's tasks instead wait the outage out: a call that fails in a
// way that passes (the model overloaded or failing, rate-limited, unreachable) is tried
// again with exponential backoff for up to ModelWait, and each wait is in the task's
// stream (a notice with the error's code and when the next try is), so a client sees
// the task waiting rather than stuck. The leg keeps its session and its worker's slot
// while it waits; a cancel request or the process's shutdown ends the wait.

// Defaults of Config.ModelWait and Config.ModelBackoff.
const (
	DefaultModelWait    = 10 * time.Minute // how long one model call may wait out an outage
	DefaultModelBackoff = time.Minute      // the longest wait between two tries
)

// CodeModelWaiting is the code of the notice a task's stream carries when its model
// call failed and waits to be tried again.
const CodeModelWaiting = "serve.model_waiting"

// firstModelBackoff is the wait after a call's first failure; each next one doubles,
// up to Config.ModelBackoff.
const firstModelBackoff = time.Second

// patientProvider is a provider that waits out a model outage for up to maxWait.
type patientProvider struct {
	model.Provider
	maxWait, maxBackoff time.Duration
	// notify writes a waiting notice into the task's stream.
	notify func(obj map[string]any)
}

// passing reports whether a provider's final error may pass on its own: the model was
// overloaded or failing, rate-limited, or could not be reached.
func passing(err error) bool {
	return sema.IsCode(err, model.CodeOverloaded) || sema.IsCode(err, model.CodeRateLimited) || sema.IsCode(err, model.CodeNetwork)
}

// Stream calls the provider, and after a failure that may pass waits and calls it again
// until it answers, fails otherwise, or maxWait has gone by since the first failure. A
// call that delivered part of its answer (onDelta was called) is not tried again: its
// text is out already.
func (p *patientProvider) Stream(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	var first time.Time
	for try := 1; ; try++ {
		delivered := false
		deltas := onDelta
		if onDelta != nil {
			deltas = func(d model.Delta) { delivered = true; onDelta(d) }
		}
		resp, err := p.Provider.Stream(ctx, req, deltas)
		if err == nil || delivered || !passing(err) || ctx.Err() != nil {
			return resp, err
		}
		now := time.Now()
		if first.IsZero() {
			first = now
		}
		waited := now.Sub(first)
		wait := min(p.backoff(try, err), p.maxWait-waited)
		if wait <= 0 {
			return nil, p.gaveUp(err, waited, try)
		}
		next := now.Add(wait)
		p.notify(map[string]any{
			"type": "notice", "code": CodeModelWaiting,
			"message": fmt.Sprintf("the model call failed (%s); waiting %s before trying again (try %d, %s of at most %s waited)",
				sema.CodeOf(err), wait.Round(time.Millisecond), try+1, waited.Round(time.Millisecond), p.maxWait),
			"detail": map[string]any{
				"error": errObject(err), "error_code": sema.CodeOf(err), "retry_at": next.UTC().Format(time.RFC3339Nano),
				"retry_in_ms": wait.Milliseconds(), "attempt": try, "waited_ms": waited.Milliseconds(), "max_wait_ms": p.maxWait.Milliseconds(),
			},
		})
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, &sema.Error{Code: model.CodeCancelled, Message: "the call was cancelled while it waited for the model to come back", Err: ctx.Err()}
		case <-t.C:
		}
	}
}

// backoff is the wait before try+1: firstModelBackoff doubling per try up to maxBackoff,
// or longer when the model's answer asked for longer (retry_after_seconds).
func (p *patientProvider) backoff(try int, err error) time.Duration {
	d := p.maxBackoff
	if try < 31 {
		d = min(firstModelBackoff<<(try-1), p.maxBackoff)
	}
	var se *sema.Error
	if errors.As(err, &se) {
		if secs, ok := se.Detail["retry_after_seconds"].(int64); ok {
			d = max(d, time.Duration(secs)*time.Second)
		}
	}
	return d
}

// gaveUp is the final error of a call whose model stayed unavailable for maxWait: the
// provider's code (what failed), saying how long it was waited for.
func (p *patientProvider) gaveUp(err error, waited time.Duration, tries int) error {
	out := &sema.Error{
		Code: sema.CodeOf(err),
		Message: fmt.Sprintf("the model stayed unavailable for %s (%d tries, the service's limit is %s): %s; try again later, or raise --model-wait",
			waited.Round(time.Second), tries, p.maxWait, sema.MessageOf(err)),
		Detail: map[string]any{"waited_ms": waited.Milliseconds(), "tries": tries, "max_wait_ms": p.maxWait.Milliseconds()},
		Err:    err,
	}
	var se *sema.Error
	if errors.As(err, &se) {
		for k, v := range se.Detail {
			if _, taken := out.Detail[k]; !taken {
				out.Detail[k] = v
			}
		}
	}
	return out
}

// patient wraps a task's provider so that its calls wait out an outage, writing their
// notices into legs.
func (s *Server) patient(p model.Provider, legs *legStream) model.Provider {
	return &patientProvider{Provider: p, maxWait: s.cfg.ModelWait, maxBackoff: s.cfg.ModelBackoff, notify: func(obj map[string]any) {
		data, err := json.Marshal(obj)
		if err != nil {
			return
		}
		if err := legs.append(data); err != nil {
			s.log.Warn("waiting notice not written", "task_id", legs.taskID, "error", err.Error())
		}
	}}
}
