package instructions

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
)

// Limits and names of the instruction files.
const (
	// DefaultMaxChars is the cap on the text of all instruction files of one
	// conversation, in characters, when Config.MaxChars is zero: about 10,000 tokens,
	// the size past which Claude Code warns that a CLAUDE.md costs more than it helps.
	DefaultMaxChars = 40_000
	// MaxImportDepth is how deep imports nest: a file found by name imports at depth 1,
	// what that file imports is at depth 2, and an import past this depth is skipped
	// with a CodeImportTooDeep notice.
	MaxImportDepth = 5
	// MaxFileBytes is the largest instruction file read; a larger one is skipped with a
	// CodeFileSkipped notice, since the cap would keep only its start anyway.
	MaxFileBytes = 1 << 20
	// UserFile is the user's file, relative to the home directory.
	UserFile = ".sema/AGENTS.md"
	// ClaudeUserFile is Claude Code's user file, relative to the home directory, read
	// with Config.Claude.
	ClaudeUserFile = ".claude/CLAUDE.md"
	// ProjectFile is the task root's own file, relative to the root: the same name as
	// UserFile, since it is the same kind of file one level down.
	ProjectFile = ".sema/AGENTS.md"
	// MemoryIndex is the name of the index file in the memory directory.
	MemoryIndex = "MEMORY.md"
)

// dirNames are the names looked for in each directory from the filesystem root down,
// in load order: the shared files before the local ones, sema's name before the
// compatible one.
var dirNames = [...]string{"AGENTS.md", "CLAUDE.md", "AGENTS.local.md", "CLAUDE.local.md"}

// Codes of the notices in Set.Notices.
const (
	// CodeTruncated: the cap was reached; the notice names the file that was cut, how
	// much of it was kept, and the files left out.
	CodeTruncated = "instructions.truncated"
	// CodeImportOutside: an import resolves outside the read roots.
	CodeImportOutside = "instructions.import_outside_roots"
	// CodeImportDenied: an import resolves into the deny set or a path a Read rule
	// denies.
	CodeImportDenied = "instructions.import_denied"
	// CodeImportTooDeep: an import nested deeper than MaxImportDepth.
	CodeImportTooDeep = "instructions.import_too_deep"
	// CodeImportCycle: an import of a file on its own import chain.
	CodeImportCycle = "instructions.import_cycle"
	// CodeFileSkipped: a file that exists but is not loaded — it does not resolve
	// safely, is a link out of its directory and the read roots, is denied, is not a
	// regular file, has several hard links, is too large, is not text, or cannot be
	// read. The detail's "reason" says which.
	CodeFileSkipped = "instructions.file_skipped"
)

// Source says why a file was loaded.
type Source string

// The sources of a File.
const (
	// SourceUser is the user's file, HOME/.sema/AGENTS.md.
	SourceUser Source = "user"
	// SourceProject is an AGENTS.md or CLAUDE.md of the task root, one of its ancestors
	// or a directory below it, or the root's .sema/AGENTS.md.
	SourceProject Source = "project"
	// SourceLocal is an AGENTS.local.md or CLAUDE.local.md: a person's own notes for the
	// project.
	SourceLocal Source = "local"
	// SourceImport is a file another one imports.
	SourceImport Source = "import"
	// SourceMemory is the memory directory's index (MemoryIndex).
	SourceMemory Source = "memory"
)

// File is one loaded instruction file.
type File struct {
	// Path is the file's canonical path.
	Path string
	// Source says why it was loaded.
	Source Source
	// Dir is the canonical directory the file was found in; empty for an import.
	Dir string
	// ImportedBy is the canonical path of the file that imports it; empty unless Source
	// is SourceImport.
	ImportedBy string
	// Text is the file's text as shown: without a byte-order mark, with "\n" line ends
	// and without leading and trailing blank space; only its start when Cut.
	Text string
	// Cut reports that the cap kept only the start of the file.
	Cut bool
}

