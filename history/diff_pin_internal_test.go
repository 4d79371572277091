package history

import (
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/sema-agent/sema/internal/linediff/difftest"
)

// The diffs a rewind shows and the counts it records are pinned byte for byte over
// difftest's corpus (repeating lines, missing last newlines, scattered edits of a long
// file, a rewrite past the work bound). A change to the shared line diff or to the
// rendering that moves one byte changes the digest.
func TestDiffOutputIsPinned(t *testing.T) {
	const want = "0b45887523e4088597160869798b4939ebee68cfd99b526d986ab0e2fee5f846"
	h := sha256.New()
	for _, p := range difftest.Corpus() {
		added, removed := diffStat(p[0], p[1])
		fmt.Fprintf(h, "%d %d\n%s\x00", added, removed, unifiedDiff("a/f", "b/f", p[0], p[1]))
	}
	if got := fmt.Sprintf("%x", h.Sum(nil)); got != want {
		t.Fatalf("digest of the corpus's diffs = %s, want %s", got, want)
	}
}
