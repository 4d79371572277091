//go:build linux

package sandbox_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sema-agent/sema/sandbox"
)

// These tests try what Landlock does not mediate — connect() to a unix socket by path,
// chmod, chown, utime and setxattr, opening another terminal, listing the runtime
// directories — and prove that the command's view of the filesystem stops it. Each
// spelling is calibrated: plain bash, unconfined, has the effect first.

// spelling is one way of doing a hostile thing; it needs the programs it names.
type spelling struct {
	name   string
	needs  []string
	script string
}

// need skips the case, saying why, when a program it needs is not installed.
func need(t *testing.T, progs ...string) {
	t.Helper()
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed, so this spelling cannot be tried", p)
		}
	}
}

// confinedRan fails the test when the helper did not run the command: a refusal proves
// nothing about the wall.
func confinedRan(t *testing.T, code int, out string) {
	t.Helper()
	if code == sandbox.HelperFailed || strings.Contains(out, "sema sandbox:") {
		t.Fatalf("the helper did not run the command, so the case proves nothing: %q", out)
	}
}

// sockListener is a unix socket listener in the test process that counts connections.
type sockListener struct {
	path string
	n    atomic.Int64
}

// listenUnix listens on a socket in dir (which must be short: a socket path is at most
// 107 bytes).
func listenUnix(t *testing.T, dir string) *sockListener {
	t.Helper()
	l := &sockListener{path: filepath.Join(dir, "s.sock")}
	ln, err := net.Listen("unix", l.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.n.Add(1)
			c.Write([]byte("SOCK-REACHED\n"))
			c.Close()
		}
	}()
	return l
}

// shortDir is a fresh directory with a short path (for sockets), removed after the test.
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "sk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	d, _ = filepath.EvalSymlinks(d)
	return d
}

// connectSpellings reach the socket $SOCK.
var connectSpellings = []spelling{
	{name: "python", needs: []string{"python3"},
		script: `python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print(s.recv(64).decode())' "$SOCK"`},
	{name: "socat", needs: []string{"socat"}, script: `socat - UNIX-CONNECT:"$SOCK" </dev/null`},
	{name: "curl", needs: []string{"curl"}, script: `curl -s --max-time 5 --http0.9 --unix-socket "$SOCK" http://x/`},
	{name: "nc -U", needs: []string{"nc"}, script: `nc -U "$SOCK" </dev/null`},
	{name: "perl", needs: []string{"perl"},
		script: `perl -MIO::Socket::UNIX -e '$s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or exit 1; print <$s>' "$SOCK"`},
	{name: "through a symlink in the root", needs: []string{"python3"},
		script: `ln -s "$SOCK" sl && python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print(s.recv(64).decode())' sl`},
	{name: "through a hard link in the root", needs: []string{"python3"},
		script: `ln "$SOCK" hl && python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print(s.recv(64).decode())' hl`},
}

// Class 2: a socket outside the write roots is not reachable by path, whether its
// directory is a read root or not granted at all.
func TestUnixSocketsOutsideTheRootsAreUnreachable(t *testing.T) {
	k := kernel(t)
	needMounts(t, k)
	whoami(t)
	places := []struct {
		name     string
		readable bool
	}{{"in a read root", true}, {"in a place not granted", false}}
	for _, pl := range places {
		for _, sp := range connectSpellings {
			t.Run(pl.name+"/"+sp.name, func(t *testing.T) {
				need(t, sp.needs...)
				dir := shortDir(t)
				l := listenUnix(t, dir)
				script := "export SOCK=" + strconv.Quote(l.path) + "; " + sp.script
				free := newWorld(t, nil)
				if _, out := run(t, nil, sandbox.Policy{}, free.root, script); l.n.Load() == 0 {
					t.Fatalf("calibration: plain bash did not reach the socket; output %q", out)
				}
				before := l.n.Load()
				w := newWorld(t, nil)
				o := sandbox.Options{}
				if pl.readable {
					o.Readable = []string{dir}
				}
				p := sandbox.ForFence(w.fence, o).WithProtected(w.fence, false)
				if pl.readable && !slices.Contains(p.Read, dir) {
					t.Fatalf("the socket's directory is not a read root: %v", p.Read)
				}
				code, out := run(t, &k, p, w.root, script)
				confinedRan(t, code, out)
				if l.n.Load() != before || strings.Contains(out, "SOCK-REACHED") {
					t.Fatalf("the confined command reached the socket (exit %d); output %q", code, out)
				}
			})
		}
	}
}

