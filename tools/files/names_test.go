package files

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/env"
)

func TestShowName(t *testing.T) {
	for in, want := range map[string]string{
		"plain.go":         "plain.go",
		"dir/with space":   "dir/with space",
		"ünïcode/名前.txt":   "ünïcode/名前.txt",
		"a\nb":             `"a\nb"`,
		"\x1b[31mred":      `"\x1b[31mred"`,
		"cr\rname":         `"cr\rname"`,
		"tab\tname":        `"tab\tname"`,
		"rtl\u202etxt.exe": `"rtl\u202etxt.exe"`,
		"bad\xffutf8":      `"bad\xffutf8"`,
		`"quoted"`:         `"\"quoted\""`,
	} {
		if got := showName(in); got != want {
			t.Errorf("showName(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestListingsQuoteNamesWithControlCharacters(t *testing.T) {
	f := newReadFix(t)
	evil := "two\nlines.txt"
	esc := "\x1b]0;pwned\x07.txt"
	f.put(map[string]string{evil: "needle\n", esc: "needle\n", "plain.txt": "needle\n", "sub\ndir/x.txt": "needle\n"})
	outs := map[string]string{
		"LS":           f.ok("LS", map[string]any{}),
		"Glob":         f.ok("Glob", map[string]any{"pattern": "**/*.txt"}),
		"Grep files":   f.ok("Grep", map[string]any{"pattern": "needle"}),
		"Grep count":   f.ok("Grep", map[string]any{"pattern": "needle", "output_mode": "count"}),
		"Grep content": f.ok("Grep", map[string]any{"pattern": "needle", "output_mode": "content"}),
	}
	for tool, out := range outs {
		if strings.ContainsAny(out, "\x1b\x07") {
			t.Errorf("%s printed a raw escape: %q", tool, out)
		}
		if strings.Contains(out, "two\nlines") {
			t.Errorf("%s printed a raw newline inside a name: %q", tool, out)
		}
		if !strings.Contains(out, `two\nlines.txt"`) || !strings.Contains(out, `\x1b]0;pwned\a.txt"`) {
			t.Errorf("%s does not show the names quoted: %q", tool, out)
		}
		if !strings.Contains(out, "plain.txt") || strings.Contains(out, `plain.txt"`) {
			t.Errorf("%s quoted a plain name: %q", tool, out)
		}
	}
	if !strings.Contains(outs["LS"], `- "sub\ndir/"`) {
		t.Errorf("LS: %q", outs["LS"])
	}
}

// sizedEnv reports a huge file through Stat but fails every read of it: Grep must judge
// the file by its size before reading.
type sizedEnv struct {
	env.ExecutionEnv
	huge string
	read *bool
}

type failingReader struct{ read *bool }

func (r failingReader) Read([]byte) (int, error) { *r.read = true; return 0, errors.New("read") }
func (failingReader) Close() error               { return nil }

func (e sizedEnv) Open(ctx context.Context, p string) (io.ReadCloser, error) {
	if p == e.huge {
		return failingReader{e.read}, nil
	}
	return e.ExecutionEnv.Open(ctx, p)
}

func TestGrepSkipsAnOversizedFileByItsSizeBeforeReading(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(root, "huge.log")
	if err := os.WriteFile(huge, []byte("needle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, GrepMaxFileBytes+1); err != nil { // sparse
		t.Fatal(err)
	}
	read := false
	f := newReadFixAt(t, sizedEnv{ExecutionEnv: env.NewHost(), huge: huge, read: &read}, root)
	f.put(map[string]string{"small.txt": "needle\n"})
	got := f.rel(f.ok("Grep", map[string]any{"pattern": "needle"}))
	if read {
		t.Error("the oversized file was read")
	}
	if want := "Found 1 file\n<root>/small.txt\n(1 file larger than 64 MB not searched.)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
