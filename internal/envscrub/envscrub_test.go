package envscrub

import (
	"slices"
	"strings"
	"testing"

	"github.com/sema-agent/sema/env"
)

// The settings files' names follow the deployment's, each once, and the deployment's
// list is not written through.
func TestPassthroughAddsTheSettingsNamesOnce(t *testing.T) {
	t.Parallel()
	deployment := make([]string, 1, 4)
	deployment[0] = "A"
	got := Passthrough(deployment, []string{"B", "A", "C"})
	if want := []string{"A", "B", "C"}; !slices.Equal(got, want) {
		t.Fatalf("Passthrough = %v, want %v", got, want)
	}
	if extra := deployment[:2][1]; extra != "" {
		t.Errorf("the deployment's list was written through: %q", extra)
	}
}

// Nothing held, no notice; something held, a notice that names it under its reason.
func TestNoticeNamesWhatIsHeld(t *testing.T) {
	t.Parallel()
	if _, ok := Notice(env.Inheritance{}); ok {
		t.Error("a notice with nothing held")
	}
	n, ok := Notice(env.Inheritance{Held: []string{"ANTHROPIC_API_KEY"}, Why: map[string]env.Reason{"ANTHROPIC_API_KEY": env.HeldProviderKey}})
	if !ok || n.Code != env.CodeEnvScrubbed || n.Detail["why"].(map[string]any)["ANTHROPIC_API_KEY"] != string(env.HeldProviderKey) {
		t.Fatalf("Notice = %+v, %v", n, ok)
	}
}

// TestHeldFollowsTheEnvironment: Held remembers its last answer, and answers anew when
// the environment or the pass-through list changes; what it hands out is a copy.
func TestHeldFollowsTheEnvironment(t *testing.T) {
	host := env.NewHost()
	t.Setenv("SEMA_TEST_HELD_NOTE", "ghp_"+strings.Repeat("a", 36))
	first := Held(host, nil)
	if !slices.Contains(first.Held, "SEMA_TEST_HELD_NOTE") {
		t.Fatalf("a token-shaped value was not held: %v", first.Held)
	}
	first.Env = append(first.Env[:0], "MUTATED=1")
	first.Held[0] = "MUTATED"
	again := Held(host, nil)
	if !slices.Contains(again.Held, "SEMA_TEST_HELD_NOTE") || slices.Contains(again.Env, "MUTATED=1") {
		t.Fatalf("a caller's change to an answer reached the next one: held %v", again.Held)
	}
	if got := Held(host, []string{"SEMA_TEST_HELD_NOTE"}); slices.Contains(got.Held, "SEMA_TEST_HELD_NOTE") {
		t.Errorf("passed through by name but still held: %v", got.Held)
	}
	t.Setenv("SEMA_TEST_HELD_NOTE", "plain")
	if got := Held(host, nil); slices.Contains(got.Held, "SEMA_TEST_HELD_NOTE") || !slices.Contains(got.Env, "SEMA_TEST_HELD_NOTE=plain") {
		t.Errorf("after the value changed the old answer came back: held %v", got.Held)
	}
	t.Setenv("SEMA_TEST_HELD_SECRET_KEY", "x")
	if got := Held(host, nil); !slices.Contains(got.Held, "SEMA_TEST_HELD_SECRET_KEY") {
		t.Errorf("a variable set since the last answer was not judged: held %v", got.Held)
	}
}
