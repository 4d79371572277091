package files

import (
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/tools"
)

func TestApplyEdit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, text, old, new string
		all, crlf            bool
		want                 string
		n                    int
		code                 string
	}{
		{name: "once", text: "a b c", old: "b", new: "B", want: "a B c", n: 1},
		{name: "not found", text: "a b c", old: "x", new: "y", code: CodeEditNotFound},
		{name: "not unique", text: "b b b", old: "b", new: "B", code: CodeEditNotUnique},
		{name: "replace all", text: "b b b", old: "b", new: "B", all: true, want: "B B B", n: 3},
		{name: "replace all of one", text: "a b", old: "b", new: "B", all: true, want: "a B", n: 1},
		{name: "noop", text: "a", old: "a", new: "a", code: CodeEditNoop},
		{name: "empty old", text: "a", old: "", new: "b", code: tools.CodeInputInvalid},
		{name: "delete", text: "keep drop keep", old: " drop", new: "", want: "keep keep", n: 1},
		{name: "multi-line in LF", text: "x\ny\nz\n", old: "x\ny", new: "X\nY", want: "X\nY\nz\n", n: 1},
		{name: "LF old in CRLF file", text: "x\r\ny\r\nz\r\n", old: "x\ny", new: "X\nY\nW", crlf: true, want: "X\r\nY\r\nW\r\nz\r\n", n: 1},
		{name: "single-line old, multi-line new in CRLF file", text: "x\r\ny\r\n", old: "y", new: "y\nq", crlf: true, want: "x\r\ny\r\nq\r\n", n: 1},
		{name: "CRLF old in CRLF file", text: "x\r\ny\r\n", old: "x\r\ny", new: "X\r\nY", crlf: true, want: "X\r\nY\r\n", n: 1},
		{name: "LF lines of a mixed file", text: "a\r\nb\r\nc\nd\n", old: "c\nd", new: "C\nD", crlf: true, want: "a\r\nb\r\nC\nD\n", n: 1},
		{name: "CRLF uniqueness counts CRLF spelling", text: "p\r\nq\r\np\r\nq\r\n", old: "p\nq", new: "z", crlf: true, code: CodeEditNotUnique},
		{name: "no CRLF tolerance in an LF file", text: "x\r\ny\n", old: "x\ny", new: "z", code: CodeEditNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, n, err := applyEdit(c.text, c.old, c.new, c.all, c.crlf)
			if c.code != "" {
				if !sema.IsCode(err, c.code) {
					t.Fatalf("err = %v, want code %s", err, c.code)
				}
				return
			}
			if err != nil || got != c.want || n != c.n {
				t.Fatalf("applyEdit = %q, %d, %v; want %q, %d", got, n, err, c.want, c.n)
			}
		})
	}
	if _, _, err := applyEdit("b b", "b", "c", false, false); !strings.Contains(err.Error(), "2 times") {
		t.Errorf("not-unique message does not say how many: %v", err)
	}
}

// FuzzEditApply checks applyEdit against the standard library: with no CRLF tolerance
// in play, the outcome must be strings.Count's verdict and strings.Replace's text.
func FuzzEditApply(f *testing.F) {
	f.Add("hello world", "world", "there", false, false)
	f.Add("aaa", "a", "b", false, false)
	f.Add("aaa", "aa", "b", true, false)
	f.Add("x\r\ny\r\n", "x\ny", "p\nq", false, true)
	f.Add("abcabc", "bc", "", true, false)
	f.Add("", "a", "b", false, false)
	f.Fuzz(func(t *testing.T, text, old, new string, all, crlf bool) {
		got, n, err := applyEdit(text, old, new, all, crlf)
		switch {
		case old == "":
			if !sema.IsCode(err, tools.CodeInputInvalid) {
				t.Fatalf("empty old: err = %v", err)
			}
			return
		case old == new:
			if !sema.IsCode(err, CodeEditNoop) {
				t.Fatalf("old == new: err = %v", err)
			}
			return
		}
		// The spellings tried, in order: only these may have been used.
		spellings := [][2]string{{old, new}}
		if crlf && !strings.Contains(old, "\r") && !strings.Contains(new, "\r") {
			spellings = [][2]string{{strings.ReplaceAll(old, "\n", "\r\n"), strings.ReplaceAll(new, "\n", "\r\n")}}
			if strings.Contains(old, "\n") {
				spellings = append(spellings, [2]string{old, new})
			}
		}
		for _, s := range spellings {
			count := strings.Count(text, s[0])
			if count == 0 {
				continue
			}
			switch {
			case all:
				if err != nil || n != count || got != strings.Replace(text, s[0], s[1], -1) {
					t.Fatalf("replace_all: got %q, %d, %v; want %q, %d", got, n, err, strings.Replace(text, s[0], s[1], -1), count)
				}
			case count > 1:
				if !sema.IsCode(err, CodeEditNotUnique) {
					t.Fatalf("%d occurrences without replace_all: err = %v", count, err)
				}
				return
			default:
				if err != nil || n != 1 || got != strings.Replace(text, s[0], s[1], 1) {
					t.Fatalf("single: got %q, %d, %v", got, n, err)
				}
			}
			if got == text {
				t.Fatalf("a successful edit left the text unchanged")
			}
			return
		}
		if !sema.IsCode(err, CodeEditNotFound) {
			t.Fatalf("no occurrence: err = %v, got %q", err, got)
		}
	})
}