// What stays reachable: a socket in a write root, in the private temp directory, and one
// a setting grants by path.
func TestGrantedSocketsStayReachable(t *testing.T) {
	k := kernel(t)
	needMounts(t, k)
	need(t, "python3")
	connect := `python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print(s.recv(64).decode())' "$SOCK"`
	cases := []struct {
		name  string
		place func(w *world, tmp string) (dir string, grant func(p *sandbox.Policy, sock string))
	}{
		{"in the write root", func(w *world, _ string) (string, func(*sandbox.Policy, string)) {
			if len(w.root) < 90 {
				return w.root, nil
			}
			// A socket's path is at most 107 bytes: a write tree with a short one.
			dir := shortDir(t)
			return dir, func(p *sandbox.Policy, _ string) { p.Write = append(p.Write, dir) }
		}},
		{"in the private temp directory", func(_ *world, tmp string) (string, func(*sandbox.Policy, string)) {
			return tmp, nil
		}},
		{"granted by path", func(_ *world, _ string) (string, func(*sandbox.Policy, string)) {
			return "", func(p *sandbox.Policy, sock string) { p.Sockets = append(p.Sockets, sock) }
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, nil)
			tmp := shortDir(t)
			dir, grant := c.place(w, tmp)
			if dir == "" {
				dir = shortDir(t)
			}
			l := listenUnix(t, dir)
			p := sandbox.ForFence(w.fence, sandbox.Options{TempDir: tmp}).WithProtected(w.fence, false)
			if grant != nil {
				grant(&p, l.path)
			}
			code, out := run(t, &k, p, w.root, "export SOCK="+strconv.Quote(l.path)+"; "+connect)
			if code != 0 || l.n.Load() == 0 || !strings.Contains(out, "SOCK-REACHED") {
				t.Fatalf("the socket was not reachable (exit %d): %q", code, out)
			}
		})
	}
}

// fileState is what the metadata spellings may change.
type fileState struct {
	mode, uid, gid uint32
	mtime, ctime   unix.Timespec
	xattr          bool
}

func stateOf(t *testing.T, path string) fileState {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	_, xerr := unix.Lgetxattr(path, "user.sema", nil)
	return fileState{mode: st.Mode, uid: st.Uid, gid: st.Gid, mtime: st.Mtim, ctime: st.Ctim, xattr: xerr == nil}
}

// metadataSpellings change $F's metadata, not its content.
var metadataSpellings = []spelling{
	{name: "chmod", script: `chmod 600 "$F"`},
	{name: "chmod u+s", script: `chmod u+s "$F"`},
	{name: "python os.chmod", needs: []string{"python3"}, script: `python3 -c 'import os,sys; os.chmod(sys.argv[1], 0o4755)' "$F"`},
	{name: "chown to self", script: `chown "$(id -u):$(id -g)" "$F"`},
	{name: "chgrp to own group", script: `chgrp "$(id -g)" "$F"`},
	{name: "python os.chown", needs: []string{"python3"}, script: `python3 -c 'import os,sys; os.chown(sys.argv[1], os.getuid(), os.getgid())' "$F"`},
	{name: "touch -d", script: `touch -d '2001-02-03 04:05:06' "$F"`},
	{name: "touch -m", script: `touch -m "$F"`},
	{name: "python os.utime", needs: []string{"python3"}, script: `python3 -c 'import os,sys; os.utime(sys.argv[1], (1, 1))' "$F"`},
	{name: "setfattr", needs: []string{"setfattr"}, script: `setfattr -n user.sema -v x "$F"`},
	{name: "python os.setxattr", needs: []string{"python3"}, script: `python3 -c 'import os,sys; os.setxattr(sys.argv[1], "user.sema", b"x")' "$F"`},
	{name: "perl chmod", needs: []string{"perl"}, script: `perl -e 'chmod 0777, $ARGV[0] or exit 1' "$F"`},
}

