package gate

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/internal/rulematch"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/shellscan"
)

// ReadDenial is the gate's judgement of reads for one leg, for the places that meet paths
// no call named: a walk of the file tools (Glob, Grep, LS) and the reads a shell command
// makes without naming them (a recursive search, a glob, git's object store). It reads
// the same deny rules, through the same matcher, as the fold's station 1, and the deny
// set through the gate's Resolver. The zero ReadDenial denies nothing.
type ReadDenial struct {
	g          *Gate
	root, home string
}

// ReadDenial returns the read judgement of the leg whose scope is s.
func (g *Gate) ReadDenial(s permission.Scope) ReadDenial {
	return ReadDenial{g: g, root: scopeRoot(&s), home: s.Home}
}

// Denied reports whether a deny path rule that covers tool names the absolute path p
// (a Read rule covers Read, Glob, Grep and LS; a Grep rule only Grep). For a shell
// command pass "Read".
func (d ReadDenial) Denied(tool, p string) bool {
	if d.g == nil || p == "" {
		return false
	}
	for i := range d.g.rules.Deny {
		r := &d.g.rules.Deny[i]
		if r.Kind == rulematch.KindPath && r.CoversTool(tool, true) && d.g.pathNamed(r, p, d.root, d.home) {
			return true
		}
	}
	return false
}

// readRules reports whether a deny rule keeps some path from reads: a Read path rule is
// in force.
func (d ReadDenial) readRules() bool {
	if d.g == nil {
		return false
	}
	for i := range d.g.rules.Deny {
		if r := &d.g.rules.Deny[i]; r.Kind == rulematch.KindPath && r.Tool == "Read" {
			return true
		}
	}
	return false
}

// MayHold reports whether a Read deny rule could name the absolute path dir or a path
// beneath it: the literal head of the rule's pattern (its components before the first
// glob character) and dir lie on one path, one containing the other. A rule anchored at
// any depth ("*.pem") has the task root as its head. The answer over-refuses rather
// than under-refuses.
func (d ReadDenial) MayHold(dir string) bool {
	if d.g == nil || dir == "" {
		return false
	}
	for i := range d.g.rules.Deny {
		r := &d.g.rules.Deny[i]
		if r.Kind != rulematch.KindPath || r.Tool != "Read" {
			continue
		}
		t := d.g.globOf(r, d.root, d.home)
		if t == "" {
			continue
		}
		head := t
		if j := strings.IndexAny(t, globChars); j >= 0 {
			head = t[:max(strings.LastIndexByte(t[:j], '/'), 0)]
		}
		if head == "" {
			head = "/"
		}
		if fence.Contains(head, dir) || fence.Contains(dir, head) {
			return true
		}
	}
	return false
}

