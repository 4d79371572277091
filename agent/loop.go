package agent

import (
	"context"
	"errors"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
)

// loop runs the leg's turns until the model stops, the turn limit is reached, or ctx
// ends, and returns the finished TaskResult.
func (l *leg) loop(ctx context.Context) *TaskResult {
	res := &TaskResult{SessionID: l.sessionID, Manifest: l.manifest}
	l.flush(0)
	l.emit(Event{Type: EventInit, Manifest: &res.Manifest})

	msgs := []model.Message{{Role: model.RoleUser, Content: []model.Block{model.TextBlock(l.spec.Prompt)}}}
	turn := 0
	for {
		if l.spec.MaxTurns > 0 && turn >= l.spec.MaxTurns {
			res.Status = StatusMaxTurns
			break
		}
		if err := ctx.Err(); err != nil {
			l.cancelled(res, err)
			break
		}
		turn++
		req := &model.Request{Model: l.spec.Model, System: l.system, Messages: msgs, Tools: l.specs, MaxTokens: l.spec.MaxTokens}
		resp, err := l.deps.Provider.Stream(ctx, req, func(d model.Delta) {
			if d.Kind == model.DeltaText {
				l.emit(Event{Type: EventText, Turn: turn, Text: d.Text})
			}
		})
		if err != nil {
			if ctx.Err() != nil {
				l.cancelled(res, ctx.Err())
			} else {
				res.Status = StatusError
				res.Error = asSemaError(err)
			}
			break
		}
		res.Usage = res.Usage.Add(resp.Usage)
		msg := model.Message{Role: model.RoleAssistant, Content: resp.Content}
		msgs = append(msgs, msg)
		l.mu.Lock()
		l.transcript = msgs
		l.mu.Unlock()
		l.emit(Event{Type: EventAssistant, Turn: turn, Message: &msg})
		if text := resp.Text(); text != "" {
			res.Result = text
		}
		calls := resp.ToolCalls()
		if len(calls) == 0 {
			res.Status = StatusCompleted
			break
		}
		results := l.dispatch(ctx, turn, calls)
		msgs = append(msgs, model.Message{Role: model.RoleUser, Content: results})
		l.flush(turn)
	}
	res.NumTurns = turn
	res.Messages = msgs
	l.flush(turn)
	l.mu.Lock()
	res.Notices = append([]sema.Notice{}, l.notices...)
	res.EditedFiles = append([]string{}, l.edited...)
	res.PermissionDenials = append([]PermissionDenial{}, l.denials...)
	l.mu.Unlock()
	return res
}

func (l *leg) cancelled(res *TaskResult, cause error) {
	res.Status = StatusCancelled
	res.Error = &sema.Error{Code: "run.cancelled", Message: "the run was cancelled", Err: cause}
}

// asSemaError keeps a provider's coded error, and codes anything else as a model failure.
func asSemaError(err error) *sema.Error {
	var se *sema.Error
	if errors.As(err, &se) {
		return se
	}
	return &sema.Error{Code: "model.error", Message: err.Error(), Err: err}
}
