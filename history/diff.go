package history

import (
	"fmt"
	"strings"

	"github.com/sema-agent/sema/internal/linediff"
)

// Limits of the diffs a rewind shows. A diff is there for a person to judge what a
// rewind would overwrite, not a patch to apply, so a huge one is cut rather than
// computed in full.
const (
	diffContext  = 3    // unchanged lines around each change
	diffMaxEdits = 1000 // the line diff's work bound (Myers' D); past it, one block replaces the changed region
	diffMaxLines = 400  // hunk lines printed before the diff is cut
)

// diffStat counts the lines a change from old to new adds and removes: the counts of
// the script a Diff shows (linediff.Count of script(old, new)), without building it.
func diffStat(old, new string) (added, removed int) {
	if old == new {
		return 0, 0
	}
	return linediff.Stat(linediff.Lines(old), linediff.Lines(new), diffMaxEdits)
}

// unifiedDiff renders the change from old (labelled from) to new (labelled to) as a
// unified diff, "" when they are equal. A missing file is /dev/null, as diff -N shows.
func unifiedDiff(from, to, old, new string) string {
	if old == new && from == to {
		return ""
	}
	ops := script(old, new)
	var w strings.Builder
	fmt.Fprintf(&w, "--- %s\n+++ %s\n", from, to)
	printed := 0
	for _, h := range linediff.Hunks(ops, diffContext) {
		fmt.Fprintf(&w, "@@ -%s +%s @@\n", hunkRange(h.OldLine+1, h.OldLen), hunkRange(h.NewLine+1, h.NewLen))
		for _, op := range ops[h.Start:h.End] {
			if printed == diffMaxLines {
				fmt.Fprintf(&w, "… (diff cut after %d lines)\n", diffMaxLines)
				return w.String()
			}
			printed++
			w.WriteByte(op.Kind)
			w.WriteString(op.Text)
			if !strings.HasSuffix(op.Text, "\n") {
				w.WriteString("\n\\ No newline at end of file\n")
			}
		}
	}
	return w.String()
}

// script is the line edit script from old to new.
func script(old, new string) []linediff.Op {
	return linediff.Script(linediff.Lines(old), linediff.Lines(new), diffMaxEdits)
}

func hunkRange(start, n int) string {
	if n == 0 {
		start-- // an empty range names the line before it, as diff does
	}
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}
