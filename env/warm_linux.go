//go:build linux

package env

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Two kinds of program the host starts are this same executable started again: the
// reaper (reaper_linux.go) and the sandbox's helper (package sandbox). Each such start
// pays for the whole executable — the exec of a binary of tens of megabytes, the Go
// runtime's start and every package's init, about 4 to 5 ms — and, for the helper, for
// the namespaces it is cloned into, before it does anything of its own. That is most of
// what a confined command costs.
//
// So the host keeps a spare: one such process per shape (the namespaces it was cloned
// into and its parent-death signal), started ahead, that has done all of that and waits
// on a socket, in this package's init, for the program it is to become. A start that
// matches a spare's shape hands the spare its arguments, environment, directory and
// standard streams (passed as descriptors); the spare takes them as its own and lets the
// init continue exactly as a process just started with them would: the reaper's init or
// the helper's takes over from there. The start returns as soon as the job is sent
// (the directory checked first, as a start's own refusal); a replacement is started on
// the starter thread once the caller has its answer, so it is ready for the next
// command. A reaper does not exit once its program has ended: it says so on the socket
// and joins its shape's spares again (at most maxPlain of them), and a start prefers
// one that came back. A start that finds no spare
// (the first of its shape, or several at once) starts cold, as before.
//
// What a spare could get wrong, and why it does not:
//   - The mount table. A spare's mount namespace is a copy of this process's, made when
//     the spare was started; the helper builds a command's view from it. A spare is
//     used only while this process's mount table is unchanged since then (a poll of
//     /proc/self/mountinfo, which the kernel marks on every mount and unmount); a spare
//     older than a change is ended and the start is cold.
//   - Its environment. A spare starts with an environment holding only its marker, so
//     nothing of this process's environment sits in it while it waits; it takes the
//     program's whole environment with the job (and one that comes back lets go of it
//     once the program has ended). It is not dumpable while it waits (it may hold the
//     capabilities of a user namespace), and dumpable again, as a fresh process is,
//     once it has its job.
//   - What a program changed of a spare that comes back. A program may change its
//     reaper's limits, nice value and affinity from outside (any process of the same
//     user may), and the next program would inherit them: a reaper or helper that finds
//     them changed after a program exits instead (package internal/proctraits).
//   - What a fresh start would inherit at the time of the start rather than of the
//     spare's: the umask, the resource limits and the scheduling priority are this
//     process's when the spare was started. The host does not change them; an embedding
//     program that does should turn spares off (WarmStart).
//   - Its life. A spare is started from the starter thread with the start's own
//     parent-death signal, so it dies with this process; it ends by itself when the
//     socket's other end closes.

const (
	// warmEnv marks a spare; its value is the descriptor of the socket it waits on.
	warmEnv = "SEMA_ENV_SPARE"
	// warmExe is what a start runs when it starts this executable again.
	warmExe = "/proc/self/exe"
	// warmMaxFiles bounds the descriptors a job passes: stdin, stdout, stderr and a
	// few extra files (the reaper's report pipe).
	warmMaxFiles = 8
	// warmMaxJob bounds a job's encoded size (arguments and environment, the sandbox's
	// policy among them).
	warmMaxJob = 16 << 20
)

var (
	// warmOff is set when spares are turned off (WarmStart).
	warmOff atomic.Bool
	// warmUsed counts the starts a spare took, for the tests.
	warmUsed atomic.Int64
	// warmTrustStale makes a spare serve a start even after the mount table changed;
	// only the test that shows why it must not sets it.
	warmTrustStale atomic.Bool
)

// WarmStart turns spares on or off for this process (on by default). An embedding
// program that changes its umask, resource limits or priority while it runs commands
// should turn them off, so that each command's helper inherits them when it starts.
func WarmStart(on bool) { warmOff.Store(!on) }

// warmShape is what a spare must have been started with to serve a start.
type warmShape struct {
	clone    uintptr
	deathSig syscall.Signal
}

// spare is a started spare: its process (the *exec.Cmd the caller waits on once it is
// handed a job), this side of its socket, and /proc/self/mountinfo as it was opened
// just before the spare was cloned.
type spare struct {
	cmd    *exec.Cmd
	sock   *os.File
	mounts int
	// primed is the prelude the spare was primed with (prime_linux.go), and shape the
	// shape it was started in; nil: none, it takes any job of its shape.
	primed []string
	shape  warmShape
	// again is set once a primed spare said it comes back after each job (readyAgainMsg);
	// busy while it runs one; evicted when its series gave it up while it was busy, and
	// it is to end once its job has.
	again   bool
	busy    atomic.Bool
	evicted atomic.Bool
	// waited reaps the spare's process once, whoever gets there first; closed lets go
	// of the socket and the mount table once.
	waited sync.Once
	status ExitStatus
	closed sync.Once
}

// spares holds the spares of each shape that take any job: one started ahead, and one
// that ran a job and came back for another (a reaper), at most maxPlain. It is touched
// only on the starter thread.
var spares = map[warmShape][]*spare{}

