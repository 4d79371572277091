package main

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/tui"
)

// The late back-end has every method of *tui.Local the screen may find by an interface
// (all but the ones that build a Local), with the same signature: without one, the
// screen would quietly lose a command (/resume, /model, /questions…) until the state
// directory is open, and for good.
func TestLateBackendHasLocalsMethods(t *testing.T) {
	building := map[string]bool{"WithStores": true, "SetModelOpener": true, "SetCommands": true}
	local, late := reflect.TypeFor[*tui.Local](), reflect.TypeFor[*lateBackend]()
	for i := range local.NumMethod() {
		m := local.Method(i)
		if building[m.Name] {
			continue
		}
		got, ok := late.MethodByName(m.Name)
		if !ok {
			t.Errorf("lateBackend has no %s; *tui.Local's is %s", m.Name, m.Type)
			continue
		}
		// Past the receiver, the parameters and results are the same.
		if a, b := m.Type, got.Type; a.NumIn() != b.NumIn() || a.NumOut() != b.NumOut() {
			t.Errorf("lateBackend.%s is %s; *tui.Local's is %s", m.Name, b, a)
		} else {
			for j := 1; j < a.NumIn(); j++ {
				if a.In(j) != b.In(j) {
					t.Errorf("lateBackend.%s parameter %d is %s, want %s", m.Name, j, b.In(j), a.In(j))
				}
			}
			for j := range a.NumOut() {
				if a.Out(j) != b.Out(j) {
					t.Errorf("lateBackend.%s result %d is %s, want %s", m.Name, j, b.Out(j), a.Out(j))
				}
			}
		}
	}
}

// A call made before the back-end is built waits for it; one whose context ends first
// returns the context's error; once the directory failed, every call returns its error.
func TestLateBackendWaits(t *testing.T) {
	b := newLateBackend()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := b.List(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("List before the back-end was built, its context ended: %v, want the deadline", err)
	}

	waiting := make(chan error, 1)
	go func() { _, err := b.Turns(context.Background()); waiting <- err }()
	select {
	case err := <-waiting:
		t.Fatalf("Turns returned %v before the back-end was built", err)
	case <-time.After(20 * time.Millisecond):
	}
	failed := sema.Errorf("store.open_failed", "the state directory could not be opened")
	b.set(nil, failed)
	if err := <-waiting; !errors.Is(err, failed) {
		t.Fatalf("Turns waiting when the directory failed: %v, want its error", err)
	}
	if err := b.Prompt(context.Background(), "hi", func(agent.Event) {}); !errors.Is(err, failed) {
		t.Fatalf("Prompt after the directory failed: %v, want its error", err)
	}
	if got := b.Commands(); got != nil {
		t.Fatalf("Commands after the directory failed: %v, want none", got)
	}
	b.Clear() // nothing to clear, and no panic
	b.set(nil, nil)
	if _, err := b.Pending(context.Background()); !errors.Is(err, failed) {
		t.Fatalf("a second set replaced the first: %v", err)
	}
}

// Once built, the calls are the Local's: a prompt runs a leg on its runner.
func TestLateBackendIsTheLocal(t *testing.T) {
	local := tui.NewLocal(agent.New(agent.Deps{}), agent.TaskSpec{})
	b := newLateBackend()
	b.set(local, nil)
	got, err := b.wait(context.Background())
	if err != nil || got != local {
		t.Fatalf("wait: %p, %v; want the Local %p", got, err, local)
	}
	if mode, err := b.SetMode(context.Background(), "acceptEdits"); err != nil || mode != "acceptEdits" {
		t.Fatalf("SetMode between legs: %q, %v", mode, err)
	}
}
