package history

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkDiffStat10KB counts the lines of a 10 KB file rewritten from scratch, the
// rewind's worst case and its benchmark's.
func BenchmarkDiffStat10KB(b *testing.B) {
	old := strings.Repeat(fmt.Sprintf("%-63s\n", "// edited 7"), 160)
	new := strings.Repeat(fmt.Sprintf("%-63s\n", "// original 7"), 160)
	b.ReportAllocs()
	for b.Loop() {
		diffStat(old, new)
	}
}

// BenchmarkDiffStatDistinct10KB counts a 10 KB file of distinct lines with every tenth
// line changed.
func BenchmarkDiffStatDistinct10KB(b *testing.B) {
	var old, new strings.Builder
	for i := range 160 {
		fmt.Fprintf(&old, "%-63s\n", fmt.Sprint("line ", i))
		if i%10 == 0 {
			fmt.Fprintf(&new, "%-63s\n", fmt.Sprint("changed ", i))
		} else {
			fmt.Fprintf(&new, "%-63s\n", fmt.Sprint("line ", i))
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		diffStat(old.String(), new.String())
	}
}
