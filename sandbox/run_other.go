//go:build !linux

package sandbox

import (
	"errors"

	"github.com/sema-agent/sema/env"
)

// Kernel is what this machine's kernel offers the sandbox. Only Linux is supported yet;
// the policy is OS-neutral so that another platform's enforcement can be added.
type Kernel struct {
	// Landlock is the Landlock ABI version; always 0 on this platform.
	Landlock int
	// MountNamespace and NetworkNamespace report namespaces the helper could be
	// started in; always false on this platform.
	MountNamespace, NetworkNamespace bool
	// PIDNamespace and Overlay report a PID namespace of the command's own and private
	// layers over shared caches; always false on this platform.
	PIDNamespace, Overlay bool
	// Reason says what is missing: here, that the sandbox is Linux-only.
	Reason string
}

// HelperFailed is the exit status of a helper that could not confine the command.
const HelperFailed = 125

// Probe reports that this platform has no sandbox yet.
func Probe() Kernel {
	return Kernel{Reason: "the sandbox is implemented for Linux only"}
}

// Available reports whether commands can be confined at all.
func (k Kernel) Available() bool { return false }

// Wrap refuses: there is no sandbox on this platform.
func (k Kernel) Wrap(req env.ExecRequest, p Policy) (env.ExecRequest, error) {
	return req, errors.New("sandbox: " + k.Reason)
}
