//go:build linux

package sandbox

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_X86_64
	// x32Bit marks an x32 system call: same architecture, other numbers.
	x32Bit = 0x40000000
)

// legacyRules are the older calls x86-64 keeps beside the *at ones.
var legacyRules = []rule{
	modeRule(unix.SYS_CHMOD, 1),
	createRule(unix.SYS_OPEN, 1, 2),
	modeRule(unix.SYS_CREAT, 1),
	modeRule(unix.SYS_MKNOD, 1),
}
