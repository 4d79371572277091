package shell

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/sandbox"
)

// Sandbox is how a set confines its commands with the kernel.
type Sandbox struct {
	// Kernel is what the kernel offers (sandbox.Probe); it must be Available.
	Kernel sandbox.Kernel
	// Options extend the policy derived from the fence. The set fills in TempDir (a
	// private directory in its scratch directory, exported as TMPDIR), CacheLayer (the
	// private write layer of the toolchain caches, in its scratch directory) and the
	// files it needs the shell to write.
	Options sandbox.Options
}

// confinement is a set's sandbox: the policy every command of the set starts from, made
// before its first command.
type confinement struct {
	kernel sandbox.Kernel
	opts   sandbox.Options
	base   sandbox.Policy
	tmp    string
	// layer is the caches' private write layer; gitConfig the sanitized global git
	// configuration commands read instead of the user's (gitidentity.go).
	layer, gitConfig string
	// env is what every command gets besides the set's own: TMPDIR, GIT_CONFIG_GLOBAL,
	// and private cache locations where the kernel cannot lay the layer over the caches.
	env []string
	// once makes tmp, the layer, the git configuration and the policy before the first
	// command: a leg that runs none makes nothing, and the scratch directory the policy
	// grants exists by then.
	once sync.Once
	err  error
}

// newConfinement names what the set's sandbox needs; prepare makes it.
func (s *Set) newConfinement(sb *Sandbox) *confinement {
	return &confinement{kernel: sb.Kernel, opts: sb.Options, tmp: filepath.Join(s.scratch, "tmp"),
		layer: filepath.Join(s.scratch, "cache"), gitConfig: filepath.Join(s.scratch, "gitconfig")}
}

// prepare makes, once, what the set's commands need before the first starts: the temp
// directory, the caches' layer directory, the sanitized git configuration (read from the
// user's with git, unconfined, once) and the set's policy. A read-only set (bash_readonly)
// writes nothing but its private temp directory, reads the caches as they are, reaches
// no socket and has no network, whatever the options say: the kernel then holds the
// band's promise even where the analysis erred.
func (c *confinement) prepare(ctx context.Context, s *Set) error {
	c.once.Do(func() {
		for _, d := range []string{c.tmp, c.layer} {
			if c.err = os.Mkdir(d, 0o700); c.err != nil {
				return
			}
		}
		if c.err = s.writeGitIdentity(ctx, c.gitConfig); c.err != nil {
			return
		}
		o := c.opts
		o.TempDir = c.tmp
		o.CacheLayer = c.layer
		// The co-author hooks and the git configuration live in the scratch directory;
		// git must be able to read and run them.
		o.Readable = append(append([]string(nil), o.Readable...), s.scratch)
		if s.cfg.ReadOnly {
			o.SharedCaches, o.CacheLayer, o.Sockets = false, "", nil
		}
		p := sandbox.ForFence(s.cfg.Fence, o)
		if s.cfg.ReadOnly {
			p.Read = append(p.Read, p.Write...)
			p.Write = []string{c.tmp}
			p.Network = false
		}
		if len(p.Caches) > 0 && !kernelOverlays(c.kernel) {
			var cacheEnv []string
			p, cacheEnv = p.PrivateCaches()
			c.env = append(c.env, cacheEnv...)
		}
		c.base = p
		c.env = append(c.env, "TMPDIR="+c.tmp, gitConfigEnv+"="+c.gitConfig)
	})
	return c.err
}

// wrap rewrites req to run confined. A person's approval of exactly this call (carried
// by ctx) lifts the read-only protection of protected paths for it; writeFile is a file
// the command may write besides the policy (the working-directory report), created here
// so that it can be granted.
//
// The returned func removes, once the command has ended, the overlay work directories
// its cache layers used (each command has its own: commands of a leg may run at once).
func (c *confinement) wrap(ctx context.Context, s *Set, req env.ExecRequest, writeFile string) (env.ExecRequest, func(), error) {
	if err := c.prepare(ctx, s); err != nil {
		return req, nil, err
	}
	p := c.base.WithProtected(s.cfg.Fence, sandbox.Approved(ctx))
	done := func() {}
	if p.CacheLayer != "" && len(p.Caches) > 0 {
		// The command's helper made its own work directories in the layer; those no
		// helper holds any more go (a helper that stays for the leg's next command keeps
		// its own until Shutdown).
		layer := p.CacheLayer
		done = func() { sandbox.SweepCacheWork(layer) }
	}
	p = s.withWalked(ctx, p) // protected entries at every depth, multi-link files (protect.go)
	if _, err := os.Lstat(s.StageDir()); err == nil {
		p.Hidden = append(slices.Clip(p.Hidden), s.StageDir())
	}
	if writeFile != "" && !s.cfg.ReadOnly {
		if err := createCwdFile(writeFile); err != nil {
			return req, nil, err
		}
		// In the temp directory the command writes anyway (Set.cwdFile); anywhere else
		// granted to this command alone.
		if !fence.Contains(c.tmp, writeFile) {
			p.Write = append(append([]string(nil), p.Write...), writeFile)
		}
	}
	// Agents' sockets (SSH_AUTH_SOCK, GPG_AGENT_INFO) are held back by the environment
	// rule like any credential, and outside the write roots unreachable in the view; one
	// passed through by name reaches a command only where a setting grants the socket.
	req.Env = append(append([]string(nil), req.Env...), c.env...)
	req, err := c.kernel.Wrap(req, p)
	return req, done, err
}

// networkFailure matches what programs print when they cannot reach the network.
// It is compiled on first use, not at every start of the process.
var networkFailure = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)network is unreachable|could not resolve|temporary failure in name resolution|name or service not known|no address associated|getaddrinfo|enetunreach|eai_again|failed to connect|connection refused|dial tcp|no such host|unable to access 'http`)
})

// networkNote explains a failed command's output when the sandbox kept it off the network.
func (c *confinement) networkNote(output string, failed bool) string {
	if c == nil || c.base.Network || c.opts.Network || !failed || !networkFailure().MatchString(output) {
		return ""
	}
	return "The sandbox gives commands no network (only loopback), which may be why this command failed. A deployment turns it on with Deps.Shell.SandboxNetwork, the command line with --sandbox-network on."
}