// Class 8: chmod (setuid too), chown, utime and setxattr on what lies outside the write
// roots fail: a read root is on a read-only mount, and what is not granted is not there.
func TestMetadataOutsideTheRootsCannotChange(t *testing.T) {
	k := kernel(t)
	needMounts(t, k)
	targets := []struct {
		name     string
		readable bool
		dir      bool
	}{
		{"a file in a read root", true, false},
		{"a directory in a read root", true, true},
		{"a file not granted", false, false},
	}
	for _, tg := range targets {
		for _, sp := range metadataSpellings {
			t.Run(tg.name+"/"+sp.name, func(t *testing.T) {
				need(t, sp.needs...)
				// mk makes the target in a fresh world and returns its path once the clock
				// has moved past its ctime, so that any change shows in it.
				mk := func() (*world, string, string) {
					w := newWorld(t, nil)
					ro := filepath.Join(filepath.Dir(w.root), "ro")
					target := filepath.Join(ro, "f")
					if err := os.MkdirAll(ro, 0o755); err != nil {
						t.Fatal(err)
					}
					if tg.dir {
						err := os.Mkdir(target, 0o755)
						if err != nil {
							t.Fatal(err)
						}
					} else {
						write(t, target, "RO")
					}
					c := stateOf(t, target).ctime
					for time.Now().UnixNano() < c.Nano()+int64(20*time.Millisecond) {
						time.Sleep(time.Millisecond)
					}
					return w, ro, target
				}
				w, _, target := mk()
				before := stateOf(t, target)
				run(t, nil, sandbox.Policy{}, w.root, "export F="+strconv.Quote(target)+"; "+sp.script)
				if stateOf(t, target) == before {
					t.Fatalf("calibration: plain bash did not change %s", target)
				}
				w, ro, target := mk()
				before = stateOf(t, target)
				o := sandbox.Options{}
				if tg.readable {
					o.Readable = []string{ro}
				}
				p := sandbox.ForFence(w.fence, o).WithProtected(w.fence, false)
				code, out := run(t, &k, p, w.root, "export F="+strconv.Quote(target)+"; "+sp.script)
				confinedRan(t, code, out)
				if after := stateOf(t, target); after != before {
					t.Fatalf("the confined command changed %s (exit %d): %+v -> %+v; output %q", target, code, before, after, out)
				}
			})
		}
	}
}

// viewPty opens a pseudo-terminal in the test process and returns its master (non-
// blocking), its other end (held open by the test) and that end's path.
func viewPty(t *testing.T) (int, int, string) {
	t.Helper()
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal can be opened here: %v", err)
	}
	t.Cleanup(func() { unix.Close(m) })
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(m, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	path := "/dev/pts/" + strconv.Itoa(n)
	s, err := unix.Open(path, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(s) })
	return m, s, path
}

// drained is what reached the pty's master up to now: the test writes a sentinel to the
// other end and reads until it arrives, so everything written before is in (a terminal
// delivers in order, but not at once).
func drained(t *testing.T, m, s int) string {
	t.Helper()
	if _, err := unix.Write(s, []byte("SENTINEL\n")); err != nil {
		t.Fatal(err)
	}
	var out []byte
	buf := make([]byte, 4096)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(string(out), "SENTINEL") {
		if time.Now().After(deadline) {
			t.Fatalf("the sentinel never reached the terminal's master: %q", out)
		}
		unix.Poll([]unix.PollFd{{Fd: int32(m), Events: unix.POLLIN}}, 1000)
		if n, err := unix.Read(m, buf); n > 0 && err == nil {
			out = append(out, buf[:n]...)
		}
	}
	return string(out)
}

// Class 11's filesystem half: another terminal's pty is not in the view; a command still
// makes its own.
func TestOtherTerminalsAreUnreachable(t *testing.T) {
	k := kernel(t)
	needMounts(t, k)
	spellings := []spelling{
		{name: "redirect", script: `echo TTY-REACHED > "$PTS"`},
		{name: "tee", script: `echo TTY-REACHED | tee "$PTS" >/dev/null`},
		{name: "exec fd", script: `exec 3<>"$PTS" && echo TTY-REACHED >&3`},
		{name: "python", needs: []string{"python3"}, script: `python3 -c 'import sys; open(sys.argv[1], "w").write("TTY-REACHED\n")' "$PTS"`},
		{name: "every pty", script: `for p in /dev/pts/[0-9]*; do echo TTY-REACHED > "$p"; done 2>/dev/null; true`},
	}
	for _, sp := range spellings {
		t.Run(sp.name, func(t *testing.T) {
			need(t, sp.needs...)
			m, sl, pts := viewPty(t)
			script := "export PTS=" + strconv.Quote(pts) + "; " + sp.script
			free := newWorld(t, nil)
			run(t, nil, sandbox.Policy{}, free.root, script)
			if got := drained(t, m, sl); !strings.Contains(got, "TTY-REACHED") {
				t.Fatalf("calibration: plain bash did not write to %s: %q", pts, got)
			}
			w := newWorld(t, nil)
			code, out := run(t, &k, sandbox.ForFence(w.fence, sandbox.Options{}).WithProtected(w.fence, false), w.root, script)
			confinedRan(t, code, out)
			if got := drained(t, m, sl); strings.Contains(got, "TTY-REACHED") {
				t.Fatalf("the confined command wrote to another terminal (exit %d): %q; output %q", code, got, out)
			}
		})
	}
	t.Run("a command makes its own pty", func(t *testing.T) {
		need(t, "python3")
		w := newWorld(t, nil)
		code, out := run(t, &k, sandbox.ForFence(w.fence, sandbox.Options{}), w.root,
			`python3 -c 'import pty,os; m,s=pty.openpty(); os.write(m, b"hi\n"); print(os.ttyname(s), os.read(s, 10))'`)
		if code != 0 || !regexp.MustCompile(`^/dev/pts/\d+ b'hi\\n'\n$`).MatchString(out) {
			t.Fatalf("exit %d, output %q", code, out)
		}
	})
}

