package sema_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sema-agent/sema"
)

// errNotFound is a sentinel, the way a package exports one for errors.Is.
var errNotFound = &sema.Error{Code: "test.not_found", Message: "no such thing"}

func TestIsCodeWalksTheWholeChain(t *testing.T) {
	t.Parallel()
	outer := sema.Errorf("test.outer", "the outer step failed: %w", sema.Errorf("test.inner", "the inner step failed"))
	joined := errors.Join(errors.New("plain"), fmt.Errorf("wrapped: %w", sema.Errorf("test.second", "second")))
	cases := []struct {
		name string
		err  error
		code string
		want bool
	}{
		{"the first code", outer, "test.outer", true},
		{"a code below the first", outer, "test.inner", true},
		{"a code wrapped by fmt", fmt.Errorf("context: %w", outer), "test.inner", true},
		{"a code in a joined branch", joined, "test.second", true},
		{"a code nowhere in the chain", outer, "test.other", false},
		{"nil", nil, "test.outer", false},
		{"an uncoded error never matches the empty code", errors.New("plain"), "", false},
	}
	for _, c := range cases {
		if got := sema.IsCode(c.err, c.code); got != c.want {
			t.Errorf("%s: IsCode(%v, %q) = %v, want %v", c.name, c.err, c.code, got, c.want)
		}
	}
}

func TestCodeOfIsTheFirstCode(t *testing.T) {
	t.Parallel()
	outer := sema.Errorf("test.outer", "the outer step failed: %w", sema.Errorf("test.inner", "the inner step failed"))
	if got := sema.CodeOf(fmt.Errorf("context: %w", outer)); got != "test.outer" {
		t.Errorf("CodeOf = %q, want test.outer", got)
	}
	joined := errors.Join(errors.New("plain"), sema.Errorf("test.first", "first"), sema.Errorf("test.second", "second"))
	if got := sema.CodeOf(joined); got != "test.first" {
		t.Errorf("CodeOf(joined) = %q, want test.first", got)
	}
	if got := sema.CodeOf(errors.New("plain")); got != "" {
		t.Errorf("CodeOf(plain) = %q, want empty", got)
	}
}

func TestErrorsIsMatchesSentinelsByCode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		err    error
		target error
		want   bool
	}{
		{"same code, other message and detail", sema.Errorf("test.not_found", "thing %d is missing", 7).With("id", 7), errNotFound, true},
		{"below another code", sema.Errorf("test.lookup", "lookup: %w", sema.Errorf("test.not_found", "gone")), errNotFound, true},
		{"in a joined branch", errors.Join(errors.New("plain"), sema.Errorf("test.not_found", "gone")), errNotFound, true},
		{"another code", sema.Errorf("test.found", "here"), errNotFound, false},
		{"an empty-code target matches nothing", sema.Errorf("", "uncoded"), &sema.Error{}, false},
		{"a target of another type", sema.Errorf("test.not_found", "gone"), errors.New("test.not_found: gone"), false},
	}
	for _, c := range cases {
		if got := errors.Is(c.err, c.target); got != c.want {
			t.Errorf("%s: errors.Is = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestMessageOfLeavesCodesOut(t *testing.T) {
	t.Parallel()
	inner := sema.Errorf("test.inner", "the disk is full")
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"one error", inner, "the disk is full"},
		{"a wrapped coded cause", sema.Errorf("test.outer", "could not save (%w)", inner), "could not save (the disk is full)"},
		{"a coded error wrapped by fmt", fmt.Errorf("saving: %w", inner), "saving: the disk is full"},
		{"a plain error", errors.New("plain"), "plain"},
		{"joined", errors.Join(inner, errors.New("plain")), "the disk is full\nplain"},
		{"nil", nil, ""},
	}
	for _, c := range cases {
		if got := sema.MessageOf(c.err); got != c.want {
			t.Errorf("%s: MessageOf = %q, want %q", c.name, got, c.want)
		}
	}
}
