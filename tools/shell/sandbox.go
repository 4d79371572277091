package shell

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/sandbox"
)

// Sandbox is how a set confines its commands with the kernel.
type Sandbox struct {
	// Kernel is what the kernel offers (sandbox.Probe); it must be Available.
	Kernel sandbox.Kernel
	// Options extend the policy derived from the fence. The set fills in TempDir (a
	// private directory in its scratch directory, exported as TMPDIR) and the files it
	// needs the shell to write.
	Options sandbox.Options
}

// confinement is a set's sandbox, ready: the policy every command of the set starts from.
type confinement struct {
	kernel sandbox.Kernel
	base   sandbox.Policy
	tmp    string
	// tmpOnce makes tmp before the first command: a leg that runs none makes nothing.
	tmpOnce sync.Once
	tmpErr  error
}

// newConfinement derives the set's policy. A read-only set (bash_readonly) writes nothing
// but its private temp directory, and has no network, whatever the options say: the
// kernel then holds the band's promise even where the analysis erred.
func (s *Set) newConfinement(sb *Sandbox) *confinement {
	tmp := filepath.Join(s.scratch, "tmp")
	o := sb.Options
	o.TempDir = tmp
	// The co-author hooks live in the scratch directory; git must be able to run them.
	o.Readable = append(append([]string(nil), o.Readable...), s.scratch)
	p := sandbox.ForFence(s.cfg.Fence, o)
	if s.cfg.ReadOnly {
		p.Read = append(p.Read, p.Write...)
		p.Write = []string{tmp}
		p.Network = false
	}
	return &confinement{kernel: sb.Kernel, base: p, tmp: tmp}
}

// wrap rewrites req to run confined. A person's approval of exactly this call (carried
// by ctx) lifts the read-only protection of protected paths for it; writeFile is a file
// the command may write besides the policy (the working-directory report), created here
// so that it can be granted.
func (c *confinement) wrap(ctx context.Context, s *Set, req env.ExecRequest, writeFile string) (env.ExecRequest, error) {
	c.tmpOnce.Do(func() { c.tmpErr = os.Mkdir(c.tmp, 0o700) })
	if c.tmpErr != nil {
		return req, c.tmpErr
	}
	p := c.base.WithProtected(s.cfg.Fence, sandbox.Approved(ctx))
	p = s.withWalked(ctx, p) // protected entries at every depth, multi-link files (protect.go)
	if writeFile != "" && !s.cfg.ReadOnly {
		if err := os.WriteFile(writeFile, nil, 0o600); err != nil {
			return req, err
		}
		p.Write = append(append([]string(nil), p.Write...), writeFile)
	}
	// Agents' sockets are reachable by path whatever the filesystem policy says; a
	// confined command gets none.
	req.Env = append(append([]string(nil), req.Env...), "TMPDIR="+c.tmp, "SSH_AUTH_SOCK=", "GPG_AGENT_INFO=")
	return c.kernel.Wrap(req, p)
}

// networkFailure matches what programs print when they cannot reach the network.
// It is compiled on first use, not at every start of the process.
var networkFailure = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)network is unreachable|could not resolve|temporary failure in name resolution|name or service not known|no address associated|getaddrinfo|enetunreach|eai_again|failed to connect|connection refused|dial tcp|no such host|unable to access 'http`)
})

// networkNote explains a failed command's output when the sandbox kept it off the network.
func (c *confinement) networkNote(output string, failed bool) string {
	if c == nil || c.base.Network || !failed || !networkFailure().MatchString(output) {
		return ""
	}
	return "The sandbox gives commands no network (only loopback), which may be why this command failed. A deployment turns it on with Deps.Shell.SandboxNetwork, the command line with --sandbox-network on."
}