// hostRuntimeEntries are the entries of the machine's dir that are not symbolic links
// (the view may make those, pointing into what it shows).
func hostRuntimeEntries(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		if e.Type()&os.ModeSymlink == 0 {
			out = append(out, e.Name())
		}
	}
	return out
}

// Class 2's other half: the runtime directories, where daemons keep their sockets, are
// empty in the view, under the ordinary policy and under the open read face.
func TestRuntimeDirectoriesAreEmpty(t *testing.T) {
	k := kernel(t)
	needMounts(t, k)
	entries := hostRuntimeEntries("/run")
	if len(entries) == 0 {
		t.Skip("this machine's /run is empty: there is nothing to hide")
	}
	spellings := []spelling{
		{name: "ls", script: `ls -A /run`},
		{name: "find", script: `find /run -mindepth 1 -maxdepth 1 -printf '%f\n'`},
		{name: "ls /var/run", script: `ls -A /var/run/`},
		{name: "glob", script: `printf '%s\n' /run/* /run/.* | sed 's|^/run/||'`},
	}
	faces := []struct {
		name string
		open bool
	}{{"ordinary policy", false}, {"open read face", true}}
	listed := func(out string) bool {
		for _, line := range strings.Split(out, "\n") {
			if slices.Contains(entries, strings.TrimSpace(line)) {
				return true
			}
		}
		return false
	}
	for _, f := range faces {
		for _, sp := range spellings {
			t.Run(f.name+"/"+sp.name, func(t *testing.T) {
				free := newWorld(t, nil)
				if _, out := run(t, nil, sandbox.Policy{}, free.root, sp.script); !listed(out) {
					t.Fatalf("calibration: plain bash listed nothing of %v: %q", entries, out)
				}
				w := newWorld(t, nil)
				p := sandbox.ForFence(w.fence, sandbox.Options{}).WithProtected(w.fence, false)
				if f.open {
					p.Read = []string{"/"}
				}
				code, out := run(t, &k, p, w.root, sp.script)
				confinedRan(t, code, out)
				if listed(out) {
					t.Fatalf("the confined command listed the machine's /run (exit %d): %q", code, out)
				}
			})
		}
	}
}

// /tmp is the private temp directory: what a command writes there lands in TempDir, not
// in the machine's /tmp.
func TestTmpIsThePrivateTempDir(t *testing.T) {
	k := kernel(t)
	needMounts(t, k)
	for _, open := range []bool{false, true} {
		t.Run("open read face "+strconv.FormatBool(open), func(t *testing.T) {
			w := newWorld(t, nil)
			tmp := filepath.Join(filepath.Dir(w.root), "tmp")
			if err := os.Mkdir(tmp, 0o700); err != nil {
				t.Fatal(err)
			}
			p := sandbox.ForFence(w.fence, sandbox.Options{TempDir: tmp}).WithProtected(w.fence, false)
			if open {
				p.Read = []string{"/"}
			}
			name := "sema-view-" + strconv.Itoa(os.Getpid()) + "-" + filepath.Base(filepath.Dir(w.root))
			t.Cleanup(func() { os.Remove(filepath.Join("/tmp", name)) })
			code, out := run(t, &k, p, w.root, `echo landed > /tmp/`+name+` && cat "`+tmp+`/`+name+`" && echo in-root > "$PWD/f" && cat f`)
			if code != 0 || out != "landed\nin-root\n" {
				t.Fatalf("exit %d, output %q", code, out)
			}
			if b, err := os.ReadFile(filepath.Join(tmp, name)); err != nil || string(b) != "landed\n" {
				t.Fatalf("the write did not land in the temp directory: %q, %v", b, err)
			}
			if exists(filepath.Join("/tmp", name)) {
				t.Fatalf("the write landed in the machine's /tmp")
			}
		})
	}
}

