package mcp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	semaenv "github.com/sema-agent/sema/env"
)

// closeGrace is how long Close waits at each step of stopping a stdio server: after
// closing its stdin (the MCP way of asking it to exit), and again after SIGTERM,
// before SIGKILL.
const closeGrace = 2 * time.Second

// stderrKeep is how much of a stdio server's standard error is kept: the last bytes,
// quoted when the server fails.
const stderrKeep = 8 << 10

// process is a started stdio server: a program in a process group of its own whose
// stdin and stdout carry the protocol, below a reaper where the host has one.
//
// Its group is killed with SIGKILL as soon as the program itself exits, before the
// program is reaped: while it is an unreaped zombie its pid, and so the group id, cannot
// be given to another process, so the signal cannot reach a stranger (see waitNoReap).
type process struct {
	cmd  *exec.Cmd
	pgid int
	// viaReaper: cmd.Process is the server's reaper (env.StartCmdReaped), which exits
	// only once the server and everything it started, in its group or out of it, are
	// gone; the group is then not signalled again, its id being free.
	viaReaper bool
	stdin     *os.File // our end of the program's stdin
	stdout    *os.File // our end of the program's stdout
	stderr    *ring

	exited  chan struct{} // closed when the program has exited
	reaped  chan struct{} // closed when its group was killed and it was reaped
	outcome string        // how it ended ("exit status 1", …); set before reaped closes
}

// startProcess starts the stdio server s as opts say: its argv and environment, passed
// through opts.Wrap, in opts.Dir.
func startProcess(s Server, opts *Options) (*process, error) {
	argv := append([]string{s.Command}, s.Args...)
	env := mergeEnv(opts.Env, opts.pass, s.Env)
	var iso semaenv.Isolation
	if opts.Wrap != nil {
		req, err := opts.Wrap(semaenv.ExecRequest{Argv: argv, Env: env, Dir: opts.Dir})
		if err != nil {
			return nil, fmt.Errorf("the wrapper refused to start it: %w", err)
		}
		if len(req.Argv) == 0 {
			return nil, errors.New("the wrapper returned no program to start")
		}
		argv, env, iso = req.Argv, req.Env, req.Isolate
	}
	path, err := lookPath(argv[0], env, opts.Dir)
	if err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, err
	}
	attr, err := semaenv.ProcAttr(iso)
	if err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		return nil, err
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Env: env, Dir: opts.Dir, Stdin: inR, Stdout: outW, Stderr: errW, SysProcAttr: attr}
	pgid, viaReaper, err := semaenv.StartCmdReaped(cmd)
	closeAll(inR, outW, errW) // the program holds its own copies now
	if err != nil {
		closeAll(inW, outR, errR)
		return nil, err
	}
	p := &process{
		cmd: cmd, pgid: pgid, viaReaper: viaReaper, stdin: inW, stdout: outR, stderr: &ring{done: make(chan struct{})},
		exited: make(chan struct{}), reaped: make(chan struct{}),
	}
	// The parent-death signal ends the server only; what it started in its group ends
	// with this process through the guardian.
	semaenv.GuardGroup(p.pgid)
	go p.stderr.drain(errR)
	go p.watch()
	return p, nil
}

