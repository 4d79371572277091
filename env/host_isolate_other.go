//go:build !linux

package env

import "syscall"

// ProcAttr is the host's process attributes for a program started with isolation iso:
// a process group of its own. Only Linux has namespaces; a request for them is refused
// (ErrIsolationUnsupported).
func ProcAttr(iso Isolation) (*syscall.SysProcAttr, error) {
	return procAttr(ExecRequest{Isolate: iso})
}

// procAttr is the host's process attributes for req: a process group of its own. Only
// Linux has namespaces; a request for them is refused.
func procAttr(req ExecRequest) (*syscall.SysProcAttr, error) {
	if req.Isolate.Mount || req.Isolate.Network {
		return nil, ErrIsolationUnsupported
	}
	return &syscall.SysProcAttr{Setpgid: true}, nil
}
