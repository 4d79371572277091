package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The terminal session measured on the built binary in a pseudo-terminal of its own (no
// tmux: the benchmark is the terminal, and reads every byte sema writes as it arrives).
//
//	go test ./test/e2e -run '^$' -bench Terminal -count 6
//
// SEMA_E2E_BIN names a binary built elsewhere, to compare two builds run alternately.

// BenchmarkTerminalFirstFrame: milliseconds from starting `sema` at a 120×40 terminal to
// the first full frame's bytes (its status line) on the terminal, with no API key, a new
// HOME and a new state directory each time. demo is a bare `sema` (the scripted demo in
// a workspace of its own); scripted names a script with --model, as a person with a
// model would, and keeps the state directory the first run made.
func BenchmarkTerminalFirstFrame(b *testing.B) {
	b.Run("demo", func(b *testing.B) { firstFrame(b, false) })
	b.Run("scripted", func(b *testing.B) { firstFrame(b, true) })
}

func firstFrame(b *testing.B, scripted bool) {
	script := writeBenchScript(b, `{"turns":[{"text":"hello"}]}`)
	dir := b.TempDir()
	state := filepath.Join(b.TempDir(), "state")
	var total time.Duration
	for b.Loop() {
		home := b.TempDir()
		args := []string{"--sandbox", sandboxWord()}
		env := []string{"HOME=" + home, "SEMA_HOME=" + state}
		if scripted {
			args = append(args, "--model", "scripted/"+script)
		} else {
			env[1] = "SEMA_HOME=" + filepath.Join(home, "state")
		}
		s := startInPty(b, dir, env, args...)
		total += s.waitFor("mode: ", 20*time.Second).Sub(s.start)
		s.stop()
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/first-frame")
}

// BenchmarkTerminalMemory10kLines: the process's resident memory once a 10,000-line
// answer (5,000 paragraphs and the blank lines between them) has streamed in and been
// drawn: MiB-rss (VmRSS), MiB-hwm (VmHWM, the peak), and of the resident memory
// MiB-anon (the heap and stacks) and MiB-file (the binary's and libraries' pages).
func BenchmarkTerminalMemory10kLines(b *testing.B) {
	var text strings.Builder
	for range 4999 {
		text.WriteString("A line of the model's answer, long enough to matter.\n\n")
	}
	// The last paragraph's letters appear nowhere else on the screen, and no two in a
	// row are alike: the renderer leaves out a cell that did not change (a space, say)
	// and may write a run of one letter as a repeat, so only such text arrives whole.
	text.WriteString(lastParagraph)
	body, err := json.Marshal(map[string]any{"turns": []map[string]any{{"text": text.String()}}})
	if err != nil {
		b.Fatal(err)
	}
	script := writeBenchScript(b, string(body))
	dir := b.TempDir()
	var rss, hwm, anon, file float64
	for b.Loop() {
		home := b.TempDir()
		s := startInPty(b, dir, []string{"HOME=" + home, "SEMA_HOME=" + filepath.Join(home, "state")},
			"--sandbox", "off", "--model", "scripted/"+script)
		s.waitFor("mode: ", 20*time.Second)
		s.write("go")
		time.Sleep(50 * time.Millisecond) // a separate read: typed at once, Enter would be pasted text
		s.write("\r")
		s.waitFor(lastParagraph, 5*time.Minute)
		s.quiet(500 * time.Millisecond)
		st := procStatus(b, s.cmd.Process.Pid)
		rss += st["VmRSS"]
		hwm += st["VmHWM"]
		anon += st["RssAnon"]
		file += st["RssFile"]
		s.stop()
	}
	n := float64(b.N)
	b.ReportMetric(rss/n, "MiB-rss")
	b.ReportMetric(hwm/n, "MiB-hwm")
	b.ReportMetric(anon/n, "MiB-anon")
	b.ReportMetric(file/n, "MiB-file")
}

const lastParagraph = "ZQXJZQXJ"

func writeBenchScript(b *testing.B, script string) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "script.json")
	if err := os.WriteFile(p, []byte(script), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

// ptySession is sema running on a pseudo-terminal whose other end the benchmark holds.
type ptySession struct {
	tb    testing.TB
	cmd   *exec.Cmd
	pty   *os.File
	start time.Time

	mu      sync.Mutex
	out     []byte    // everything sema wrote, escapes and all
	last    time.Time // when the last bytes arrived
	waiters []*ptyWaiter
	done    chan struct{}
}

// ptyWaiter waits for text to appear, in the output with its escapes removed, after
// the offset the output had when it began.
type ptyWaiter struct {
	text string
	from int
	at   chan time.Time
}

// startInPty starts sema in dir on a new 120×40 pseudo-terminal, as the leader of its own
// session with the terminal as its controlling terminal, and with env and PATH only.
func startInPty(tb testing.TB, dir string, env []string, args ...string) *ptySession {
	tb.Helper()
	master, slave, err := openPty(120, 40)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(semaBin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "TERM=xterm-256color"}, env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	s := &ptySession{tb: tb, cmd: cmd, pty: master, done: make(chan struct{})}
	s.start = time.Now()
	if err := cmd.Start(); err != nil {
		master.Close()
		slave.Close()
		tb.Fatal(err)
	}
	slave.Close()
	go s.read()
	return s
}

// openPty opens a pseudo-terminal pair through /dev/ptmx, sized cols×rows.
func openPty(cols, rows uint16) (master, slave *os.File, err error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("unlocking the pty: %w", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("naming the pty: %w", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		m.Close()
		s.Close()
		return nil, nil, fmt.Errorf("sizing the pty: %w", err)
	}
	return m, s, nil
}

// escapes are the terminal's control sequences: CSI, OSC (ended by BEL or ST), DCS/APC/
// PM/SOS strings, the two-byte escapes, and the other control characters but newline.
var escapes = regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[PX^_][^\x1b]*\x1b\\|\x1b[ -/]*[0-~]|[\x00-\x09\x0b-\x1f\x7f]`)

// read copies the terminal's output into out and tells the waiters whose text has
// arrived the time it arrived.
func (s *ptySession) read() {
	defer close(s.done)
	r := bufio.NewReaderSize(s.pty, 1<<16)
	buf := make([]byte, 1<<16)
	for {
		n, err := r.Read(buf)
		now := time.Now()
		s.mu.Lock()
		s.out = append(s.out, buf[:n]...)
		s.last = now
		kept := s.waiters[:0]
		for _, w := range s.waiters {
			// Only the new bytes and a window before them: a long session writes
			// megabytes, and the text waited for is short.
			from := max(w.from, len(s.out)-n-4096)
			if bytes.Contains(escapes.ReplaceAll(s.out[from:], nil), []byte(w.text)) {
				w.at <- now
			} else {
				kept = append(kept, w)
			}
		}
		s.waiters = kept
		s.mu.Unlock()
		if err != nil {
			return // the process closed the terminal (EIO) or ended
		}
	}
}

// waitFor returns when text appeared on the terminal, at most timeout from now; text
// already written counts at once, with the time the output last grew.
func (s *ptySession) waitFor(text string, timeout time.Duration) time.Time {
	s.tb.Helper()
	w := &ptyWaiter{text: text, at: make(chan time.Time, 1)}
	s.mu.Lock()
	w.from = len(s.out)
	if bytes.Contains(escapes.ReplaceAll(s.out, nil), []byte(text)) {
		at := s.last
		s.mu.Unlock()
		return at
	}
	s.waiters = append(s.waiters, w)
	s.mu.Unlock()
	select {
	case at := <-w.at:
		return at
	case <-time.After(timeout):
		s.mu.Lock()
		tail := escapes.ReplaceAll(s.out, nil)
		s.mu.Unlock()
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		s.stop()
		s.tb.Fatalf("%q did not appear on the terminal in %s; the output ends:\n%s", text, timeout, tail)
		return time.Time{}
	}
}

// quiet waits until the terminal has had no output for d: the last frame is drawn.
func (s *ptySession) quiet(d time.Duration) {
	for {
		s.mu.Lock()
		since := time.Since(s.last)
		s.mu.Unlock()
		if since >= d {
			return
		}
		time.Sleep(d - since)
	}
}

func (s *ptySession) write(text string) {
	if _, err := s.pty.WriteString(text); err != nil {
		s.tb.Fatal(err)
	}
}

// stop ends the process (SIGKILL: the benchmark measured what it wanted, and a clean exit
// is the tmux tests' subject) and closes the terminal.
func (s *ptySession) stop() {
	if s.cmd.ProcessState == nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
	}
	s.pty.Close()
	<-s.done
}

// procStatus reads the memory lines of /proc/PID/status, in MiB.
func procStatus(tb testing.TB, pid int) map[string]float64 {
	tb.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	st := map[string]float64{}
	for _, line := range strings.Split(string(data), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		fields := strings.Fields(rest)
		if !ok || len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		kb, err := strconv.ParseFloat(fields[0], 64)
		if err == nil {
			st[name] = kb / 1024
		}
	}
	if st["VmRSS"] == 0 {
		tb.Fatalf("no VmRSS in /proc/%d/status:\n%s", pid, data)
	}
	return st
}

func sandboxWord() string {
	if v := os.Getenv("SEMA_BENCH_SANDBOX"); v != "" {
		return v
	}
	return "auto"
}
