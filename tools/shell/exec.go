package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
)

// proc is a started shell and the one goroutine that waits for it.
type proc struct {
	p      env.Process
	marker string // the group's file in the scratch directory; removed once the group is gone
	// cleanup removes what the command's confinement left once it is gone (the cache
	// layers' work directories), from settle; running it again does nothing.
	cleanup func()
	exited  chan struct{}
	status  env.ExitStatus
	err     error
}

// noPromptEnv keeps programs from waiting for a person at a terminal that is not there:
// stdin is empty, and a credential prompt would otherwise sit until the timeout.
var noPromptEnv = []string{"GIT_TERMINAL_PROMPT=0"}

// spawn starts script under bash in dir, with both output streams going to out.
// Under a sandbox the command runs confined; cwdFile, when set, is the one file outside the
// policy it may write.
func (s *Set) spawn(ctx context.Context, dir, script string, extraEnv []string, cwdFile string, out io.Writer) (*proc, error) {
	if err := s.ensureScratch(); err != nil {
		return nil, err
	}
	req := env.ExecRequest{
		Argv: []string{s.shell, "--noprofile", "--norc", "-p", "-c", script},
		Dir:  dir,
		Env:  append(append(append(slices.Clip(s.cfg.ExtraEnv), noPromptEnv...), extraEnv...), tokenEnv+"="+s.token),
		// The rest of sema's environment reaches the command through the env's rule (for
		// the host: no provider key, no credential-shaped variable, no agent socket).
		Passthrough: s.cfg.EnvPassthrough,
		Stdout:      out,
		Stderr:      out,
	}
	cleanup := func() {}
	if s.confine != nil {
		var err error
		if req, cleanup, err = s.confine.wrap(ctx, s, req, cwdFile); err != nil {
			return nil, err
		}
		// The set's commands share one policy: the host readies the next one's
		// confinement while the model thinks (env.ExecRequest.PrimeKey), until Shutdown.
		req.PrimeKey = s.scratch
	}
	p, err := s.exec.Start(ctx, req)
	if err != nil {
		cleanup()
		return nil, err
	}
	pr := &proc{p: p, exited: make(chan struct{}), marker: s.groupFile(p.PID()), cleanup: s.tidyLater(cleanup)}
	// Best effort: without the file, only the env's guardian stops the group should this
	// process die.
	os.WriteFile(pr.marker, nil, 0o600)
	go func() {
		pr.status, pr.err = p.Wait()
		close(pr.exited)
	}()
	return pr, nil
}

// tidyLater runs cleanup off the call that ends the command: removing the cache
// layers' work directories (about a millisecond) is nothing the command's answer waits
// for. Shutdown waits for it; running the returned func again does nothing.
func (s *Set) tidyLater(cleanup func()) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			s.tidying.Add(1)
			go func() {
				defer s.tidying.Done()
				cleanup()
			}()
		})
	}
}

// settle runs after the shell exited: processes it left in its group are stopped, and the
// output they and it wrote is delivered.
func (pr *proc) settle() {
	<-pr.exited
	if !errors.Is(pr.p.Signal(0), env.ErrProcessDone) {
		terminate(pr.p)
	}
	pr.p.Close()
	if errors.Is(pr.p.Signal(0), env.ErrProcessDone) {
		os.Remove(pr.marker)
		pr.cleanup()
	}
}

// stop ends the whole group and waits for the shell, then settles.
func (pr *proc) stop() {
	terminate(pr.p)
	pr.settle()
}

// terminate sends the group SIGTERM (and SIGCONT, so a stopped process can act on it),
// waits up to KillGrace for every process of it to end, then sends SIGKILL. The closing
// SIGKILL goes out even when the group looked empty: looking is not atomic with a fork,
// the signal is.
func terminate(p env.Process) {
	if errors.Is(p.Signal(syscall.SIGTERM), env.ErrProcessDone) {
		return
	}
	p.Signal(syscall.SIGCONT)
	awaitGone(p, KillGrace)
	if errors.Is(p.Signal(syscall.SIGKILL), env.ErrProcessDone) {
		return
	}
	// A killed process ends at once unless it sits in an uninterruptible wait; do not
	// hang on one forever.
	awaitGone(p, 10*time.Second)
}

// awaitGone polls until no live process remains in p's group or d passes.
func awaitGone(p env.Process, d time.Duration) bool {
	deadline := time.Now().Add(d)
	step := time.Millisecond
	for {
		if errors.Is(p.Signal(0), env.ErrProcessDone) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(step)
		if step < 25*time.Millisecond {
			step *= 2
		}
	}
}