// What is not granted is not in the view: not even its existence shows.
func TestUngrantedPlacesAreNotThere(t *testing.T) {
	k := kernel(t)
	needMounts(t, k)
	spellings := []spelling{
		{name: "test -e", script: `test -e "$OUT/secret" && echo EXISTS`},
		{name: "stat", script: `stat -c %s "$OUT/secret" >/dev/null && echo EXISTS`},
		{name: "list the root's parent", script: `ls -A .. 2>/dev/null | grep -qx outside && echo EXISTS`},
		{name: "python os.path.exists", needs: []string{"python3"}, script: `python3 -c 'import os,sys; print("EXISTS" if os.path.exists(sys.argv[1]) else "")' "$OUT/secret"`},
	}
	for _, sp := range spellings {
		t.Run(sp.name, func(t *testing.T) {
			need(t, sp.needs...)
			free := newWorld(t, nil)
			if _, out := run(t, nil, sandbox.Policy{}, free.root, "export OUT="+strconv.Quote(free.outside)+"; "+sp.script); !strings.Contains(out, "EXISTS") {
				t.Fatalf("calibration: %q", out)
			}
			w := newWorld(t, nil)
			code, out := run(t, &k, sandbox.ForFence(w.fence, sandbox.Options{}).WithProtected(w.fence, false), w.root, "export OUT="+strconv.Quote(w.outside)+"; "+sp.script)
			confinedRan(t, code, out)
			if strings.Contains(out, "EXISTS") {
				t.Fatalf("the confined command saw an ungranted file (exit %d): %q", code, out)
			}
		})
	}
}

// The links the system needs keep working in the view: /bin/sh through /bin -> usr/bin on
// a merged-/usr system, and /etc/resolv.conf wherever it points.
func TestViewKeepsTheSystemsLinks(t *testing.T) {
	k := kernel(t)
	needMounts(t, k)
	w := newWorld(t, nil)
	p := sandbox.ForFence(w.fence, sandbox.Options{})
	code, out := run(t, &k, p, w.root, `/bin/sh -c 'echo sh-ran' && cat /etc/resolv.conf`)
	want := "sh-ran\n"
	if b, err := os.ReadFile("/etc/resolv.conf"); err == nil {
		want += string(b)
	}
	if code != 0 || out != want {
		t.Fatalf("exit %d, output %q, want %q", code, out, want)
	}
}

