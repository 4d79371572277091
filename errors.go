package sema

import (
	"errors"
	"fmt"
	"strings"
)

// Error is an error a caller must be able to act on: a stable dotted Code
// ("config.permission_mode_invalid", "fs.path_not_in_root", …) that programs branch on,
// a one-sentence Message for people that says what to change, and an optional Detail
// with the structured facts behind it. Codes are part of the public contract and never
// change meaning once released; each is an exported constant of the package that owns
// it.
//
// Two *Error values with the same non-empty Code match under errors.Is, whatever their
// messages and details, so a package may export a sentinel *Error and callers may test
// for it with errors.Is as with any sentinel error.
type Error struct {
	// Code is the stable dotted code, "area.what_happened"; it is what Is compares and
	// what a program branches on. An empty Code makes an error nothing can match.
	Code string `json:"code"`
	// Message is one sentence for a person, saying what happened and what to change.
	// Unlike Code it is not a contract: branch on Code, not on this text.
	Message string `json:"message"`
	// Detail holds the structured facts behind Message (a path, a limit, the offending
	// value), keyed by short snake_case names. It may be nil; With adds to a copy.
	Detail map[string]any `json:"detail,omitempty"`
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

// Error returns "code: message".
func (e *Error) Error() string {
	if e == nil {
		return "<nil>"
	}
	return e.Code + ": " + e.Message
}

// Unwrap returns the cause, so errors.Is and errors.As see through e.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with e's Code. The code is what a caller
// branches on; a message or detail that differs does not make another error. A target
// with an empty Code matches nothing, so an uncoded *Error is never a wildcard.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && e != nil && t != nil && t.Code != "" && t.Code == e.Code
}

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
// "First" is the order errors.As searches: err itself, then its causes depth first, the
// branches of a joined error in order. An *Error wrapping another is the outer, more
// specific, code; use IsCode to ask about any code in the chain.
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// IsCode reports whether any *Error in err's chain has the given code: the outermost
// one, one it wraps, or one in any branch of a joined error (errors.Is with a target of
// that code). The empty code matches nothing.
func IsCode(err error, code string) bool {
	return code != "" && errors.Is(err, &Error{Code: code})
}

// MessageOf returns err's text for a person or a model, without codes: each *Error in
// the chain contributes its Message instead of its "code: message" form. Codes belong in
// the Code fields a program reads; in a sentence, a code inside a code
// ("x.y: … (a.b: …)") only hides what happened. A nil err yields "".
func MessageOf(err error) string {
	if err == nil {
		return ""
	}
	var text string
	var causes []error
	if e, ok := err.(*Error); ok {
		if e == nil {
			return ""
		}
		text = e.Message
		causes = []error{e.Err}
	} else {
		text = err.Error()
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			causes = []error{u.Unwrap()}
		case interface{ Unwrap() []error }:
			causes = u.Unwrap()
		}
	}
	// A wrapping error's text holds each cause's Error() verbatim (that is what %w
	// writes); put the cause's own code-free text in its place.
	for _, c := range causes {
		if c == nil {
			continue
		}
		if full, plain := c.Error(), MessageOf(c); full != plain {
			text = strings.Replace(text, full, plain, 1)
		}
	}
	return text
}

// Notice is a non-fatal announcement of the engine: something the caller should know
// (a root that was skipped, a mode that was folded) that did not stop the run. Notices
// are delivered to Deps.OnNotice as they happen and listed in the task result.
type Notice struct {
	// Code is the stable dotted code of the announcement, in the same namespace as
	// Error codes.
	Code string `json:"code"`
	// Message is one sentence for a person.
	Message string `json:"message"`
	// Detail holds the structured facts behind Message; it may be nil.
	Detail map[string]any `json:"detail,omitempty"`
}
