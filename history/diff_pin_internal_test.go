package history

import (
	"fmt"
	"testing"

	"github.com/sema-agent/sema/internal/linediff/difftest"
)

// The diffs a rewind shows and the counts it records are pinned byte for byte over
// difftest's corpus: a change to the shared line diff or to the rendering that moves
// one byte changes the digest.
func TestDiffOutputIsPinned(t *testing.T) {
	difftest.Pin(t, "0b45887523e4088597160869798b4939ebee68cfd99b526d986ab0e2fee5f846", func(old, new string) string {
		added, removed := diffStat(old, new)
		return fmt.Sprintf("%d %d\n%s", added, removed, unifiedDiff("a/f", "b/f", old, new))
	})
}
