// Package sandbox starts a command confined by the kernel to what the leg's fence allows.
// It is the second wall: the permission fold decides questions of intent, the analysis of
// shell text (package shellscan) proves what it can, and this package makes sure that what
// a command does — and everything it starts — stays inside the fence even where the
// analysis erred or a rule allowed more than its author thought.
//
// # The policy
//
// A Policy is OS-neutral and derived from the fence, never written by hand (ForFence):
//
//   - write: the write roots (with the admitted advertised directories) and a private
//     temporary directory exported as TMPDIR; the deployment and settings files may add
//     more. Under the open write face (bypassPermissions) the whole filesystem.
//   - caches: the toolchain caches builds use (Go's build and module caches, npm's, pip's,
//     yarn's, pnpm's, cargo's, Maven's, Gradle's), read through, with what a command
//     writes landing in a layer private to the leg (CacheLayer): what a command writes
//     there never reaches a build outside the sandbox. Options.SharedCaches grants them
//     for writing instead, by a person's choice; where the kernel cannot overlay,
//     PrivateCaches makes them read-only and points Go, npm, pip and yarn at cold
//     private caches.
//   - read: the read roots, the system directories (/usr, /etc, /proc, …), each directory
//     on PATH (and, outside the home directory, the toolchain a bin or shims directory
//     belongs to), and the toolchains' dedicated roots in the home directory (~/.rustup,
//     ~/.cargo/bin, ~/.pyenv, ~/.nvm, …) — never the home directory or its shared trees
//     (~/.local, ~/.config, ~/.cargo) whole, nor ~/.gitconfig or ~/.config/git, which can
//     hold credentials: the shell gives git a sanitized copy of the global configuration
//     instead (identity and harmless keys, GIT_CONFIG_GLOBAL). Under the open read face
//     the whole filesystem.
//   - hidden, also beneath a granted tree: the fence's deny set (sema's state directory, the
//     deny globs that name a literal path) and the credential stores — one list,
//     fence.CredentialStores (shell histories, git's credential stores, other agents' and
//     CLIs' logins, build tools' tokens, cloud and container CLIs, keys and key rings),
//     with Options.Hidden — which the fence refuses to the file tools too. Which exist is
//     judged at each command (WithProtected), so a store made during the leg is hidden
//     from the next command. A hidden place looks empty and cannot be changed.
//   - sockets: the unix sockets a setting granted by path (Options.Sockets), while they
//     are sockets.
//   - read-only, beneath a write root: the protected entries at the top of each write root
//     (.git, .sema, .claude, .vscode, .idea, .husky, rc files, .gitmodules, .npmrc,
//     .mcp.json, .envrc) — unless a person approved exactly this command (WithApproval),
//     or the write face is open.
//   - network: none but loopback, unless the deployment or a leg in bypassPermissions
//     turns it on. bash_readonly never has it, and writes nothing but its temp directory.
//
// # Linux
//
// The command is started through a helper: this same executable, whose init (in this
// package) takes over when the policy is in its environment. The helper runs in new mount
// and network namespaces (with a user namespace when not root), makes every mount
// private, hides and binds read-only what the policy says (each target opened with no
// symbolic link in any component), brings up loopback, drops the capabilities a user
// namespace lent, applies Landlock (every access right the kernel's ABI knows, TCP too
// where there is no network namespace, and the abstract-socket and signal scopes from
// ABI 6), sets no_new_privs, and execs the command from the same thread. Landlock is
// inherited across fork and exec and cannot be lifted, and a Landlocked process cannot
// mount or unmount: background tasks, grandchildren and daemons started by the command
// are confined alike. A helper that cannot confine exits with HelperFailed and never
// runs the command.
//
// Where the kernel lacks mount namespaces, Landlock still holds the roots, but the
// hidden and read-only places inside granted trees are not enforced (the Kernel's Reason
// says so and the leg announces sandbox.partial). Other platforms have no sandbox yet:
// the policy is kept OS-neutral so a macOS Seatbelt profile can be generated from it.
//
// # What the sandbox changes in the permission fold
//
// With the sandbox on, exactly one kind of question changes: a shell command's write
// outside the write roots is no longer a question only a person may answer, because the
// kernel refuses the write whatever the answer. Such a command goes on to the ordinary
// question, which an allow rule, the mode or the auto classifier may answer; the write
// itself then fails. Everything about intent stays as it was: deny rules, ask rules, the
// delete guard (a root, the home directory), protected paths, writes that cannot be
// placed, reads outside the read roots (the sandbox lets commands read the system), the
// plan gate and every other person-only question.
//
// # What the kernel does not see
//
// Deny globs with a pattern (**/*.pem) name no place until matched and are the analysis'
// to enforce; so are protected entries below the top of a root (a nested repository's
// .git). Sockets reachable by path (an ssh or gpg agent) are not filesystem objects for
// Landlock before ABI 8; the shell unsets SSH_AUTH_SOCK and GPG_AGENT_INFO instead. The
// environment the command inherits is the sema process's own.
package sandbox