// watch waits for the program to exit, kills what is left of its group and waits for
// that to end (at most closeGrace), and reaps the program.
func (p *process) watch() {
	reaped, err := waitNoReap(p.cmd)
	close(p.exited)
	deadline := time.Now().Add(closeGrace)
	for !p.viaReaper {
		// Again each time: a member may have started another before it died.
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
		if !semaenv.GroupAlive(p.pgid) {
			// Off the list while the unreaped program still holds the group id.
			semaenv.UnguardGroup(p.pgid)
			break
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if p.viaReaper {
		semaenv.UnguardGroup(p.pgid)
	}
	if !reaped {
		err = p.cmd.Wait()
	}
	switch {
	case err != nil:
		p.outcome = err.Error()
	default:
		p.outcome = "exit status 0"
	}
	close(p.reaped)
}

// stop ends the program the MCP way: it closes its stdin and waits closeGrace for it to
// exit, then sends SIGTERM (and SIGCONT, so a stopped program can act on it) to its
// group and waits closeGrace again, then SIGKILL. Whatever of its group is left when
// the program exits is killed (see watch). It returns once the program is reaped, or
// after a last closeGrace should even SIGKILL not end it (a process stuck in the
// kernel).
func (p *process) stop() {
	p.stdin.Close()
	if p.waitExited(closeGrace) {
		p.waitReaped()
		return
	}
	_ = syscall.Kill(-p.pgid, syscall.SIGTERM)
	_ = syscall.Kill(-p.pgid, syscall.SIGCONT)
	if !p.waitExited(closeGrace) {
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
	}
	p.waitReaped()
}

// kill ends the program and its group at once, for a server that failed to start.
func (p *process) kill() {
	p.stdin.Close()
	_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
	p.waitReaped()
}

// waitExited reports whether the program exited within d.
func (p *process) waitExited(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// waitReaped waits for watch to finish, at most closeGrace.
func (p *process) waitReaped() {
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	select {
	case <-p.reaped:
	case <-t.C:
	}
}

// waitSettled waits at most d for the program to be reaped and its standard error
// to be read to the end, so that describe can quote how it ended.
func (p *process) waitSettled(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	for _, ch := range []chan struct{}{p.reaped, p.stderr.done} {
		select {
		case <-ch:
		case <-t.C:
			return
		}
	}
}

// describe says how the program ended, if it did, and quotes the end of its standard
// error, for a failure notice.
func (p *process) describe() string {
	var parts []string
	select {
	case <-p.reaped:
		parts = append(parts, "the program ended ("+p.outcome+")")
	default:
	}
	if tail := strings.TrimSpace(p.stderr.String()); tail != "" {
		parts = append(parts, "its standard error ends with: "+tail)
	}
	return strings.Join(parts, "; ")
}

// stdioTransport connects to a started process over its stdin and stdout.
type stdioTransport struct {
	p       *process
	limit   int
	dropped func(size int64, response bool)
}

// Connect implements sdk.Transport. The SDK's own line limit stays on, above the
// guard's, as a second bound that a bug in the guard could not pass.
func (t *stdioTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	guard := newFrameGuard(t.p.stdout, t.limit, t.dropped)
	pipes := &sdk.IOTransport{Reader: guard, Writer: t.p.stdin, MaxLineLength: 2*t.limit + 64<<10}
	return pipes.Connect(ctx)
}

// mergeEnv is base (nil: this process's environment as env.Inherit leaves it, pass
// keeping what it names) with vars set on top: an entry of base for a name vars sets
// is dropped, and vars follow in name order. vars, the server's configured env, are not
// judged: a person wrote them for this server.
func mergeEnv(base []string, pass semaenv.Passthrough, vars map[string]string) []string {
	if base == nil {
		base = semaenv.Inherit(os.Environ(), pass).Env
	}
	out := make([]string, 0, len(base)+len(vars))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := vars[name]; !ok {
			out = append(out, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		out = append(out, k+"="+vars[k])
	}
	return out
}

// lookPath finds the program name in the PATH of env, the environment the server
// gets, rather than in this process's: a server whose env sets PATH means that one.
// Only absolute PATH entries are searched (as exec.LookPath refuses a program found
// through "." or a relative entry); a name with a slash is taken as written, relative
// to dir.
func lookPath(name string, env []string, dir string) (string, error) {
	if name == "" {
		return "", errors.New("the command is empty")
	}
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) && dir != "" {
			return filepath.Join(dir, name), nil
		}
		return name, nil
	}
	pathVar := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v // the last one is the one the program sees
		}
	}
	for _, d := range filepath.SplitList(pathVar) {
		if !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("the program %q is not in the PATH the server gets", name)
}

// closeAll closes files, ignoring errors: they are the ends of pipes no longer needed.
func closeAll(files ...*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// ring keeps the last stderrKeep bytes written to it.
type ring struct {
	mu   sync.Mutex
	buf  []byte
	lost bool          // bytes were dropped from the front
	done chan struct{} // closed when drain has read everything
}

// drain copies r into the ring until r ends, then closes r.
func (g *ring) drain(r *os.File) {
	defer close(g.done)
	defer r.Close()
	b := make([]byte, 4096)
	for {
		n, err := r.Read(b)
		g.write(b[:n])
		if err != nil {
			return
		}
	}
}

// write appends b, dropping the oldest bytes beyond stderrKeep.
func (g *ring) write(b []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(b) >= stderrKeep {
		g.buf = append(g.buf[:0], b[len(b)-stderrKeep:]...)
		g.lost = true
		return
	}
	if over := len(g.buf) + len(b) - stderrKeep; over > 0 {
		g.buf = append(g.buf[:0], g.buf[over:]...)
		g.lost = true
	}
	g.buf = append(g.buf, b...)
}

// String returns the bytes kept, marked "…" at the front when earlier bytes were
// dropped.
func (g *ring) String() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.lost {
		return "…" + string(g.buf)
	}
	return string(g.buf)
}
