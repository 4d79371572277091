package sema

import (
	"errors"
	"fmt"
)

// Error is an error a caller must be able to act on: a stable dotted Code
// ("config.permission_mode_invalid", "fs.path_not_in_root", …) that programs branch on,
// a one-sentence Message for people that says what to change, and an optional Detail
// with the structured facts behind it. Codes are part of the public contract and never
// change meaning once released.
type Error struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Detail  map[string]any `json:"detail,omitempty"`
	// Err is the underlying cause, if any; it is reachable through errors.Unwrap but
	// is not serialized, so a cause never leaks host internals into a transcript.
	Err error `json:"-"`
}

// Errorf builds an *Error with a formatted message. A %w verb in format also records
// the wrapped error as the cause.
func Errorf(code, format string, args ...any) *Error {
	e := fmt.Errorf(format, args...)
	return &Error{Code: code, Message: e.Error(), Err: errors.Unwrap(e)}
}

func (e *Error) Error() string {
	if e == nil {
		return "<nil>"
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// With returns a copy of e with key=value added to its Detail.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Detail = make(map[string]any, len(e.Detail)+1)
	for k, v := range e.Detail {
		c.Detail[k] = v
	}
	c.Detail[key] = value
	return &c
}

// CodeOf returns the code of the first *Error in err's chain, or "" when there is none.
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// IsCode reports whether err's chain holds an *Error with the given code.
func IsCode(err error, code string) bool { return err != nil && CodeOf(err) == code }

// Notice is a non-fatal announcement of the engine: something the caller should know
// (a root that was skipped, a mode that was folded) that did not stop the run. Notices
// are delivered to Deps.OnNotice as they happen and listed in the task result.
type Notice struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Detail  map[string]any `json:"detail,omitempty"`
}
