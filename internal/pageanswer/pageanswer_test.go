package pageanswer

import (
	"strings"
	"testing"
)

// A page is cut at the budget in characters, not bytes, and the ask says how many more.
func TestAskCutsAtTheBudget(t *testing.T) {
	page := strings.Repeat("é", budget+7)
	ask := Ask(page, "what?", "https://x")
	if !strings.Contains(ask, "goes on for 7 more characters") || strings.Count(ask, "é") != budget {
		t.Fatalf("the page was not cut at %d characters", budget)
	}
	if short := Ask("hi", "what?", "https://x"); strings.Contains(short, "goes on") || !strings.HasSuffix(short, "Answer this prompt from the page: what?") {
		t.Fatalf("a short page: %q", short)
	}
}
