package runend

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/session"
)

func TestCancelled(t *testing.T) {
	t.Parallel()
	st, err := Cancelled(context.Canceled)
	if st != sema.StatusCancelled || err.Code != CodeCancelled || !errors.Is(err, context.Canceled) {
		t.Errorf("Cancelled(context.Canceled) = %s, %+v; want cancelled, %s, wrapping the cause", st, err, CodeCancelled)
	}
	lost := &sema.Error{Code: session.CodeLeaseLost, Message: "another run holds the session"}
	st, err = Cancelled(lost)
	if st != sema.StatusError || err.Code != session.CodeLeaseLost || err.Message != "the run stopped: another run holds the session" || !errors.Is(err, lost) {
		t.Errorf("Cancelled(lease lost) = %s, %+v; want an error coded %s", st, err, session.CodeLeaseLost)
	}
}

func TestFailed(t *testing.T) {
	t.Parallel()
	boom := errors.New("stream broke")
	st, err := Failed(context.Background(), boom)
	if st != sema.StatusError || err.Code != model.CodeError || err.Message != "stream broke" || !errors.Is(err, boom) {
		t.Errorf("Failed(live ctx) = %s, %+v; want an error coded %s", st, err, model.CodeError)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	why := errors.New("the caller gave up")
	cancel(why)
	st, err = Failed(ctx, boom)
	if st != sema.StatusCancelled || err.Code != CodeCancelled || !errors.Is(err, why) {
		t.Errorf("Failed(ended ctx) = %s, %+v; want cancelled with the context's cause", st, err)
	}
}

func TestCodedKeepsACode(t *testing.T) {
	t.Parallel()
	tooLong := &sema.Error{Code: model.CodeContextTooLong, Message: "too long"}
	if got := Coded(fmt.Errorf("send: %w", tooLong)); got != tooLong {
		t.Errorf("Coded = %+v, want the provider's own error", got)
	}
	if got := Coded(errors.New("x")); got.Code != model.CodeError {
		t.Errorf("Coded of an uncoded error = %+v, want %s", got, model.CodeError)
	}
}
