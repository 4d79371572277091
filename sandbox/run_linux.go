//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sema-agent/sema/env"
)

// Kernel is what this machine's kernel offers the sandbox, found once per process.
type Kernel struct {
	// Landlock is the Landlock ABI version; 0 where Landlock is missing or off.
	Landlock int
	// MountNamespace and NetworkNamespace report that the helper could be started in
	// namespaces of its own (unprivileged user namespaces, or root).
	MountNamespace, NetworkNamespace bool
	// PIDNamespace reports that the helper can be the first process of a PID namespace
	// of its own, with a /proc of that namespace: a command sees only the processes it
	// started.
	PIDNamespace bool
	// Overlay reports that the helper can lay a private write layer (an overlay mount)
	// over a shared cache (Policy.Caches); without it a policy must not list caches.
	Overlay bool
	// Reason says what is missing, when something is.
	Reason string
}

var (
	probeOnce sync.Once
	probed    Kernel
)

// Probe finds what the kernel offers: the Landlock ABI, and whether a program can be
// started in namespaces of its own. It asks once per process, and a full answer is kept
// for the user's next processes on this boot (see probecache_linux.go), so most
// processes do not start the helper to ask.
func Probe() Kernel {
	probeOnce.Do(func() { probed = probeKept(probeCacheDir(), probe) })
	return probed
}

func probe() Kernel {
	k := Kernel{Landlock: landlockABI()}
	if k.Landlock < 1 {
		k.Reason = "the kernel has no Landlock (it needs Linux 5.13 or later with Landlock enabled in the lsm= boot list)"
		return k
	}
	// Landlock itself was just asked; what remains is whether namespaces can be made,
	// which a start of `true` in them answers (the helper's own steps are checked on every
	// command: a helper that cannot confine never runs the command).
	try := func(iso env.Isolation) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var out bytes.Buffer
		pr, err := (&env.Host{}).Start(ctx, env.ExecRequest{Argv: []string{"true"}, Dir: "/", Isolate: iso, Stdout: &out, Stderr: &out})
		if err != nil {
			return err
		}
		st, err := pr.Wait()
		pr.Close()
		if err != nil {
			return err
		}
		if st.Code != 0 {
			return fmt.Errorf("exit status %d: %s", st.Code, strings.TrimSpace(out.String()))
		}
		return nil
	}
	// The common case first: one start of the helper itself, in every namespace and with a
	// cache layered, proves them all at once (a leg's first request waits for the probe).
	// Anything less is found step by step below.
	full := Kernel{Landlock: k.Landlock, MountNamespace: true, NetworkNamespace: true}
	if probeRun(full, true, true) == 0 {
		k.MountNamespace, k.NetworkNamespace, k.PIDNamespace, k.Overlay = true, true, true, true
		return k
	}
	switch {
	case try(env.Isolation{Mount: true, Network: true}) == nil:
		k.MountNamespace, k.NetworkNamespace = true, true
	case try(env.Isolation{Mount: true}) == nil:
		k.MountNamespace = true
		k.Reason = "no network namespace could be made: with the network off, only TCP is blocked (Landlock)"
	default:
		k.Reason = "no mount namespace could be made (unprivileged user namespaces are off): protected and hidden paths inside the roots are not enforced by the kernel"
		return k
	}
	k.PIDNamespace, k.Overlay = probeHelper(k)
	return k
}

// probeHelper runs the helper itself, once, in a PID namespace with a cache layered over
// a cache of its own: the PID namespace holds when the command's /proc does not show
// this process (the helper mounted that namespace's own), the overlay when the helper
// started the command at all. Each is tried alone when both together fail.
func probeHelper(k Kernel) (pid, overlay bool) {
	run := func(pidNS, caches bool) int { return probeRun(k, pidNS, caches) }
	switch run(true, true) {
	case 0:
		return true, true
	case 1:
		return false, true // the helper ran it, but not as the first of a namespace
	}
	pidCode, cacheCode := run(true, false), run(false, true)
	return pidCode == 0, cacheCode == 0 || cacheCode == 1
}

// probeRun starts the helper once with k's namespaces (a PID namespace when pidNS, a
// cache of its own layered when caches) and returns the command's exit code: 0 when it
// does not see this process in its /proc, 1 when it does, anything else when the
// helper could not confine it.
func probeRun(k Kernel, pidNS, caches bool) int {
	dir, err := os.MkdirTemp("", "sema-probe-")
	if err != nil {
		return -1
	}
	defer os.RemoveAll(dir)
	cache, layer := filepath.Join(dir, "cache"), filepath.Join(dir, "layer")
	if os.Mkdir(cache, 0o700) != nil {
		return -1
	}
	p := Policy{Read: existing(resolved(systemReadable)), Network: true}
	if caches {
		p.Caches, p.CacheLayer = []string{cache}, layer
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	req, err := wrap(env.ExecRequest{Argv: []string{"sh", "-c", "test ! -d /proc/" + strconv.Itoa(os.Getpid())}, Dir: "/", Stdout: &out, Stderr: &out},
		p, env.Isolation{Mount: true, Network: k.NetworkNamespace, PID: pidNS})
	if err != nil {
		return -1
	}
	pr, err := (&env.Host{}).Start(ctx, req)
	if err != nil {
		return -1
	}
	st, err := pr.Wait()
	pr.Close()
	if err != nil {
		return -1
	}
	return st.Code
}

// Available reports whether commands can be confined at all.
func (k Kernel) Available() bool { return k.Landlock >= 1 }

// Wrap rewrites req to run confined by p: the program becomes this executable's sandbox
// helper, which applies the policy and then execs req's program. Without a mount
// namespace the hidden and read-only paths cannot be enforced and are dropped (the
// Kernel's Reason says so); without a network namespace a closed network is enforced
// for TCP only.
func (k Kernel) Wrap(req env.ExecRequest, p Policy) (env.ExecRequest, error) {
	if !k.Available() {
		return req, fmt.Errorf("sandbox: %s", k.Reason)
	}
	iso := env.Isolation{Mount: k.MountNamespace, Network: !p.Network && k.NetworkNamespace, PID: k.PIDNamespace && k.MountNamespace}
	if !iso.Mount {
		p.Hidden, p.ReadOnly = nil, nil
	}
	return wrap(req, p, iso)
}

func wrap(req env.ExecRequest, p Policy, iso env.Isolation) (env.ExecRequest, error) {
	spec, err := json.Marshal(p)
	if err != nil {
		return req, err
	}
	// The helper checks it is in namespaces other than these, its starter's.
	var marks []string
	if iso.Mount {
		marks = append(marks, "m"+strconv.FormatUint(nsInode("mnt"), 10))
	}
	if iso.Network {
		marks = append(marks, "n"+strconv.FormatUint(nsInode("net"), 10))
	}
	ns := strings.Join(marks, ",")
	out := req
	out.Argv = append([]string{"/proc/self/exe"}, req.Argv...)
	out.Env = append(append([]string(nil), req.Env...), helperEnv+"="+string(spec), helperNSEnv+"="+ns)
	if iso.Mount {
		out.Env = append(out.Env, helperMachineEnv+"="+machineForHelper())
	}
	out.Isolate = iso
	// As the init, the helper outlives the command: it reports the command's end before
	// its own exit tears the namespaces down (runAsInit), and the wait need not include
	// that.
	out.ReportsExit = iso.PID
	return out, nil
}
