//go:build linux

package sandbox_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pty is a pseudo-terminal the test opens, standing for the terminal sema runs in (or
// another person's): the test holds both ends, neither is anyone's controlling terminal.
type pty struct {
	master, slave *os.File
	path          string
}

func openPty(t *testing.T) *pty {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	path := "/dev/pts/" + strconv.Itoa(n)
	s, err := os.OpenFile(path, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	// Raw, so that input counts as soon as it is queued, not at the end of a line.
	tio, err := unix.IoctlGetTermios(int(s.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Lflag &^= unix.ICANON | unix.ECHO
	if err := unix.IoctlSetTermios(int(s.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	return &pty{master: m, slave: s, path: path}
}

// queued is how many bytes wait to be read at f's end of the terminal.
func queued(f *os.File) int {
	n, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCINQ)
	if err != nil {
		return 0
	}
	return n
}

// A confined command reaches no terminal: it cannot push keystrokes into one (TIOCSTI,
// in every spelling: as root's CAP_SYS_ADMIN allows on any terminal, or after making
// the terminal its own controlling one, which any user may), and cannot write to another
// terminal. The first cases aim at a terminal the test holds; the last ones at a
// terminal the command opens itself, which shows the syscall filter is the wall — the
// view's private /dev/pts alone would not stop those.
func TestCommandReachesNoTerminal(t *testing.T) {
	k := kernel(t)
	whoami(t)
	const stiPy = `import fcntl, os, sys, termios
fd = os.open(sys.argv[1], os.O_RDWR | (os.O_NOCTTY if sys.argv[2] == "noctty" else 0))
for c in b"id\n":
    fcntl.ioctl(fd, int(sys.argv[3], 0), bytes([c]))
print("INJECTED")
`
	// ownPty: the command, in a new session (setsid), opens a terminal of its own, makes
	// it its controlling one, and pushes input into it; prints what it reads back.
	const ownPty = `import fcntl, os, termios, tty, sys
m, s = os.openpty()
fd = os.open(os.ttyname(s), os.O_RDWR)  # now the controlling terminal
tty.setraw(fd)
fcntl.ioctl(fd, int(sys.argv[1], 0), b"Q")
print("READ-BACK", os.read(fd, 1))
`
	sti := strconv.Itoa(unix.TIOCSTI)
	stiHigh := strconv.Itoa(1<<32 | unix.TIOCSTI)
	type tcase struct {
		procCase
		// onTestPty: the case aims at the test's terminal; the effect is input queued
		// at its slave end (or output at its master end for a write).
		onTestPty, write bool
	}
	cases := []tcase{
		{procCase: procCase{name: "TIOCSTI into a terminal, as root may", rootOnly: true, needs: []string{"python3"},
			script: `python3 -c '` + stiPy + `' "$PTY" noctty ` + sti}, onTestPty: true},
		{procCase: procCase{name: "TIOCSTI into a terminal made the controlling one", needs: []string{"python3", "setsid"},
			script: `setsid -w python3 -c '` + stiPy + `' "$PTY" ctty ` + sti}, onTestPty: true},
		{procCase: procCase{name: "TIOCSTI with the request's high bits set", needs: []string{"python3", "setsid"},
			script: `setsid -w python3 -c '` + stiPy + `' "$PTY" ctty ` + stiHigh}, onTestPty: true},
		{procCase: procCase{name: "write to another terminal", script: `echo HELLO > "$PTY"`}, onTestPty: true, write: true},
		{procCase: procCase{name: "write to another terminal through its own", needs: []string{"python3"},
			script: `python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_WRONLY | os.O_NOCTTY); os.write(fd, b"HELLO")' "$PTY"`}, onTestPty: true, write: true},
		{procCase: procCase{name: "TIOCSTI into a terminal of its own", needs: []string{"python3", "setsid"},
			script: `setsid -w python3 -c '` + ownPty + `' ` + sti, effect: printedOut("READ-BACK b'Q'")}},
		{procCase: procCase{name: "TIOCSTI into a terminal of its own, high bits set", needs: []string{"python3", "setsid"},
			script: `setsid -w python3 -c '` + ownPty + `' ` + stiHigh, effect: printedOut("READ-BACK b'Q'")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !c.onTestPty {
				runProcCase(t, k, c.procCase, nil)
				return
			}
			runProcCase(t, k, c.procCase, func(t *testing.T, w *world) ([]string, func(string) bool) {
				p := openPty(t)
				return []string{"PTY=" + p.path}, func(string) bool {
					if !c.write {
						// TIOCSTI hands its byte to the line discipline at once.
						return queued(p.slave) > 0
					}
					// Written output reaches the master through the kernel's flip buffer,
					// pushed by a worker: give it a moment.
					for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
						if queued(p.master) > 0 {
							return true
						}
					}
					return false
				}
			})
		})
	}
}
