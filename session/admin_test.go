package session_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/session/storetest"
)

// runsOnly is a store made only to serve runs: it offers Store's methods and nothing
// else (not Admin, not BatchAppender), as a third-party store may.
type runsOnly struct{ session.Store }

// A store with only Store's methods passes the runner's conformance suite: Run asks for
// nothing Admin has.
func TestConformanceRunsOnly(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) session.Store { return runsOnly{session.NewMemory()} })
}

func TestAsAdmin(t *testing.T) {
	t.Parallel()
	m := session.NewMemory()
	a, err := session.AsAdmin(m)
	if err != nil {
		t.Fatalf("AsAdmin(Memory): %v", err)
	}
	if a != session.AdminStore(m) {
		t.Fatalf("AsAdmin(Memory) = %v, want the store it was given", a)
	}
	for _, tc := range []struct {
		name string
		s    session.Store
		want string // in the sentence
	}{
		{"runs only", runsOnly{m}, "session_test.runsOnly"},
		{"nil", nil, "no session store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := session.AsAdmin(tc.s)
			if a != nil || !sema.IsCode(err, session.CodeAdminUnsupported) {
				t.Fatalf("AsAdmin = %v, %v; want code %s", a, err, session.CodeAdminUnsupported)
			}
			var se *sema.Error
			if !errors.As(err, &se) || !strings.Contains(se.Message, tc.want) {
				t.Fatalf("AsAdmin's refusal %q does not say %q", err, tc.want)
			}
		})
	}
}