// Set is what one call of Loader.Start or Loader.Enter loaded.
type Set struct {
	// Files are the files loaded, in order.
	Files []File
	// Notices announce what was skipped or cut.
	Notices []sema.Notice
}

// Paths returns the canonical paths of the set's files, in order.
func (s Set) Paths() []string {
	out := make([]string, 0, len(s.Files))
	for _, f := range s.Files {
		out = append(out, f.Path)
	}
	return out
}

// Text assembles the files' text, each under a line that names it and says what it is
// ("Contents of /p/AGENTS.md (project instructions):"), separated by blank lines. It is
// empty for a set without files.
func (s Set) Text() string {
	var b strings.Builder
	for i, f := range s.Files {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("Contents of " + f.Path + " (" + f.describe() + "):\n\n" + f.Text + "\n")
		if f.Cut {
			b.WriteString("[The rest of this file was left out: the instruction files are over their size limit.]\n")
		}
	}
	return b.String()
}

// describe is what the file is, for the model.
func (f File) describe() string {
	switch f.Source {
	case SourceUser:
		return "the user's instructions for all projects"
	case SourceLocal:
		return "the user's private instructions for this project"
	case SourceImport:
		return "imported by " + f.ImportedBy
	case SourceMemory:
		return "your memory index: what you saved in earlier tasks"
	}
	return "project instructions"
}

// Config says where a conversation's instruction files are and what may be loaded.
type Config struct {
	// Env is the env every file is read through. Required.
	Env env.ExecutionEnv
	// Root is the canonical task root. Required: without it nothing but the user's
	// file and the memory index is loaded.
	Root string
	// Home is the user's home directory (canonicalized here). Empty: no user file, and
	// a "~/" import is skipped.
	Home string
	// ReadRoots are the canonical read roots: an import must resolve inside one, and a
	// file found by name inside one or inside its own directory.
	ReadRoots []string
	// Denied reports whether a canonical path is kept from reads (the fence's deny set, a
	// Read deny rule); such a file is never loaded, except the user's own. Nil: nothing
	// is denied.
	Denied func(canonical string) bool
	// MemoryDir is the canonical memory directory, admitted by the fence; its
	// MemoryIndex is loaded last at the start. Empty: none.
	MemoryDir string
	// MaxChars caps the text of all files of the conversation, in characters. Zero:
	// DefaultMaxChars. A negative value is read as zero.
	MaxChars int
	// Claude also reads Claude Code's user files: HOME/.claude/CLAUDE.md before the
	// user's own file, and "@~/.claude/…" imports of Markdown files (ClaudeImport).
	Claude bool
}

// Loader loads the instruction files of one conversation: Start at its beginning,
// Enter when a tool first reads in a directory below the task root. It remembers what it
// loaded, so no file is loaded twice and the cap holds over the whole conversation. It
// is safe for concurrent use; calls are served one at a time.
type Loader struct {
	cfg Config

	mu      sync.Mutex
	started bool
	home    string // canonical home, "" when unknown
	start   Set
	used    int             // characters loaded so far
	seen    map[string]bool // canonical files loaded (or left out)
	dirs    map[string]bool // directories below the root already looked in
	// afterStart is the state right after Start, which Fork copies.
	afterStartUsed int
	afterStartSeen map[string]bool
}

// New returns a Loader for cfg. It reads nothing until Start.
func New(cfg Config) *Loader {
	return &Loader{cfg: cfg, seen: map[string]bool{}, dirs: map[string]bool{}}
}

func (l *Loader) maxChars() int {
	if l.cfg.MaxChars > 0 {
		return l.cfg.MaxChars
	}
	return DefaultMaxChars
}

