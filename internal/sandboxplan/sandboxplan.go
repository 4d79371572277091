// Package sandboxplan decides whether a leg's commands run confined by the kernel
// sandbox, and how: it reads the mode and network words of every seat (the settings
// files, the managed policy, the deployment, the task) against what the kernel offers,
// and refuses a seat that loosens what a higher one fixed. It also confines the stdio
// MCP servers a leg starts as its commands are confined.
package sandboxplan

import (
	"path/filepath"
	"strings"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/settings"
	"github.com/sema-agent/sema/tools/shell"
)

// Seat is a seat's mode and network words ("" where it names none).
type Seat struct {
	Mode    sandbox.Mode
	Network string
}

// Deployment is the deployment's sandbox words (Deps.Shell): its seat and what it adds
// to the policy.
type Deployment struct {
	Seat
	Writable, Readable, Hidden, Sockets []string
	SharedCaches                        bool
}

// Check is the door's part for the deployment's and the task's seats: words it does not
// know, and a task that loosens what its deployment fixed, are refused by name.
func Check(deployment, task Seat) error {
	dm, err := sandbox.ParseMode(string(deployment.Mode))
	if err != nil {
		return err
	}
	tm, err := sandbox.ParseMode(string(task.Mode))
	if err != nil {
		return err
	}
	if dm == sandbox.ModeOn && task.Mode != "" && tm != sandbox.ModeOn {
		return sema.Errorf(sandbox.CodeLoosened, "the deployment runs every command in the sandbox (Deps.Shell.Sandbox on); the task asked for %q — leave TaskSpec.Sandbox empty or on", tm)
	}
	for _, w := range []string{deployment.Network, task.Network} {
		if w != "" {
			if _, err := sandbox.ParseNetwork(w); err != nil {
				return err
			}
		}
	}
	if deployment.Network == "off" && task.Network == "on" {
		return sema.Errorf(sandbox.CodeLoosened, "the deployment keeps sandboxed commands off the network (Deps.Shell.SandboxNetwork off); the task may not turn it on")
	}
	return nil
}

// Input is what a leg's sandbox is decided from.
type Input struct {
	Deployment Deployment
	Task       Seat
	// Settings is the settings files' words (settings.Merged.Sandbox) and Managed the
	// managed policy's alone, which no seat may loosen.
	Settings, Managed settings.Sandbox
	// Bypass: the leg starts in bypassPermissions, which turns the network on unless a
	// seat says otherwise.
	Bypass bool
	// Env is the leg's env: only the host's commands can be confined.
	Env      env.ExecutionEnv
	ReadOnly bool
	// Home is the fence's home: what the file tools refuse, the kernel hides.
	Home string
	// Probe says what the kernel offers (sandbox.Probe).
	Probe func() sandbox.Kernel
	// OnNotice receives what the leg is told (sandbox.off, sandbox.partial, …).
	OnNotice func(sema.Notice)
}

// Plan decides the leg's sandbox: the task's mode word, else the deployment's, else the
// settings', else auto. Auto confines where the kernel can and says where it cannot
// (sandbox.off notice); on refuses a run the kernel cannot confine (sandbox.unavailable).
// The network is off unless a seat turns it on or the leg starts in bypassPermissions.
// It returns nil when commands run unconfined, and the status that says why.
func Plan(in Input) (*shell.Sandbox, sandbox.Status, error) {
	mode, network, err := words(in)
	if err != nil {
		return nil, sandbox.Status{}, err
	}
	st := sandbox.Status{Mode: mode, Network: true}
	if mode == sandbox.ModeOff {
		st.Reason = "turned off: commands are confined only by the permission fold's analysis"
		return nil, st, nil
	}
	if _, ok := in.Env.(env.Executor); !ok {
		st.Reason = "no shell is mounted"
		return nil, st, nil
	}
	unavailable := func(reason string) (*shell.Sandbox, sandbox.Status, error) {
		st.Reason = reason
		if mode == sandbox.ModeOn {
			return nil, st, sema.Errorf(sandbox.CodeUnavailable, "the sandbox was asked for (on) but commands cannot be confined here: %s; run with the sandbox off or auto, or on a kernel with Landlock", reason)
		}
		in.OnNotice(sema.Notice{Code: sandbox.CodeOff, Message: "shell commands run without the kernel sandbox: " + reason})
		return nil, st, nil
	}
	if _, ok := in.Env.(*env.Host); !ok {
		return unavailable("the env is not this machine's (only the host env can be confined)")
	}
	k := in.Probe()
	if !k.Available() {
		return unavailable(k.Reason)
	}
	if in.ReadOnly {
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
			return nil, st, sema.Errorf(sandbox.CodeIncomplete, "the sandbox was asked for (on) but this kernel confines commands only in part — missing %s; run with --sandbox auto to accept that, or on a kernel that offers them", strings.Join(gaps, "; ")).
				With("missing", gaps)
		}
		in.OnNotice(sema.Notice{Code: sandbox.CodePartial, Message: "the kernel sandbox is partial — missing " + strings.Join(gaps, "; ")})
	}
	shared, err := sharedCaches(in)
	if err != nil {
		return nil, st, err
	}
	d, proj := in.Deployment, in.Settings
	sb := &shell.Sandbox{Kernel: k, Options: sandbox.Options{
		Network:      network,
		Home:         in.Home,
		Readable:     append(append([]string(nil), d.Readable...), proj.Readable...),
		Writable:     append(append([]string(nil), d.Writable...), proj.Writable...),
		Hidden:       append(append([]string(nil), d.Hidden...), proj.Hidden...),
		Sockets:      append(append([]string(nil), d.Sockets...), proj.Sockets...),
		SharedCaches: shared,
	}}
	if sb.CachesPrivate() {
		in.OnNotice(sema.Notice{Code: sandbox.CodeCachesPrivate, Message: "the kernel cannot lay a private layer over the toolchain caches (no overlay mounts): commands read them as they are and write Go's, npm's, pip's and yarn's into private caches of this leg, which start cold; cargo's, Maven's and Gradle's are read-only. sandbox.sharedCaches (Deps.Shell.SandboxSharedCaches) lets commands write the shared caches, and so change what later builds outside the sandbox use."})
	}
	return sb, st, nil
}

