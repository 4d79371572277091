package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// UUIDs are numbered by first appearance, so lines that share an id still share its
// name; paths, timestamps and the named numbers are replaced, everything else kept.
func TestRewriterNamesWhatVaries(t *testing.T) {
	var r Rewriter
	r.Path("/tmp/work/abc", "$ROOT")
	r.Path("/tmp/work", "$TMP")
	r.Numbers("duration_ms")
	in := `{"id":"0054c1c7-b979-4f26-8bd1-2a3249c15683","path":"/tmp/work/abc/x","other":"/tmp/work/y","at":"2026-12-06T02:25:09.123Z","duration_ms":35,"turns":3}` + "\n" +
		`{"id":"3d23b3a8-e663-4dc3-90b8-63bf4f2f1eed","session":"0054c1c7-b979-4f26-8bd1-2a3249c15683"}`
	want := `{"id":"$UUID1","path":"$ROOT/x","other":"$TMP/y","at":"$TIME","duration_ms":"$N","turns":3}` + "\n" +
		`{"id":"$UUID2","session":"$UUID1"}`
	if got := r.Rewrite(in); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// A difference names the changed line and, for JSON lines, the field that changed.
func TestDiffShowsTheChangedField(t *testing.T) {
	want := "> {\"a\":1}\n< {\"type\":\"result\",\"n\":1}\nexit 0\n"
	got := "> {\"a\":1}\n< {\"type\":\"result\",\"n\":2}\nexit 0\n"
	d := Diff(want, got)
	for _, s := range []string{"@@ -1,3 +1,3 @@", "-< {\"type\":\"result\",\"n\":1}", "+< {\"type\":\"result\",\"n\":2}", "\"n\":"} {
		if !strings.Contains(d, s) {
			t.Fatalf("the diff lacks %q:\n%s", s, d)
		}
	}
}

// Under update Check writes the section into the archive, and a later Check without
// update passes on the same text and fails on another.
func TestCheckUpdatesThenCompares(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.txtar")
	if err := os.WriteFile(path, []byte("about\n-- stdin --\nhi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	Check(t, path, Load(t, path), "transcript", "< out\n", true)
	a := Load(t, path)
	if s, ok := Section(a, "transcript"); !ok || s != "< out\n" {
		t.Fatalf("transcript after update: %q, %v", s, ok)
	}
	if s, _ := Section(a, "stdin"); s != "hi\n" {
		t.Fatalf("update changed another section: %q", s)
	}
	Check(t, path, a, "transcript", "< out\n", false)
	ft := &fakeT{TB: t}
	Check(ft, path, a, "transcript", "< changed\n", false)
	if !ft.failed {
		t.Fatal("a different transcript passed")
	}
}

type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Errorf(string, ...any) { f.failed = true }
func (f *fakeT) Helper()               {}