func TestEditTool(t *testing.T) {
	t.Parallel()
	t.Run("answer shows a diff", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		f.put("f.go", "package f\n\nfunc A() {}\n\nfunc B() {}\n")
		f.markRead("f.go")
		r := f.call("Edit", map[string]any{"file_path": "f.go", "old_string": "func B() {}", "new_string": "func B() int { return 1 }"})
		wantCode(t, r, "")
		want := "The file f.go has been updated.\n--- f.go\n+++ f.go\n@@ -2,4 +2,4 @@\n \n func A() {}\n \n-func B() {}\n+func B() int { return 1 }\n"
		if r.TextOf() != want {
			t.Fatalf("answer:\n%s\nwant:\n%s", r.TextOf(), want)
		}
	})
	t.Run("CRLF file stays CRLF", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		f.put("w.txt", "one\r\ntwo\r\nthree\r\n")
		f.markRead("w.txt")
		wantCode(t, f.call("Edit", map[string]any{"file_path": "w.txt", "old_string": "one\ntwo", "new_string": "1\n2\n2.5"}), "")
		if got := f.bytes("w.txt"); got != "1\r\n2\r\n2.5\r\nthree\r\n" {
			t.Fatalf("file = %q", got)
		}
		// The read-state follows the write: a second edit needs no read.
		wantCode(t, f.call("Edit", map[string]any{"file_path": "w.txt", "old_string": "three", "new_string": "3"}), "")
		if got := f.bytes("w.txt"); got != "1\r\n2\r\n2.5\r\n3\r\n" {
			t.Fatalf("file = %q", got)
		}
	})
	t.Run("BOM kept", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		f.put("b.txt", "\uFEFFhead\nbody\n")
		f.markRead("b.txt")
		wantCode(t, f.call("Edit", map[string]any{"file_path": "b.txt", "old_string": "head", "new_string": "HEAD"}), "")
		if got := f.bytes("b.txt"); got != "\uFEFFHEAD\nbody\n" {
			t.Fatalf("file = %q", got)
		}
	})
	t.Run("not unique says how many", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		f.put("f.txt", "x\nx\nx\n")
		f.markRead("f.txt")
		r := f.call("Edit", map[string]any{"file_path": "f.txt", "old_string": "x", "new_string": "y"})
		wantCode(t, r, CodeEditNotUnique)
		if !strings.Contains(r.TextOf(), "3 times") {
			t.Fatalf("answer = %q", r.TextOf())
		}
		wantCode(t, f.call("Edit", map[string]any{"file_path": "f.txt", "old_string": "x", "new_string": "y", "replace_all": true}), "")
		if f.bytes("f.txt") != "y\ny\ny\n" {
			t.Fatalf("file = %q", f.bytes("f.txt"))
		}
	})
	t.Run("missing file", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		wantCode(t, f.call("Edit", map[string]any{"file_path": "nope.txt", "old_string": "a", "new_string": "b"}), CodeFileNotFound)
	})
	t.Run("empty old_string creates", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		wantCode(t, f.call("Edit", map[string]any{"file_path": "new.txt", "old_string": "", "new_string": "fresh\n"}), "")
		if f.bytes("new.txt") != "fresh\n" {
			t.Fatalf("file = %q", f.bytes("new.txt"))
		}
		// Now it exists with content: an empty old_string is refused.
		wantCode(t, f.call("Edit", map[string]any{"file_path": "new.txt", "old_string": "", "new_string": "again"}), tools.CodeInputInvalid)
	})
	t.Run("empty old_string fills an empty file", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		f.put("e.txt", "")
		f.markRead("e.txt")
		wantCode(t, f.call("Edit", map[string]any{"file_path": "e.txt", "old_string": "", "new_string": "filled"}), "")
		if f.bytes("e.txt") != "filled" {
			t.Fatalf("file = %q", f.bytes("e.txt"))
		}
	})
	t.Run("notebooks go to NotebookEdit", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		wantCode(t, f.call("Edit", map[string]any{"file_path": "n.ipynb", "old_string": "a", "new_string": "b"}), tools.CodeInputInvalid)
	})
}

