package files

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/tools"
)

// Limits of the Grep tool.
const (
	// GrepMaxOutputBytes bounds one Grep answer; longer answers are cut at a line with a
	// note.
	GrepMaxOutputBytes = 50_000
	// GrepMaxLineChars is the length (in characters) beyond which a content line is cut.
	GrepMaxLineChars = 500
	// GrepMaxFileBytes is the largest file Grep searches; larger files are skipped with a
	// note.
	GrepMaxFileBytes = 64 << 20
	// grepKeepBuffer is the largest read buffer a worker keeps for the next file.
	grepKeepBuffer = 8 << 20
)

type grepTool struct{ cfg Config }

type grepInput struct {
	Pattern     string `json:"pattern"`
	Path        string `json:"path"`
	Glob        string `json:"glob"`
	Type        string `json:"type"`
	OutputMode  string `json:"output_mode"`
	IgnoreCase  bool   `json:"-i"`
	LineNumbers *bool  `json:"-n"`
	After       *int   `json:"-A"`
	Before      *int   `json:"-B"`
	Context     int    `json:"-C"`
	HeadLimit   int    `json:"head_limit"`
	Multiline   bool   `json:"multiline"`
}

// Output modes of Grep.
const (
	grepFiles   = "files_with_matches"
	grepContent = "content"
	grepCount   = "count"
)

const grepDescription = `Searches file contents with a regular expression, fast in trees of any size (a parallel, .gitignore-aware search like ripgrep).

- pattern is an RE2 regular expression (Go syntax, like ripgrep's: "log.*Error", "func\s+\w+"); escape literal braces and dots ("interface\{\}"). No lookaround or backreferences.
- path is the file or directory to search (default: the task root). Files ignored by .gitignore, version-control directories (.git) and binary files are skipped; hidden files are searched.
- Filter files with glob ("*.js", "*.{ts,tsx}", "src/**/*.go"; "!" excludes) or type ("go", "py", "js", "ts", "rust", "java", "c", "cpp", "md", "json", "yaml", "sh", …).
- output_mode: "files_with_matches" (default) lists the matching files, most recently modified first; "content" shows the matching lines as path:line:text (with -A, -B, -C context lines as path-line-text and "--" between groups; -n shows line numbers, on by default); "count" shows path:count of matching lines.
- -i ignores case. head_limit keeps only the first N lines or entries of the answer.
- A match stays within one line unless multiline is true; then "." also matches newlines and a pattern can span lines.
- Use Grep (not a shell grep) for searching; for an open-ended search that needs several rounds, run searches in parallel.`

var grepSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "The regular expression (RE2 syntax) to search for."},
    "path": {"type": "string", "description": "The file or directory to search: absolute, or relative to the task root. Defaults to the task root."},
    "glob": {"type": "string", "description": "Only search files matching this glob, e.g. \"*.js\" or \"*.{ts,tsx}\" (a pattern with a / matches the path relative to path); prefix ! to exclude."},
    "type": {"type": "string", "description": "Only search files of this type, e.g. go, py, js, ts, rust, java, c, cpp, md, json, yaml, sh."},
    "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"], "description": "content: matching lines; files_with_matches: matching file paths (default); count: matching lines per file."},
    "-i": {"type": "boolean", "description": "Ignore case."},
    "-n": {"type": "boolean", "description": "Show line numbers (content mode only). Defaults to true."},
    "-A": {"type": "integer", "minimum": 0, "description": "Lines of context to show after each match (content mode only)."},
    "-B": {"type": "integer", "minimum": 0, "description": "Lines of context to show before each match (content mode only)."},
    "-C": {"type": "integer", "minimum": 0, "description": "Lines of context to show before and after each match (content mode only)."},
    "head_limit": {"type": "integer", "minimum": 0, "description": "Keep only the first N lines (content) or entries (files_with_matches, count) of the answer."},
    "multiline": {"type": "boolean", "description": "Let . match newlines and patterns span lines. Default false."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`)

func (t *grepTool) Spec() tools.Spec {
	return tools.Spec{Name: "Grep", Description: grepDescription, InputSchema: grepSchema, Effect: tools.EffectRead}
}

// grepQuery is a validated Grep call.
type grepQuery struct {
	m             *grepMatcher
	filter        *fileFilter
	mode          string
	lineNumbers   bool
	before, after int
	// keepLines bounds the content lines a file contributes: no more can be shown.
	keepLines int
}

func (t *grepTool) Run(ctx context.Context, input json.RawMessage) tools.Result {
	var in grepInput
	if err := tools.Decode(input, &in); err != nil {
		return tools.FromError(err, tools.CodeInputInvalid)
	}
	q, res := in.query()
	if res != nil {
		return *res
	}
	if ctx.Err() != nil {
		return cancelled()
	}
	spelled := in.Path
	if spelled == "" {
		spelled = "."
	}
	p, err := t.cfg.Fence.Resolve(ctx, spelled, fence.Read)
	if err != nil {
		return tools.FromError(err, fence.CodeUnresolvable)
	}
	if !p.Exists {
		return tools.Fail(CodeFileNotFound, "the path %s does not exist; check it", spelled)
	}
	fi, err := t.cfg.Env.Stat(ctx, p.Canonical)
	if err != nil {
		return readFailure(ctx, spelled, err)
	}
	var (
		hits  []grepHit
		stats grepStats
	)
	switch {
	case fi.IsDir():
		hits, stats, err = t.cfg.grepTree(ctx, p.Canonical, q)
	case fi.IsRegular() && fence.HardLinked(p.Canonical, fi):
		return tools.FromError(fence.HardLinkError(spelled), CodeHardLink)
	case fi.IsRegular():
		hits, stats, err = t.cfg.grepFiles(ctx, q, []walkFile{{Path: p.Canonical, Canonical: p.Canonical}})
	default:
		return tools.Fail(CodeNotRegular, "%s is not a regular file or a directory and cannot be searched", spelled)
	}
	if err != nil {
		if ctx.Err() != nil {
			return cancelled()
		}
		return tools.Fail(CodeReadFailed, "the search of %s failed: %v", spelled, err)
	}
	return tools.Text(formatGrep(hits, stats, q, in.HeadLimit))
}

// query validates the input.
func (in *grepInput) query() (*grepQuery, *tools.Result) {
	fail := func(code, format string, args ...any) (*grepQuery, *tools.Result) {
		r := tools.Fail(code, format, args...)
		return nil, &r
	}
	if in.Pattern == "" {
		return fail(tools.CodeInputInvalid, "pattern is required: give the regular expression to search for")
	}
	mode := cmp.Or(in.OutputMode, grepFiles)
	if mode != grepFiles && mode != grepContent && mode != grepCount {
		return fail(tools.CodeInputInvalid, "output_mode must be content, files_with_matches or count, not %q", in.OutputMode)
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"-A", deref(in.After)}, {"-B", deref(in.Before)}, {"-C", in.Context}, {"head_limit", in.HeadLimit}} {
		if n.v < 0 {
			return fail(tools.CodeInputInvalid, "%s must be 0 or more, not %d", n.name, n.v)
		}
	}
	m, err := compileGrep(in.Pattern, in.IgnoreCase, in.Multiline)
	if err != nil {
		r := tools.FromError(err, CodePatternInvalid)
		return nil, &r
	}
	filter, ok, bad := newFileFilter(in.Type, in.Glob)
	switch {
	case !ok:
		return fail(tools.CodeInputInvalid, "unknown file type %q; known types: %s", in.Type, grepTypeNames())
	case bad != "":
		return fail(CodePatternInvalid, "the glob %q is malformed (check its brackets and braces)", bad)
	}
	q := &grepQuery{m: m, filter: filter, mode: mode, lineNumbers: in.LineNumbers == nil || *in.LineNumbers}
	if mode == grepContent {
		// An explicit -A or -B (even 0) wins over -C, as in ripgrep.
		q.before, q.after = in.Context, in.Context
		if in.Before != nil {
			q.before = *in.Before
		}
		if in.After != nil {
			q.after = *in.After
		}
		q.keepLines = GrepMaxOutputBytes / 4
		if in.HeadLimit > 0 {
			q.keepLines = min(q.keepLines, in.HeadLimit)
		}
	}
	return q, nil
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// grepHit is what one file contributed.
type grepHit struct {
	path  string
	mtime time.Time
	count int      // matching lines
	lines []string // rendered content lines (content mode), at most keepLines
	cut   bool     // lines stopped at keepLines
}

// grepStats counts what a search skipped.
type grepStats struct {
	walkStats
	tooLarge   int // files over GrepMaxFileBytes
	unreadable int // files that could not be opened or read
	hardLinked int // files with another name (HardLinked), never searched
}

// grepTree searches the files under the canonical directory root in parallel: one walker
// feeds a pool of GOMAXPROCS workers; results are sorted afterwards, so the answer does
// not depend on scheduling.
func (c Config) grepTree(ctx context.Context, root string, q *grepQuery) ([]grepHit, grepStats, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Files travel in batches: one channel operation per file costs more in wake-ups
	// than searching a small file does.
	jobs := make(chan []walkFile, 64)
	results := make([]grepWorker, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i := range results {
		w := &results[i]
		w.cfg, w.q = c, q
		wg.Go(func() {
			defer w.release()
			for batch := range jobs {
				for _, f := range batch {
					if ctx.Err() != nil {
						break
					}
					w.file(ctx, f)
				}
			}
		})
	}
	batch := make([]walkFile, 0, grepBatch)
	send := func() error {
		select {
		case jobs <- batch:
			batch = make([]walkFile, 0, grepBatch)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	ws, err := c.walk(ctx, root, walkOptions{Gitignore: true, Tool: "Grep"}, func(f walkFile) error {
		if !q.filter.allows(f.Rel) {
			return nil
		}
		batch = append(batch, f)
		if len(batch) == grepBatch {
			return send()
		}
		return nil
	})
	if err == nil && len(batch) > 0 {
		err = send()
	}
	close(jobs)
	wg.Wait()
	stats := grepStats{walkStats: ws}
	var hits []grepHit
	for i := range results {
		hits = append(hits, results[i].hits...)
		stats.tooLarge += results[i].stats.tooLarge
		stats.unreadable += results[i].stats.unreadable
		stats.hardLinked += results[i].stats.hardLinked
	}
	if err == nil {
		err = ctx.Err()
	}
	return hits, stats, err
}

// grepFiles searches the given files sequentially (an explicit file path).
func (c Config) grepFiles(ctx context.Context, q *grepQuery, files []walkFile) ([]grepHit, grepStats, error) {
	w := &grepWorker{cfg: c, q: q}
	defer w.release()
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, grepStats{}, err
		}
		w.file(ctx, f)
	}
	return w.hits, w.stats, ctx.Err()
}

// grepBuffers are read buffers shared by the searches of a process, so a search does not
// grow a fresh one for every call.
var grepBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// grepBatch is how many files a worker is handed at once.
const grepBatch = 32

// grepWorker searches files one at a time, reusing its buffers.
type grepWorker struct {
	cfg   Config
	q     *grepQuery
	buf   *[]byte // from grepBuffers
	hits  []grepHit
	stats grepStats
	// lineStarts holds the offsets of a file's lines (content mode).
	lineStarts []int
}

// release returns the worker's buffer to the pool, unless a huge file grew it.
func (w *grepWorker) release() {
	if w.buf != nil && cap(*w.buf) <= grepKeepBuffer {
		grepBuffers.Put(w.buf)
	}
	w.buf = nil
}

func (w *grepWorker) file(ctx context.Context, f walkFile) {
	rc, size, err := w.cfg.openContentSized(ctx, f.Path, f.Canonical)
	if err != nil {
		var se *sema.Error
		switch {
		case errors.As(err, &se) && se.Code == CodeHardLink:
			w.stats.hardLinked++
		case !errors.Is(err, iofs.ErrNotExist):
			w.stats.unreadable++ // a file removed since the walk met it is simply gone
		}
		return
	}
	if size > GrepMaxFileBytes {
		// Judged by the size of the file that was opened, before a byte is read: a huge
		// file costs one fstat, not 64 MB of reading. The limit on the read below still
		// holds for a file that grows after this look.
		rc.Close()
		w.stats.tooLarge++
		return
	}
	if w.buf == nil {
		w.buf = grepBuffers.Get().(*[]byte)
	}
	buf, tooLarge, err := readInto(rc, (*w.buf)[:0], GrepMaxFileBytes, size)
	rc.Close()
	*w.buf = buf
	switch {
	case err != nil:
		w.stats.unreadable++
		return
	case tooLarge:
		w.stats.tooLarge++
		return
	}
	hit := grepHit{path: f.Path}
	binary := false
	checked := false
	lastLine, lastPos, lineNo := 0, 0, 1 // lineNo is the line number of offset lastPos
	var regions [][2]int                 // content mode: matched line spans
	w.q.m.scan(buf, func(start, end int) bool {
		if !checked {
			// Checked at the first match only: a file without one costs no extra pass.
			checked, binary = true, bytes.IndexByte(buf, 0) >= 0
			if binary {
				return false
			}
		}
		lineNo += bytes.Count(buf[lastPos:start], []byte{'\n'})
		lastPos = start
		first, last := lineNo, lineNo+bytes.Count(buf[start:end], []byte{'\n'})
		if first <= lastLine {
			first = lastLine + 1 // multiline matches sharing a line count it once
		}
		if last >= first {
			hit.count += last - first + 1
			lastLine = last
		}
		switch w.q.mode {
		case grepFiles:
			return false
		case grepContent:
			regions = append(regions, [2]int{start, end})
		}
		return true
	})
	if binary || hit.count == 0 {
		return
	}
	switch w.q.mode {
	case grepFiles:
		if fi, err := w.cfg.Env.Stat(ctx, f.Canonical); err == nil {
			hit.mtime = fi.ModTime
		}
	case grepContent:
		hit.lines, hit.cut = w.render(f.Path, buf, regions)
	}
	w.hits = append(w.hits, hit)
}

// render formats the matched lines of one file (and their context) as ripgrep does:
// path:line:text for matches, path-line-text for context, "--" between groups.
func (w *grepWorker) render(path string, buf []byte, regions [][2]int) (out []string, cut bool) {
	q := w.q
	// Index the lines so context lines and line numbers are one lookup away.
	starts := w.lineStarts[:0]
	starts = append(starts, 0)
	for i := 0; ; {
		j := bytes.IndexByte(buf[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
		if i < len(buf) {
			starts = append(starts, i)
		}
	}
	w.lineStarts = starts
	lineOf := func(off int) int { // 0-based
		i, found := slices.BinarySearch(starts, off)
		if !found {
			i--
		}
		return i
	}
	text := func(i int) []byte {
		end := len(buf)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		return bytes.TrimSuffix(bytes.TrimSuffix(buf[starts[i]:end], []byte("\n")), []byte("\r"))
	}
	add := func(i int, match bool) {
		sep := "-"
		if match {
			sep = ":"
		}
		var b strings.Builder
		b.WriteString(showName(path))
		b.WriteString(sep)
		if q.lineNumbers {
			b.WriteString(strconv.Itoa(i + 1))
			b.WriteString(sep)
		}
		line, cut := cutRunes(text(i), GrepMaxLineChars)
		b.WriteString(strings.ToValidUTF8(string(line), "\uFFFD"))
		if cut {
			fmt.Fprintf(&b, " … [line cut at %d characters]", GrepMaxLineChars)
		}
		out = append(out, b.String())
	}
	printed := -1 // last line printed (0-based)
	r := 0
	for ; r < len(regions) && len(out) < q.keepLines; r++ {
		first, last := lineOf(regions[r][0]), lineOf(regions[r][1])
		from := max(first-q.before, printed+1, 0)
		if printed >= 0 && from > printed+1 && (q.before > 0 || q.after > 0) {
			out = append(out, "--")
		}
		for i := from; i < first; i++ {
			add(i, false)
		}
		for i := max(first, printed+1); i <= last; i++ {
			add(i, true)
		}
		printed = max(printed, last)
		// After-context runs up to the next match's first line, which prints itself.
		limit := len(starts) - 1
		if r+1 < len(regions) {
			limit = min(limit, lineOf(regions[r+1][0])-1)
		}
		for i := printed + 1; i <= min(last+q.after, limit); i++ {
			add(i, false)
			printed = i
		}
	}
	if len(out) > q.keepLines || r < len(regions) {
		return out[:min(len(out), q.keepLines)], true
	}
	return out, false
}

// readInto reads r to its end into buf (growing it), refusing more than max bytes. size
// is the size of the opened file (-1 when unknown): once that many bytes are in and a read
// came back short of the room it was offered, the file is whole as it was when opened, and
// the read that would only report its end is saved — one system call per file. A file
// that grew, or reported a size it does not have (/proc), is read to its end.
func readInto(r io.Reader, buf []byte, max int, size int64) (_ []byte, tooLarge bool, err error) {
	if size >= 0 && size < int64(max) && int64(cap(buf)) <= size {
		buf = slices.Grow(buf, int(size)+1) // room for one byte more shows the end
	}
	if cap(buf) == 0 {
		buf = make([]byte, 0, 64<<10)
	}
	for {
		if len(buf) == cap(buf) {
			if len(buf) > max {
				return buf, true, nil
			}
			buf = slices.Grow(buf, len(buf))
		}
		room := cap(buf) - len(buf)
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > max {
			return buf, true, nil
		}
		if errors.Is(err, io.EOF) {
			return buf, false, nil
		}
		if err != nil {
			return buf, false, err
		}
		if n < room && int64(len(buf)) == size {
			return buf, false, nil
		}
	}
}

// formatGrep assembles the answer: sorted, cut at head_limit and GrepMaxOutputBytes.
func formatGrep(hits []grepHit, stats grepStats, q *grepQuery, headLimit int) string {
	var lines []string
	var summary string
	switch q.mode {
	case grepFiles:
		slices.SortFunc(hits, func(a, b grepHit) int {
			return cmp.Or(b.mtime.Compare(a.mtime), strings.Compare(a.path, b.path))
		})
		for _, h := range hits {
			lines = append(lines, showName(h.path))
		}
	case grepCount:
		slices.SortFunc(hits, func(a, b grepHit) int { return comparePaths(a.path, b.path) })
		total := 0
		for _, h := range hits {
			lines = append(lines, showName(h.path)+":"+strconv.Itoa(h.count))
			total += h.count
		}
		summary = fmt.Sprintf("Found %s in %s.", plural(total, "matching line"), plural(len(hits), "file"))
	case grepContent:
		slices.SortFunc(hits, func(a, b grepHit) int { return comparePaths(a.path, b.path) })
		for i, h := range hits {
			if i > 0 && (q.before > 0 || q.after > 0) {
				lines = append(lines, "--")
			}
			lines = append(lines, h.lines...)
		}
	}
	notes := grepNotes(stats)
	if len(lines) == 0 {
		empty := "No matches found"
		if q.mode == grepFiles {
			empty = "No files found"
		}
		return empty + notes
	}
	var b strings.Builder
	if q.mode == grepFiles {
		fmt.Fprintf(&b, "Found %s\n", plural(len(hits), "file"))
	}
	shown := 0
	for _, l := range lines {
		if headLimit > 0 && shown == headLimit || b.Len()+len(l) > GrepMaxOutputBytes {
			break
		}
		b.WriteString(l)
		b.WriteByte('\n')
		shown++
	}
	out := strings.TrimSuffix(b.String(), "\n")
	if shown < len(lines) || q.mode == grepContent && contentCut(hits, q) {
		reason := fmt.Sprintf("head_limit %d", headLimit)
		if headLimit == 0 || shown < headLimit {
			reason = fmt.Sprintf("the %d KB answer limit", GrepMaxOutputBytes/1000)
		}
		shownWhat := fmt.Sprintf("the first %d lines are shown", shown)
		if q.mode != grepContent {
			shownWhat = fmt.Sprintf("%d of %d entries are shown", shown, len(lines))
		}
		out += fmt.Sprintf("\n\n(Output cut at %s: %s. Narrow the search with path, glob or type.)", reason, shownWhat)
	}
	if summary != "" {
		out += "\n\n" + summary
	}
	return out + notes
}

// contentCut reports whether a file's content lines were cut at keepLines (so the answer
// is partial even when every kept line fits).
func contentCut(hits []grepHit, q *grepQuery) bool {
	for _, h := range hits {
		if h.cut {
			return true
		}
	}
	return false
}

// plural spells n things: "1 file", "2 files".
func plural(n int, thing string) string {
	switch {
	case n == 1:
		return "1 " + thing
	case strings.HasSuffix(thing, "y"):
		return strconv.Itoa(n) + " " + thing[:len(thing)-1] + "ies"
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// grepNotes tells the model what the search had to skip.
func grepNotes(s grepStats) string {
	var n []string
	if s.Unreadable > 0 {
		n = append(n, plural(s.Unreadable, "directory")+" could not be read")
	}
	if s.unreadable > 0 {
		n = append(n, plural(s.unreadable, "file")+" could not be read")
	}
	if s.tooLarge > 0 {
		n = append(n, fmt.Sprintf("%s larger than %d MB not searched", plural(s.tooLarge, "file"), GrepMaxFileBytes>>20))
	}
	if s.hardLinked > 0 {
		n = append(n, plural(s.hardLinked, "file")+" with more than one hard link not searched (the same file may live outside the workspace under another name)")
	}
	if len(n) == 0 {
		return ""
	}
	return "\n(" + strings.Join(n, "; ") + ".)"
}
