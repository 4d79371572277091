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
//   - read-only, beneath a write root: the protected entries (.git, .sema, .claude,
//     .vscode, .idea, .husky, rc files, .gitmodules, .npmrc, .mcp.json, .envrc, home's
//     startup places …) at every depth the fence's rule names, as the shell's walk around
//     each command finds them — unless a person approved exactly this command
//     (WithApproval), or the write face is open. What a command creates there (the kernel
//     cannot refuse one new name in a writable directory) is put back after it ends.
//   - hidden too: regular files with more than one link in the roots, which the file tools
//     refuse as well (another name may lie outside).
//   - network: none but loopback, unless the deployment or a leg in bypassPermissions
//     turns it on. bash_readonly never has it, and writes nothing but its temp directory.
//
// # Linux
//
// The command is started through a helper: this same executable, whose init (in this
// package) takes over when the policy is in its environment. The helper is started in a
// session of its own (no controlling terminal) and in new mount, network and PID
// namespaces (with a user namespace when not root). It builds a view of its own and
// pivots into it (view_linux.go): a tmpfs root holding only what the policy grants —
// Read trees as read-only overlays (so chmod, chown, utime and xattrs fail outside the
// write roots, and a socket in them refuses connect(), which Landlock does not mediate),
// Write trees bound read-write, the caches under a private overlay layer, a private /dev
// with its own devpts, the PID namespace's /proc, the private temp dir at /tmp, and
// /run, /var/run and /var/tmp empty; hidden places covered, read-only places bound
// read-only, every target opened with no symbolic link in any component. It brings up
// loopback, drops every capability (bounding set and securebits too, also as root),
// installs a syscall filter (no TIOCSTI or TIOCLINUX, no set-user-ID bit, no openat2 or
// io_uring, whose modes and opens it cannot see), applies Landlock (every access right
// the kernel's ABI knows, TCP too where there is no network namespace, and the
// abstract-socket and signal scopes from ABI 6) with no_new_privs, and then, as the PID
// namespace's init, forks the command from that same thread, reaps what it leaves and
// exits with its status — and the kernel kills whatever is still in the namespace, so
// nothing a command starts (setsid, nohup, a double fork) outlives it. Landlock and the
// filter are inherited across fork and exec and cannot be lifted, and a Landlocked
// process cannot mount or unmount. A helper that cannot confine exits with HelperFailed
// and never runs the command.
//
// What the kernel offers is probed once per process (Probe); Kernel.Coverage names the
// protections a command gets and the ones missing (protections.go). `on` refuses a
// kernel that leaves one missing (sandbox.incomplete); `auto` runs and announces it
// (sandbox.partial). Other platforms have no sandbox yet: the policy is kept OS-neutral
// so a macOS Seatbelt profile can be generated from it.
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
// to enforce. Sockets inside the write roots and the temp dir are reachable (Landlock
// before ABI 8 does not mediate connect()). A protected entry a command creates exists
// until the command ends. NotConfined lists these for the manifest and the help. The
// environment a command inherits is sema's through env.Inherit: no provider key, no
// credential-shaped variable.
package sandbox
