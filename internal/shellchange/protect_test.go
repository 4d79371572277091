package shellchange

import (
	"testing"

	"github.com/sema-agent/sema/tools/shell"
)

// shellless is a leg with no shell mounted: no background task runs now.
type shellless struct{ Leg }

func (shellless) Shell() *shell.Set { return nil }

// A background task that ran when a walk began may have changed files after the walk
// read them and ended before the walk did: the next walk still takes what changed as a
// background task's, guarded as one no person approved. Only a walk that began after it
// ended settles it. (Under load a task's second protected write slipped past this way:
// the walk saw its first, the task ended, and the next walk was not guarded.)
func TestSettleBackgroundKeepsATaskThatRanDuringTheWalk(t *testing.T) {
	c := &Recorder{cfg: Config{Leg: shellless{}}, background: true, bgUnapproved: true}
	c.settleBackground(false, true, true)
	if !c.background || !c.bgUnapproved {
		t.Fatalf("after a walk a task ran through: background %v, unapproved %v; want both kept", c.background, c.bgUnapproved)
	}
	c.settleBackground(false, true, false)
	if c.background || c.bgUnapproved {
		t.Fatalf("after a walk that began with no task running: background %v, unapproved %v; want both cleared", c.background, c.bgUnapproved)
	}
}