func TestMultiEdit(t *testing.T) {
	t.Parallel()
	const orig = "one\ntwo\nthree\nfour\n"
	t.Run("applied in order", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		f.put("f.txt", orig)
		f.markRead("f.txt")
		r := f.call("MultiEdit", map[string]any{"file_path": "f.txt", "edits": []map[string]any{
			{"old_string": "one", "new_string": "ONE"},
			{"old_string": "ONE\ntwo", "new_string": "ONE\n2"}, // sees the first edit's result
			{"old_string": "o", "new_string": "0", "replace_all": true},
		}})
		wantCode(t, r, "")
		if got := f.bytes("f.txt"); got != "ONE\n2\nthree\nf0ur\n" {
			t.Fatalf("file = %q", got)
		}
		if !strings.Contains(r.TextOf(), "3 edits applied") {
			t.Fatalf("answer = %q", r.TextOf())
		}
	})
	t.Run("third edit fails: nothing written", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		f.put("f.txt", orig)
		f.markRead("f.txt")
		r := f.call("MultiEdit", map[string]any{"file_path": "f.txt", "edits": []map[string]any{
			{"old_string": "one", "new_string": "1"},
			{"old_string": "two", "new_string": "2"},
			{"old_string": "five", "new_string": "5"},
		}})
		wantCode(t, r, CodeEditNotFound)
		if !strings.Contains(r.TextOf(), "edits[2]") {
			t.Fatalf("answer does not name the failing edit: %q", r.TextOf())
		}
		if f.bytes("f.txt") != orig {
			t.Fatalf("file changed: %q", f.bytes("f.txt"))
		}
		if c := f.rec.counts(); c != [5]int{} {
			t.Fatalf("hooks ran for a refused MultiEdit: %v", c)
		}
	})
	t.Run("input checks name the index", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		r := f.call("MultiEdit", map[string]any{"file_path": "f.txt", "edits": []map[string]any{
			{"old_string": "a", "new_string": "b"}, {"old_string": "c", "new_string": "c"}}})
		wantCode(t, r, CodeEditNoop)
		if !strings.Contains(r.TextOf(), "edits[1]") {
			t.Fatalf("answer = %q", r.TextOf())
		}
		wantCode(t, f.call("MultiEdit", map[string]any{"file_path": "f.txt", "edits": []map[string]any{}}), tools.CodeInputInvalid)
	})
	t.Run("edits that cancel out", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		f.put("f.txt", orig)
		f.markRead("f.txt")
		wantCode(t, f.call("MultiEdit", map[string]any{"file_path": "f.txt", "edits": []map[string]any{
			{"old_string": "one", "new_string": "1"}, {"old_string": "1", "new_string": "one"}}}), CodeEditNoop)
	})
	t.Run("creates with an empty first old_string", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		wantCode(t, f.call("MultiEdit", map[string]any{"file_path": "n.txt", "edits": []map[string]any{
			{"old_string": "", "new_string": "hello world\n"}, {"old_string": "world", "new_string": "there"}}}), "")
		if f.bytes("n.txt") != "hello there\n" {
			t.Fatalf("file = %q", f.bytes("n.txt"))
		}
	})
}
