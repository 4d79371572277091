//go:build linux

package env

import (
	"os"
	"syscall"
)

// ProcAttr is the host's process attributes for a program started with isolation iso:
// a process group of its own and the namespaces iso asks for, as Host.Start gives them.
// It is for a package that starts a program itself because it needs the program's
// standard streams as a protocol (an MCP server), so that it isolates the program
// exactly as the host isolates commands.
func ProcAttr(iso Isolation) (*syscall.SysProcAttr, error) {
	return procAttr(ExecRequest{Isolate: iso})
}

// procAttr is the host's process attributes for req: a process group of its own, and the
// namespaces req.Isolate asks for. A process with root's effective id makes them
// directly; any other gets a user namespace as well, mapping only its own ids, with the
// capabilities to mount and to bring up loopback inside as ambient capabilities — the
// started program must drop them before it runs anything else.
func procAttr(req ExecRequest) (*syscall.SysProcAttr, error) {
	attr := &syscall.SysProcAttr{Setpgid: true}
	iso := req.Isolate
	if !iso.Mount && !iso.Network {
		return attr, nil
	}
	if iso.Mount {
		attr.Cloneflags |= syscall.CLONE_NEWNS
	}
	if iso.Network {
		attr.Cloneflags |= syscall.CLONE_NEWNET
	}
	if os.Geteuid() != 0 {
		uid, gid := os.Getuid(), os.Getgid()
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
		const capNetAdmin, capSysAdmin = 12, 21
		attr.AmbientCaps = []uintptr{capNetAdmin, capSysAdmin}
	}
	return attr, nil
}