// Start loads the files of the conversation's start: the user's file, the files from the
// filesystem root down to the task root, the root's .sema/AGENTS.md and the memory
// index. A second call, or a call on a Loader from Fork, returns the same files without
// reading anything, and without the notices.
func (l *Loader) Start(ctx context.Context) Set {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started {
		return Set{Files: l.start.Files}
	}
	l.started = true
	if l.cfg.Home != "" {
		if c, ok, err := fence.Canonicalize(ctx, l.cfg.Env, l.cfg.Home); err == nil && ok {
			l.home = c
		}
	}
	p := &pass{l: l}
	if l.home != "" {
		if l.cfg.Claude {
			// Claude Code's file first: sema's own, later, wins where the two differ.
			p.load(ctx, candidate{path: join(l.home, ClaudeUserFile), source: SourceUser, dir: join(l.home, ".claude")})
		}
		p.load(ctx, candidate{path: join(l.home, UserFile), source: SourceUser, dir: join(l.home, ".sema")})
	}
	if isCanonical(l.cfg.Root) {
		for _, d := range ancestors(l.cfg.Root) {
			p.loadDir(ctx, d)
		}
		p.load(ctx, candidate{path: join(l.cfg.Root, ProjectFile), source: SourceProject, dir: join(l.cfg.Root, ".sema")})
	}
	if isCanonical(l.cfg.MemoryDir) {
		p.load(ctx, candidate{path: join(l.cfg.MemoryDir, MemoryIndex), source: SourceMemory, dir: l.cfg.MemoryDir})
	}
	l.start = p.finish()
	l.afterStartUsed = l.used
	l.afterStartSeen = maps.Clone(l.seen)
	return l.start
}

