//go:build linux

package env

import (
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A spare can do more ahead than start: a program that takes over in its init (the
// sandbox's helper) may also do, before its job comes, the work that depends only on
// part of its environment — the prelude, the variables it registered with PrimeOn. The
// helper builds a command's whole confinement from its policy that way while the model
// thinks, and only starts the command once the job arrives.
//
// A start that names a series (ExecRequest.PrimeKey: a leg's shell commands, which
// share one policy) leaves behind spares primed with its prelude, for the series' next
// starts; a start takes one when its prelude is exactly the same, and otherwise ends
// them and starts as before (the spare of its shape, or cold). A spare says when it is
// ready (AwaitPrimedJob) or that its preparation failed (PrimeFailed); a start waits for
// one still preparing (at most primeWait), since starting cold would do the same work
// and more. A spare may say it comes back (readyAgainMsg): the helper, as the init of
// the command's PID namespace, ends what the command left, reports its end and waits
// for the series' next job in the same confinement. It is then busy while a job runs
// (startWarm's ended marks it free again), and the checks below are made before each.
//
// What was prepared can go stale without the prelude changing, and is then not used:
//   - a path the spare prepared from is replaced on the machine (renamed away and made
//     again by an editor, git or a file tool): a mount made at the path went with the
//     rename, and the new file at the path is not what the spare holds. The spare
//     records what each path held before it prepared (RelyOn) and the host checks each
//     still holds the same (device and inode) before it hands over a job;
//   - a path a mount was made at is removed on the machine: the kernel detaches the
//     mount in the spare's namespace. The spare hands the host its mountinfo, opened
//     once it had made its mounts, and any change since (POLLPRI) ends it.
// Both checks are made when a job is handed over; a change after that reaches the
// command exactly as it reaches one whose view was made at its start.

var (
	primeMu   sync.Mutex
	primeKeys []string
	// primedUsed counts the starts a primed spare took, for the tests.
	primedUsed atomic.Int64
	// primedSock is, in a primed spare, the socket its job comes on (-1: this process
	// is not one).
	primedSock = -1
)

// primeWait bounds how long a start waits for a primed spare to finish preparing.
const primeWait = 2 * time.Second

// The messages a primed spare sends back.
const (
	readyMsg  = 'r'
	failedMsg = 'f'
	// readyAgainMsg is readyMsg from a spare that comes back for another job once its
	// job has ended (and says so again, ready, each time).
	readyAgainMsg = 'R'
)

// PrimeOn registers the environment variables a program that takes over in its init
// prepares from: a spare for a start that sets any of them is primed with their values
// (the prelude) and hands the rest of the start to AwaitPrimedJob.
func PrimeOn(keys ...string) {
	primeMu.Lock()
	defer primeMu.Unlock()
	for _, k := range keys {
		if !slices.Contains(primeKeys, k) {
			primeKeys = append(primeKeys, k)
		}
	}
}

// preludeOf is the prelude of an environment: its entries of registered names, sorted;
// nil when it has none.
func preludeOf(environ []string) []string {
	primeMu.Lock()
	keys := primeKeys
	primeMu.Unlock()
	if len(keys) == 0 {
		return nil
	}
	var out []string
	for _, kv := range environ {
		if k, _, ok := strings.Cut(kv, "="); ok && slices.Contains(keys, k) {
			out = append(out, kv)
		}
	}
	slices.Sort(out)
	return out
}

// primedSpares holds each series' primed spares (ExecRequest.PrimeKey), oldest first:
// primedDepth of them, so that a spare has the time of two commands to get ready when
// a turn runs several one after another. At most maxPrimed series have spares (a
// service runs many legs at once, each a series); the one whose spares were made
// longest ago gives way. Touched only on the starter thread.
var (
	primedSpares = map[string][]*spare{}
	primedOrder  []string // the series, the one primed longest ago first
)

const (
	primedDepth = 2
	// maxPerSeries bounds a series' spares, busy ones included (background tasks keep
	// theirs busy for as long as they run).
	maxPerSeries = 4
	maxPrimed    = 8
)

// primeFor tops the series key's free spares up to primedDepth, each started in shape
// and primed with prelude; spares busy with a job of the series (a helper that stays)
// count toward maxPerSeries only.
func primeFor(key string, shape warmShape, attr *syscall.SysProcAttr, prelude []string) {
	primedOrder = slices.DeleteFunc(primedOrder, func(k string) bool { return len(primedSpares[k]) == 0 || k == key })
	for len(primedOrder) >= maxPrimed {
		endPrimedOnThread(primedOrder[0], false)
	}
	primedOrder = append(primedOrder, key)
	for {
		q := primedSpares[key]
		free := 0
		for _, s := range q {
			if !s.busy.Load() {
				free++
			}
		}
		if free >= primedDepth || len(q) >= maxPerSeries {
			return
		}
		s, err := newSpare(attr)
		if err != nil {
			return
		}
		if s.prime(prelude) != nil {
			s.end()
			return
		}
		s.shape = shape
		primedSpares[key] = append(q, s)
	}
}

// takePrimed takes a primed spare of the series that is not busy with a job, or nil: one
// that ran a job before first (it is known to come back, and its confinement is used
// again), else the oldest.
func takePrimed(key string) *spare {
	q := primedSpares[key]
	pick := -1
	for i, s := range q {
		if !s.busy.Load() && (pick < 0 || s.again && !q[pick].again) {
			pick = i
		}
	}
	for i, s := range q {
		if i != pick {
			continue
		}
		q = slices.Delete(q, i, i+1)
		if len(q) == 0 {
			delete(primedSpares, key)
		} else {
			primedSpares[key] = q
		}
		return s
	}
	return nil
}

// endPrimedOnThread ends the series' primed spares, on the starter thread. A spare busy
// with a job is ended too when all is (its owner ended its jobs first), or else given up:
// it ends once its job has (jobEnded).
func endPrimedOnThread(key string, all bool) {
	for _, s := range primedSpares[key] {
		if !all {
			s.evicted.Store(true) // before busy is looked at: see jobEnded
			if s.busy.Load() {
				continue
			}
		}
		s.end()
	}
	delete(primedSpares, key)
	primedOrder = slices.DeleteFunc(primedOrder, func(k string) bool { return k == key })
}

// prime sends the spare its prelude.
func (s *spare) prime(prelude []string) error {
	head, body := (&warmJob{Env: prelude}).encode(primeMsg)
	if len(body) > warmMaxJob {
		return errors.New("env: a prelude too large for a spare")
	}
	if _, err := s.sock.Write(append(head, body...)); err != nil {
		return err
	}
	s.primed = prelude
	return nil
}

// fits reports whether the spare may take a start whose prelude is prelude: an
// unprimed spare takes any; a primed one only the prelude it was primed with, once it
// is ready and what it watches is unchanged.
func (s *spare) fits(prelude []string) bool {
	if s.primed == nil {
		return true
	}
	if !slices.Equal(s.primed, prelude) {
		return false
	}
	fd := int(s.sock.Fd())
	if !pollIn(fd, primeWait) {
		return false
	}
	msg := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(fd, msg, oob, unix.MSG_CMSG_CLOEXEC|unix.MSG_DONTWAIT)
	watch := -1
	if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && perr == nil {
		for _, m := range msgs {
			if got, err := unix.ParseUnixRights(&m); err == nil {
				for _, fd := range got {
					if watch < 0 {
						watch = fd
					} else {
						unix.Close(fd)
					}
				}
			}
		}
	}
	if watch >= 0 {
		defer unix.Close(watch)
	}
	if err != nil || n != 1 || (msg[0] != readyMsg && msg[0] != readyAgainMsg) {
		return false
	}
	s.again = msg[0] == readyAgainMsg
	var size [4]byte
	if readFull(fd, size[:]) != nil {
		return false
	}
	body := make([]byte, binary.LittleEndian.Uint32(size[:]))
	if len(body) > warmMaxJob || readFull(fd, body) != nil {
		return false
	}
	relied, ok := decodeRelied(body)
	if !ok || !stillSo(relied) {
		return false
	}
	if watch >= 0 {
		pfd := []unix.PollFd{{Fd: int32(watch), Events: unix.POLLPRI}}
		if n, err := unix.Poll(pfd, 0); err != nil || n != 0 {
			return false
		}
	}
	return true
}

// Relied is a file a primed spare relied on, as it was when the spare prepared.
type Relied struct {
	// Path is the file's absolute path.
	Path string
	// Dev and Ino are its identity then: its device and inode, the final component not
	// followed. Ino 0: there was nothing at the path.
	Dev, Ino uint64
}

// RelyOn records what is at each of paths now, for AwaitPrimedJob. A spare records
// before it prepares from them: whatever is found at a path later, if not this, makes the
// host end the spare unused. (What a spare mounted goes with its path when the path is
// renamed on the machine — no mount changes in the spare — and a new file at the old
// path is not what was prepared.)
func RelyOn(paths []string) []Relied {
	out := make([]Relied, 0, len(paths))
	for _, p := range paths {
		r := Relied{Path: p}
		var st unix.Stat_t
		if unix.Lstat(p, &st) == nil {
			r.Dev, r.Ino = st.Dev, st.Ino
		}
		out = append(out, r)
	}
	return out
}

// stillSo reports whether each relied-on path still holds what it held.
func stillSo(relied []Relied) bool {
	for _, r := range relied {
		var st unix.Stat_t
		err := unix.Lstat(r.Path, &st)
		switch {
		case err != nil && r.Ino == 0 && errors.Is(err, unix.ENOENT):
		case err != nil, r.Ino == 0, st.Dev != r.Dev, st.Ino != r.Ino:
			return false
		}
	}
	return true
}

// encodeRelied lays out relied as the ready message carries it: path, device and inode,
// each ended by a NUL byte.
func encodeRelied(relied []Relied) []byte {
	var b []byte
	for _, r := range relied {
		b = append(append(b, r.Path...), 0)
		b = append(strconv.AppendUint(b, r.Dev, 10), 0)
		b = append(strconv.AppendUint(b, r.Ino, 10), 0)
	}
	return b
}

func decodeRelied(b []byte) ([]Relied, bool) {
	fields := strings.Split(string(b), "\x00")
	if fields[len(fields)-1] != "" || (len(fields)-1)%3 != 0 {
		return nil, false
	}
	var out []Relied
	for i := 0; i+3 <= len(fields)-1; i += 3 {
		dev, err1 := strconv.ParseUint(fields[i+1], 10, 64)
		ino, err2 := strconv.ParseUint(fields[i+2], 10, 64)
		if err1 != nil || err2 != nil || fields[i] == "" {
			return nil, false
		}
		out = append(out, Relied{Path: fields[i], Dev: dev, Ino: ino})
	}
	return out, true
}

// Primed reports whether this process is a primed spare, waiting for its job (which
// AwaitPrimedJob takes).
func Primed() bool { return primedSock >= 0 }

// AwaitPrimedJob is a primed spare's side once it has prepared: it tells the host it
// is ready — passing watch (-1: none), a descriptor the host polls for POLLPRI before it
// hands over a job, and relied (RelyOn), which the host checks still holds; again says
// the spare comes back for another job after this one, and calls AwaitPrimedJob again
// (watch stays open) — then waits for the job and takes it as its own: descriptors,
// arguments and environment. It returns the job's directory, which the caller enters
// itself (it may have changed its root since). A spare the host ends without a job
// exits here. The process stays not dumpable.
func AwaitPrimedJob(watch int, relied []Relied, again bool) string {
	if again && primedSock < 100 {
		// Out of the way of the descriptors jobs bring (their targets are below 8).
		high, err := unix.FcntlInt(uintptr(primedSock), unix.F_DUPFD_CLOEXEC, 100)
		if err != nil {
			exit(0)
		}
		unix.Close(primedSock)
		primedSock = high
	}
	sock := primedSock
	var rights []byte
	if watch >= 0 {
		rights = unix.UnixRights(watch)
	}
	body := encodeRelied(relied)
	kind := byte(readyMsg)
	if again {
		kind = readyAgainMsg
	}
	if err := unix.Sendmsg(sock, []byte{kind}, rights, nil, 0); err != nil {
		exit(0)
	}
	for out := append(binary.LittleEndian.AppendUint32(nil, uint32(len(body))), body...); len(out) > 0; {
		n, err := unix.Write(sock, out)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			exit(0)
		}
		out = out[n:]
	}
	if watch >= 0 && !again {
		unix.Close(watch)
	}
	msg, job, fds, err := readWarmJob(sock)
	if err != nil || msg != jobMsg {
		exit(0)
	}
	if again {
		takeJob(job, fds, -1)
	} else {
		takeJob(job, fds, sock)
		primedSock = -1
	}
	return job.Dir
}

// PrimeFailed is a primed spare's side when its preparation failed: it tells the host,
// which starts that command cold (and meets the failure there, with the command's
// streams to report it on), and exits.
func PrimeFailed() {
	if primedSock >= 0 {
		unix.Write(primedSock, []byte{failedMsg})
	}
	exit(0)
}

// PrimedStarts reports how many starts of this process a primed spare took: for
// diagnostics, and for tests that a series' starts are readied ahead.
func PrimedStarts() int64 { return primedUsed.Load() }

// primedReadyOnThread reports whether the series has primed spares and each has said
// it is ready, waiting at most wait in all; the messages are left for the starts that
// take them.
func primedReadyOnThread(key string, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	free := 0
	for _, s := range primedSpares[key] {
		if s.busy.Load() {
			continue
		}
		free++
		if !pollIn(int(s.sock.Fd()), time.Until(deadline)) {
			return false
		}
		msg := make([]byte, 1)
		n, _, err := unix.Recvfrom(int(s.sock.Fd()), msg, unix.MSG_PEEK|unix.MSG_DONTWAIT)
		if err != nil || n != 1 || (msg[0] != readyMsg && msg[0] != readyAgainMsg) {
			return false
		}
	}
	return free > 0
}

// pollIn waits at most wait for fd to be readable (or closed); a signal that interrupts
// the wait does not end it.
func pollIn(fd int, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		ms := max(int(time.Until(deadline)/time.Millisecond)+1, 0) // never -1: forever
		n, err := unix.Poll(pfd, ms)
		switch {
		case errors.Is(err, unix.EINTR) && time.Now().Before(deadline):
			continue
		case err != nil:
			return false
		}
		return n > 0
	}
}