// globChars are the characters of a doublestar pattern (and the escape) that end a
// pattern's literal head.
const globChars = `*?[]{}\`

// fenceMayHold reports whether the canonical dir could hold files of the deny set.
func (d ReadDenial) fenceMayHold(ctx context.Context, canonical string) bool {
	return d.g != nil && d.g.resolver != nil && d.g.resolver.MayContainDenied(ctx, canonical)
}

// fenceDenied reports whether the canonical path is in the deny set.
func (d ReadDenial) fenceDenied(canonical string) bool {
	return d.g != nil && d.g.resolver != nil && canonical != "" && d.g.resolver.Denied(canonical)
}

// ShellRisk names the first read of the script that could reach a path the Read deny
// rules or the deny set keep from reads although the command does not name it — "" when
// there is none. Those reads are:
//
//   - a recursive reader (shellscan.Script.RecursiveSegments) walking a directory that could hold such a
//     path, or one that cannot be placed;
//   - a word the shell expands by globbing or brace expansion (cat secrets/*, cat *.pem,
//     cat ./.e*) whose literal directory could hold such a path, or cannot be placed;
//   - a read target that cannot be placed (cat "$f"), while a Read deny rule is in force;
//   - git printing content from its object store or index (git show REV:path, git log
//     -p, git diff, git cat-file -p, git grep, git blame, git archive, …) unless the
//     analysis proves every path it prints lies outside what is denied
//     (gitHistoryProven), while a Read deny rule is in force or the task root could hold
//     files of the deny set.
//
// Scripts run through sh -c or eval with literal text are read the same way.
func (d ReadDenial) ShellRisk(ctx context.Context, s *shellscan.Script, place shellscan.Placer) string {
	return d.shellRisk(ctx, s, place, -1, 0)
}

func (d ReadDenial) shellRisk(ctx context.Context, s *shellscan.Script, place shellscan.Placer, outer, depth int) string {
	if s == nil || d.g == nil || depth >= 3 {
		return ""
	}
	rules := d.readRules()
	segOf := func(i int) int {
		if outer >= 0 {
			return outer
		}
		return i
	}
	// mayHold judges a directory a command reads below.
	mayHold := func(seg int, p string) bool {
		abs, canonical, ok := place(ctx, shellscan.Target{Path: p, Op: shellscan.OpRead, Segment: segOf(seg), Static: true})
		if !ok {
			// Without a rule, an unplaced walk is the mode's question (Gate.walksDenied).
			return rules
		}
		return d.MayHold(abs) || d.MayHold(canonical) || d.fenceMayHold(ctx, canonical)
	}
	for i, seg := range s.Segments {
		words := append([]shellscan.Word(nil), seg.Words...)
		for _, r := range seg.Redirects {
			words = append(words, r.Target)
		}
		for _, w := range words {
			if dir, expands := globDir(w); expands {
				if dir == "" && rules || dir != "" && mayHold(i, dir) {
					return fmt.Sprintf("the word %s expands to paths the command does not name, and a deny rule or the deny set could cover one of them", w.Raw)
				}
			}
		}
	}
	reads, _ := shellscan.ReadTargets(s)
	recursive := s.RecursiveSegments()
	for _, t := range reads {
		if rules && !t.Static && !tildePath(t) {
			if _, expands := globDir(shellscan.Word{Raw: t.Path}); !expands {
				return fmt.Sprintf("it reads %s, which cannot be placed, while a Read deny rule is in force", t.Path)
			}
		}
		if t.Segment >= 0 && t.Segment < len(recursive) && recursive[t.Segment] {
			if !t.Static && !tildePath(t) || mayHold(t.Segment, t.Path) {
				return fmt.Sprintf("it searches %s recursively, and a deny rule or the deny set could cover files beneath it", t.Path)
			}
		}
	}
	gitRisky := rules || d.fenceMayHold(ctx, d.root)
	for i, seg := range s.Segments {
		inner, _, ok := seg.Unwrap()
		if !ok || len(inner.Words) == 0 {
			continue
		}
		if text, nested := nestedScript(inner); nested {
			if ns, err := shellscan.Parse(text); err == nil {
				inner := place
				if dirMoved(ns) >= 0 {
					// The nested script moves its own directory: its relative paths
					// cannot be placed.
					inner = func(ctx context.Context, t shellscan.Target) (string, string, bool) {
						if !strings.HasPrefix(t.Path, "/") && !strings.HasPrefix(t.Path, "~") {
							return "", "", false
						}
						return place(ctx, t)
					}
				}
				if why := d.shellRisk(ctx, ns, inner, segOf(i), depth+1); why != "" {
					return why
				}
			}
			continue
		}
		w0 := inner.Words[0]
		if !gitRisky || !w0.Static || filepath.Base(w0.Lit) != "git" {
			continue
		}
		if inner.Appended || !d.gitHistoryProven(ctx, inner.Words[1:], segOf(i), place) {
			return "git would print content from its object store or index that could belong to a path a deny rule or the deny set covers; name the paths (git show HEAD:src/main.go, git diff HEAD -- src/)"
		}
	}
	return ""
}

// globDir reads a word the shell expands by globbing or brace expansion: expands is true
// for one, and dir is the literal directory its matches lie below ("." for "*.pem", "secrets"
// for "secrets/*"), or "" when that cannot be told (quotes, parameters, a tilde).
func globDir(w shellscan.Word) (dir string, expands bool) {
	if w.Static {
		return "", false
	}
	raw := w.Raw
	i := strings.IndexAny(raw, "*?[{")
	if i < 0 {
		return "", false
	}
	head := raw[:i]
	if strings.ContainsAny(head, "$`\\'\"~") || strings.ContainsAny(raw, "$`") {
		return "", true
	}
	j := strings.LastIndexByte(head, '/')
	switch {
	case j < 0:
		return ".", true
	case j == 0:
		return "/", true
	}
	return head[:j], true
}

