package env

import (
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
)

// The guardian is one small shell per process that outlives it just long enough to
// stop what it left running. The host tells it, through a pipe only this process
// writes to, the id of every process group it starts ("+pgid") and of every group that
// is gone ("-pgid"). When this process dies, however it dies (SIGKILL included), the
// kernel closes the pipe's write end; the guardian reads end of file and sends SIGKILL
// to every group still listed, then exits.
//
// The parent-death signal (Linux) kills only the program the host started; the
// commands a shell runs are its children and would live on. The guardian reaches them
// through their group. A group id cannot be taken by anyone else while a process of
// the group exists, so a listed group that still has members is still ours; one whose
// members all ended is taken off the list as soon as the host sees it empty.
//
// The guardian is in a process group of its own, so a signal to this process's group
// (Ctrl-C at a terminal) does not end it, and it ignores the hangup of a terminal.
const guardScript = `trap '' HUP INT QUIT TERM PIPE
g=' '
while IFS= read -r l; do
	case $l in
	+[0-9]*) g="$g${l#+} " ;;
	-[0-9]*) p=" ${l#-} "; case $g in *"$p"*) g="${g%%"$p"*} ${g#*"$p"}" ;; esac ;;
	esac
done
for p in $g; do kill -9 -$p 2>/dev/null; done
`

var guard struct {
	once sync.Once
	mu   sync.Mutex
	w    *os.File // nil: no guardian runs; groups are then stopped only by the reaper of the next run
}

// guardStart starts the guardian the first time a group needs guarding.
func guardStart() {
	r, w, err := os.Pipe()
	if err != nil {
		return
	}
	cmd := exec.Command("/bin/sh", "-c", guardScript)
	cmd.Stdin = r
	cmd.Dir = "/"
	// It outlives this process, and another process of the user can read its
	// environment: it gets what every program sema starts gets, never a key.
	cmd.Env = Inherit(os.Environ(), Passthrough{}).Env
	// Its own group; no parent-death signal: it must survive this process.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return
	}
	// Never waited for: it ends when this process does. Should it end earlier, its
	// exit stays unreaped, which costs one process table entry and nothing else.
	cmd.Process.Release()
	guard.w = w
}

// guardAdd lists pgid with the guardian.
func guardAdd(pgid int) { guardSend('+', pgid) }

// guardDrop takes pgid off the guardian's list.
func guardDrop(pgid int) { guardSend('-', pgid) }

// GuardGroup lists the process group pgid with the guardian, so that it is killed when
// this process dies, however it dies, as the host's own are. It is for a package that
// starts a program itself (env.StartCmd, an MCP server): the parent-death signal reaches
// the program only, not what it started. Call UnguardGroup once no process of the group
// is alive, and not later than the program is reaped: its group id may be reused then.
func GuardGroup(pgid int) { guardAdd(pgid) }

// UnguardGroup takes pgid off the guardian's list.
func UnguardGroup(pgid int) { guardDrop(pgid) }

func guardSend(op byte, pgid int) {
	guard.once.Do(guardStart)
	guard.mu.Lock()
	defer guard.mu.Unlock()
	if guard.w == nil {
		return
	}
	if _, err := guard.w.Write(append(strconv.AppendInt([]byte{op}, int64(pgid), 10), '\n')); err != nil {
		// The guardian is gone; writing on would fail the same way.
		guard.w.Close()
		guard.w = nil
	}
}
