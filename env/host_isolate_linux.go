//go:build linux

package env

import (
	"os"
	"syscall"
)

// ProcAttr is the host's process attributes for a program started with isolation iso:
// a session (and so a process group) of its own and the namespaces iso asks for, as
// Host.Start gives them. It is for a package that starts a program itself because it
// needs the program's standard streams as a protocol (an MCP server), so that it
// isolates the program exactly as the host isolates commands.
func ProcAttr(iso Isolation) (*syscall.SysProcAttr, error) {
	return procAttr(ExecRequest{Isolate: iso})
}

// procAttr is the host's process attributes for req: a new session, and the namespaces
// req.Isolate asks for.
//
// The session: the program leads a session of its own, so it has no controlling
// terminal — nothing it starts can reach the terminal this process runs in through
// /dev/tty, push keystrokes into it (TIOCSTI needs the terminal to be the caller's
// controlling one, or CAP_SYS_ADMIN), or be stopped by its job control. A session
// leader leads a process group whose id is its pid, exactly as Setpgid gave before:
// Process.Signal, the guardian and the stale-group killers all signal that group.
//
// The namespaces: a process with root's effective id makes them directly; any other
// gets a user namespace as well, mapping only its own ids, with the capabilities to
// mount, to bring up loopback and to drop its bounding set inside as ambient
// capabilities — the started program must drop them before it runs anything else.
// With a PID namespace the program is its init: when it ends, the kernel kills every
// process left in the namespace.
func procAttr(req ExecRequest) (*syscall.SysProcAttr, error) {
	attr := &syscall.SysProcAttr{Setsid: true}
	iso := req.Isolate
	if !iso.Mount && !iso.Network && !iso.PID {
		return attr, nil
	}
	if iso.Mount {
		attr.Cloneflags |= syscall.CLONE_NEWNS
	}
	if iso.Network {
		attr.Cloneflags |= syscall.CLONE_NEWNET
	}
	if iso.PID {
		attr.Cloneflags |= syscall.CLONE_NEWPID
	}
	if os.Geteuid() != 0 {
		uid, gid := os.Getuid(), os.Getgid()
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
		// CAP_DAC_OVERRIDE (over the process's own files only, in its namespace): an
		// overlay's work directory is made with mode 0, and the sandbox lays overlays.
		const capDacOverride, capSetpcap, capNetAdmin, capSysAdmin = 1, 8, 12, 21
		attr.AmbientCaps = []uintptr{capDacOverride, capSetpcap, capNetAdmin, capSysAdmin}
	}
	return attr, nil
}
