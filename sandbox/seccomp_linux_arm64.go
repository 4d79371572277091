//go:build linux

package sandbox

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_AARCH64
	x32Bit    = 0 // none
)

// legacyRules: arm64 has only the *at calls.
var legacyRules []rule