// Class 7: a cache gets a private layer. What a command writes lands in the layer; the
// cache is unchanged; the next command of the leg sees the first one's writes.
func TestCachesGetAPrivateLayer(t *testing.T) {
	k := kernel(t)
	needMounts(t, k)
	if !k.Overlay {
		t.Skip("the kernel cannot lay an overlay over a cache here")
	}
	w := newWorld(t, nil)
	base := filepath.Dir(w.root)
	cache, layer := filepath.Join(base, "cache"), filepath.Join(base, "layer")
	os.Mkdir(cache, 0o755)
	write(t, filepath.Join(cache, "old"), "OLD")
	write(t, filepath.Join(cache, "gone"), "GONE")
	tmp := filepath.Join(base, "tmp")
	os.Mkdir(tmp, 0o700)
	p := sandbox.ForFence(w.fence, sandbox.Options{TempDir: tmp}).WithProtected(w.fence, false)
	p.Caches, p.CacheLayer = []string{cache}, layer
	t.Cleanup(func() { sweepAll(t, layer) })
	env := "export C=" + strconv.Quote(cache) + "; "
	code, out := run(t, &k, p, w.root, env+`echo new > "$C/new" && echo changed > "$C/old" && rm "$C/gone" && chmod 600 "$C/old" && cat "$C/old"`)
	if code != 0 || out != "changed\n" {
		t.Fatalf("the first command: exit %d, %q", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(cache, "old")); string(b) != "OLD" || exists(filepath.Join(cache, "new")) || !exists(filepath.Join(cache, "gone")) {
		t.Fatalf("the cache itself changed: old=%q new=%v gone=%v", b, exists(filepath.Join(cache, "new")), exists(filepath.Join(cache, "gone")))
	}
	if fi, _ := os.Stat(filepath.Join(cache, "old")); fi.Mode().Perm() != 0o644 {
		t.Fatalf("the cache's file changed mode: %v", fi.Mode())
	}
	ups, _ := filepath.Glob(filepath.Join(layer, "*", "upper", "new"))
	if len(ups) != 1 {
		t.Fatalf("the write did not land in the layer: %v", ups)
	}
	code, out = run(t, &k, p, w.root, env+`cat "$C/new" "$C/old"; test -e "$C/gone" || echo gone`)
	if code != 0 || out != "new\nchanged\ngone\n" {
		t.Fatalf("the second command did not see the first's writes: exit %d, %q", code, out)
	}

	t.Run("go build", func(t *testing.T) {
		need(t, "go")
		gocache := filepath.Join(base, "gocache")
		os.Mkdir(gocache, 0o755)
		write(t, filepath.Join(w.root, "go.mod"), "module example.com/hello\n\ngo 1.21\n")
		write(t, filepath.Join(w.root, "main.go"), "package main\n\nfunc main() { println(\"hello\") }\n")
		p := p
		p.Caches = []string{gocache}
		script := "export GOCACHE=" + strconv.Quote(gocache) + " GOMODCACHE=$PWD/.mod HOME=$PWD GOTOOLCHAIN=local GOFLAGS=\"-mod=mod -buildvcs=false\" GOPROXY=off GOTELEMETRY=off; go build -o hello . && ./hello"
		code, out := run(t, &k, p, w.root, script)
		if code != 0 || !strings.Contains(out, "hello") {
			t.Fatalf("go build: exit %d, %q", code, out)
		}
		if ents, _ := os.ReadDir(gocache); len(ents) != 0 {
			t.Fatalf("go build wrote into the cache itself: %d entries", len(ents))
		}
		var inLayer int
		filepath.Walk(layer, func(string, os.FileInfo, error) error { inLayer++; return nil })
		if inLayer < 10 {
			t.Fatalf("the layer did not grow (%d entries)", inLayer)
		}
	})

	t.Run("a cache the helper cannot layer stops the command", func(t *testing.T) {
		notDir := filepath.Join(base, "layer-file")
		write(t, notDir, "")
		p := p
		p.CacheLayer = notDir
		code, out := run(t, &k, p, w.root, `echo ran`)
		if code != sandbox.HelperFailed || strings.Contains(out, "ran") || !strings.Contains(out, "cache") {
			t.Fatalf("exit %d, output %q", code, out)
		}
	})
}

// The working directory must be in the view: the helper refuses rather than leave the
// command in the machine's tree.
func TestWorkingDirectoryOutsideTheView(t *testing.T) {
	k := kernel(t)
	needMounts(t, k)
	w := newWorld(t, nil)
	code, out := run(t, &k, sandbox.ForFence(w.fence, sandbox.Options{}), w.outside, `echo ran; ls`)
	if code != sandbox.HelperFailed || strings.Contains(out, "ran") || strings.Contains(out, "secret") {
		t.Fatalf("exit %d, output %q", code, out)
	}
	if !strings.Contains(out, "working directory") {
		t.Fatalf("the refusal does not name the working directory: %q", out)
	}
}

// The view holds for an unprivileged user too, whose helper builds it in a user namespace
// (where a Read tree holding mounts is laid out entry by entry): the same tables, as
// nobody.
func TestViewAlsoHoldsForAnUnprivilegedUser(t *testing.T) {
	kernel(t)
	runAsNobody(t,
		"TestUnixSocketsOutsideTheRootsAreUnreachable",
		"TestGrantedSocketsStayReachable",
		"TestMetadataOutsideTheRootsCannotChange",
		"TestOtherTerminalsAreUnreachable",
		"TestRuntimeDirectoriesAreEmpty",
		"TestTmpIsThePrivateTempDir",
		"TestUngrantedPlacesAreNotThere",
		"TestViewKeepsTheSystemsLinks",
		"TestCachesGetAPrivateLayer",
		"TestWorkingDirectoryOutsideTheView",
	)
}

// sweepAll removes the layer's work directories once the helpers that hold them have
// exited (each reports its command's end before it does): overlayfs leaves them with no
// permission bits, which a test's temporary directory cannot remove unprivileged.
func sweepAll(t *testing.T, layer string) {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		sandbox.SweepCacheWork(layer)
		left, _ := filepath.Glob(filepath.Join(layer, "*", "work*"))
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("work directories still held: %v", left)
			return
		}
	}
}