// shq quotes s as one bash word.
func shq(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// prelude is what the set runs in front of a command, on the same line so the command's
// own line numbers stay right: the EXIT trap that writes the final working directory to
// cwdFile (when cwdFile is set) and the co-author git configuration (when hooks is set).
func prelude(cwdFile, hooks string) string {
	var b strings.Builder
	if cwdFile != "" {
		b.WriteString("trap " + shq("builtin pwd -P >| "+shq(cwdFile)+" 2>/dev/null") + " EXIT; ")
	}
	if hooks != "" {
		// Append one entry after whatever GIT_CONFIG_COUNT the environment already holds,
		// and remember where, so the hooks can take it out again for the repository's own.
		b.WriteString(`__sema_n=${GIT_CONFIG_COUNT:-0}; case $__sema_n in ''|*[!0-9]*) __sema_n=0;; esac; ` +
			`export "GIT_CONFIG_KEY_$__sema_n=core.hooksPath" "GIT_CONFIG_VALUE_$__sema_n="` + shq(hooks) +
			` "SEMA_GIT_CONFIG_BASE=$__sema_n" "GIT_CONFIG_COUNT=$((__sema_n + 1))"; unset __sema_n; `)
	}
	return b.String()
}

// learnCwd reads the directory the shell ended in and decides where the next command
// starts. It returns a note for the answer when the directory was reset.
func (s *Set) learnCwd(ctx context.Context, file, started string) string {
	b, err := readCwdFile(file)
	os.Remove(file)
	if err != nil || len(b) == 0 {
		// The trap did not run (exec replaced the shell, the command removed the trap,
		// the group was killed first; a sandboxed command's file is made empty before it
		// starts): nothing is known, nothing changes.
		return ""
	}
	p := strings.TrimSuffix(string(b), "\n")
	if p == started {
		return ""
	}
	ctx = context.WithoutCancel(ctx)
	if p != "" && !strings.Contains(p, "\n") {
		if c, ok := s.placeDir(ctx, p); ok {
			s.setCwd(c)
			return ""
		}
	}
	s.setCwd("")
	shown := p
	if shown == "" {
		shown = "(unknown)"
	}
	return "The shell ended in " + shown + ", which is not a directory inside the read roots; the next command starts in " + s.root + "."
}

// placeDir resolves a directory through the fence and reports whether a command may start
// in it: an existing directory inside the read roots.
func (s *Set) placeDir(ctx context.Context, p string) (string, bool) {
	fp, err := s.cfg.Fence.Resolve(ctx, p, fence.Read)
	if err != nil || !fp.Exists || !s.cfg.Fence.Inside(fp.Canonical, fence.Read) {
		return "", false
	}
	fi, err := s.cfg.Env.Stat(ctx, fp.Canonical)
	if err != nil || !fi.IsDir() {
		return "", false
	}
	return fp.Canonical, true
}

func (s *Set) setCwd(c string) {
	s.mu.Lock()
	if c == s.root {
		c = ""
	}
	s.cwd = c
	s.mu.Unlock()
}

// startDir is the directory the next Bash command starts in, checked again: one that
// vanished or stopped being a directory since the last call resets to the root, with a
// note.
func (s *Set) startDir(ctx context.Context) (string, string) {
	d := s.dir()
	if d == s.root {
		return d, ""
	}
	if fi, err := s.cfg.Env.Stat(ctx, d); err == nil && fi.IsDir() {
		return d, ""
	}
	s.setCwd("")
	return s.root, "The working directory " + d + " no longer exists; the command ran in " + s.root + "."
}

// cwdFileMax bounds what is read of a working-directory report: a path, at most
// PATH_MAX bytes, and its newline.
const cwdFileMax = 4097

// createCwdFile makes the working-directory report file empty and the caller's own: what
// was at the path (a file, or a link a command left at a name it could guess) is removed,
// and the file is created anew, never through a link.
func createCwdFile(path string) error {
	for range 2 {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
		if err == nil {
			return f.Close()
		}
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return fmt.Errorf("shell: %s keeps being made again", path)
}

// readCwdFile reads a working-directory report the command may have tampered with (a
// confined command can replace it): only a regular file with one link is read, never
// through a symbolic link, and no more than a path's length.
func readCwdFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !fi.Mode().IsRegular() || (ok && st.Nlink != 1) {
		return nil, fmt.Errorf("shell: %s is not the report file", path)
	}
	return io.ReadAll(io.LimitReader(f, cwdFileMax))
}
