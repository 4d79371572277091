package files

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/sema-agent/sema/tools"
)

// matchedLines runs the matcher over content and returns the 1-based numbers of the
// lines it reports.
func matchedLines(t *testing.T, m *grepMatcher, content string) []int {
	t.Helper()
	buf := []byte(content)
	var lines []int
	m.scan(buf, func(start, end int) bool {
		first := bytes.Count(buf[:start], []byte{'\n'}) + 1
		last := first + bytes.Count(buf[start:end], []byte{'\n'})
		for l := first; l <= last; l++ {
			if len(lines) == 0 || lines[len(lines)-1] < l {
				lines = append(lines, l)
			}
		}
		return true
	})
	return lines
}

func TestGrepMatcher(t *testing.T) {
	t.Parallel()
	text := "alpha beta\nGamma delta\n\nfunc NewReader(r io.Reader)\nfunc newWriter()\n  indented\nlast line"
	cases := []struct {
		pattern   string
		fold      bool
		multiline bool
		content   string
		want      []int
	}{
		{pattern: "beta", content: text, want: []int{1}},
		{pattern: "a", content: text, want: []int{1, 2, 4, 7}},
		{pattern: "gamma", content: text},
		{pattern: "gamma", fold: true, content: text, want: []int{2}},
		{pattern: "(?i)GAMMA", content: text, want: []int{2}},
		{pattern: `func \w+Reader\(`, content: text, want: []int{4}},
		{pattern: `func \w+(Reader|Writer)\(`, content: text, want: []int{4, 5}},
		{pattern: `Reader|Writer`, content: text, want: []int{4, 5}},
		{pattern: `^func`, content: text, want: []int{4, 5}},
		{pattern: `\)$`, content: text, want: []int{4, 5}},
		{pattern: `^$`, content: text, want: []int{3}},
		{pattern: `^`, content: "a\nb\n", want: []int{1, 2}},  // no line after the final newline
		{pattern: `x*`, content: "a\nb", want: []int{1, 2}},   // empty matches still mark lines
		{pattern: `^`, content: ""},                           // an empty file has no lines
		{pattern: `\Afunc`, content: text, want: []int{4, 5}}, // \A is a line start without multiline
		{pattern: `line\z`, content: text, want: []int{7}},    // \z is a line end
		{pattern: `delta\s+func`, content: text},              // \s never crosses a line
		{pattern: `beta[^x]Gamma`, content: text},             // neither does a negated class
		{pattern: `(?s)beta.Gamma`, content: text},            // nor (?s) without multiline
		{pattern: `^\s+indented`, content: text, want: []int{6}},
		{pattern: `delta\s+func`, multiline: true, content: "delta\n\nfunc x", want: []int{1, 2, 3}},
		{pattern: `beta.Gamma`, multiline: true, content: text, want: []int{1, 2}},
		{pattern: `NewReader.*newWriter`, multiline: true, content: text, want: []int{4, 5}},
		{pattern: `beta\n`, multiline: true, content: text, want: []int{1}}, // a match ending in a newline stays on its line
		{pattern: `^f`, multiline: true, content: text, want: []int{4, 5}},
		{pattern: `b\nc`, multiline: true, content: "a b\nc b\nc", want: []int{1, 2, 3}}, // the second match starts on the first's last line
		{pattern: `é`, content: "café\ncafe\n", want: []int{1}},
		{pattern: `É`, fold: true, content: "café\ncafe\n", want: []int{1}}, // non-ASCII folding goes through the regexp
		{pattern: `kelvin`, fold: true, content: "plain\n\u212Aelvin\n", want: []int{2}},
		{pattern: `pass`, fold: true, content: "PA\u017FS\n", want: []int{1}},
		{pattern: `kit`, fold: true, content: "KIT\nkit\nkid\n", want: []int{1, 2}},
		{pattern: `foo`, content: "foo\nfoo\nbar foo\n", want: []int{1, 2, 3}},
		{pattern: `o+`, content: "foo\nbar\nboo", want: []int{1, 3}},
		{pattern: `\bfoo\b`, content: "xfoo\nfoo\nfoox\n(foo)", want: []int{2, 4}},
	}
	for _, c := range cases {
		m, err := compileGrep(c.pattern, c.fold, c.multiline)
		if err != nil {
			t.Fatalf("compileGrep(%q): %v", c.pattern, err)
		}
		if got := matchedLines(t, m, c.content); !slices.Equal(got, c.want) {
			t.Errorf("pattern %q (fold %v, multiline %v): lines %v, want %v", c.pattern, c.fold, c.multiline, got, c.want)
		}
	}
}

