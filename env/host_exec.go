package env

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Start runs a program on the host in a new process group whose id is the program's pid.
// Output travels through pipes the host owns (one pipe when Stdout and Stderr are the same
// writer), so Close can deliver what is buffered and stop even when a process that left
// the group still holds a pipe open.
//
// The group dies with this process: on Linux the program gets SIGKILL as its
// parent-death signal, and a guardian process sends SIGKILL to the groups still running
// when this process ends, however it ends (guard.go). A process that leaves the group
// (setsid, setpgid) is reached by neither, nor by Signal; on Linux it is still below the
// program's reaper (reaper_linux.go), which ends it once the program has exited or this
// process has died, or, for a program started as the init of a PID namespace of its own
// (Isolation.PID, as the sandbox starts commands), the kernel ends it with the init.
func (*Host) Start(ctx context.Context, req ExecRequest) (Process, error) {
	cmd, err := newCommand(ctx, req)
	if err != nil {
		return nil, err
	}
	path := cmd.Path
	report, reportW, err := viaReaper(cmd)
	if err != nil {
		return nil, err
	}
	p := &hostProcess{exited: make(chan struct{})}
	w := &wiring{p: p, report: report}
	if reportW != nil {
		w.childEnds = append(w.childEnds, reportW)
	}
	if err := w.connect(cmd, req); err != nil {
		return nil, w.fail(err)
	}
	run, ended, err := startWarm(cmd, req.PrimeKey)
	if err != nil {
		return nil, w.fail(err)
	}
	cmd = run
	w.started()
	p.pid = cmd.Process.Pid
	var reported []byte
	if report != nil {
		// The program is the reaper's child, in a group of its own: that group is the
		// one signalled and guarded. The reaper reports its end on the same pipe.
		pid, rest, err := reapedPID(report, path)
		w.report = nil
		if err != nil {
			report.Close()
			cmd.Wait()
			return nil, w.fail(err)
		}
		p.pid = pid
		w.exitReport, reported = report, rest
	}
	guardAdd(p.pid)
	p.wg.Add(len(p.copies))
	for i := range p.copies {
		go p.copy(&p.copies[i])
	}
	if w.stdin != nil {
		// Fed here rather than by os/exec, whose Wait would wait for a program that
		// never reads its input.
		p.stdin = w.stdin
		go feed(w.stdin, req.Stdin)
	}
	go p.await(cmd, w.exitReport, reported, ended)
	return p, nil
}

// newCommand is the command req describes, checked, with its directory, environment
// and process attributes (a session of its own, the namespaces asked for, the
// parent-death signal).
func newCommand(ctx context.Context, req ExecRequest) (*exec.Cmd, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return nil, errors.New("env: Start needs a program to run")
	}
	if len(req.Dir) == 0 || req.Dir[0] != '/' {
		return nil, &fs.PathError{Op: "start", Path: req.Dir, Err: syscall.EINVAL}
	}
	cmd := exec.Command(req.Argv[0], req.Argv[1:]...)
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	cmd.Dir = req.Dir
	environ, err := baseEnviron(req)
	if err != nil {
		return nil, err
	}
	cmd.Env = environ
	attr, err := procAttr(req)
	if err != nil {
		return nil, err
	}
	setDeathSignal(attr)
	cmd.SysProcAttr = attr
	return cmd, nil
}

// wiring is the descriptors a start sets up around its program: the child's ends of
// its pipes (closed here once it has its own copies), the reaper's report pipe, the
// program's exit report and this side of its standard input.
type wiring struct {
	p          *hostProcess
	childEnds  []*os.File
	report     *os.File
	exitReport *os.File
	stdin      *os.File
}

// connect gives cmd its standard streams and, when req asks for it and there is no
// reaper in between, the descriptor of its exit report.
func (w *wiring) connect(cmd *exec.Cmd, req ExecRequest) error {
	if req.Stdout != nil {
		out, err := w.stream(req.Stdout)
		if err != nil {
			return err
		}
		cmd.Stdout = out
	}
	switch {
	case req.Stderr == nil:
	case req.Stdout != nil && sameWriter(req.Stdout, req.Stderr):
		cmd.Stderr = cmd.Stdout
	default:
		errw, err := w.stream(req.Stderr)
		if err != nil {
			return err
		}
		cmd.Stderr = errw
	}
	if req.Stdin != nil {
		r, wr, err := os.Pipe()
		if err != nil {
			return err
		}
		w.childEnds = append(w.childEnds, r)
		cmd.Stdin, w.stdin = r, wr
	}
	if req.ReportsExit && w.report == nil {
		r, wr, err := os.Pipe()
		if err != nil {
			return err
		}
		w.childEnds = append(w.childEnds, wr)
		cmd.ExtraFiles = append(cmd.ExtraFiles, wr)
		cmd.Env = append(cmd.Env, ExitReportEnv+"="+strconv.Itoa(2+len(cmd.ExtraFiles)))
		w.exitReport = r
	}
	return nil
}