// Enter loads the files of the directories below the task root down to dir (canonical),
// those not looked in before, top down: a tool has just read inside dir. A dir that is
// the root, outside it or not canonical loads nothing.
func (l *Loader) Enter(ctx context.Context, dir string) Set {
	root := l.cfg.Root
	if !isCanonical(root) || !isCanonical(dir) || dir == root || !fence.Contains(root, dir) {
		return Set{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	p := &pass{l: l}
	cur := root
	for name := range strings.SplitSeq(strings.TrimPrefix(dir[len(root):], "/"), "/") {
		cur = join(cur, name)
		if !l.dirs[cur] {
			l.dirs[cur] = true
			p.loadDir(ctx, cur)
		}
	}
	return p.finish()
}

// Fork returns a Loader for another conversation that begins as this one began (a
// child agent's): its Start returns this Loader's start files without reading them, and
// its Enter loads the files below the root anew, since that conversation has not seen
// them. Fork before Start returns a fresh Loader.
func (l *Loader) Fork() *Loader {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := New(l.cfg)
	if l.started {
		f.started, f.home, f.start = true, l.home, Set{Files: l.start.Files}
		f.used, f.seen = l.afterStartUsed, maps.Clone(l.afterStartSeen)
		f.afterStartUsed, f.afterStartSeen = l.afterStartUsed, maps.Clone(l.afterStartSeen)
	}
	return f
}

// candidate is a file to try: where it is spelled, why, where it was found (for a file
// found by name) or which file imports it, and the import chain above it.
type candidate struct {
	path       string
	source     Source
	dir        string
	importedBy string
	spelled    string   // an import as written, for notices
	chain      []string // canonical files importing it, outermost first
}

// pass is one call of Start or Enter: what it loaded, and what the cap cut.
type pass struct {
	l       *Loader
	set     Set
	cut     string
	cutKept int
	cutAll  int
	leftOut []string
}

// loadDir tries the names of one directory.
func (p *pass) loadDir(ctx context.Context, dir string) {
	for _, name := range dirNames {
		src := SourceProject
		if strings.HasSuffix(name, ".local.md") {
			src = SourceLocal
		}
		p.load(ctx, candidate{path: join(dir, name), source: src, dir: dir})
	}
}

// load tries one file, then its imports.
func (p *pass) load(ctx context.Context, c candidate) {
	l := p.l
	canon, ok := p.admit(ctx, c)
	if !ok {
		return
	}
	l.seen[canon] = true
	left := l.maxChars() - l.used
	if left <= 0 {
		p.leftOut = append(p.leftOut, canon)
		return
	}
	data, err := l.cfg.Env.ReadFile(ctx, canon)
	if err != nil {
		p.skip(c, "it cannot be read ("+err.Error()+")")
		return
	}
	text, ok := plainText(data)
	if !ok {
		p.skip(c, "it is not UTF-8 text")
		return
	}
	if text == "" {
		return
	}
	f := File{Path: canon, Source: c.source, ImportedBy: c.importedBy, Text: text}
	if c.source != SourceImport {
		f.Dir = c.dir
	}
	if n := utf8.RuneCountInString(text); n > left {
		f.Text, f.Cut = cutAt(text, left), true
		p.cut, p.cutKept, p.cutAll = canon, utf8.RuneCountInString(f.Text), n
		l.used = l.maxChars() // whatever comes after a cut file is left out, never squeezed in
	} else {
		l.used += n
	}
	p.set.Files = append(p.set.Files, f)
	if c.source != SourceMemory {
		p.loadImports(ctx, c, canon, f.Text)
	}
}

// admit resolves c and reports whether it may be read: it exists, was not loaded
// already, lies where its source may be, is not denied, and is a regular file of one
// name under the size cap. A refusal is told as a notice.
func (p *pass) admit(ctx context.Context, c candidate) (canon string, ok bool) {
	l := p.l
	canon, exists, err := fence.Canonicalize(ctx, l.cfg.Env, c.path)
	if err != nil {
		p.skip(c, "it cannot be resolved safely ("+err.Error()+")")
		return "", false
	}
	if !exists {
		return "", false
	}
	if l.seen[canon] {
		if slices.Contains(c.chain, canon) {
			p.importNotice(c, CodeImportCycle, canon, "it imports a file that imports it")
		}
		return "", false
	}
	user := c.source == SourceUser
	inRoots := l.insideRoots(canon)
	switch {
	case c.source == SourceImport && !inRoots && !l.claudeImport(canon):
		p.importNotice(c, CodeImportOutside, canon, "it is outside the read roots ("+strings.Join(l.cfg.ReadRoots, ", ")+")")
		return "", false
	case !user && c.source != SourceImport && !inRoots && !fence.Contains(c.dir, canon):
		p.skip(c, "it is a link to "+canon+", outside its directory and the read roots")
		return "", false
	case !user && l.cfg.Denied != nil && l.cfg.Denied(canon):
		if c.source == SourceImport {
			p.importNotice(c, CodeImportDenied, canon, "reads of it are denied")
		} else {
			p.skip(c, "reads of it are denied")
		}
		return "", false
	}
	fi, err := l.cfg.Env.Stat(ctx, canon)
	switch {
	case err != nil:
		p.skip(c, "it cannot be read ("+err.Error()+")")
		return "", false
	case !fi.IsRegular():
		p.skip(c, "it is not a regular file")
		return "", false
	case !user && inRoots && fence.HardLinked(canon, fi):
		p.skip(c, "it has more than one hard link, so it may be a file outside the roots under another name")
		return "", false
	case fi.Size > MaxFileBytes:
		p.skip(c, fmt.Sprintf("it is larger than %d bytes (%d)", MaxFileBytes, fi.Size))
		return "", false
	}
	return canon, true
}

// loadImports loads the files canon's text imports, one level deeper in its chain.
func (p *pass) loadImports(ctx context.Context, c candidate, canon, text string) {
	l := p.l
	chain := append(append([]string(nil), c.chain...), canon)
	for _, imp := range Imports(text) {
		next := candidate{source: SourceImport, importedBy: canon, spelled: imp, chain: chain}
		if len(chain) > MaxImportDepth {
			p.importNotice(next, CodeImportTooDeep, "", fmt.Sprintf("imports nest at most %d deep", MaxImportDepth))
			continue
		}
		switch {
		case strings.HasPrefix(imp, "~/"):
			if l.home == "" {
				p.importNotice(next, CodeImportOutside, "", "no home directory is known")
				continue
			}
			next.path = join(l.home, imp[2:])
		case strings.HasPrefix(imp, "/"):
			next.path = imp
		default:
			next.path = join(parentOf(canon), imp)
		}
		p.load(ctx, next)
	}
}

// insideRoots reports whether canonical lies in one of the read roots.
func (l *Loader) insideRoots(canonical string) bool {
	for _, r := range l.cfg.ReadRoots {
		if fence.Contains(r, canonical) {
			return true
		}
	}
	return false
}

// skip announces a file that exists but is not loaded.
func (p *pass) skip(c candidate, reason string) {
	detail := map[string]any{"path": c.path, "reason": reason}
	msg := "the instruction file " + c.path + " was not loaded: " + reason
	if c.source == SourceImport {
		detail["import"], detail["file"] = c.spelled, c.importedBy
		msg = "the import @" + c.spelled + " in " + c.importedBy + " was not loaded: " + reason
	}
	p.set.Notices = append(p.set.Notices, sema.Notice{Code: CodeFileSkipped, Message: msg, Detail: detail})
}

// importNotice announces an import that was skipped, naming it as written.
func (p *pass) importNotice(c candidate, code, resolved, reason string) {
	detail := map[string]any{"import": c.spelled, "file": c.importedBy, "reason": reason}
	if resolved != "" {
		detail["resolved"] = resolved
	}
	p.set.Notices = append(p.set.Notices, sema.Notice{Code: code,
		Message: "the import @" + c.spelled + " in " + c.importedBy + " was skipped: " + reason, Detail: detail})
}

// finish adds the cap's notice, once per pass, naming what was cut and left out.
func (p *pass) finish() Set {
	if p.cut == "" && len(p.leftOut) == 0 {
		return p.set
	}
	limit := p.l.maxChars()
	var parts []string
	detail := map[string]any{"max_chars": limit}
	if p.cut != "" {
		parts = append(parts, fmt.Sprintf("%s was cut after %d of its %d characters", p.cut, p.cutKept, p.cutAll))
		detail["cut"], detail["kept_chars"], detail["total_chars"] = p.cut, p.cutKept, p.cutAll
	}
	if len(p.leftOut) > 0 {
		parts = append(parts, "left out: "+strings.Join(p.leftOut, ", "))
		detail["left_out"] = p.leftOut
	}
	p.set.Notices = append(p.set.Notices, sema.Notice{Code: CodeTruncated,
		Message: fmt.Sprintf("the instruction files are over their limit of %d characters: %s", limit, strings.Join(parts, "; ")), Detail: detail})
	return p.set
}

// plainText turns a file's bytes into the text shown: UTF-8 without NUL bytes (else
// ok is false), without a byte-order mark, with "\n" line ends, trimmed.
func plainText(data []byte) (string, bool) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return "", false
	}
	return strings.TrimSpace(strings.ReplaceAll(string(data), "\r\n", "\n")), true
}