const maxPlain = 2

// shapeOf reports the shape a spare needs to serve cmd, and false when no spare can:
// cmd does not start this executable, or sets what a spare does not copy.
func shapeOf(cmd *exec.Cmd) (warmShape, bool) {
	a := cmd.SysProcAttr
	if warmOff.Load() || cmd.Path != warmExe || a == nil || !a.Setsid || a.Setpgid || a.Setctty || a.Noctty ||
		a.Chroot != "" || a.Credential != nil || a.Unshareflags != 0 || a.UseCgroupFD || a.PidFD != nil ||
		len(cmd.ExtraFiles)+3 > warmMaxFiles || cmd.Err != nil {
		return warmShape{}, false
	}
	for _, f := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		if _, ok := f.(*os.File); f != nil && !ok {
			return warmShape{}, false
		}
	}
	return warmShape{clone: a.Cloneflags, deathSig: a.Pdeathsig}, true
}

// startWarmOnThread starts cmd through a spare when one fits, and cold otherwise; it
// runs on the starter thread. A start of a series (key, ExecRequest.PrimeKey) whose
// prelude the series' primed spare was primed with takes that spare (prime_linux.go);
// any other takes the spare of its shape, which takes any job. It returns the command
// that now runs (the spare's, when one was used), and refill starts what the next start
// will want, once the caller has its answer: a spare of the shape in place of one used,
// and the series' spare primed with this start's prelude.
func startWarmOnThread(cmd *exec.Cmd, key string) (run *exec.Cmd, ended func(bool) ExitStatus, refill func(), err error) {
	shape, ok := shapeOf(cmd)
	if !ok {
		return cmd, nil, nil, cmd.Start()
	}
	attr := *cmd.SysProcAttr
	prelude := preludeOf(cmd.Env)
	if prelude == nil {
		key = "" // nothing to prime a spare with
	}
	usedPlain := false
	refill = func() {
		if len(spares[shape]) == 0 && (usedPlain || key == "") {
			if s, err := newSpare(&attr); err == nil {
				s.shape = shape
				spares[shape] = append(spares[shape], s)
			}
		}
		if key != "" {
			primeFor(key, shape, &attr, prelude)
		}
	}
	// The one refusal a spare could answer is checked first, the spares kept for the
	// next start.
	if len(primedSpares[key]) > 0 || len(spares[shape]) > 0 {
		if err := enterable(cmd.Dir); err != nil {
			return nil, nil, nil, err
		}
	}
	for s := takePrimed(key); s != nil; s = takePrimed(key) {
		if s.shape == shape && s.fresh() && s.fits(prelude) && s.handOver(cmd) == nil {
			warmUsed.Add(1)
			primedUsed.Add(1)
			if s.again {
				// It comes back once the job has ended: kept in the series, busy.
				s.busy.Store(true)
				primedSpares[key] = append(primedSpares[key], s)
				return s.cmd, s.jobEnded, refill, nil
			}
			return s.cmd, s.plainEnded, refill, nil
		}
		s.end()
	}
	for s := takePlain(shape); s != nil; s = takePlain(shape) {
		if s.fresh() && s.handOver(cmd) == nil {
			warmUsed.Add(1)
			usedPlain = true
			return s.cmd, s.plainEnded, refill, nil
		}
		s.end()
	}
	usedPlain = true
	return cmd, nil, refill, cmd.Start()
}

// newSpare starts a spare with attr's namespaces and parent-death signal.
func newSpare(attr *syscall.SysProcAttr) (*spare, error) {
	// Opened before the clone: a change between the two marks the spare stale, never
	// the other way round. A bare descriptor, not an *os.File: the runtime's poller
	// would register an *os.File, and its polls would take the mark first.
	mounts, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		unix.Close(mounts)
		return nil, err
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "spare"), os.NewFile(uintptr(fds[1]), "spare")
	a := *attr
	cmd := &exec.Cmd{
		Path:        warmExe,
		Args:        []string{"sema-spare"},
		Env:         []string{warmEnv + "=3"},
		Dir:         "/",
		ExtraFiles:  []*os.File{theirs},
		SysProcAttr: &a,
	}
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		mine.Close()
		unix.Close(mounts)
		return nil, err
	}
	return &spare{cmd: cmd, sock: mine, mounts: mounts}, nil
}

// fresh reports whether the spare may serve a start: it has no mount namespace of its
// own, or this process's mount table is unchanged since the spare was cloned (the
// kernel marks an open mountinfo file, POLLPRI, at the first mount or unmount after it
// was opened).
func (s *spare) fresh() bool {
	if s.cmd.SysProcAttr.Cloneflags&syscall.CLONE_NEWNS == 0 || warmTrustStale.Load() {
		return true
	}
	pfd := []unix.PollFd{{Fd: int32(s.mounts), Events: unix.POLLPRI}}
	n, err := unix.Poll(pfd, 0)
	return err == nil && n == 0
}

