package envscrub

import (
	"slices"
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
