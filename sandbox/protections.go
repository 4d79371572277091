package sandbox

import "strings"

// What the sandbox holds, protection by protection, and what each needs of the kernel.
// The manifest lists the protections a leg's commands have (Status.Confines) and the ones
// this machine cannot give (Status.Missing); `--sandbox on` refuses to run without every
// one (CodeIncomplete), `auto` runs and names what is missing (CodePartial).

// CodeIncomplete refuses a run that asked for the sandbox (ModeOn) on a kernel that can
// confine commands only in part: the refusal names the protections missing and what the
// kernel lacks for each.
const CodeIncomplete = "sandbox.incomplete"

// protection is one promise of the sandbox.
type protection struct {
	// name is a stable word for the manifest.
	name string
	// has reports whether the kernel gives it (network: whether commands may reach the
	// network, which makes the network protection moot).
	has func(k Kernel, network bool) bool
	// lacks says what the kernel would need, for a refusal or a notice.
	lacks string
}

var protections = []protection{
	{"filesystem", func(k Kernel, _ bool) bool { return k.Landlock >= 1 },
		"writes only inside the write roots, the temp dir and the caches' private layer, reads only what is granted: needs Landlock"},
	{"view", func(k Kernel, _ bool) bool { return k.MountNamespace },
		"credential stores and sema's state hidden, protected entries read-only, no unix socket outside the write roots, no chmod/chown/utime/xattr outside them, a private /dev, /tmp and no /run: needs a mount namespace (unprivileged user namespaces, or root)"},
	{"network", func(k Kernel, network bool) bool { return network || k.NetworkNamespace },
		"no network but loopback: needs a network namespace (without one only TCP is refused, through Landlock ABI 4)"},
	{"processes", func(k Kernel, _ bool) bool { return k.PIDNamespace },
		"a command sees and signals only its own processes, and nothing it starts outlives it: needs a PID namespace"},
	{"signals", func(k Kernel, _ bool) bool { return k.PIDNamespace || k.Landlock >= 6 },
		"no signal to, and no abstract socket of, a process outside: needs a PID namespace or Landlock ABI 6"},
	{"terminals", func(k Kernel, _ bool) bool { return k.Landlock >= 1 },
		"no controlling terminal and no TIOCSTI/TIOCLINUX: a session of its own and the helper's syscall filter"},
	{"privileges", func(k Kernel, _ bool) bool { return k.Landlock >= 1 },
		"no capability (bounding set included), no set-user-ID gain, also when sema runs as root"},
	{"caches", func(k Kernel, _ bool) bool { return k.Overlay },
		"the shared toolchain caches written through a private layer: needs overlay mounts (without them the caches are read-only and commands get cold private caches, which is safe but slower)"},
}

// Coverage names the protections commands get on this kernel (confines) and the ones
// they do not (missing, each with what it needs), given whether they may reach the
// network. Missing protections that weaken nothing (the caches' layer: commands then get
// cold private caches) are listed, but do not make the sandbox incomplete.
func (k Kernel) Coverage(network bool) (confines, missing []string) {
	for _, p := range protections {
		if p.has(k, network) {
			confines = append(confines, p.name)
		} else {
			missing = append(missing, p.name+": "+p.lacks)
		}
	}
	return confines, missing
}

// Incomplete is Coverage's missing protections that leave a class of escape open: all
// but the caches' layer.
func (k Kernel) Incomplete(network bool) []string {
	var out []string
	for _, p := range protections {
		if p.name != "caches" && !p.has(k, network) {
			out = append(out, p.name+": "+p.lacks)
		}
	}
	return out
}

// NotConfined is what the sandbox does not hold on any kernel, as the manifest and
// `sema run --help` say it: the residual risks a person should know.
var NotConfined = []string{
	"reading the system (/usr, /etc, …) and the toolchains on PATH",
	"unix sockets inside the write roots and the temp dir, and those a setting grants by path",
	"with the network on, whatever the network reaches",
	"a protected entry (.envrc, .git/hooks, .vscode, …) a command creates exists until the command ends; it is removed then",
	"files the change recorder does not walk (ignored directories, beyond its file cap) are not checked for created protected entries or hard links",
	"a secret in a variable whose name and value look like nothing secret",
}

// Summary says, for `sema run --help`, what the sandbox confines on this platform and
// what it does not.
func Summary(goos string) string {
	var b strings.Builder
	if goos != "linux" {
		b.WriteString("The sandbox (--sandbox): not on " + goos + " yet — commands are confined only by the\n" +
			"permission check; --sandbox on refuses to run (sandbox.unavailable), auto says so.\n")
		return b.String()
	}
	b.WriteString("The sandbox (--sandbox, Linux): every shell command, hook and stdio MCP server, and all\n" +
		"they start, is confined by the kernel. What it holds (each needs what it names; --sandbox on\n" +
		"refuses a kernel that lacks one, sandbox.incomplete; auto runs and names it):\n")
	for _, p := range protections {
		b.WriteString("  " + p.name + ": " + p.lacks + "\n")
	}
	b.WriteString("Commands get sema's environment without the provider's key or credential-shaped\n" +
		"variables (--env-passthrough NAME keeps one). What it does not hold:\n")
	for _, n := range NotConfined {
		b.WriteString("  - " + n + "\n")
	}
	return b.String()
}
