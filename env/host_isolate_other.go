//go:build !linux

package env

import "syscall"

// ProcAttr is the host's process attributes for a program started with isolation iso:
// a session (and so a process group) of its own, so it has no controlling terminal. Only
// Linux has namespaces; a request for them is refused (ErrIsolationUnsupported).
func ProcAttr(iso Isolation) (*syscall.SysProcAttr, error) {
	return procAttr(ExecRequest{Isolate: iso})
}

// procAttr is the host's process attributes for req: a session of its own, whose
// process group id is the program's pid. Only Linux has namespaces; a request for them is
// refused.
func procAttr(req ExecRequest) (*syscall.SysProcAttr, error) {
	if req.Isolate.Mount || req.Isolate.Network || req.Isolate.PID {
		return nil, ErrIsolationUnsupported
	}
	return &syscall.SysProcAttr{Setsid: true}, nil
}
