package shellscan

import (
	"path/filepath"
	"strings"
)

// RecursiveSegments reports, for each segment of the script (by its index in
// s.Segments), whether the program it runs, looked at through its wrappers, reads the
// directories among its read targets recursively: grep, egrep and fgrep with -r, -R, --recursive or
// -d/--directories recurse; rg, find, du and tree always; ls with -R or --recursive;
// diff with -r or --recursive; git grep (the working tree). The reading is
// conservative: a short option cluster holding the letter counts wherever it sits, and
// so does any word spelling "recurse" for grep. A segment whose program cannot be read
// is not recursive here; the read analysis refuses it on its own grounds. git ls-files
// and the other git subcommands are not counted: they list names or read the object
// store, not the files beneath a directory.
func (s *Script) RecursiveSegments() []bool {
	if s == nil {
		return nil
	}
	out := make([]bool, len(s.Segments))
	for i, seg := range s.Segments {
		inner, _, _ := seg.Unwrap()
		if len(inner.Words) == 0 || !inner.Words[0].Static {
			continue
		}
		out[i] = recursiveReader(filepath.Base(inner.Words[0].Lit), inner.Words[1:])
	}
	return out
}

// recursiveReader judges one program and its arguments for Script.RecursiveSegments.
func recursiveReader(prog string, args []Word) bool {
	switch prog {
	case "rg", "find", "du", "tree":
		return true
	case "grep", "egrep", "fgrep":
		return hasRecurseOption(args, 'r', "recursive") || hasRecurseOption(args, 'R', "dereference-recursive") || hasRecurseWord(args, "recurse")
	case "ls":
		return hasRecurseOption(args, 'R', "recursive")
	case "diff":
		return hasRecurseOption(args, 'r', "recursive")
	case "git":
		return gitSubcommandWord(args) == "grep"
	}
	return false
}

// hasRecurseOption reports whether args, up to "--", hold the short option letter in some
// cluster or an abbreviation (of at least three letters) of the long option.
func hasRecurseOption(args []Word, letter byte, long string) bool {
	for _, w := range args {
		lit := w.Lit
		if lit == "--" {
			return false
		}
		if name, ok := strings.CutPrefix(lit, "--"); ok {
			name, _, _ = strings.Cut(name, "=")
			if len(name) >= 3 && strings.HasPrefix(long, name) {
				return true
			}
			continue
		}
		if len(lit) > 1 && lit[0] == '-' && strings.IndexByte(lit[1:], letter) >= 0 {
			return true
		}
	}
	return false
}

// hasRecurseWord reports whether some word of args, up to "--", spells s (alone, as an
// option's attached value or after "=").
func hasRecurseWord(args []Word, s string) bool {
	for _, w := range args {
		if w.Lit == "--" {
			return false
		}
		if strings.Contains(w.Lit, s) {
			return true
		}
	}
	return false
}

// gitSubcommandWord returns git's subcommand: the first word after the global options
// (and the values of those that take one). It reads no further than RecursiveSegments
// needs, unlike gitSubcommand, which the read-only analysis uses.
func gitSubcommandWord(args []Word) string {
	for i := 0; i < len(args); i++ {
		lit := args[i].Lit
		switch {
		case lit == "-C" || lit == "-c" || lit == "--git-dir" || lit == "--work-tree" || lit == "--namespace" || lit == "--exec-path" || lit == "--config-env":
			i++
		case strings.HasPrefix(lit, "-"):
		default:
			return lit
		}
	}
	return ""
}
