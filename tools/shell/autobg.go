package shell

import (
	"path"
	"strings"

	"github.com/sema-agent/sema/shellscan"
)

// autoBackgroundEligible reports whether a foreground command that hit its own timeout may
// be adopted as a background task instead of being killed. It may not when:
//   - the command cannot be parsed, or bash could read its text differently from the parser
//     (nothing about it can be known);
//   - any word of any simple command — substitutions included — is git, also written as
//     a path (/usr/bin/git): a git command left running holds the repository's locks and
//     races the commands that follow;
//   - a command word or a word that mentions git is expanded at run time, so it might be
//     git;
//   - the first word is sleep: a wait that timed out has nothing left worth keeping.
func autoBackgroundEligible(command string) bool {
	s, err := shellscan.Parse(command)
	if err != nil || s.Ambiguous() != "" || len(s.Segments) == 0 {
		return false
	}
	for _, seg := range s.Segments {
		for i, w := range seg.Words {
			// `[` (the test command) is an unmatched glob bracket to the parser, but it
			// can only ever be itself.
			if !w.Static && w.Raw != "[" {
				if i == 0 || strings.Contains(w.Raw, "git") {
					return false
				}
				continue
			}
			if w.Static && isProgram(w.Lit, "git") {
				return false
			}
		}
	}
	first := s.Segments[0]
	return len(first.Words) == 0 || !first.Words[0].Static || !isProgram(first.Words[0].Lit, "sleep")
}

// isProgram reports whether a literal word names program, by itself or as a path.
func isProgram(word, program string) bool {
	return word == program || (strings.Contains(word, "/") && path.Base(word) == program)
}

// gitValueOptions are git's global options that take their value as the next word.
var gitValueOptions = map[string]bool{
	"-C": true, "-c": true, "--git-dir": true, "--work-tree": true, "--namespace": true,
	"--config-env": true, "--super-prefix": true, "--exec-path": false,
}

// hasGitCommit reports whether any simple command of the text, looked at through its
// wrappers (env, sudo, xargs, …), may be `git commit`: git (or a command word expanded at
// run time) whose subcommand — the first word after git's global options — is commit or
// is expanded at run time. Text that does not parse has no commit: bash will not run it.
func hasGitCommit(command string) bool {
	s, err := shellscan.Parse(command)
	if err != nil {
		return false
	}
	for _, seg := range s.Segments {
		inner, _, _ := seg.Unwrap()
		ws := inner.Words
		if len(ws) == 0 {
			continue
		}
		if ws[0].Static && !isProgram(ws[0].Lit, "git") {
			continue
		}
		for i := 1; i < len(ws); i++ {
			w := ws[i]
			if !w.Static {
				return true
			}
			if strings.HasPrefix(w.Lit, "-") {
				if gitValueOptions[w.Lit] {
					i++
				}
				continue
			}
			if w.Lit == "commit" {
				return true
			}
			break
		}
	}
	return false
}
