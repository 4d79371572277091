// Package fence decides whether a path may be touched: under the roots face, no path
// leaves the roots.
//
// A run builds one Fence with New. New resolves, once, everything the run's file tools
// are judged by: the read face and the write face (ResolveFace), the task root and the
// declared roots, the deny set, and the advertised writable directories. Every consumer
// reads those answers from the Fence; nothing resolves them a second time.
//
// # Invariants
//
//   - Canonicalization goes through the run's env.ExecutionEnv only, never the os
//     package, so the fence judges exactly the tree the tools touch.
//   - Canonicalization is fail-closed. Symbolic links are resolved on the whole path with
//     the kernel's semantics (".." after a link steps out of the link's target). A path
//     that does not exist yet is the canonical deepest existing ancestor with the rest
//     appended. A dangling link (one whose target, or any directory on the way to it,
//     does not exist), a link loop, an unreadable ancestor, a non-directory followed by
//     more path, ".." below a missing directory, or any other error of the env refuses
//     the path; the answer is never a best guess.
//   - "Inside a root" compares whole components of canonical paths (Contains), never
//     string prefixes: "/x/proj" does not contain "/x/proj-evil". Contains answers
//     false for anything that is not canonical-shaped.
//   - The deny set — sema's state directory and the deployment's deny globs, matched
//     against canonical paths together with everything beneath them — is refused for
//     reads and writes under every face (fs.path_denied).
//   - The credential stores — CredentialStores under Config.Home, RuntimeCredentialStores
//     under Config.RuntimeDir, and Config.Hidden — are refused like the deny set
//     (fs.path_denied), judged by path at each call (a store made during the run is
//     refused too), on the canonical path, on the absolute spelling, and, for a store
//     behind a link when New ran, on where it leads. The kernel sandbox hides the same
//     places from commands.
//   - Under the roots face a path whose canonical form lies in no root of its kind is
//     refused (fs.path_not_in_root). The open face skips only that judgment:
//     canonicalization, the deny set and the protected set still apply.
//   - The protected set (.git, .sema, .claude, .vscode, .idea, .husky, .ssh directories at
//     any depth below the task root or a declared root not itself protected, or anywhere
//     along a path outside them; shell and session startup files; .gitconfig,
//     .gitmodules, .npmrc, .mcp.json, .envrc; .config/fish, .config/systemd,
//     .config/autostart, .config/environment.d, .config/git and .local/bin) is never
//     refused by the fence: a write there comes back with Path.Protected set, and the
//     permission gate asks a person. On a case-insensitive env these names match without
//     case. ProtectedCandidate and ProtectedSpots let a walker find protected entries
//     cheaply (the shell's walk around each command, which puts back what a command did
//     to them without a person's yes).
//   - The two faces never read each other: each is resolved from its own seats by the
//     one order of ResolveFace, and a face nobody declared is roots.
//   - Write roots are the task root, the additional directories and the admitted
//     advertised directories; read roots are the write roots and the additional read
//     directories. A declared root that does not resolve is skipped with a notice.
//   - An advertised directory (scratchpad, memory) is admitted as a write root only if
//     it canonicalizes through the same env to an existing directory, matches its
//     advertiser's expected spelling, is neither denied nor protected, and does not
//     equal or contain a fence root (Swallows). A skipped one is announced and must not
//     be advertised. A missing scratchpad is created one Mkdir at a time under
//     re-resolved parents and marked with an exclusive create, so nothing is written
//     through a file or link planted meanwhile.
//   - On a case-insensitive env every existing component of a canonical path is spelled
//     as its directory entry, so one directory has one canonical spelling and the
//     comparisons above cannot be walked around by changing case. Containment itself
//     compares exactly (a spelling it cannot prove is refused); the deny and protected
//     sets compare without case (a doubt refuses or asks). Unicode look-alikes and
//     normalization variants are different names: nothing is normalized.
//
// # What a Path promises, and what it does not
//
// Resolve judges the path at one instant. Callers must open Path.Canonical (never the
// spelled path) through the same env. A canonical path has no symlink in it, so the
// host env on Linux resolves it with openat2(RESOLVE_NO_SYMLINKS) and acts through the
// parent directory's descriptor: any component swapped for a link after the judgment —
// the final one or a directory higher up — is refused (ELOOP), not followed. Where
// openat2 is missing (other systems, old kernels) only the final component is guarded
// (O_NOFOLLOW), and a directory swapped higher up between Resolve and the open remains a
// window; Resolve keeps no cache of resolved directories that would widen it. Hard links
// are not links: a hard link inside a root to a file outside is inside.
//
// Paths are slash-separated and absolute on a Unix-like tree; Windows drive letters
// and UNC paths are not supported by this canonicalizer.
package fence
