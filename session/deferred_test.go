package session_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/session/storetest"
)

// A deferred store is the store it opened: it passes the conformance suite over the
// memory and SQLite stores, its open released at once or late.
func TestDeferredConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) session.Store {
		return session.Deferred(func() (session.Store, error) { return session.NewMemory(), nil })
	})
	t.Run("SQLite", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) session.Store {
			return session.Deferred(func() (session.Store, error) {
				time.Sleep(time.Millisecond) // the calls wait for it
				return openSQLite(t, filepath.Join(t.TempDir(), "sema.db")), nil
			})
		})
	})
}

// Every method of a deferred store waits for its opening: none returns before open does.
// A failed opening fails every method with its error; a store without the batch and the
// opening a deferred store offers fails every method with session.defer_unsupported.
func TestDeferredWaitsAndFails(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var opened time.Time
	s := session.Deferred(func() (session.Store, error) {
		<-release
		opened = time.Now()
		return session.NewMemory(), nil
	})
	returned := make(chan time.Time, 1)
	go func() {
		s.Create(context.Background(), session.Session{Root: "/w"})
		returned <- time.Now()
	}()
	select {
	case <-returned:
		t.Fatal("Create returned before the store was opened")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	if at := <-returned; at.Before(opened) {
		t.Fatal("Create returned before the store was opened")
	}

	broken := errors.New("the state database is damaged")
	for name, open := range map[string]func() (session.Store, error){
		"failed":  func() (session.Store, error) { return nil, sema.Errorf("store.corrupt", "damaged: %w", broken) },
		"partial": func() (session.Store, error) { return runsOnlyStore{session.NewMemory()}, nil },
	} {
		d := session.Deferred(open)
		calls := callAll(t, d)
		if len(calls) != 17 {
			t.Fatalf("%s: %d methods called, want every method of Store, BatchAppender and Opener", name, len(calls))
		}
		for method, err := range calls {
			switch {
			case name == "failed" && !errors.Is(err, broken):
				t.Errorf("%s: %s: %v, want the opening's error", name, method, err)
			case name == "partial" && !sema.IsCode(err, session.CodeDeferUnsupported):
				t.Errorf("%s: %s: %v, want %s", name, method, err, session.CodeDeferUnsupported)
			}
		}
	}
}

// runsOnlyStore hides every method but Store's.
type runsOnlyStore struct{ session.Store }

// callAll calls every method of s but Close with zero arguments (a background context)
// and returns each one's error.
func callAll(t *testing.T, s session.Store) map[string]error {
	t.Helper()
	out := map[string]error{}
	v := reflect.ValueOf(s)
	errType := reflect.TypeFor[error]()
	for i := range v.NumMethod() {
		m := v.Type().Method(i)
		if m.Name == "Close" {
			continue
		}
		ft := v.Method(i).Type()
		args := make([]reflect.Value, ft.NumIn())
		for j := range args {
			args[j] = reflect.Zero(ft.In(j))
			if ft.In(j) == reflect.TypeFor[context.Context]() {
				args[j] = reflect.ValueOf(context.Background())
			}
		}
		res := v.Method(i).Call(args)
		last := res[len(res)-1]
		if last.Type() != errType {
			t.Fatalf("%s returns no error last", m.Name)
		}
		err, _ := last.Interface().(error)
		out[m.Name] = err
	}
	return out
}
