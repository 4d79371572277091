package files

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sema-agent/sema/internal/linediff"
)

// Limits of the diff snippets the write tools answer with. A snippet shows the model
// what its edit did; it is not a patch to apply, so it is capped rather than complete.
const (
	diffContext  = 3   // unchanged lines around each change
	diffMaxLines = 120 // hunk lines shown before the snippet is cut
	diffMaxWidth = 400 // characters of one line shown
	// diffMaxEdits bounds the line diff's work (Myers' D). A change bigger than this is
	// shown as one block replacing the changed region.
	diffMaxEdits = 300
)

// unifiedDiff returns a unified-diff snippet of the change from old to new, labelled
// with path, or "" when they are equal. Unchanged leading and trailing text is skipped
// without splitting it into lines, so one changed line in a large file costs a few
// passes of memory comparison, not a line diff of the whole file.
func unifiedDiff(path, old, new string) string {
	if old == new {
		return ""
	}
	// The common prefix, backed up to a line start.
	p := commonPrefixLen(old, new)
	p = strings.LastIndexByte(old[:p], '\n') + 1
	// The common suffix, not overlapping the prefix, moved forward to a line start.
	s := commonSuffixLen(old[p:], new[p:])
	if lo, ln := len(old)-s, len(new)-s; (lo > p && old[lo-1] != '\n') || (ln > p && new[ln-1] != '\n') {
		if i := strings.IndexByte(old[lo:], '\n'); i >= 0 {
			s -= i + 1
		} else {
			s = 0
		}
	}
	oldMid, newMid := old[p:len(old)-s], new[p:len(new)-s]

	var ops []linediff.Op
	before := lastLines(old[:p], diffContext)
	for _, l := range before {
		ops = append(ops, linediff.Op{Kind: ' ', Text: l})
	}
	ops = append(ops, linediff.Script(linediff.Lines(oldMid), linediff.Lines(newMid), diffMaxEdits)...)
	for _, l := range firstLines(old[len(old)-s:], diffContext) {
		ops = append(ops, linediff.Op{Kind: ' ', Text: l})
	}
	firstLine := strings.Count(old[:p], "\n") + 1 - len(before)
	return formatHunks(path, ops, firstLine, firstLine)
}

// commonPrefixLen compares in blocks first: string equality of a block is a vectorized
// memory comparison, far faster than a byte loop over megabytes.
func commonPrefixLen(a, b string) int {
	const block = 4096
	n := min(len(a), len(b))
	i := 0
	for i+block <= n && a[i:i+block] == b[i:i+block] {
		i += block
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

func commonSuffixLen(a, b string) int {
	const block = 4096
	n := min(len(a), len(b))
	i := 0
	for i+block <= n && a[len(a)-i-block:len(a)-i] == b[len(b)-i-block:len(b)-i] {
		i += block
	}
	for i < n && a[len(a)-1-i] == b[len(b)-1-i] {
		i++
	}
	return i
}

// lastLines returns the last n lines of s, which is empty or ends with '\n'.
func lastLines(s string, n int) []string {
	i := len(s)
	for range n {
		if i == 0 {
			break
		}
		i = strings.LastIndexByte(s[:i-1], '\n') + 1
	}
	return linediff.Lines(s[i:])
}

// firstLines returns the first n lines of s.
func firstLines(s string, n int) []string {
	i := 0
	for range n {
		if i == len(s) {
			break
		}
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			i = len(s)
			break
		}
		i += j + 1
	}
	return linediff.Lines(s[:i])
}

// formatHunks prints ops as linediff.Hunks groups them, diffContext lines around each
// change, cut at diffMaxLines; oldLine and newLine number the first op's lines.
func formatHunks(path string, ops []linediff.Op, oldLine, newLine int) string {
	var b strings.Builder
	size := 2*len(path) + 64
	for _, op := range ops[:min(len(ops), diffMaxLines)] {
		size += min(len(op.Text), diffMaxWidth+3) + 2
	}
	b.Grow(size)
	b.WriteString("--- " + path + "\n+++ " + path + "\n")
	shown := 0
	for _, h := range linediff.Hunks(ops, diffContext) {
		b.WriteString("@@ -")
		writeRange(&b, oldLine+h.OldLine, h.OldLen)
		b.WriteString(" +")
		writeRange(&b, newLine+h.NewLine, h.NewLen)
		b.WriteString(" @@\n")
		for _, op := range ops[h.Start:h.End] {
			if shown == diffMaxLines {
				fmt.Fprintf(&b, "… (diff cut after %d lines)\n", diffMaxLines)
				return b.String()
			}
			b.WriteByte(op.Kind)
			writeDisplayLine(&b, op.Text)
			b.WriteByte('\n')
			shown++
		}
	}
	return b.String()
}

// writeRange prints "start,count"; an empty range names the line before it, as diff
// does.
func writeRange(b *strings.Builder, start, count int) {
	if count == 0 {
		start--
	}
	b.WriteString(strconv.Itoa(start))
	b.WriteByte(',')
	b.WriteString(strconv.Itoa(count))
}

// writeDisplayLine prints a line without its line break, cut at diffMaxWidth bytes.
func writeDisplayLine(b *strings.Builder, l string) {
	l = strings.TrimSuffix(l, "\n")
	l = strings.TrimSuffix(l, "\r")
	if len(l) <= diffMaxWidth {
		b.WriteString(l)
		return
	}
	cut := diffMaxWidth
	for cut > 0 && l[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	b.WriteString(l[:cut])
	b.WriteString("…")
}
