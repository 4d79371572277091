package shellscan

import "strings"

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

func gitReads(c *collector, args []Word) {
	_, rest, ok := gitSubcommand(args)
	if !ok {
		c.complete = false
		return
	}
	c.addPath(".", OpRead)
	for _, w := range rest {
		if w.Static && w.Lit == "--no-index" {
			c.complete = false // compares arbitrary files
		}
	}
}
