package agent

import (
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/tools/shell"
)

// probeKernel is what the kernel offers the sandbox; a variable so that a test can play
// an older kernel.
var probeKernel = sandbox.Probe

// validateSandbox is the door's part for the sandbox seats: words it does not know, and a
// task that loosens what its deployment fixed, are refused by name.
func validateSandbox(deps *Deps, spec *TaskSpec) error {
	dm, err := sandbox.ParseMode(string(deps.shell().Sandbox))
	if err != nil {
		return err
	}
	tm, err := sandbox.ParseMode(string(spec.Sandbox))
	if err != nil {
		return err
	}
	if dm == sandbox.ModeOn && spec.Sandbox != "" && tm != sandbox.ModeOn {
		return sema.Errorf(sandbox.CodeLoosened, "the deployment runs every command in the sandbox (Deps.Shell.Sandbox on); the task asked for %q — leave TaskSpec.Sandbox empty or on", tm)
	}
	for _, w := range []string{deps.shell().SandboxNetwork, spec.SandboxNetwork} {
		if w != "" {
			if _, err := sandbox.ParseNetwork(w); err != nil {
				return err
			}
		}
	}
	if deps.shell().SandboxNetwork == "off" && spec.SandboxNetwork == "on" {
		return sema.Errorf(sandbox.CodeLoosened, "the deployment keeps sandboxed commands off the network (Deps.Shell.SandboxNetwork off); the task may not turn it on")
	}
	return nil
}

// prepareSandbox decides whether the leg's commands run confined, and how: the task's
// mode word, else the deployment's, else the project settings', else auto. Auto confines where the kernel can and
// says where it cannot (sandbox.off notice); on refuses a run the kernel cannot confine
// (sandbox.unavailable). The network is off unless a seat turns it on or the leg starts
// in bypassPermissions.
func (l *leg) prepareSandbox() error {
	proj := l.layered.Sandbox
	mode := sandbox.ModeAuto
	for _, m := range []sandbox.Mode{proj.Mode, l.deps.shell().Sandbox, l.spec.Sandbox} {
		if m != "" {
			mode = m
		}
	}
	network := l.modes.Current() == permission.ModeBypassPermissions
	for _, w := range []string{proj.Network, l.deps.shell().SandboxNetwork, l.spec.SandboxNetwork} {
		if w != "" {
			network, _ = sandbox.ParseNetwork(w)
		}
	}
	// The managed policy is the highest layer: what it says of the sandbox holds, and a
	// seat that asks otherwise by name is refused rather than quietly overruled.
	if ms := l.layered.ManagedSandbox; ms.Mode == sandbox.ModeOn || ms.Network == "off" {
		for _, seat := range []struct {
			mode          sandbox.Mode
			network, name string
		}{
			{l.deps.shell().Sandbox, l.deps.shell().SandboxNetwork, "Deps.Shell"}, {l.spec.Sandbox, l.spec.SandboxNetwork, "the task"}} {
			if ms.Mode == sandbox.ModeOn && seat.mode != "" && seat.mode != sandbox.ModeOn || ms.Network == "off" && seat.network == "on" {
				return sema.Errorf(sandbox.CodeLoosened, "the managed policy keeps commands in the sandbox (sandbox.mode %q, sandbox.network %q), and %s asked to loosen it; leave the sandbox words to the policy", ms.Mode, ms.Network, seat.name)
			}
		}
		if ms.Mode == sandbox.ModeOn {
			mode = sandbox.ModeOn
		}
		if ms.Network == "off" {
			network = false
		}
	}
	st := sandbox.Status{Mode: mode, Network: true}
	defer func() { l.sandboxStatus = st }()
	if mode == sandbox.ModeOff {
		st.Reason = "turned off: commands are confined only by the permission fold's analysis"
		return nil
	}
	if _, ok := l.deps.Env.(env.Executor); !ok {
		st.Reason = "no shell is mounted"
		return nil
	}
	unavailable := func(reason string) error {
		st.Reason = reason
		if mode == sandbox.ModeOn {
			return sema.Errorf(sandbox.CodeUnavailable, "the sandbox was asked for (on) but commands cannot be confined here: %s; run with the sandbox off or auto, or on a kernel with Landlock", reason)
		}
		l.notice(sema.Notice{Code: sandbox.CodeOff, Message: "shell commands run without the kernel sandbox: " + reason})
		return nil
	}
	if _, ok := l.deps.Env.(*env.Host); !ok {
		return unavailable("the env is not this machine's (only the host env can be confined)")
	}
	k := probeKernel()
	if !k.Available() {
		return unavailable(k.Reason)
	}
	if l.spec.ReadOnly {
		network = false
	}
	confines, missing := k.Coverage(network)
	st = sandbox.Status{Enforced: true, Mode: mode, Landlock: k.Landlock, MountNamespace: k.MountNamespace,
		NetworkNamespace: k.NetworkNamespace, Network: network, Reason: k.Reason,
		Confines: confines, Missing: missing, NotConfined: sandbox.NotConfined}
	// On asks for every protection: a kernel that leaves a class of escape open is
	// refused by name rather than run with less. Auto runs and says what is missing.
	if gaps := k.Incomplete(network); len(gaps) > 0 {
		if mode == sandbox.ModeOn {
			return sema.Errorf(sandbox.CodeIncomplete, "the sandbox was asked for (on) but this kernel confines commands only in part — missing %s; run with --sandbox auto to accept that, or on a kernel that offers them", strings.Join(gaps, "; ")).
				With("missing", gaps)
		}
		l.notice(sema.Notice{Code: sandbox.CodePartial, Message: "the kernel sandbox is partial — missing " + strings.Join(gaps, "; ")})
	}
	// Shared caches: the deployment's yes, else the settings' word; a managed policy's no
	// holds over both.
	shared := l.deps.shell().SandboxSharedCaches
	if proj.SharedCaches != nil && !shared {
		shared = *proj.SharedCaches
	}
	if ms := l.layered.ManagedSandbox.SharedCaches; ms != nil && !*ms {
		if l.deps.shell().SandboxSharedCaches {
			return sema.Errorf(sandbox.CodeLoosened, "the managed policy keeps the toolchain caches private to the sandbox (sandbox.sharedCaches false), and Deps.Shell.SandboxSharedCaches asked to share them; leave it false")
		}
		shared = false
	}
	l.sandbox = &shell.Sandbox{Kernel: k, Options: sandbox.Options{
		Network: network,
		// The fence's home: what the file tools refuse, the kernel hides.
		Home:         l.home(),
		Readable:     append(append([]string(nil), l.deps.shell().SandboxReadable...), proj.Readable...),
		Writable:     append(append([]string(nil), l.deps.shell().SandboxWritable...), proj.Writable...),
		Hidden:       append(append([]string(nil), l.deps.shell().SandboxHidden...), proj.Hidden...),
		Sockets:      append(append([]string(nil), l.deps.shell().SandboxSockets...), proj.Sockets...),
		SharedCaches: shared,
	}}
	if l.sandbox.CachesPrivate() {
		l.notice(sema.Notice{Code: sandbox.CodeCachesPrivate, Message: "the kernel cannot lay a private layer over the toolchain caches (no overlay mounts): commands read them as they are and write Go's, npm's, pip's and yarn's into private caches of this leg, which start cold; cargo's, Maven's and Gradle's are read-only. sandbox.sharedCaches (Deps.Shell.SandboxSharedCaches) lets commands write the shared caches, and so change what later builds outside the sandbox use."})
	}
	return nil
}
