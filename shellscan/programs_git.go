package shellscan

import (
	"path"
	"strings"
)

// The model of git: which subcommands read, write, and what they touch.

// gitSubcommand reads git's global options and subcommand; ok is false for a global option that
// is not among the read-only ones (they move git to another repository or configuration).
func gitSubcommand(args []Word) (sub string, rest []Word, ok bool) {
	for i, w := range args {
		if !w.Static {
			return "", nil, false
		}
		if gitGlobalReadOnly[w.Lit] {
			continue
		}
		if strings.HasPrefix(w.Lit, "-") {
			return "", nil, false
		}
		return w.Lit, args[i+1:], true
	}
	return "", nil, false
}

// gitReaders are git subcommands that only read, and so run only the programs the
// repository's configuration names for reading: diff drivers, textconv, clean filters,
// fsmonitor, pagers.
var gitReaders = setOf("status", "log", "diff", "show", "branch", "rev-parse", "ls-files", "grep",
	"blame", "annotate", "cat-file", "archive", "shortlog", "describe", "ls-tree", "whatchanged",
	"show-branch", "diff-files", "diff-index", "diff-tree", "range-diff", "format-patch")

// RunsGitReader reports whether a segment runs git (through any wrapper) with a subcommand
// that reads, or with global options this package does not read past (-c, --config-env, -C,
// --git-dir, --exec-path, …: they set configuration or choose another repository, whose
// configuration can name programs); unread reports the latter.
func RunsGitReader(seg Segment) (reads, unread bool) {
	inner, _, ok := seg.Unwrap()
	if !ok || len(inner.Words) == 0 || program(inner.Words[0]) != "git" {
		return false, false
	}
	sub, _, known := gitSubcommand(inner.Words[1:])
	if !known {
		return true, true
	}
	return gitReaders[sub], false
}

func gitWrites(c *collector, args []Word) {
	sub, rest, ok := gitSubcommand(args)
	switch {
	case !ok:
		c.complete = false
		return
	case sub == "branch":
		if gitBranchReadOnly(rest) != "" {
			c.complete = false
		}
		return
	case sub != "status" && sub != "log" && sub != "diff" && sub != "show" && sub != "rev-parse" && sub != "ls-files":
		c.complete = false
		return
	}
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		if w.Static && w.Lit == "--" {
			return
		}
		long, _, isOpt := optionWord(w)
		switch {
		case !w.Static && !w.OptionSafe:
			c.complete = false
		case !isOpt || long == "":
		case long == "output":
			if eq := strings.IndexByte(w.Lit, '='); eq >= 0 {
				c.add(attached(w, eq+1), OpWrite)
			} else if i+1 < len(rest) {
				i++
				c.add(rest[i], OpWrite)
			}
		case abbreviates(long, "output", "ext-diff", "textconv"):
			c.complete = false
		}
	}
}

// gitReads reads a git command's reads: the repository git runs in (the current directory,
// or the one its -C options name), the directories --git-dir and --work-tree name, and the
// two files or directories `git diff` compares on the filesystem.
func gitReads(c *collector, args []Word) {
	g, ok := readGitGlobals(args)
	if !ok {
		c.complete = false
		return
	}
	if !g.readOnly {
		c.complete = false
	}
	for _, w := range append([]Word{literalWord(".")}, g.dirs...) {
		c.gitPlaced(g, w)
	}
	if g.sub == "diff" {
		gitDiffReads(c, g)
	}
}

// gitInvocation is git's global options, read for the places git reads.
type gitInvocation struct {
	// dir is the directory git moves to with -C, joined in order ("" when it stays); dirKnown
	// is false when a -C value is expanded, so relative paths cannot be placed.
	dir      string
	dirKnown bool
	// dirs are the values of --git-dir and --work-tree, relative to dir.
	dirs []Word
	// readOnly reports that every global option is one gitGlobalReadOnly lists.
	readOnly bool
	sub      string
	rest     []Word
}

// gitValueGlobals are git's global options that take the next word as their value (or an
// attached one after "="), from git.c's handle_options.
var gitValueGlobals = setOf("-C", "-c", "--config-env", "--git-dir", "--work-tree", "--namespace",
	"--super-prefix", "--attr-source")

