// Package golden pins a protocol's transcripts in txtar archives: a test reads its
// scenario from an archive, drives the real code, and compares what came out with the
// archive's transcript section; under -update it writes the section instead. It is the
// golden-file scaffolding the Agent SDK protocol's and the service's event stream's
// tests share, as the MCP SDK pins its JSON-RPC.
//
// What differs from run to run (ids, durations, temporary paths) is rewritten by a
// [Rewriter] before the comparison, never skipped: a field that is there keeps its place
// in the transcript, with a name instead of its value.
package golden

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/sema-agent/sema/internal/linediff"
)

// Load reads the archive at path.
func Load(t testing.TB, path string) *txtar.Archive {
	t.Helper()
	a, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Section returns the body of the archive's file name, and whether it has one.
func Section(a *txtar.Archive, name string) (string, bool) {
	for _, f := range a.Files {
		if f.Name == name {
			return string(f.Data), true
		}
	}
	return "", false
}

// Check compares got with the archive's section name. Under update it writes got into
// the section instead (adding the section when it is missing) and rewrites the file at
// path; otherwise a difference fails t with a line diff, and, for the first changed
// line that is JSON on both sides, the fields that changed.
func Check(t testing.TB, path string, a *txtar.Archive, name, got string, update bool) {
	t.Helper()
	if update {
		set(a, name, got)
		if err := os.WriteFile(path, txtar.Format(a), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, ok := Section(a, name)
	if !ok {
		t.Fatalf("%s has no %q section: run the test with -update to write it", path, name)
	}
	if got == want {
		return
	}
	t.Errorf("%s: the %s changed; if that is intended, run the test with -update and review the diff.\n%s", path, name, Diff(want, got))
}

func set(a *txtar.Archive, name, data string) {
	for i := range a.Files {
		if a.Files[i].Name == name {
			a.Files[i].Data = []byte(data)
			return
		}
	}
	a.Files = append(a.Files, txtar.File{Name: name, Data: []byte(data)})
}

// Diff renders the line diff from want to got (-want +got, three lines of context), and
// under it the fields of the first changed line that differ, when that line holds a JSON
// object on both sides (after a transcript's "< " or "> " mark, or an event's "data: "):
// a protocol line is long, and the field is what a reader looks for.
func Diff(want, got string) string {
	a, b := linediff.Lines(want), linediff.Lines(got)
	ops := linediff.Script(a, b, 10000)
	var sb strings.Builder
	for _, h := range linediff.Hunks(ops, 3) {
		fmt.Fprintf(&sb, "@@ -%d,%d +%d,%d @@\n", h.OldLine+1, h.OldLen, h.NewLine+1, h.NewLen)
		for _, op := range ops[h.Start:h.End] {
			sb.WriteByte(op.Kind)
			sb.WriteString(strings.TrimSuffix(op.Text, "\n"))
			sb.WriteByte('\n')
		}
	}
	if removed, added, ok := firstChange(ops); ok {
		if d := jsonDiff(removed, added); d != "" {
			fmt.Fprintf(&sb, "the first changed line's fields (-want +got):\n%s", d)
		}
	}
	return sb.String()
}

// firstChange returns the first removed line and the first added line after it.
func firstChange(ops []linediff.Op) (removed, added string, ok bool) {
	i := 0
	for i < len(ops) && ops[i].Kind != '-' {
		i++
	}
	if i == len(ops) {
		return "", "", false
	}
	for j := i + 1; j < len(ops); j++ {
		if ops[j].Kind == '+' {
			return ops[i].Text, ops[j].Text, true
		}
	}
	return "", "", false
}

func jsonDiff(a, b string) string {
	var x, y map[string]any
	if json.Unmarshal([]byte(unmark(a)), &x) != nil || json.Unmarshal([]byte(unmark(b)), &y) != nil {
		return ""
	}
	return cmp.Diff(x, y)
}

// unmark drops a transcript line's direction mark (or an event's data field name) and
// its newline.
func unmark(line string) string {
	line = strings.TrimSuffix(line, "\n")
	for _, m := range []string{"< ", "> ", "data: "} {
		if s, ok := strings.CutPrefix(line, m); ok {
			return s
		}
	}
	return line
}