func TestGrepLiteralExtraction(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pattern string
		fold    bool
		lits    []string // nil: no prefilter
		pure    bool
	}{
		{pattern: "func NewReader", lits: []string{"func NewReader"}, pure: true},
		{pattern: `func \w+Reader\(`, lits: []string{"Reader("}},
		{pattern: `foo|barbaz`, lits: []string{"foo", "barbaz"}},
		{pattern: `(foo|bar)+x`, lits: []string{"foo", "bar"}},
		{pattern: `Hello`, fold: true, lits: []string{"hello"}, pure: true},
		{pattern: `kilo`, fold: true, lits: []string{"kilo"}}, // k folds to the Kelvin sign: not pure
		{pattern: `a.b`}, // single bytes are not worth it
		{pattern: `\w+`},
		{pattern: `(ab)?cd`, lits: []string{"cd"}},
		{pattern: `x{2,}yz`, lits: []string{"yz"}},
		{pattern: `(?:abc){3}`, lits: []string{"abcabcabc"}, pure: true},
		{pattern: `café`, lits: []string{"café"}, pure: true},
		{pattern: `café`, fold: true}, // non-ASCII folding: the regexp decides
	}
	for _, c := range cases {
		m, err := compileGrep(c.pattern, c.fold, false)
		if err != nil {
			t.Fatal(err)
		}
		var lits []string
		for _, l := range m.lits {
			lits = append(lits, string(l.b))
		}
		if !slices.Equal(lits, c.lits) || m.pure != c.pure {
			t.Errorf("%q (fold %v): literals %q pure %v, want %q pure %v", c.pattern, c.fold, lits, m.pure, c.lits, c.pure)
		}
	}
}

func TestIndexFoldASCII(t *testing.T) {
	t.Parallel()
	cases := []struct {
		s, lit string
		want   int
	}{
		{"xxHeLLo", "hello", 2},
		{"hello", "hello", 0},
		{"hell", "hello", -1},
		{"", "a", -1},
		{"a(B)c", "(b)", 1},
		{"zzz_X_", "_x_", 3},
		{"aaaaab", "ab", 4},
		{"ABAB", "bab", 1},
	}
	for _, c := range cases {
		lit := []byte(c.lit)
		if got := indexFoldASCII([]byte(c.s), lit, rarestByte(lit)); got != c.want {
			t.Errorf("indexFoldASCII(%q, %q) = %d, want %d", c.s, c.lit, got, c.want)
		}
	}
}

// grepTree is a small project for the tool tests.
var grepTree = map[string]string{
	"main.go":          "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"Hello\")\n}\n",
	"lib/util.go":      "package lib\n\n// Hello says hello.\nfunc Hello() string {\n\treturn \"hello\"\n}\n",
	"lib/util_test.go": "package lib\n\nfunc TestHello(t *testing.T) {}\n",
	"web/app.ts":       "export function hello(): string {\n  return 'hello';\n}\n",
	"web/app.js":       "function hello() { return 'hello' }\n",
	"README.md":        "# Project\n\nSay hello.\n",
	".env.example":     "HELLO=1\n",
	"bin/tool":         "\x7fELF\x00\x00hello binary\n",
	"vendor/dep.go":    "package dep // hello\n",
	".gitignore":       "vendor/\n",
	"notes.txt":        "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n",
}

