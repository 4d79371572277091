package files

import (
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/sema-agent/sema/internal/linediff/difftest"
)

// The diff snippets the write tools answer with are pinned byte for byte over
// difftest's corpus (repeating lines, missing last newlines, scattered edits of a long
// file, a rewrite past the work bound). A change to the shared line diff or to the
// rendering that moves one byte changes the digest.
func TestUnifiedDiffOutputIsPinned(t *testing.T) {
	const want = "17f6474b80b0d3f95643099bca5f4d14cfa16f9a5db5148cdff93d7dfaf2724c"
	h := sha256.New()
	for _, p := range difftest.Corpus() {
		fmt.Fprintf(h, "%s\x00", unifiedDiff("f", p[0], p[1]))
	}
	if got := fmt.Sprintf("%x", h.Sum(nil)); got != want {
		t.Fatalf("digest of the corpus's diffs = %s, want %s", got, want)
	}
}