// stream is a pipe whose read end the process copies to dst; it returns the child's end.
func (w *wiring) stream(dst io.Writer) (*os.File, error) {
	r, cw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	w.childEnds = append(w.childEnds, cw)
	w.p.copies = append(w.p.copies, pipeCopy{r: r, w: dst})
	return cw, nil
}

// started closes the child's ends: the child has its own copies, and the pipes never
// reach end of file while this process holds a write end.
func (w *wiring) started() {
	for _, f := range w.childEnds {
		f.Close()
	}
	w.childEnds = nil
}

// fail releases every descriptor of a start that did not happen and returns err.
func (w *wiring) fail(err error) error {
	for _, f := range append(w.childEnds, w.report, w.exitReport, w.stdin) {
		if f != nil {
			f.Close()
		}
	}
	for _, c := range w.p.copies {
		c.r.Close()
	}
	return err
}

// await waits for the program — for its exit report first, when it gives one — and
// records how it ended.
func (p *hostProcess) await(cmd *exec.Cmd, exitReport *os.File, reported []byte, ended func(bool) ExitStatus) {
	if ended != nil {
		// A spare runs the program: its report is the program's end, and what becomes
		// of the spare's own process (it comes back for another job, or exits) is the
		// spare's, seen to after the program's end is given.
		st, ok := ExitStatus{}, false
		if exitReport != nil {
			st, ok = readExitReport(exitReport, reported)
		}
		if !ok {
			// The spare became the program, or died with it: its own end is the
			// program's, and its group may hold what it left (signalled as usual).
			p.status = ended(false)
			close(p.exited)
			return
		}
		// The spare is free again before the program's end is given: the next start,
		// which may come at once, finds it.
		ended(true)
		p.status = st
		p.gone.Store(true)
		close(p.exited)
		p.unguard()
		return
	}
	if exitReport != nil {
		if st, ok := readExitReport(exitReport, reported); ok {
			// Everything of the program's is gone but the program itself, which is
			// tearing its namespaces down: the group is not signalled again, and it
			// leaves the guardian's list once it is reaped.
			p.status = st
			p.gone.Store(true)
			close(p.exited)
			cmd.Wait()
			p.unguard()
			return
		}
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		err = nil
	}
	p.err = err
	p.status = ExitStatus{Code: -1}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		if ws.Signaled() {
			p.status.Signal = ws.Signal()
		} else {
			p.status.Code = ws.ExitStatus()
		}
	}
	close(p.exited)
}

// readExitReport reads a program's report of how it ended (ExecRequest.ReportsExit, or
// the reaper's), and false when the program exited without one. reported is what of it
// was read already.
func readExitReport(r *os.File, reported []byte) (ExitStatus, bool) {
	defer r.Close()
	b := reported
	if len(b) == 0 {
		// One read: the report is one write of a few bytes, which a pipe delivers whole
		// (PIPE_BUF); reading to the end of file would wait for the program's exit.
		buf := make([]byte, 16)
		got, err := r.Read(buf)
		if err != nil {
			return ExitStatus{}, false
		}
		b = buf[:got]
	}
	if len(b) < 2 {
		return ExitStatus{}, false
	}
	n, err := strconv.Atoi(string(b[1:]))
	if err != nil || n < 0 {
		return ExitStatus{}, false
	}
	switch b[0] {
	case 'e':
		return ExitStatus{Code: n}, true
	case 's':
		return ExitStatus{Code: -1, Signal: syscall.Signal(n)}, true
	}
	return ExitStatus{}, false
}

// baseEnviron is the environment a program starts with: this process's as Inherit
// leaves it, PWD set to the program's directory (as os/exec sets it), then req.Env.
func baseEnviron(req ExecRequest) ([]string, error) {
	pass, err := ParsePassthrough(req.Passthrough, "ExecRequest.Passthrough")
	if err != nil {
		return nil, err
	}
	kept := inheritOwn(req.Passthrough, pass)
	return append(append(kept, "PWD="+req.Dir), req.Env...), nil
}