func TestGrepModes(t *testing.T) {
	t.Parallel()
	f := newReadFix(t)
	f.put(grepTree)
	for i, p := range []string{"main.go", "lib/util.go", "lib/util_test.go", "web/app.ts", "web/app.js", "README.md", ".env.example", "notes.txt"} {
		f.age(p, i)
	}
	cases := []struct {
		name  string
		input map[string]any
		want  string
	}{
		{"files by default, newest first", map[string]any{"pattern": "hello"},
			"Found 4 files\n<root>/lib/util.go\n<root>/web/app.ts\n<root>/web/app.js\n<root>/README.md"},
		{"ignore case", map[string]any{"pattern": "hello", "-i": true},
			"Found 7 files\n<root>/main.go\n<root>/lib/util.go\n<root>/lib/util_test.go\n<root>/web/app.ts\n<root>/web/app.js\n<root>/README.md\n<root>/.env.example"},
		{"content", map[string]any{"pattern": "hello", "output_mode": "content"},
			"<root>/README.md:3:Say hello.\n<root>/lib/util.go:3:// Hello says hello.\n<root>/lib/util.go:5:\treturn \"hello\"\n<root>/web/app.js:1:function hello() { return 'hello' }\n<root>/web/app.ts:1:export function hello(): string {\n<root>/web/app.ts:2:  return 'hello';"},
		{"content without line numbers", map[string]any{"pattern": "^func", "output_mode": "content", "-n": false},
			"<root>/lib/util.go:func Hello() string {\n<root>/lib/util_test.go:func TestHello(t *testing.T) {}\n<root>/main.go:func main() {\n<root>/web/app.js:function hello() { return 'hello' }"},
		{"count", map[string]any{"pattern": "hello", "output_mode": "count", "-i": true},
			"<root>/.env.example:1\n<root>/README.md:1\n<root>/lib/util.go:3\n<root>/lib/util_test.go:1\n<root>/main.go:1\n<root>/web/app.js:1\n<root>/web/app.ts:2\n\nFound 10 matching lines in 7 files."},
		{"type", map[string]any{"pattern": "hello", "type": "ts"}, "Found 1 file\n<root>/web/app.ts"},
		{"type go", map[string]any{"pattern": "Hello", "type": "go", "output_mode": "count"},
			"<root>/lib/util.go:2\n<root>/lib/util_test.go:1\n<root>/main.go:1\n\nFound 4 matching lines in 3 files."},
		{"glob on base name", map[string]any{"pattern": "hello", "glob": "*.{ts,js}"}, "Found 2 files\n<root>/web/app.ts\n<root>/web/app.js"},
		{"glob list", map[string]any{"pattern": "hello", "glob": "*.ts,*.md"}, "Found 2 files\n<root>/web/app.ts\n<root>/README.md"},
		{"glob on path", map[string]any{"pattern": "hello", "glob": "lib/**"}, "Found 1 file\n<root>/lib/util.go"},
		{"glob exclusion", map[string]any{"pattern": "hello", "glob": "!*.js !*.md"}, "Found 2 files\n<root>/lib/util.go\n<root>/web/app.ts"},
		{"path", map[string]any{"pattern": "hello", "path": "web"}, "Found 2 files\n<root>/web/app.ts\n<root>/web/app.js"},
		{"single file", map[string]any{"pattern": "return", "path": "lib/util.go", "output_mode": "content"}, "<root>/lib/util.go:5:\treturn \"hello\""},
		{"explicit ignored directory", map[string]any{"pattern": "hello", "path": "vendor"}, "Found 1 file\n<root>/vendor/dep.go"},
		{"head_limit on files", map[string]any{"pattern": "hello", "head_limit": 2},
			"Found 4 files\n<root>/lib/util.go\n<root>/web/app.ts\n\n(Output cut at head_limit 2: 2 of 4 entries are shown. Narrow the search with path, glob or type.)"},
		{"head_limit on content", map[string]any{"pattern": "hello", "output_mode": "content", "head_limit": 2},
			"<root>/README.md:3:Say hello.\n<root>/lib/util.go:3:// Hello says hello.\n\n(Output cut at head_limit 2: the first 2 lines are shown. Narrow the search with path, glob or type.)"},
		{"after context", map[string]any{"pattern": "two|six", "path": "notes.txt", "output_mode": "content", "-A": 1},
			"<root>/notes.txt:2:two\n<root>/notes.txt-3-three\n--\n<root>/notes.txt:6:six\n<root>/notes.txt-7-seven"},
		{"before context", map[string]any{"pattern": "^t", "path": "notes.txt", "output_mode": "content", "-B": 1},
			"<root>/notes.txt-1-one\n<root>/notes.txt:2:two\n<root>/notes.txt:3:three\n--\n<root>/notes.txt-9-nine\n<root>/notes.txt:10:ten"},
		{"context merges overlapping groups", map[string]any{"pattern": "three|five", "path": "notes.txt", "output_mode": "content", "-C": 1},
			"<root>/notes.txt-2-two\n<root>/notes.txt:3:three\n<root>/notes.txt-4-four\n<root>/notes.txt:5:five\n<root>/notes.txt-6-six"},
		{"an explicit -A wins over -C", map[string]any{"pattern": "five", "path": "notes.txt", "output_mode": "content", "-C": 2, "-A": 0},
			"<root>/notes.txt-3-three\n<root>/notes.txt-4-four\n<root>/notes.txt:5:five"},
		{"an explicit -B wins over -C", map[string]any{"pattern": "five", "path": "notes.txt", "output_mode": "content", "-C": 1, "-B": 2},
			"<root>/notes.txt-3-three\n<root>/notes.txt-4-four\n<root>/notes.txt:5:five\n<root>/notes.txt-6-six"},
		{"context at the file edges", map[string]any{"pattern": "one|ten", "path": "notes.txt", "output_mode": "content", "-C": 3, "-n": false},
			"<root>/notes.txt:one\n<root>/notes.txt-two\n<root>/notes.txt-three\n<root>/notes.txt-four\n--\n<root>/notes.txt-seven\n<root>/notes.txt-eight\n<root>/notes.txt-nine\n<root>/notes.txt:ten"},
		{"context separates files", map[string]any{"pattern": "^package", "type": "go", "output_mode": "content", "-A": 1},
			"<root>/lib/util.go:1:package lib\n<root>/lib/util.go-2-\n--\n<root>/lib/util_test.go:1:package lib\n<root>/lib/util_test.go-2-\n--\n<root>/main.go:1:package main\n<root>/main.go-2-"},
		{"multiline", map[string]any{"pattern": `func main\(\) \{.*?\}`, "multiline": true, "output_mode": "content"},
			"<root>/main.go:5:func main() {\n<root>/main.go:6:\tfmt.Println(\"Hello\")\n<root>/main.go:7:}"},
		{"no newline without multiline", map[string]any{"pattern": `five.six`}, "No files found"},
		{"no match", map[string]any{"pattern": "zebra"}, "No files found"},
		{"no match in content mode", map[string]any{"pattern": "zebra", "output_mode": "content"}, "No matches found"},
		{"binary files are skipped", map[string]any{"pattern": "binary"}, "No files found"},
		{"hidden files are searched", map[string]any{"pattern": "HELLO="}, "Found 1 file\n<root>/.env.example"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := f.rel(f.ok("Grep", c.input))
			if diff := gocmp.Diff(c.want, got); diff != "" {
				t.Errorf("Grep(%v) (-want +got):\n%s", c.input, diff)
			}
		})
	}
}

