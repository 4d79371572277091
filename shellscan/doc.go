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
// Outside the model: aliases and functions defined by the shell's startup files, a PATH that
// resolves a program name to something else, and repository or user configuration that makes a
// listed program run others (a git fsmonitor or diff driver, a ripgrep config file). The shell
// tools run commands in a non-interactive shell that does not read such files; a deployment that
// changes that owns the consequence.
package shellscan