// sameWriter reports whether a and b are the same writer, as os/exec judges it: equal
// interface values, with a writer whose type cannot be compared counting as different.
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

type pipeCopy struct {
	r *os.File
	w io.Writer
}

type hostProcess struct {
	pid    int
	copies []pipeCopy
	wg     sync.WaitGroup

	exited chan struct{}
	status ExitStatus
	err    error

	// closing is set by Close before it expires the pipes' read deadline, so a copier
	// woken by the deadline knows to drain instead of waiting for more.
	closing   atomic.Bool
	closeOnce sync.Once
	// gone is set once kill reported that no process of the group exists: the group id
	// may be reused from then on, so it is never signalled again.
	gone atomic.Bool
	// unguarded is set once the group was taken off the guardian's list.
	unguarded atomic.Bool
	// stdin is the write end of the program's standard input, nil when it has none.
	stdin *os.File
}

// feed writes src to the program's standard input and closes it. A program that does
// not read ends the writing when the last reader goes (EPIPE), and Close ends it by
// expiring the write deadline.
func feed(w *os.File, src io.Reader) {
	io.Copy(w, src)
	w.Close()
}

// unguard takes the group off the guardian's list, once, when it has no live process.
func (p *hostProcess) unguard() {
	if p.unguarded.CompareAndSwap(false, true) {
		guardDrop(p.pid)
	}
}

func (p *hostProcess) PID() int { return p.pid }

func (p *hostProcess) Wait() (ExitStatus, error) {
	<-p.exited
	return p.status, p.err
}

func (p *hostProcess) Signal(sig syscall.Signal) error {
	if p.gone.Load() {
		return ErrProcessDone
	}
	err := syscall.Kill(-p.pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		p.gone.Store(true)
		p.unguard()
		return ErrProcessDone
	}
	if sig == 0 && err == nil && !GroupAlive(p.pid) {
		// Only unreaped exits remain; they cannot start anything, but they keep the
		// group id taken, so a later signal still reaches nothing but them.
		return ErrProcessDone
	}
	return err
}

func (p *hostProcess) Close() error {
	p.closeOnce.Do(func() {
		p.closing.Store(true)
		if p.stdin != nil {
			p.stdin.SetWriteDeadline(time.Unix(1, 0))
		}
		for _, c := range p.copies {
			// A copier blocked in Read wakes with os.ErrDeadlineExceeded and drains.
			c.r.SetReadDeadline(time.Unix(1, 0))
		}
		p.wg.Wait()
		for _, c := range p.copies {
			c.r.Close()
		}
	})
	if errors.Is(p.Signal(0), ErrProcessDone) {
		p.unguard()
	}
	return nil
}

// copy moves one pipe's bytes to its writer until end of file, or until Close asks it to
// deliver what is buffered and stop.
func (p *hostProcess) copy(c *pipeCopy) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	failed := false
	deliver := func(b []byte) {
		if !failed {
			if _, err := c.w.Write(b); err != nil {
				failed = true
			}
		}
	}
	for {
		n, err := c.r.Read(buf)
		if n > 0 {
			deliver(buf[:n])
		}
		if err == nil {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) && p.closing.Load() {
			drain(c.r, buf, deliver)
		}
		return
	}
}

// drain delivers what the pipe holds right now without waiting for more: the read end
// is non-blocking, so a read of an empty pipe answers EAGAIN instead of blocking.
func drain(r *os.File, buf []byte, deliver func([]byte)) {
	if r.SetReadDeadline(time.Time{}) != nil {
		return
	}
	rc, err := r.SyscallConn()
	if err != nil {
		return
	}
	for {
		var n int
		var rerr error
		if err := rc.Read(func(fd uintptr) bool {
			n, rerr = syscall.Read(int(fd), buf)
			return true
		}); err != nil || rerr != nil || n <= 0 {
			return
		}
		deliver(buf[:n])
	}
}

// GroupAlive reports whether a process of group pgid is alive, not merely an exit its
// parent has not reaped yet (nor a zombie an init that never reaps keeps). Without /proc
// it cannot tell, and answers true, so a caller waiting for the group waits out its bound.
func GroupAlive(pgid int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range ents {
		name := e.Name()
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		st, err := ReadProcStat(name)
		if errors.Is(err, errProcStat) {
			return true // a line that does not read: the group may be there
		}
		if err != nil {
			continue // it exited while we looked
		}
		if st.PGRP == pgid && !st.Gone() {
			return true
		}
	}
	return false
}