func TestGrepErrors(t *testing.T) {
	t.Parallel()
	f := newReadFix(t)
	f.put(map[string]string{"a.txt": "x"})
	cases := []struct {
		input any
		code  string
		says  string
	}{
		{map[string]any{"pattern": ""}, tools.CodeInputInvalid, "pattern"},
		{map[string]any{"pattern": "a("}, CodePatternInvalid, "RE2"},
		{map[string]any{"pattern": `(?<=a)b`}, CodePatternInvalid, "lookaround"},
		{map[string]any{"pattern": "a\nb"}, CodePatternInvalid, "multiline"},
		{map[string]any{"pattern": "a", "output_mode": "lines"}, tools.CodeInputInvalid, "output_mode"},
		{map[string]any{"pattern": "a", "type": "cobol"}, tools.CodeInputInvalid, "known types"},
		{map[string]any{"pattern": "a", "glob": "[a"}, CodePatternInvalid, "glob"},
		{map[string]any{"pattern": "a", "-A": -1}, tools.CodeInputInvalid, "-A"},
		{map[string]any{"pattern": "a", "head_limit": -1}, tools.CodeInputInvalid, "head_limit"},
		{map[string]any{"pattern": "a", "path": "missing"}, CodeFileNotFound, "does not exist"},
		{`{"pattern": "a", "-x": true}`, tools.CodeInputInvalid, "-x"},
	}
	for _, c := range cases {
		if msg := f.fails("Grep", c.input, c.code); !strings.Contains(msg, c.says) {
			t.Errorf("Grep(%v): %q does not mention %q", c.input, msg, c.says)
		}
	}
}