// headLikeRev matches revisions that always name a commit: HEAD (or @) with ~n and ^n
// steps. A branch or tag name may name a blob, and a hash may be one.
var headLikeRev = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:HEAD|@)(?:[~^][0-9]*)*$`) })

// gitNoContent are git subcommands that print no file content from the object store,
// the index or the work tree (names, hashes, messages, references, summaries), or that
// write without showing content. An option in gitPatchy still makes them unproven.
var gitNoContent = []string{"status", "ls-files", "ls-tree", "rev-parse", "branch", "tag", "remote",
	"show-ref", "describe", "shortlog", "count-objects", "version", "help", "var", "check-ignore",
	"check-attr", "for-each-ref", "name-rev", "merge-base", "symbolic-ref", "rev-list", "cherry",
	"config", "add", "commit", "checkout", "switch", "restore", "reset", "rm", "mv", "init", "clone",
	"fetch", "pull", "push", "merge", "rebase", "cherry-pick", "revert", "worktree", "gc", "prune",
	"clean", "submodule"}

// gitHarmlessGlobal are git's global options that neither move git nor change what a
// path means.
var gitHarmlessGlobal = []string{"--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs",
	"--no-replace-objects", "--no-advice"}

// gitHistoryProven reports whether the analysis proves that a git command (its arguments
// after "git") prints no content of a path the deny rules or the deny set cover. It is
// conservative: anything it does not model is unproven.
func (d ReadDenial) gitHistoryProven(ctx context.Context, args []shellscan.Word, seg int, place shellscan.Placer) bool {
	i := 0
	for ; i < len(args); i++ {
		w := args[i]
		if !w.Static {
			return false
		}
		if !strings.HasPrefix(w.Lit, "-") {
			break
		}
		if !slices.Contains(gitHarmlessGlobal, w.Lit) {
			return false // -C, -c, --git-dir, --icase-pathspecs…: paths no longer mean what they say
		}
	}
	if i == len(args) {
		return true // git alone prints its usage
	}
	sub, rest := args[i].Lit, args[i+1:]
	for _, w := range rest {
		if !w.Static {
			return false
		}
	}
	g := gitCall{d: d, ctx: ctx, seg: seg, place: place}
	g.opts, g.operands, g.pathspecs, g.dashdash = splitGitArgs(rest)
	switch sub {
	case "log", "whatchanged", "reflog":
		return !gitPatchy(g.opts) || g.pathspecsProven()
	case "show":
		return g.showProven()
	case "diff":
		return g.diffProven()
	case "cat-file":
		return g.catFileProven()
	case "grep":
		for _, o := range g.opts {
			if o == "-f" || o == "-O" || strings.HasPrefix(o, "--open-files-in-pager") || strings.HasPrefix(o, "--textconv") {
				return false
			}
		}
		return g.pathspecsProven()
	case "blame", "annotate":
		for _, o := range g.opts {
			if o == "-S" || o == "--contents" || strings.HasPrefix(o, "--contents=") || strings.HasPrefix(o, "--ignore-revs-file") {
				return false // reads revisions or content from a file
			}
		}
		return d.pathspecsProven(ctx, append(g.operands, g.pathspecs...), seg, place)
	case "stash":
		return !slices.Contains(g.operands, "show") && !gitPatchy(g.opts)
	}
	return slices.Contains(gitNoContent, sub) && !gitPatchy(g.opts)
}

// gitCall is one git subcommand's arguments, split, with what judging them needs.
type gitCall struct {
	d                         ReadDenial
	ctx                       context.Context
	seg                       int
	place                     shellscan.Placer
	opts, operands, pathspecs []string
	dashdash                  bool
}

// pathspecsProven: the output is limited by pathspecs after "--", none of them denied.
func (g gitCall) pathspecsProven() bool {
	return g.dashdash && g.d.pathspecsProven(g.ctx, g.pathspecs, g.seg, g.place)
}

// showProven judges git show: commits (HEAD-like revisions) show their patches, limited
// by pathspecs; REV:PATH shows that path's blob.
func (g gitCall) showProven() bool {
	if gitOpt(g.opts, "textconv", "ext-diff") {
		return false
	}
	commits := len(g.operands) == 0
	for _, o := range g.operands {
		switch {
		case headLikeRev().MatchString(o):
			commits = true
		case strings.Contains(o, ":"):
			if !g.d.colonProven(g.ctx, o, g.seg, g.place) {
				return false
			}
		default:
			return false
		}
	}
	return !commits || g.pathspecsProven()
}

// diffProven judges git diff: between HEAD-like revisions (or against the work tree) it
// shows patches, limited by pathspecs; REV:PATH operands compare blobs.
func (g gitCall) diffProven() bool {
	if gitOpt(g.opts, "textconv", "ext-diff", "no-index") {
		return false
	}
	blobs := len(g.operands) > 0
	for _, o := range g.operands {
		a, b, isRange := strings.Cut(strings.Replace(o, "...", "..", 1), "..")
		switch {
		case isRange && headLikeRev().MatchString(a) && headLikeRev().MatchString(b), headLikeRev().MatchString(o):
			blobs = false
		case strings.Contains(o, ":"):
			if !g.d.colonProven(g.ctx, o, g.seg, g.place) {
				return false
			}
		default:
			return false
		}
	}
	return blobs || g.pathspecsProven()
}

// catFileProven judges git cat-file: a type, size or existence prints no content; -p
// (or TYPE OBJECT) prints REV:PATH objects only when each path is proven.
func (g gitCall) catFileProven() bool {
	for _, o := range g.opts {
		if o != "-t" && o != "-s" && o != "-e" && o != "-p" {
			return false // --batch reads object names from stdin; --textconv, --filters
		}
	}
	if !gitOpt(g.opts, "p") && len(g.opts) > 0 {
		return true // type, size or existence only
	}
	objects := g.operands
	if len(objects) == 2 && !gitOpt(g.opts, "p") {
		objects = objects[1:] // cat-file TYPE OBJECT
	}
	for _, o := range objects {
		if !strings.Contains(o, ":") || !g.d.colonProven(g.ctx, o, g.seg, g.place) {
			return false
		}
	}
	return len(objects) > 0
}

// splitGitArgs splits a subcommand's arguments into options, operands before "--" and
// pathspecs after it.
func splitGitArgs(rest []shellscan.Word) (opts, operands, pathspecs []string, dashdash bool) {
	for i, w := range rest {
		switch {
		case w.Lit == "--":
			for _, p := range rest[i+1:] {
				pathspecs = append(pathspecs, p.Lit)
			}
			return opts, operands, pathspecs, true
		case strings.HasPrefix(w.Lit, "-") && w.Lit != "-":
			opts = append(opts, w.Lit)
		default:
			operands = append(operands, w.Lit)
		}
	}
	return opts, operands, nil, false
}

// gitOpt reports whether opts hold one of the long options (any abbreviation, with or
// without a value) or, for a one-letter name, that short option alone.
func gitOpt(opts []string, names ...string) bool {
	for _, o := range opts {
		for _, n := range names {
			if len(n) == 1 {
				if o == "-"+n {
					return true
				}
				continue
			}
			name, ok := strings.CutPrefix(o, "--")
			name, _, _ = strings.Cut(name, "=")
			if ok && len(name) >= 3 && strings.HasPrefix(n, name) {
				return true
			}
		}
	}
	return false
}

// gitPatchy reports an option that makes git print content: a patch (-p, -u, -U<n>,
// --patch, -W, --cc, -c, --word-diff, --binary…), a line history (-L), a search of
// content (-S, -G, --pickaxe…), an external diff or text conversion, or verbose output
// (git status -v and git commit -v show a diff). A cluster of short options counts if it
// holds any of those letters.
func gitPatchy(opts []string) bool {
	for _, o := range opts {
		if name, ok := strings.CutPrefix(o, "--"); ok {
			name, _, _ = strings.Cut(name, "=")
			for _, p := range []string{"patch", "unified", "cc", "word-diff", "color-words", "binary", "function-context",
				"pickaxe", "find-object", "textconv", "ext-diff", "verbose", "full-diff", "patch-with-stat", "patch-with-raw",
				"interactive", "remerge-diff", "dd", "combined-all-paths"} {
				if name != "" && strings.HasPrefix(p, name) || strings.HasPrefix(name, p) {
					return true
				}
			}
			continue
		}
		if strings.ContainsAny(strings.TrimPrefix(o, "-"), "puUWcLGSvi") {
			return true
		}
	}
	return false
}

// pathspecsProven reports whether every pathspec is a literal path (no glob and no magic)
// below the task root whose tree no deny rule or deny set could reach. An empty list
// proves nothing: git reads the whole tree.
func (d ReadDenial) pathspecsProven(ctx context.Context, specs []string, seg int, place shellscan.Placer) bool {
	if len(specs) == 0 {
		return false
	}
	for _, p := range specs {
		if p == "" || strings.HasPrefix(p, ":") || strings.ContainsAny(p, `*?[]\`) {
			return false
		}
		abs, canonical, ok := place(ctx, shellscan.Target{Path: p, Op: shellscan.OpRead, Segment: seg, Static: true})
		if !ok || d.MayHold(abs) || d.MayHold(canonical) || d.Denied("Read", abs) || d.Denied("Read", canonical) ||
			d.fenceDenied(canonical) || d.fenceMayHold(ctx, canonical) {
			return false
		}
	}
	return true
}

// colonProven reports whether an object named REV:PATH (or :PATH, :N:PATH for the index)
// names a path proven outside what is denied. PATH is relative to the top of the
// repository, which is the task root or one of its ancestors (git looks upwards from the
// directory it runs in), so every one of those readings must be proven; "./" and "../"
// make it relative to the working directory instead. The object is a blob at exactly
// that path, or a tree, which shows names and object ids, never content: the path itself
// is judged, not what may lie beneath it.
func (d ReadDenial) colonProven(ctx context.Context, obj string, seg int, place shellscan.Placer) bool {
	_, p, _ := strings.Cut(obj, ":")
	if len(p) >= 2 && p[0] >= '0' && p[0] <= '3' && p[1] == ':' {
		p = p[2:]
	}
	if p == "" || strings.HasPrefix(p, "/") {
		return false
	}
	if strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../") || p == "." || p == ".." {
		abs, canonical, ok := place(ctx, shellscan.Target{Path: p, Op: shellscan.OpRead, Segment: seg, Static: true})
		return ok && !d.Denied("Read", abs) && !d.Denied("Read", canonical) && !d.fenceDenied(canonical)
	}
	abs, _, ok := place(ctx, shellscan.Target{Path: ".", Op: shellscan.OpRead, Segment: seg, Static: true})
	if !ok {
		return false
	}
	for top := abs; ; top = path.Dir(top) {
		c := path.Join(top, p)
		if !fence.Contains(top, c) || d.Denied("Read", c) || d.fenceDenied(c) {
			return false
		}
		if top == "/" {
			return true
		}
	}
}

// nestedScript returns the text a segment runs as a script of its own: eval's literal
// words joined, or the -c text of a shell (shellscan.ShellScript). Command runners
// (su -c, flock -c, …) are followed for named targets by shellscan's Follow; the unnamed
// reads judged here are followed through shells and eval.
func nestedScript(seg shellscan.Segment) (string, bool) {
	if len(seg.Words) < 2 || !seg.Words[0].Static {
		return "", false
	}
	if filepath.Base(seg.Words[0].Lit) == "eval" {
		parts := make([]string, 0, len(seg.Words)-1)
		for _, w := range seg.Words[1:] {
			if !w.Static {
				return "", false
			}
			parts = append(parts, w.Lit)
		}
		return strings.Join(parts, " "), true
	}
	text, _, known := shellscan.ShellScript(seg)
	return text, known
}
