package agent

import (
	"github.com/sema-agent/sema/internal/sandboxplan"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/sandbox"
)

// probeKernel is what the kernel offers the sandbox; a variable so that a test can play
// an older kernel.
var probeKernel = sandbox.Probe

// validateSandbox is the door's part for the sandbox seats (sandboxplan.Check).
func validateSandbox(deps *Deps, spec *TaskSpec) error {
	return sandboxplan.Check(deps.sandboxWords().Seat, sandboxplan.Seat{Mode: spec.Sandbox, Network: spec.SandboxNetwork})
}

// sandboxWords are the deployment's sandbox words.
func (d *Deps) sandboxWords() sandboxplan.Deployment {
	s := d.shell()
	return sandboxplan.Deployment{Seat: sandboxplan.Seat{Mode: s.Sandbox, Network: s.SandboxNetwork},
		Writable: s.SandboxWritable, Readable: s.SandboxReadable, Hidden: s.SandboxHidden, Sockets: s.SandboxSockets,
		SharedCaches: s.SandboxSharedCaches}
}

// prepareSandbox decides whether the leg's commands run confined, and how
// (sandboxplan.Plan).
func (l *leg) prepareSandbox() error {
	sb, st, err := sandboxplan.Plan(sandboxplan.Input{
		Deployment: l.deps.sandboxWords(),
		Task:       sandboxplan.Seat{Mode: l.spec.Sandbox, Network: l.spec.SandboxNetwork},
		Settings:   l.layered.Sandbox, Managed: l.layered.ManagedSandbox,
		Bypass: l.modes.Current() == permission.ModeBypassPermissions,
		Env:    l.deps.Env, ReadOnly: l.spec.ReadOnly, Home: l.home(),
		Probe: probeKernel, OnNotice: l.notice,
	})
	l.sandbox, l.sandboxStatus = sb, st
	return err
}
