package files

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUnifiedDiff(t *testing.T) {
	t.Parallel()
	lines := func(from, to int) string {
		var b strings.Builder
		for i := from; i <= to; i++ {
			b.WriteString("l" + strconv.Itoa(i) + "\n")
		}
		return b.String()
	}
	cases := []struct {
		name, old, new, want string
	}{
		{"equal", "a\n", "a\n", ""},
		{"one line changed", "a\nb\nc\n", "a\nB\nc\n",
			"--- p\n+++ p\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"insertion", "a\nc\n", "a\nb\nc\n",
			"--- p\n+++ p\n@@ -1,2 +1,3 @@\n a\n+b\n c\n"},
		{"deletion at the end", "a\nb\n", "a\n",
			"--- p\n+++ p\n@@ -1,2 +1,1 @@\n a\n-b\n"},
		{"new file", "", "x\ny\n",
			"--- p\n+++ p\n@@ -0,0 +1,2 @@\n+x\n+y\n"},
		{"no final newline", "a\nb", "a\nc",
			"--- p\n+++ p\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"},
		{"CRLF shown without CR", "a\r\nb\r\n", "a\r\nB\r\n",
			"--- p\n+++ p\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n"},
		{"change inside a line", "prefix middle suffix\n", "prefix MIDDLE suffix\n",
			"--- p\n+++ p\n@@ -1,1 +1,1 @@\n-prefix middle suffix\n+prefix MIDDLE suffix\n"},
		{"two far hunks", lines(1, 20), strings.Replace(strings.Replace(lines(1, 20), "l2\n", "L2\n", 1), "l18\n", "L18\n", 1),
			"--- p\n+++ p\n@@ -1,5 +1,5 @@\n l1\n-l2\n+L2\n l3\n l4\n l5\n@@ -15,6 +15,6 @@\n l15\n l16\n l17\n-l18\n+L18\n l19\n l20\n"},
		{"close hunks merge", lines(1, 10), strings.Replace(strings.Replace(lines(1, 10), "l3\n", "L3\n", 1), "l8\n", "L8\n", 1),
			"--- p\n+++ p\n@@ -1,10 +1,10 @@\n l1\n l2\n-l3\n+L3\n l4\n l5\n l6\n l7\n-l8\n+L8\n l9\n l10\n"},
		{"context in a large file", lines(1, 1000), strings.Replace(lines(1, 1000), "l500\n", "L500\n", 1),
			"--- p\n+++ p\n@@ -497,7 +497,7 @@\n l497\n l498\n l499\n-l500\n+L500\n l501\n l502\n l503\n"},
		{"line shifted into the suffix", "x\ny\n", "x\nz\ny\n",
			"--- p\n+++ p\n@@ -1,2 +1,3 @@\n x\n+z\n y\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := unifiedDiff("p", c.old, c.new); got != c.want {
				t.Fatalf("diff (-want +got):\n%s", cmp.Diff(c.want, got))
			}
		})
	}
}

func TestUnifiedDiffCaps(t *testing.T) {
	t.Parallel()
	var old, new strings.Builder
	for i := range 2000 {
		old.WriteString("old " + strconv.Itoa(i) + "\n")
		new.WriteString("new " + strconv.Itoa(i) + "\n")
	}
	d := unifiedDiff("p", old.String(), new.String())
	if n := strings.Count(d, "\n"); n > diffMaxLines+4 {
		t.Fatalf("diff of a total rewrite has %d lines, want at most about %d", n, diffMaxLines)
	}
	if !strings.Contains(d, "diff cut after") || !strings.HasPrefix(d, "--- p\n+++ p\n@@ -1,2000 +1,2000 @@\n-old 0\n") {
		t.Fatalf("capped diff:\n%.300s", d)
	}
	long := strings.Repeat("é", 1000)
	if d := unifiedDiff("p", "a\n", long+"\n"); !strings.Contains(d, "…") || strings.Contains(d, "\uFFFD") {
		t.Fatalf("long line not cut cleanly: %.100q", d)
	}
}
