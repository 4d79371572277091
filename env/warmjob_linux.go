//go:build linux

package env

// The spare's side of a warm start: the job it is handed on its socket (its wire format)
// and how the process that waits for one takes it as its own. warm_linux.go keeps the
// host's side: the spares, their shapes, and the hand-over.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// warmJob is what a spare is handed: the program's argv (the spare's os.Args), its
// environment and directory, and where each passed descriptor goes (Fds[i] is the
// target of the i-th descriptor; a stream not passed keeps the spare's /dev/null).
//
// On the socket it is a header — the body's length (4 bytes, little-endian), the kind of
// message (jobMsg), the number of descriptors and their targets (a byte each) —
// carrying the descriptors, then the body: the directory, the number of arguments, the
// arguments and the environment, each ended by a NUL byte, as the kernel lays out a
// program's own. A prime (primeMsg) has the same layout, with no directory, arguments
// or descriptors: its environment is the prelude.
type warmJob struct {
	Args []string
	Env  []string
	Dir  string
	Fds  []int
}

// The kinds of message a spare reads.
const (
	jobMsg   = 'j'
	primeMsg = 'p'
	// againMsg is what a spare that ran a job (a reaper) writes once it is free for
	// the next.
	againMsg = 'a'
)

// encode lays the job out as the socket carries it.
func (j *warmJob) encode(kind byte) (head, body []byte) {
	body = append(append(body, j.Dir...), 0)
	body = append(strconv.AppendInt(body, int64(len(j.Args)), 10), 0)
	for _, s := range append(slices.Clip(j.Args), j.Env...) {
		body = append(append(body, s...), 0)
	}
	head = binary.LittleEndian.AppendUint32(nil, uint32(len(body)))
	head = append(head, kind, byte(len(j.Fds)))
	for _, fd := range j.Fds {
		head = append(head, byte(fd))
	}
	return head, body
}

// decodeBody reads a job's body (encode) into j.
func (j *warmJob) decodeBody(body []byte) error {
	fields := strings.Split(string(body), "\x00")
	if len(fields) < 3 || fields[len(fields)-1] != "" {
		return errors.New("a job that does not read")
	}
	fields = fields[:len(fields)-1]
	n, err := strconv.Atoi(fields[1])
	if err != nil || n < 0 || n > len(fields)-2 {
		return errors.New("a job that does not read")
	}
	j.Dir, j.Args, j.Env = fields[0], fields[2:2+n], fields[2+n:]
	return nil
}

// awaitWarmJob is the spare's side, in this package's init: when this process is a
// spare, it waits for its job and takes it as its own (or exits when none comes), then
// returns, and the init goes on as in a process started with the job. A spare primed
// instead (a prelude first, prime_linux.go) takes the prelude into its environment and
// returns with the job still to come: the init that the prelude is for prepares, then
// takes the job with AwaitPrimedJob. It returns at once in any other process.
func awaitWarmJob() {
	v, ok := os.LookupEnv(warmEnv)
	if !ok {
		return
	}
	if v != "3" {
		exit(127)
	}
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	kind, job, fds, err := readWarmJob(3)
	if err != nil {
		exit(0) // the host ended the spare, or is gone
	}
	if kind == primeMsg {
		os.Clearenv()
		setEnv(job.Env)
		primedSock = 3
		return
	}
	if err := unix.Chdir(job.Dir); err != nil {
		for i, fd := range fds {
			if job.Fds[i] == 2 {
				unix.Write(fd, fmt.Appendf(nil, "sema: cannot start in %s: %v\n", job.Dir, err))
			}
		}
		exit(127)
	}
	if slices.ContainsFunc(job.Env, func(kv string) bool { return strings.HasPrefix(kv, reaperEnv+"=") }) {
		// A reaper stays for the next program once this one has ended (runReaper):
		// the socket is kept, out of the way of the job's descriptors.
		high, err := unix.FcntlInt(3, unix.F_DUPFD_CLOEXEC, 100)
		if err == nil {
			unix.Close(3)
			reaperSock = high
			takeJob(job, fds, -1)
			return
		}
	}
	takeJob(job, fds, 3)
	unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0)
}

// takeJob makes the job's descriptors, arguments and environment this process's own;
// sock, the socket it came on, is closed (or replaced by a descriptor of the job), unless
// it is -1 (kept).
func takeJob(job warmJob, fds []int, sock int) {
	high := make([]int, len(fds))
	var err error
	for i, fd := range fds {
		if high[i], err = unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 100); err != nil {
			exit(127)
		}
		unix.Close(fd)
	}
	if sock >= 0 {
		unix.Close(sock)
	}
	for i, fd := range high {
		if err := unix.Dup3(fd, job.Fds[i], 0); err != nil {
			exit(127)
		}
		unix.Close(fd)
	}
	os.Args = job.Args
	os.Clearenv()
	setEnv(job.Env)
}

// setEnv sets each NAME=value of kvs.
func setEnv(kvs []string) {
	for _, kv := range kvs {
		if k, v, ok := cutEnv(kv); ok {
			os.Setenv(k, v)
		}
	}
}

// readWarmJob reads one message from the socket fd: the header with the descriptors,
// then the body (warmJob). It reports the message's kind.
func readWarmJob(fd int) (byte, warmJob, []int, error) {
	var job warmJob
	// The fixed part of the header first, with the descriptors it carries: a stream
	// socket may hand over what follows it in the same read.
	head := make([]byte, 6)
	oob := make([]byte, unix.CmsgSpace(4*warmMaxFiles))
	n, oobn, _, _, err := unix.Recvmsg(fd, head, oob, unix.MSG_CMSG_CLOEXEC|unix.MSG_WAITALL)
	var fds []int
	if err == nil {
		if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, m := range msgs {
				if got, err := unix.ParseUnixRights(&m); err == nil {
					fds = append(fds, got...)
				}
			}
		}
	}
	if err != nil || n != 6 || (head[4] != jobMsg && head[4] != primeMsg) || int(head[5]) > warmMaxFiles {
		closeAll(fds)
		return 0, job, nil, errors.New("no job")
	}
	targets := make([]byte, head[5])
	size := binary.LittleEndian.Uint32(head)
	if readFull(fd, targets) != nil || size > warmMaxJob || len(fds) != len(targets) {
		closeAll(fds)
		return 0, job, nil, errors.New("a job that does not read")
	}
	for _, target := range targets {
		job.Fds = append(job.Fds, int(target))
	}
	body := make([]byte, size)
	if readFull(fd, body) != nil {
		closeAll(fds)
		return 0, job, nil, errors.New("the job was cut short")
	}
	return head[4], job, fds, job.decodeBody(body)
}

// readFull fills b from the descriptor fd. It reads with the descriptor itself: an
// *os.File would close it when collected, by then the descriptor of whatever took its
// number.
func readFull(fd int, b []byte) error {
	for got := 0; got < len(b); {
		n, err := unix.Read(fd, b[got:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrUnexpectedEOF
		}
		got += n
	}
	return nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// cutEnv splits NAME=value; an entry without '=' or with an empty name is dropped, as
// the kernel would pass it but no Go program could set it.
func cutEnv(kv string) (string, string, bool) {
	for i := 1; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return "", "", false
}
