package replay

import (
	"context"
	"os"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
)

// Provider serves a recorded script's responses, one per call, in order. It is safe
// for concurrent use; concurrent calls share the script's position.
type Provider struct {
	script *scripted.Provider
	turns  int
}

var _ model.Provider = (*Provider)(nil)

// New returns a Provider serving s's turns. Threads are not served: a recording has
// none (use the scripted provider for a script that has them).
func New(s scripted.Script) *Provider {
	return &Provider{script: scripted.New(scripted.Script{Turns: s.Turns}), turns: len(s.Turns)}
}

// Load reads a recording written by Recorder.WriteFile (or any script of the scripted
// provider without threads); it refuses with model.config a file it cannot read or
// parse, and a script with threads.
func Load(path string) (*Provider, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, sema.Errorf(model.CodeConfig, "cannot read the recording %s: %w", path, err)
	}
	s, err := scripted.Parse(data)
	if err != nil {
		return nil, err
	}
	if len(s.Threads) > 0 {
		return nil, sema.Errorf(model.CodeConfig, "%s has threads, which a replay does not serve; run it with the scripted provider", path)
	}
	return New(s), nil
}

// Remaining is the number of recorded turns not served yet: a test that replays a
// whole run checks it is zero.
func (p *Provider) Remaining() int { return max(p.turns-len(p.script.Requests()), 0) }

// Name returns "replay".
func (*Provider) Name() string { return "replay" }

// Requests returns the requests received so far, in order, for tests that check what
// the run asked.
func (p *Provider) Requests() []*model.Request { return p.script.Requests() }

// Stream serves the next recorded turn: its response, or the error it recorded. A call
// past the end fails with scripted.CodeExhausted. Cancellation ends the call with
// model.cancelled, before the turn (which is then not consumed) or while its text
// streams (the turn is then spent).
func (p *Provider) Stream(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	resp, err := p.script.Stream(ctx, req, func(d model.Delta) {
		if onDelta != nil && ctx.Err() == nil {
			onDelta(d)
		}
	})
	if ctx.Err() != nil {
		return nil, &sema.Error{Code: model.CodeCancelled, Message: "the model call was cancelled", Err: ctx.Err()}
	}
	if sema.IsCode(err, scripted.CodeExhausted) {
		return nil, sema.Errorf(scripted.CodeExhausted, "the run asked the model for response %d, and the recording ends before it; record the run again", len(p.Requests()))
	}
	return resp, err
}
