//go:build linux && !amd64 && !arm64

package sandbox

// The syscall filter knows x86-64 and arm64; elsewhere installSyscallFilter refuses.
const (
	auditArch = 0
	x32Bit    = 0
)

var legacyRules []rule
