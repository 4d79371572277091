// Package instructions finds the instruction files a task's model should follow — the
// user's and the project's AGENTS.md (and, for compatibility, CLAUDE.md), the files they
// import, and the index of the memory directory — and assembles their text under a size
// cap. It reads through an env.ExecutionEnv only, and it decides nothing about where
// the text goes: the agent puts the start set in the system prompt and the files met
// later in the next request.
//
// # What is loaded, in this order
//
//   - The user's files: with Config.Claude, Claude Code's HOME/.claude/CLAUDE.md, then
//     HOME/.sema/AGENTS.md.
//   - From the filesystem root down to the task root, in each directory: AGENTS.md,
//     CLAUDE.md, AGENTS.local.md, CLAUDE.local.md (the local variants are a person's
//     own notes, usually kept out of version control).
//   - The task root's .sema/AGENTS.md.
//   - The memory index: MEMORY.md in the memory directory. The name is Claude Code's
//     for the same file, so a model trained on it keeps its habits. The index is shown
//     as written: its "@" references are not imported, since it points at notes the
//     model opens when it needs them.
//   - Later, Loader.Enter: the same four names in each directory below the task root, down
//     to one a tool read in, the first time it reads there.
//
// Each file follows the files it imports ("@path", see Imports), depth first, so a file's
// imports come right after it.
//
// # Invariants
//
//   - Every path is canonicalized through the env (package fence's Canonicalize) and
//     read by its canonical form; a file is loaded at most once per conversation, so a
//     link AGENTS.md -> CLAUDE.md loads one file.
//   - An import must resolve inside the read roots (or, with Config.Claude, be a
//     Markdown file a person keeps under HOME/.claude, outside Claude Code's state
//     directories such as projects/ and plans/), and not into the deny set or a path a
//     Read rule denies (Config.Denied): otherwise it is skipped with a notice naming it.
//     Imports nest at most MaxImportDepth deep; an import of a file on its own import
//     chain is a cycle, skipped with a notice; a missing import is skipped silently, as
//     Claude Code does, since "@name" is also how prose mentions a person.
//   - A file found by name (not imported) must resolve inside the directory it was
//     found in or inside the read roots: a link in a cloned repository pointing at a
//     file elsewhere (a key, a credential) is skipped with a notice, never shown to the
//     model. The user's own file is the exception: it is the user's configuration, found
//     through the home directory, and it is read wherever it points, also inside sema's
//     state directory, which the deny set keeps from the tools.
//   - A file inside the read roots with more than one hard link is skipped, as the Read
//     tool refuses it (fence.HardLinked). A file larger than MaxFileBytes, or that is
//     not UTF-8 text, is skipped with a notice.
//   - The text of all files together is capped (Config.MaxChars, DefaultMaxChars by
//     default, counted in characters over one conversation): the file that crosses the
//     cap is cut at a line end and marked as cut, the files after it are left out, and a
//     CodeTruncated notice names both.
package instructions
