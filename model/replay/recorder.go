package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
)

// Recorder is a model.Provider that passes each call to another provider and keeps
// what it answered. It is safe for concurrent use.
type Recorder struct {
	provider model.Provider
	mu       sync.Mutex
	turns    []scripted.Turn
}

var _ model.Provider = (*Recorder)(nil)

// NewRecorder returns a Recorder of the calls made to p.
func NewRecorder(p model.Provider) *Recorder { return &Recorder{provider: p} }

// Name is the recorded provider's name: the recorder stands in for it.
func (r *Recorder) Name() string { return r.provider.Name() }

// Stream passes the call to the recorded provider and returns what it returned,
// unchanged, after keeping it as the next turn; see the package comment for what a
// turn keeps. A call that ended because ctx did is not kept.
func (r *Recorder) Stream(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	resp, err := r.provider.Stream(ctx, req, onDelta)
	if sema.IsCode(err, model.CodeCancelled) {
		return resp, err
	}
	turn := errorTurn(err)
	if err == nil {
		turn = responseTurn(resp)
	}
	r.mu.Lock()
	r.turns = append(r.turns, turn)
	r.mu.Unlock()
	return resp, err
}

// Script returns the turns recorded so far, in order, as a script a Provider (or the
// scripted provider) serves.
func (r *Recorder) Script() scripted.Script {
	r.mu.Lock()
	defer r.mu.Unlock()
	return scripted.Script{Turns: slices.Clone(r.turns)}
}

// WriteFile writes the script recorded so far to path, one turn a line, readable only
// by its owner since it holds what the model said. It refuses with model.config a path
// it cannot write.
func (r *Recorder) WriteFile(path string) error {
	data, err := encode(r.Script())
	if err != nil {
		return sema.Errorf(model.CodeConfig, "the recording does not encode: %v", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return sema.Errorf(model.CodeConfig, "cannot write the recording to %s: %v; choose a writable path", path, err)
	}
	return nil
}

// encode writes s as {"turns": [ … ]} with one turn a line, so that a recording reads
// (and diffs) a response at a time while each tool input keeps the bytes the model
// sent: indenting would reformat them, and escaping HTML would rewrite "<" and "&".
func encode(s scripted.Script) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	b.WriteString("{\"turns\": [\n")
	for i, turn := range s.Turns {
		if i > 0 {
			b.WriteString(",\n")
		}
		if err := enc.Encode(turn); err != nil {
			return nil, err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
	}
	b.WriteString("\n]}\n")
	return b.Bytes(), nil
}

// responseTurn is the turn that serves resp again.
func responseTurn(resp *model.Response) scripted.Turn {
	usage := resp.Usage
	turn := scripted.Turn{Text: resp.Text(), StopReason: resp.StopReason, Usage: &usage}
	for _, c := range resp.ToolCalls() {
		turn.ToolCalls = append(turn.ToolCalls, scripted.ToolCall{ID: c.ID, Name: c.Name, Input: slices.Clone(c.Input)})
	}
	return turn
}

// errorTurn is the turn that fails again as err did. An error without a code of its
// own is recorded with model.error, the code the runner gives it.
func errorTurn(err error) scripted.Turn {
	var se *sema.Error
	if errors.As(err, &se) {
		return scripted.Turn{Error: &sema.Error{Code: se.Code, Message: se.Message, Detail: se.Detail}}
	}
	msg := "the model call failed"
	if err != nil && strings.TrimSpace(err.Error()) != "" {
		msg = err.Error()
	}
	return scripted.Turn{Error: &sema.Error{Code: model.CodeError, Message: msg}}
}
