// Package shellscan is the one place in sema that understands shell command text. It parses a
// bash command line with mvdan.cc/sh/v3 into its simple commands (segments) and answers the
// questions the permission gate and the shell tools ask about it:
//
//   - ReadOnly: is every command provably read-only (the bash_readonly band)?
//   - ReadTargets / WriteTargets: which paths would the command read, write, create or remove
//     (the read-boundary, write-boundary and delete-guard stations)?
//   - AcceptsFileCommand: does the acceptEdits mode's file-command reading cover it?
//   - PrefixMatch / ExactMatch: does a `Bash(…)` rule match one segment?
//
// Invariants:
//
//   - Judgement is by parse tree, never by string prefix. A word counts as a literal only when
//     it contains no expansion at all (Word.Static); anything whose meaning depends on run-time
//     expansion — a variable, a glob, a brace expansion, a substitution, a leading tilde — is
//     treated as unknown.
//   - Every analysis fails closed: a construct, program or option this package does not model is
//     reported as "not read-only", "not accepted" or "incomplete", never guessed at.
//   - Segments cover every simple command in the text, including those inside subshells, groups,
//     control structures, function bodies and command or process substitutions, so no analysis
//     can be bypassed by nesting.
//
// Reads of unknown places: an option that makes a program follow symbolic links while it
// walks (grep -R, rg -L, find -L/-H/-follow, ls -L, du -L, tree -l, diff -r, cp -L, tar -h,
// rsync -L, …) or read the names of its files from a file (--files0-from, tar -T, file -f,
// find -files0-from, rsync --files-from, xargs, a jq library path or import) is modeled as a
// target with no path and a Reason (Target.Reason): no caller can place it, so it counts as
// lying outside the roots. chown/chgrp/chmod -L/-H and a sed script that runs commands or is
// not in the text are writes of unknown places in the same way.
//
// Git's repository configuration: git runs programs its repository names (diff drivers and
// textconv, clean filters, diff.external, core.fsmonitor, pagers, hooks). The text cannot show
// them, so ReadOnly refuses every git command, and ReadOnlyAt proves one read-only only when
// the caller's Place reports that the repository's configuration names no program (package
// gitconf reads it). The shell tools also run the read-only band with git's fsmonitor, hooks,
// signature checks, credential helpers and pagers switched off through the environment.
//
// Outside the model: aliases and functions defined by the shell's startup files, a PATH that
// resolves a program name to something else, and the user's or the system's own configuration
// that makes a listed program run others (a global git diff driver, a ripgrep config file). The
// shell tools run commands in a non-interactive shell that does not read such files; a
// deployment that changes that owns the consequence.
package shellscan
