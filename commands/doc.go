// Package commands reads custom slash commands — Markdown files of prompts a person
// invokes as "/name arguments" — in Claude Code's format, and expands an invocation into
// the prompt of a task.
//
// # Where commands come from, and which wins
//
// A command is a file NAME.md in one of these directories, highest precedence first:
//
//   - the workspace's .sema/commands (scope project)
//   - the workspace's .claude/commands (scope project; with Options.ClaudeCompat)
//   - HOME/.sema/commands (scope user)
//   - HOME/.claude/commands (scope user; with Options.ClaudeCompat)
//
// A project command wins over a user command of the same name, and within one scope
// sema's directory wins over Claude Code's. The command that wins records the files it
// hides (Command.Shadows). When the workspace's directory is the user's own (a task
// rooted at the home directory), it is read once, as the user's.
//
// Subdirectories namespace: frontend/component.md is the command "frontend:component".
// (Claude Code shows such a file as "/component" with the directory as a label; sema
// keeps the directory in the name so that two files of the same base name in different
// directories stay two commands.) Names are case-sensitive. Entries whose name begins
// with "." are skipped (editors' lock and swap files), as are files not ending in ".md".
// A file or directory name holding ":" or a blank is refused: ":" separates namespaces.
//
// # The file
//
// An optional front matter between two "---" lines, then the body, the prompt in
// Markdown. The front matter is the simple subset of YAML that command files use, read
// by this package (no YAML library): "key: value" lines, a value plain or quoted ('…' or
// "…"), a block list of "- item" lines under a key with no value, a flow list [a, b]
// for allowed-tools, and | or > block text. As in YAML, " #" starts a comment in a plain
// value: quote a value that holds one. A duplicate key is refused. The keys read are
// description, allowed-tools (rules in the syntax of --allowed-tools: comma- or
// blank-separated, or a list), argument-hint (kept as written, brackets and all) and
// model. Other keys (Claude Code has more) are ignored and listed in
// Command.UnknownKeys, so that `sema commands list` can say they have no effect.
//
// A file that is not UTF-8, whose front matter is not closed or not of that subset,
// whose allowed-tools holds a rule sema refuses, that is larger than MaxFileBytes or is
// not a regular file, or whose name is empty is refused with CodeInvalid naming the file.
// A refused file still takes its name: invoking it is refused, it never falls back to a
// lower file of the same name. Refusals of one file do not affect the others.
//
// # Expansion
//
// "/name rest": the argument string is rest with surrounding blanks removed. In the
// body, $ARGUMENTS becomes the argument string exactly as typed (quotes included);
// $1 … $9 the first to ninth argument, and $ARGUMENTS[N] the argument at index N
// counted from 0, the arguments being the string split as a shell splits words: blanks
// separate, '…' is literal, "…" and a backslash outside quotes escape (an unterminated
// quote is refused with CodeInvalid). A placeholder whose argument is missing is left
// as written, so "$5" in prose survives a call with fewer arguments. Substitution is a
// single pass: an argument holding "$1" is not expanded again. When the body holds no
// $ARGUMENTS (in either form) and arguments were given, they are appended after a blank
// line as "ARGUMENTS: <argument string>", as Claude Code does, so that they are never
// lost.
//
// Claude Code now reads $N counting from 0 ($0 is the first argument); sema keeps the
// convention most command files were written for, $1 being the first argument, and
// leaves $0 as written. $ARGUMENTS[N] means the same in both.
//
// Not supported: a "!`command`" line (Claude Code runs it and puts its output in the
// prompt) and "@file" references (Claude Code inlines the file) stay in the prompt as
// text. Running a program because a prompt names it is a decision this package does not
// take; Command.Warnings says when a body uses "!`".
//
// # Trust
//
// A project command is the workspace's choice: a cloned repository picks its body, its
// allowed-tools and its model. This package reports the scope; the caller decides what
// applies (sema applies a project command's allowed-tools and model only in a trusted
// workspace). A link in a project directory must resolve inside the workspace (a link
// pointing at a key elsewhere would put the key in the prompt); it is refused otherwise.
// A user directory's links are followed wherever they point.
package commands