// end stops a spare that will not be used and reaps it.
func (s *spare) end() {
	s.close() // a waiting spare exits at end of file
	s.cmd.Process.Kill()
	s.wait()
}

// wait reaps the spare's process, once, and returns how it ended.
func (s *spare) wait() ExitStatus {
	s.waited.Do(func() {
		s.cmd.Wait()
		s.status = ExitStatus{Code: -1}
		if ws, ok := s.cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
			if ws.Signaled() {
				s.status.Signal = ws.Signal()
			} else {
				s.status.Code = ws.ExitStatus()
			}
		}
	})
	return s.status
}

// takePlain takes a spare of the shape that takes any job: one that ran a job before
// first (its start is long paid), else the one started ahead; nil when there is none.
func takePlain(shape warmShape) *spare {
	q := spares[shape]
	if len(q) == 0 {
		return nil
	}
	pick := 0
	for i, s := range q {
		if s.again {
			pick = i
			break
		}
	}
	s := q[pick]
	spares[shape] = slices.Delete(q, pick, pick+1)
	return s
}

// plainEnded is the end of a job a spare that takes any job ran (startWarm's ended).
// Not reported, the spare is gone with its program: its end is the job's. Reported, the
// spare either comes back (a reaper, which says so at once: againMsg) and joins the
// shape's spares, or exits (a sandbox helper, whose end follows its report), and is
// reaped.
func (s *spare) plainEnded(reported bool) ExitStatus {
	if !reported {
		s.close()
		return s.wait()
	}
	// Off the program's end: a helper that exits after its report takes a moment.
	go func() {
		msg := make([]byte, 1)
		fd := int(s.sock.Fd())
		if pollIn(fd, time.Second) {
			if n, _ := unix.Read(fd, msg); n == 1 && msg[0] == againMsg {
				s.again = true
				onStarter(startReq{back: s})
				return
			}
		}
		s.end()
	}()
	return ExitStatus{}
}

// comeBack takes a spare that ran a job back into its shape's spares, or ends it when
// there are enough; on the starter thread.
func comeBack(s *spare) {
	if len(spares[s.shape]) >= maxPlain || warmOff.Load() {
		s.end()
		return
	}
	spares[s.shape] = append(spares[s.shape], s)
}

// close lets go of this side of the spare: its socket and mount table.
func (s *spare) close() {
	s.closed.Do(func() {
		s.sock.Close()
		unix.Close(s.mounts)
	})
}

// jobEnded is the end of a job a spare that stays ran (startWarm's ended): reported,
// the spare is free for the next (or ends, given up while busy); not reported, it died
// with the job, and its own end is the job's.
func (s *spare) jobEnded(reported bool) ExitStatus {
	if !reported {
		s.evicted.Store(true)
		s.busy.Store(false)
		return s.wait()
	}
	// Free first, then look: a series that gives the spare up at the same moment sets
	// evicted first, then looks at busy, so one of the two sees the other and ends it
	// (ending twice is harmless).
	s.busy.Store(false)
	if s.evicted.Load() {
		s.end()
	}
	return ExitStatus{}
}

// handOver gives the spare cmd's job. It does not wait for the spare: the directory was
// checked before (the one refusal a spare could answer), and a spare
// that cannot change to it after all (it went in between) says so on the program's
// standard error and exits 127, as a program that could not be found.
func (s *spare) handOver(cmd *exec.Cmd) error {
	job := warmJob{Args: cmd.Args, Env: cmd.Env, Dir: cmd.Dir}
	if job.Env == nil {
		job.Env = os.Environ()
	}
	if job.Dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		job.Dir = wd
	}
	var fds []int
	for i, f := range append([]any{cmd.Stdin, cmd.Stdout, cmd.Stderr}, filesAsAny(cmd.ExtraFiles)...) {
		if f, ok := f.(*os.File); ok && f != nil {
			fds = append(fds, int(f.Fd()))
			job.Fds = append(job.Fds, i)
		}
	}
	head, body := job.encode(jobMsg)
	if len(body) > warmMaxJob {
		return errors.New("env: a job too large for a spare")
	}
	var rights []byte
	if len(fds) > 0 {
		rights = unix.UnixRights(fds...)
	}
	if err := unix.Sendmsg(int(s.sock.Fd()), head, rights, nil, 0); err != nil {
		return err
	}
	_, err := s.sock.Write(body)
	return err
}

// enterable is the start's check of its directory, as a process changing to it would
// meet it: it exists, is a directory, and may be searched ("": this process's own).
func enterable(dir string) error {
	if dir == "" {
		return nil
	}
	var st unix.Stat_t
	err := unix.Stat(dir, &st)
	if err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		err = unix.ENOTDIR
	}
	if err == nil {
		err = unix.Access(dir, unix.X_OK)
	}
	if err != nil {
		return &fs.PathError{Op: "chdir", Path: dir, Err: err}
	}
	return nil
}

func filesAsAny(fs []*os.File) []any {
	out := make([]any, len(fs))
	for i, f := range fs {
		out[i] = f
	}
	return out
}