// words reads the mode and the network from the seats, lowest first. The managed policy
// is the highest layer: what it says of the sandbox holds, and a seat that asks otherwise
// by name is refused rather than quietly overruled.
func words(in Input) (sandbox.Mode, bool, error) {
	d, proj, ms := in.Deployment, in.Settings, in.Managed
	mode := sandbox.ModeAuto
	for _, m := range []sandbox.Mode{proj.Mode, d.Mode, in.Task.Mode} {
		if m != "" {
			mode = m
		}
	}
	network := in.Bypass
	for _, w := range []string{proj.Network, d.Network, in.Task.Network} {
		if w != "" {
			network, _ = sandbox.ParseNetwork(w)
		}
	}
	if ms.Mode != sandbox.ModeOn && ms.Network != "off" {
		return mode, network, nil
	}
	for _, seat := range []struct {
		Seat
		name string
	}{{d.Seat, "Deps.Shell"}, {in.Task, "the task"}} {
		if ms.Mode == sandbox.ModeOn && seat.Mode != "" && seat.Mode != sandbox.ModeOn || ms.Network == "off" && seat.Network == "on" {
			return "", false, sema.Errorf(sandbox.CodeLoosened, "the managed policy keeps commands in the sandbox (sandbox.mode %q, sandbox.network %q), and %s asked to loosen it; leave the sandbox words to the policy", ms.Mode, ms.Network, seat.name)
		}
	}
	if ms.Mode == sandbox.ModeOn {
		mode = sandbox.ModeOn
	}
	if ms.Network == "off" {
		network = false
	}
	return mode, network, nil
}

// sharedCaches is whether commands may write the toolchain caches: the deployment's yes,
// else the settings' word; a managed policy's no holds over both.
func sharedCaches(in Input) (bool, error) {
	shared := in.Deployment.SharedCaches
	if s := in.Settings.SharedCaches; s != nil && !shared {
		shared = *s
	}
	if ms := in.Managed.SharedCaches; ms != nil && !*ms {
		if in.Deployment.SharedCaches {
			return false, sema.Errorf(sandbox.CodeLoosened, "the managed policy keeps the toolchain caches private to the sandbox (sandbox.sharedCaches false), and Deps.Shell.SandboxSharedCaches asked to share them; leave it false")
		}
		shared = false
	}
	return shared, nil
}

// MCPWrap confines a stdio MCP server's process as the leg's shell commands are confined
// by sb: it writes only inside the write roots, its private temp directory and the
// toolchain caches, reads no credential store and never the state directory. Unlike a
// command, a server keeps the network unless a seat turned it off by name (network
// false): talking to its service is most servers' whole job. The servers' temp directory
// is made at the first start and handed to keepTemp, for the leg to remove.
func MCPWrap(sb *shell.Sandbox, f *fence.Fence, network bool, keepTemp func(dir string)) func(req env.ExecRequest) (env.ExecRequest, error) {
	var once sync.Once
	var tmp string
	var tmpErr error
	return func(req env.ExecRequest) (env.ExecRequest, error) {
		once.Do(func() {
			tmp, tmpErr = sandbox.TempDir("sema-mcp-")
			keepTemp(tmp)
		})
		if tmpErr != nil {
			return req, tmpErr
		}
		o := sb.Options
		o.TempDir = tmp
		if sb.Kernel.Overlay {
			// The toolchain caches' private layer lives in the servers' temp dir;
			// without overlays they are read-only to servers.
			o.CacheLayer = filepath.Join(tmp, "cache")
		}
		o.Readable = append(append([]string(nil), o.Readable...), sandbox.ProgramReadable(req.Argv)...)
		o.Network = network
		p := sandbox.ForFence(f, o).WithProtected(f, false)
		req.Env = append(append([]string(nil), req.Env...), "TMPDIR="+tmp)
		return sb.Kernel.Wrap(req, p)
	}
}
