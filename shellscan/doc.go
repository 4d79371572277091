// Package shellscan is the one place in sema that understands shell command text. It parses a
// bash command line with mvdan.cc/sh/v3 into its simple commands (segments) and answers the
// questions the permission gate and the shell tools ask about it:
//
//   - ReadOnly: is every command provably read-only (the bash_readonly band)?
//   - ReadTargets / WriteTargets: which paths would the command read, write, create or remove
//     (the read-boundary, write-boundary and delete-guard stations)?
//   - AcceptsFileCommand: does the acceptEdits mode's file-command reading cover it?
//   - PrefixMatch / ExactMatch: does a `Bash(…)` rule match one segment?
//   - EvaluatesCode (Script and Segment): does bash evaluate any of the text as code?
//   - Runs / HiddenCommand: which commands does a segment run, through indirection, and may
//     it run one the text does not show?
//
// Invariants:
//
//   - Judgement is by parse tree, never by string prefix. A word counts as a literal only when
//     it contains no expansion at all (Word.Static); anything whose meaning depends on run-time
//     expansion — a variable, a glob, a brace expansion, a substitution, a leading tilde — is
//     treated as unknown.
//   - Every analysis fails closed: a construct, program or option this package does not model is
//     reported as "not read-only", "not accepted" or "incomplete", never guessed at.
//   - "Evaluates code" is one judgement (Script.EvaluatesCode, Segment.EvaluatesCode), and
//     every consumer asks it: ReadOnly, AcceptsFileCommand and the permission gate's allow
//     rules. It covers command and process substitution; arithmetic over anything but number
//     literals ($((x)), $[x], (( )), for (( )), let, a[i]=v), where an array subscript such
//     as a[$(cmd)] runs a command; indirect, subscripted, variably sliced and @-operator
//     parameter expansions (${!x}, ${a[$i]}, ${x:$n}, ${x@P}); [[ ]] arithmetic comparisons
//     with operands that are not numbers and -v/-R; builtins that evaluate a name's subscript
//     or a callback (declare values, printf -v, read, unset, getopts, wait, mapfile -C,
//     test/[ -v); and assigning a prompt variable in a for loop. Code is Hidden when the
//     commands it may run are not among the Segments (everything but substitutions).
//   - Runs (Follow) follows what a segment runs: wrappers (Unwrap), `sh -c TEXT` with options
//     read as bash reads them (-c anywhere among the options, -o/-O taking a word), eval and
//     trap with literal text, env -S, find -exec/-execdir/-ok/-okdir, xargs, alias values
//     and busybox applets, and every program that runs a command taken from its arguments,
//     to a bounded depth. The general rule for such command runners is one table (runners):
//     each program's options are read with its own grammar, and its command is found in one
//     of a few ways — the operands after the options, after a fixed number of them (chroot
//     NEWROOT, flock FILE, taskset MASK): su, runuser -u, doas, setsid, flock, chroot,
//     nsenter, unshare, ionice, chrt, taskset, numactl, systemd-run, strace, ltrace,
//     valgrind, firejail, bwrap, proot, fakeroot, dbus-run-session, setpriv, prlimit …; the
//     operands joined and run by sh -c (watch); the value of a script option run by a shell
//     (su -c, runuser -c, script -c, flock FILE -c, strace -o '|cmd'); or nowhere the text
//     shows (gdb, ssh, tmux, screen, at, batch, crontab). Where a runner moves its command
//     (su -l, sudo -i: another directory; chroot, unshare, nsenter, bwrap, ssh: another
//     root or machine) Follow says so, so that paths behind it are not placed as the
//     caller's. Interpreters given code inline or on standard input (python -c, perl -e,
//     node -e, ruby -e, php -r, expect -c, awk with system() or a pipe, sed's e command)
//     run commands the text does not show; an interpreter running a program file is
//     outside the model, like a Makefile.
//   - A command Runs cannot see is reported, never guessed: an expanded command word, a
//     wrapper or runner option the model does not know or an expanded word among its
//     options, a runner with no command written that then starts a shell reading standard
//     input (su, sudo -s, chroot DIR, unshare), a shell reading a file or standard input,
//     expanded eval/trap/-c text, source, hidden code. Callers treat it as a command that may
//     be anything: a deny rule in force makes it a person's question, never an allow.
//   - Where bash's lexer and the parser could read the text differently, every analysis fails
//     closed rather than trusting the parse. Script.Ambiguous names such text: a carriage
//     return, a NUL or other control character, bytes that are not UTF-8, an invisible Unicode
//     format character, or a line continuation (backslash-newline) anywhere but between two
//     words of a command outside comments and in a script without here-documents. An ambiguous
//     script is never read-only, matches no Bash rule, has incomplete target lists and is not
//     accepted as a file command; a caller matching deny or ask rules must treat it as a command
//     it cannot analyze. FuzzLexerAgreement checks the rule against bash itself.
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
