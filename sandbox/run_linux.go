//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
	// Reason says what is missing, when something is.
	Reason string
}

var (
	probeOnce sync.Once
	probed    Kernel
)

// Probe finds what the kernel offers: the Landlock ABI, and whether a program can be
// started in namespaces of its own (about a millisecond, once per process).
func Probe() Kernel {
	probeOnce.Do(func() { probed = probe() })
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
	if err := try(env.Isolation{Mount: true, Network: true}); err == nil {
		k.MountNamespace, k.NetworkNamespace = true, true
		return k
	}
	if err := try(env.Isolation{Mount: true}); err == nil {
		k.MountNamespace = true
		k.Reason = "no network namespace could be made: with the network off, only TCP is blocked (Landlock)"
		return k
	}
	k.Reason = "no mount namespace could be made (unprivileged user namespaces are off): protected and hidden paths inside the roots are not enforced by the kernel"
	return k
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
	iso := env.Isolation{Mount: k.MountNamespace, Network: !p.Network && k.NetworkNamespace}
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
	out.Isolate = iso
	return out, nil
}
