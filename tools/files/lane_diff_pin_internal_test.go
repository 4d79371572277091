package files

import (
	"testing"

	"github.com/sema-agent/sema/internal/linediff/difftest"
)

// The diff snippets the write tools answer with are pinned byte for byte over
// difftest's corpus: a change to the shared line diff or to the rendering that moves
// one byte changes the digest.
func TestUnifiedDiffOutputIsPinned(t *testing.T) {
	difftest.Pin(t, "17f6474b80b0d3f95643099bca5f4d14cfa16f9a5db5148cdff93d7dfaf2724c", func(old, new string) string {
		return unifiedDiff("f", old, new)
	})
}