// gitFlagGlobals are git's other global options: they take no value.
var gitFlagGlobals = setOf("-p", "--paginate", "-P", "--no-pager", "--no-replace-objects", "--bare",
	"--literal-pathspecs", "--no-literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs",
	"--icase-pathspecs", "--no-optional-locks", "--no-lazy-fetch", "--no-advice", "--exec-path")

// readGitGlobals reads git's global options as git does, in order, up to the subcommand;
// ok is false when it cannot find the subcommand (an expanded word, an option git does not
// know, none at all).
func readGitGlobals(args []Word) (g gitInvocation, ok bool) {
	g.dirKnown, g.readOnly = true, true
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Static {
			return g, false
		}
		if !strings.HasPrefix(w.Lit, "-") {
			g.sub, g.rest = w.Lit, args[i+1:]
			return g, true
		}
		if !gitGlobalReadOnly[w.Lit] {
			g.readOnly = false
		}
		name, value, attachedValue := strings.Cut(w.Lit, "=")
		switch {
		case gitFlagGlobals[w.Lit]:
			continue
		case strings.HasPrefix(name, "--") && attachedValue && (gitValueGlobals[name] || name == "--exec-path" || name == "--list-cmds"):
			g.global(name, attached(w, len(name)+1), value)
			continue
		case !gitValueGlobals[w.Lit] || i+1 == len(args):
			return g, false
		}
		i++
		g.global(w.Lit, args[i], args[i].Lit)
	}
	return g, false
}

// global records one global option's value where it moves what git reads.
func (g *gitInvocation) global(name string, v Word, lit string) {
	switch name {
	case "-C":
		switch {
		case !v.Static:
			g.dirKnown = false
		case lit == "": // git ignores an empty -C
		case path.IsAbs(lit):
			g.dir = lit
		default:
			g.dir = path.Join(g.dir, lit)
		}
	case "--git-dir", "--work-tree":
		g.dirs = append(g.dirs, v)
	}
}

// gitPlaced adds a read of w as git sees it: relative to the directory its -C options
// moved it to. Behind an expanded -C a relative path cannot be placed.
func (c *collector) gitPlaced(g gitInvocation, w Word) {
	switch {
	case !w.Static || path.IsAbs(w.Lit) || g.dir == "" && g.dirKnown:
		c.add(w, OpRead)
	case !g.dirKnown:
		c.unknown(OpRead, "`git -C` moves git to a directory the command text does not show, so the relative path "+w.Lit+" cannot be placed")
	default:
		c.add(literalWord(path.Join(g.dir, w.Lit)), OpRead)
	}
}

// gitDiffReads adds the paths `git diff` compares on the filesystem, outside any repository
// (the diff command's "--no-index" form): with --no-index, and also without it when git is
// given exactly two words after its leading options (or after a leading "--"), which git
// compares as files whenever one of them lies outside the repository or git runs outside
// one. The operands are then read as paths whatever they are; a revision read as a path is
// a name inside the current directory. An expanded word that could become an option (or
// --no-index) counts as both.
func gitDiffReads(c *collector, g gitInvocation) {
	rest := g.rest
	noIndex, unsure := false, false
	lead, leadFound := len(rest), false
	var operands []Word
	dashdash := false
	for i, w := range rest {
		switch {
		case dashdash:
			operands = append(operands, w)
		case w.Static && w.Lit == "--":
			dashdash = true
			if !leadFound {
				lead, leadFound = i+1, true
			}
		case !w.Static && !w.OptionSafe:
			unsure = true
			operands = append(operands, w)
		case w.Static && strings.HasPrefix(w.Lit, "-"):
			// git counts "-" (standard input) among the leading options too.
			if long, _, _ := optionWord(w); len(long) >= len("no-i") && abbreviates(long, "no-index") {
				noIndex = true
			}
		default:
			operands = append(operands, w)
			if !leadFound {
				lead, leadFound = i, true
			}
		}
	}
	if noIndex || unsure {
		// Directories are walked and compared file by file.
		c.complete = false
	}
	if !noIndex && !unsure && len(rest)-lead != 2 {
		return
	}
	for _, w := range operands {
		if !w.Static || w.Lit != "-" { // standard input
			c.gitPlaced(g, w)
		}
	}
}