func TestGrepOutputLimits(t *testing.T) {
	t.Parallel()
	f := newReadFix(t)
	f.put(map[string]string{
		"big.txt":  strings.Repeat("match this line please\n", 3000),
		"wide.txt": "match " + strings.Repeat("w", 3000) + "\n",
	})
	got := f.ok("Grep", map[string]any{"pattern": "match", "output_mode": "content", "path": "big.txt"})
	if len(got) > GrepMaxOutputBytes+300 || !strings.Contains(got, "answer limit") {
		t.Errorf("content answer of %d bytes, tail %q", len(got), got[max(0, len(got)-200):])
	}
	got = f.ok("Grep", map[string]any{"pattern": "match", "output_mode": "content", "path": "wide.txt"})
	if !strings.Contains(got, "[line cut at 500 characters]") || len(got) > 700 {
		t.Errorf("a wide line was not cut: %d bytes", len(got))
	}
	got = f.ok("Grep", map[string]any{"pattern": "match", "output_mode": "count", "path": "big.txt"})
	if !strings.HasSuffix(got, "big.txt:3000\n\nFound 3000 matching lines in 1 file.") {
		t.Errorf("count: %q", got)
	}
}

// TestGrepMatchesSequentialReference runs the parallel Grep over a 2,000-file tree and
// compares every output mode with a plain sequential walk that runs the regexp line by
// line.
func TestGrepMatchesSequentialReference(t *testing.T) {
	t.Parallel()
	f := newReadFix(t)
	rng := rand.New(rand.NewPCG(7, 11))
	words := []string{"alpha", "beta", "Gamma", "delta", "func", "Reader", "writer", "(", ")", "{", "}", "42", "x_y", "NewReader", "err", "nil"}
	for d := range 40 {
		for sub := range 7 {
			if err := os.MkdirAll(f.path(fmt.Sprintf("d%02d/s%d", d, sub)), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Files keep the modification times their writes gave them; the reference sorts by
	// the same times.
	for i := range 2000 {
		var b strings.Builder
		for range 1 + rng.IntN(12) {
			for range rng.IntN(9) {
				b.WriteString(words[rng.IntN(len(words))])
				b.WriteByte(" \t"[rng.IntN(2)])
			}
			b.WriteByte('\n')
		}
		p := f.path(fmt.Sprintf("d%02d/s%d/f%04d.txt", i%40, i%7, i))
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	patterns := []struct {
		re   string
		fold bool
	}{
		{re: "NewReader"},              // a pure literal
		{re: `func \w+Reader`},         // a regexp with a required literal
		{re: "gamma", fold: true},      // a case-insensitive literal
		{re: `^(err|nil)\s+[0-9]+\s$`}, // alternatives, anchors, classes
		{re: `\(\s*\)`},                // no useful literal: the regexp scans
	}
	for _, p := range patterns {
		re := regexp.MustCompile(p.re)
		if p.fold {
			re = regexp.MustCompile("(?i)" + p.re)
		}
		files, content, counts := sequentialGrep(t, f.root, re)
		if len(files) == 0 {
			t.Fatalf("pattern %q matches nothing: a useless case", p.re)
		}
		var filesOut []string
		for _, h := range files {
			filesOut = append(filesOut, h.path)
		}
		want := map[string]string{
			"files_with_matches": fmt.Sprintf("Found %d files\n%s", len(files), strings.Join(filesOut, "\n")),
			"content":            strings.Join(content, "\n"),
			"count":              strings.Join(counts, "\n"),
		}
		for mode, w := range want {
			got := f.ok("Grep", map[string]any{"pattern": p.re, "-i": p.fold, "output_mode": mode, "head_limit": 1_000_000})
			if mode == "count" {
				got, _, _ = strings.Cut(got, "\n\nFound ")
			}
			if strings.Contains(got, "(Output cut") {
				got, _, _ = strings.Cut(got, "\n\n(Output cut")
				w = w[:len(got)]
			}
			if got != w {
				t.Errorf("pattern %q, mode %s: the parallel answer differs from the sequential one:\n%s", p.re, mode, gocmp.Diff(w, got))
			}
		}
	}
}

type refHit struct {
	path  string
	mtime int64
}

// sequentialGrep is the reference: a sequential walk, the regexp run line by line.
func sequentialGrep(t *testing.T, root string, re *regexp.Regexp) (files []refHit, content, counts []string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n := 0
		for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			if re.MatchString(line) {
				n++
				content = append(content, fmt.Sprintf("%s:%d:%s", p, i+1, line))
			}
		}
		if n > 0 {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			files = append(files, refHit{p, fi.ModTime().UnixNano()})
			counts = append(counts, fmt.Sprintf("%s:%d", p, n))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(files, func(a, b refHit) int {
		return cmp.Or(cmp.Compare(b.mtime, a.mtime), strings.Compare(a.path, b.path))
	})
	return files, content, counts
}

// TestReadIntoSize: the size of the opened file only saves the last read; whatever the
// size claims and however the reader splits its reads, every byte is read.
func TestReadIntoSize(t *testing.T) {
	t.Parallel()
	content := strings.Repeat("0123456789abcdef", 300) // 4,800 bytes
	for _, c := range []struct {
		name  string
		size  int64
		split func(io.Reader) io.Reader
	}{
		{"exact size", int64(len(content)), nil},
		{"unknown size", -1, nil},
		{"size 0 with content (/proc)", 0, nil},
		{"size smaller: the file grew", 100, nil},
		{"size larger: a short file (sysfs)", 8192, nil},
		{"one byte per read, exact size", int64(len(content)), iotest.OneByteReader},
		{"half reads, size smaller", 1000, iotest.HalfReader},
		{"half reads, exact size", int64(len(content)), iotest.HalfReader},
	} {
		for _, bufCap := range []int{0, 16, len(content), 64 << 10} {
			var r io.Reader = strings.NewReader(content)
			if c.split != nil {
				r = c.split(r)
			}
			got, tooLarge, err := readInto(r, make([]byte, 0, bufCap), GrepMaxFileBytes, c.size)
			if err != nil || tooLarge || string(got) != content {
				t.Errorf("%s, buffer %d: read %d bytes (too large %v, err %v), want all %d", c.name, bufCap, len(got), tooLarge, err, len(content))
			}
		}
	}
	got, tooLarge, err := readInto(strings.NewReader(content), nil, 1000, int64(len(content)))
	if err != nil || !tooLarge {
		t.Errorf("over the limit: %d bytes, too large %v, err %v", len(got), tooLarge, err)
	}
}

// TestGrepWorkerRefusesSwappedLinks: a file the walk met as a regular file inside the
// root, swapped for a link to outside before a worker opens it — or whose directory was
// swapped for such a link — is not read: the open refuses the link (ELOOP) and the file
// counts as unreadable.
func TestGrepWorkerRefusesSwappedLinks(t *testing.T) {
	t.Parallel()
	f, outside := fenceFix(t)
	in := grepInput{Pattern: "TOPSECRET|LEAKED"}
	for _, mode := range []string{grepFiles, grepContent, grepCount} {
		in.OutputMode = mode
		q, res := in.query()
		if res != nil {
			t.Fatal(res.TextOf())
		}
		// swapped.txt was a file when the walk listed it; sub was a directory.
		if err := os.Symlink(filepath.Join(outside, "secret.txt"), f.path("swapped.txt")); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(outside, "outdir"), f.path("dir")); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
		w := &grepWorker{cfg: Config{Env: f.env, Fence: f.fence, ReadState: f.rs}, q: q}
		for _, p := range []string{f.path("swapped.txt"), f.path("dir/leak.txt")} {
			w.file(t.Context(), walkFile{Path: p, Canonical: p, Rel: p[len(f.root)+1:]})
		}
		w.release()
		if len(w.hits) != 0 || w.stats.unreadable != 2 {
			t.Errorf("%s: hits %+v, %d unreadable; want none and 2", mode, w.hits, w.stats.unreadable)
		}
	}
}