// cutAt keeps the first n characters of text, ending at the last line end among them
// when there is one, so a cut never splits a line.
func cutAt(text string, n int) string {
	i, count := 0, 0
	for i < len(text) && count < n {
		_, size := utf8.DecodeRuneInString(text[i:])
		i += size
		count++
	}
	kept := text[:i]
	if i < len(text) && text[i] != '\n' {
		// The cut falls inside a line: end at the line before it, if there is one.
		if j := strings.LastIndexByte(kept, '\n'); j > 0 {
			kept = kept[:j]
		}
	}
	return strings.TrimRight(kept, " \t\n")
}

// ancestors returns the directories from "/" down to the canonical dir, both included.
func ancestors(dir string) []string {
	out := []string{"/"}
	if dir == "/" {
		return out
	}
	for i := 1; i < len(dir); i++ {
		if dir[i] == '/' {
			out = append(out, dir[:i])
		}
	}
	return append(out, dir)
}

// join joins a canonical directory and a relative path with one slash.
func join(dir, rel string) string {
	if dir == "/" {
		return "/" + rel
	}
	return dir + "/" + rel
}

// parentOf returns the directory of a canonical file path.
func parentOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// isCanonical reports whether p is absolute and clean, the shape of a canonical path.
func isCanonical(p string) bool { return p != "" && fence.Contains(p, p) }
