// Package runend says how a leg ends when an error stops it: the status and the coded
// error its result carries. The caller's cancellation is not the session being taken
// over by another run, and a provider's coded error keeps its code.
package runend

import (
	"context"
	"errors"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/session"
)

// CodeCancelled is the error's code when the caller's context ended the run (agent's
// CodeCancelled: the two are one string).
const CodeCancelled = "run.cancelled"

// Cancelled is the end of a run whose context ended with cause: cancelled, unless the
// cause is the session's lease taken by another run, which is an error of its own
// (session.CodeLeaseLost) the caller did not ask for.
func Cancelled(cause error) (sema.Status, *sema.Error) {
	if sema.IsCode(cause, session.CodeLeaseLost) {
		return sema.StatusError, &sema.Error{Code: session.CodeLeaseLost, Message: "the run stopped: " + sema.MessageOf(cause), Err: cause}
	}
	return sema.StatusCancelled, &sema.Error{Code: CodeCancelled, Message: "the run was cancelled", Err: cause}
}

// Failed is the end of a run that err stopped: cancelled when ctx ended (err is then
// most likely its consequence), else an error coded as Coded says.
func Failed(ctx context.Context, err error) (sema.Status, *sema.Error) {
	if ctx.Err() != nil {
		return Cancelled(context.Cause(ctx))
	}
	return sema.StatusError, Coded(err)
}

// Coded keeps a provider's coded error, and codes anything else as a model failure
// (model.CodeError).
func Coded(err error) *sema.Error {
	var se *sema.Error
	if errors.As(err, &se) {
		return se
	}
	return &sema.Error{Code: model.CodeError, Message: err.Error(), Err: err}
}
