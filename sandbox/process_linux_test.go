//go:build linux

package sandbox_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/sandbox"
)

// The process containment of a confined command: it holds no privilege whoever runs sema
// (root included), it sees and reaches no process but its own, nothing it starts outlives
// it, and it reaches no terminal. Every table follows the hostile pattern: each case
// first runs unconfined and must have its effect there, then confined, where it must not.

// syncBuffer is a writer the host's copiers and the test may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// whoami logs which identity the test runs as: the tables run as root and, through the
// unprivileged harness, as nobody.
func whoami(t *testing.T) {
	t.Helper()
	who := "root"
	if os.Geteuid() != 0 {
		who = "an unprivileged user"
	}
	t.Logf("running as uid %d gid %d (%s)", os.Geteuid(), os.Getegid(), who)
}

var (
	pidNSOnce   sync.Once
	pidNSReason string
)

// needPIDNamespace skips where the helper cannot be started as the init of a PID
// namespace of its own.
func needPIDNamespace(t *testing.T, k sandbox.Kernel) {
	t.Helper()
	pidNSOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		pr, err := env.NewHost().Start(ctx, env.ExecRequest{Argv: []string{"true"}, Dir: "/",
			Isolate: env.Isolation{Mount: k.MountNamespace, PID: true}})
		if err == nil {
			var st env.ExitStatus
			st, err = pr.Wait()
			pr.Close()
			if err == nil && st.Code != 0 {
				err = errorString("exit status " + strconv.Itoa(st.Code))
			}
		}
		if err != nil {
			pidNSReason = "no PID namespace can be made here: " + err.Error()
		}
	})
	if pidNSReason != "" {
		t.Skip(pidNSReason)
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

// confine wraps req for p in a PID namespace, the helper being its init.
func confine(t *testing.T, k sandbox.Kernel, p sandbox.Policy, req env.ExecRequest) env.ExecRequest {
	t.Helper()
	needPIDNamespace(t, k)
	req, err := k.Wrap(req, p)
	if err != nil {
		t.Fatal(err)
	}
	req.Isolate.PID = true
	return req
}

// startScript starts script under bash in dir with extra environment entries; confined by
// p (in a PID namespace) when k is non-nil.
func startScript(t *testing.T, k *sandbox.Kernel, p sandbox.Policy, dir, script string, extra ...string) (env.Process, *syncBuffer) {
	t.Helper()
	out := &syncBuffer{}
	req := env.ExecRequest{Argv: []string{"bash", "--noprofile", "--norc", "-c", script}, Dir: dir, Env: extra, Stdout: out, Stderr: out}
	if k != nil {
		req = confine(t, *k, p, req)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pr, err := env.NewHost().Start(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return pr, out
}

// runScript runs script to its end (see startScript) and returns how it ended and its
// output. What it left running is not touched.
func runScript(t *testing.T, k *sandbox.Kernel, p sandbox.Policy, dir, script string, extra ...string) (env.ExitStatus, string) {
	t.Helper()
	pr, out := startScript(t, k, p, dir, script, extra...)
	st, err := pr.Wait()
	pr.Close()
	if err != nil {
		t.Fatal(err)
	}
	return st, out.String()
}

// policyFor is the policy of an ordinary leg in w.
func policyFor(w *world) sandbox.Policy {
	return sandbox.ForFence(w.fence, sandbox.Options{}).WithProtected(w.fence, false)
}

func secret(t *testing.T, kind string) string {
	t.Helper()
	b := make([]byte, 8)
	rand.Read(b)
	return kind + "-" + hex.EncodeToString(b)
}

// procCase is one hostile spelling of the process tables.
type procCase struct {
	name   string
	script string
	// rootOnly: only root has the effect unconfined (a capability is what it takes);
	// as anyone else the case cannot be calibrated and is skipped, saying so.
	rootOnly bool
	// needs names programs the case runs; a missing one skips it, saying so.
	needs []string
	// effect reports whether the command had its effect.
	effect func(out string) bool
}

func printedOut(s string) func(string) bool {
	return func(out string) bool { return strings.Contains(out, s) }
}

// runProcCase calibrates c unconfined, then runs it confined, with the environment that
// setup gives each run (called once per run, with the run's world).
func runProcCase(t *testing.T, k sandbox.Kernel, c procCase, setup func(t *testing.T, w *world) (extra []string, effect func(string) bool)) {
	t.Helper()
	if c.rootOnly && os.Geteuid() != 0 {
		t.Skip("only root has this effect without the sandbox, so the case cannot be calibrated as uid " + strconv.Itoa(os.Geteuid()))
	}
	for _, n := range c.needs {
		if _, err := exec.LookPath(n); err != nil {
			t.Skipf("%s is not installed: %v", n, err)
		}
	}
	for _, confined := range []bool{false, true} {
		w := newWorld(t, nil)
		extra := []string{"OUT=" + w.outside}
		effect := c.effect
		if setup != nil {
			e, eff := setup(t, w)
			extra = append(extra, e...)
			if eff != nil {
				effect = eff
			}
		}
		var kp *sandbox.Kernel
		if confined {
			kp = &k
		}
		st, out := runScript(t, kp, policyFor(w), w.root, c.script, extra...)
		if !confined {
			if !effect(out) {
				t.Fatalf("calibration: plain bash did not have the effect (%+v); output %q", st, out)
			}
			continue
		}
		if st.Code == sandbox.HelperFailed || strings.Contains(out, "sema sandbox:") {
			t.Fatalf("the helper did not run the command, so the case proves nothing: %q", out)
		}
		t.Logf("confined: %+v, output %.300q", st, out)
		if effect(out) {
			t.Fatalf("the confined command had its effect (%+v); output %q", st, out)
		}
	}
}

// The command runs with no capability and no way to gain one — in both helper paths:
// exec'd by the helper (no PID namespace) and forked by it as its namespace's init, which
// must hand on the thread's Landlock domain, syscall filter and no_new_privs.
func TestConfinedCommandHoldsNoCapability(t *testing.T) {
	k := kernel(t)
	whoami(t)
	w := newWorld(t, nil)
	p := policyFor(w)
	const probe = `grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp|SigIgn):' /proc/self/status; echo "ppid $PPID"; echo x > "$OUT/landlock" && echo LANDLOCK-OPEN`
	_, plain := runScript(t, nil, p, w.root, probe, "OUT="+w.outside)
	if !strings.Contains(plain, "LANDLOCK-OPEN") {
		t.Fatalf("calibration: the unconfined probe could not write outside the roots: %q", plain)
	}
	if os.Geteuid() == 0 {
		// Calibration: root outside the sandbox holds capabilities.
		if !strings.Contains(plain, "CapEff:") || strings.Contains(plain, "CapEff:\t0000000000000000") {
			t.Fatalf("calibration: root holds no capability outside the sandbox: %q", plain)
		}
	}
	sigIgn := func(out string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "SigIgn:") {
				return l
			}
		}
		return "no SigIgn line"
	}
	for _, pidNS := range []bool{false, true} {
		name := "exec"
		if pidNS {
			name = "fork from the init"
		}
		t.Run(name, func(t *testing.T) {
			req := env.ExecRequest{Argv: []string{"bash", "-c", probe}, Dir: w.root, Env: []string{"OUT=" + w.outside}}
			var out bytes.Buffer
			req.Stdout, req.Stderr = &out, &out
			if pidNS {
				req = confine(t, k, p, req)
			} else {
				var err error
				if req, err = k.Wrap(req, p); err != nil {
					t.Fatal(err)
				}
			}
			pr, err := env.NewHost().Start(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			st, err := pr.Wait()
			pr.Close()
			if err != nil || st.Code != 0 && st.Code != 1 {
				t.Fatalf("%+v %v: %q", st, err, out.String())
			}
			got := out.String()
			for _, f := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
				if f == "CapBnd" && os.Geteuid() != 0 && !k.MountNamespace {
					// Without a user namespace the helper has no CAP_SETPCAP to empty it
					// with, and holds no capability an exec could raise to.
					t.Logf("an unprivileged helper without namespaces keeps its bounding set: %q", got)
					continue
				}
				if !strings.Contains(got, f+":\t0000000000000000\n") {
					t.Errorf("%s is not empty: %q", f, got)
				}
			}
			if !strings.Contains(got, "NoNewPrivs:\t1\n") || !strings.Contains(got, "Seccomp:\t2\n") {
				t.Errorf("no_new_privs or the syscall filter is missing: %q", got)
			}
			if strings.Contains(got, "LANDLOCK-OPEN") {
				t.Errorf("the command wrote outside the roots: no Landlock domain: %q", got)
			}
			if pidNS && !strings.Contains(got, "ppid 1\n") {
				t.Errorf("the command is not the init's child: %q", got)
			}
			// The init ignores the signals that would end it; the command must not.
			if sigIgn(got) != sigIgn(plain) {
				t.Errorf("the command ignores other signals than a plain one: %q, plainly %q", sigIgn(got), sigIgn(plain))
			}
		})
	}
}

// Root confined is root no more: what root does through a capability fails.
func TestRootIsNotPrivilegedConfined(t *testing.T) {
	k := kernel(t)
	whoami(t)
	// A file of another user, readable by no one else, inside the write root: Landlock
	// lets the command read it; only root's CAP_DAC_OVERRIDE would.
	otherFile := func(t *testing.T, w *world) (extra []string, effect func(string) bool) {
		if os.Geteuid() == 0 {
			f := filepath.Join(w.root, "other")
			write(t, f, "OTHER-USER-SECRET")
			if err := os.Chown(f, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(f, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return nil, nil
	}
	// Mounts made by the calibration land on the machine, in the test's temp dir: undo
	// them whatever happens.
	mountPoint := func(t *testing.T, w *world) (extra []string, effect func(string) bool) {
		m := filepath.Join(w.root, "m")
		os.Mkdir(m, 0o755)
		t.Cleanup(func() { syscall.Unmount(m, syscall.MNT_DETACH) })
		return nil, nil
	}
	ownedBy := func(uid int, name string) func(*testing.T, *world) ([]string, func(string) bool) {
		return func(t *testing.T, w *world) ([]string, func(string) bool) {
			f := filepath.Join(w.root, name)
			return nil, func(string) bool {
				var st syscall.Stat_t
				return syscall.Stat(f, &st) == nil && int(st.Uid) == uid
			}
		}
	}
	cases := []struct {
		procCase
		setup func(*testing.T, *world) ([]string, func(string) bool)
	}{
		{procCase{name: "chown a file it owns to another user", rootOnly: true, script: `echo x > mine; chown 65534 mine`}, ownedBy(65534, "mine")},
		{procCase{name: "chown through python", rootOnly: true, needs: []string{"python3"},
			script: `python3 -c 'import os; open("mine","w").close(); os.chown("mine", 65534, -1)'`}, ownedBy(65534, "mine")},
		{procCase{name: "chgrp a file to another group", rootOnly: true, script: `echo x > mine; chgrp 65534 mine; stat -c 'group %g' mine`,
			effect: printedOut("group 65534")}, nil},
		{procCase{name: "install a file owned by another user", rootOnly: true, script: `echo x > src; install -o 65534 src mine`}, ownedBy(65534, "mine")},
		{procCase{name: "read another user's private file", rootOnly: true, script: `cat other`, effect: printedOut("OTHER-USER-SECRET")}, otherFile},
		{procCase{name: "copy another user's private file", rootOnly: true, script: `cp other copy; cat copy`, effect: printedOut("OTHER-USER-SECRET")}, otherFile},
		{procCase{name: "read another user's private file with dd", rootOnly: true, script: `dd if=other status=none`, effect: printedOut("OTHER-USER-SECRET")}, otherFile},
		{procCase{name: "read another user's private file through python", rootOnly: true, needs: []string{"python3"},
			script: `python3 -c 'print(open("other").read())'`, effect: printedOut("OTHER-USER-SECRET")}, otherFile},
		{procCase{name: "mount a tmpfs", rootOnly: true, script: `mount -t tmpfs none m && echo MOUNTED; umount m`, effect: printedOut("MOUNTED")}, mountPoint},
		{procCase{name: "bind an outside directory into the root", rootOnly: true, script: `mount --bind "$OUT" m && echo MOUNTED; umount m`, effect: printedOut("MOUNTED")}, mountPoint},
		{procCase{name: "mount in a mount namespace of its own", rootOnly: true, needs: []string{"unshare"},
			script: `unshare -m sh -c 'mount -t tmpfs none m && echo MOUNTED'`, effect: printedOut("MOUNTED")}, mountPoint},
		// A user namespace gives any user every capability over namespaces of its own;
		// a Landlocked process still cannot mount.
		{procCase{name: "mount in a user namespace of its own", needs: []string{"unshare"},
			script: `unshare -Urm sh -c 'mount -t tmpfs none m && echo MOUNTED'`, effect: printedOut("MOUNTED")}, mountPoint},
		{procCase{name: "open a raw IPv4 socket", rootOnly: true, needs: []string{"python3"},
			script: `python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); print("RAW-OPEN")'`, effect: printedOut("RAW-OPEN")}, nil},
		{procCase{name: "open a raw IPv6 socket", rootOnly: true, needs: []string{"python3"},
			script: `python3 -c 'import socket; socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6); print("RAW-OPEN")'`, effect: printedOut("RAW-OPEN")}, nil},
		{procCase{name: "open a packet socket", rootOnly: true, needs: []string{"python3"},
			script: `python3 -c 'import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW); print("RAW-OPEN")'`, effect: printedOut("RAW-OPEN")}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			runProcCase(t, k, c.procCase, c.setup)
		})
	}
}

// victim is a process the test starts outside the sandbox with a secret in its
// environment and one on its command line, as sema, an MCP server or another agent would.
type victim struct {
	cmd               *exec.Cmd
	envSecret, cmdArg string
	done              chan struct{}
}

func startVictim(t *testing.T) *victim {
	t.Helper()
	v := &victim{envSecret: secret(t, "ENVSECRET"), cmdArg: secret(t, "ARGSECRET"), done: make(chan struct{})}
	v.cmd = exec.Command("sh", "-c", "sleep 600; : "+v.cmdArg)
	v.cmd.Env = []string{"PATH=/usr/bin:/bin", "VICTIM_TOKEN=" + v.envSecret}
	v.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := v.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { v.cmd.Wait(); close(v.done) }()
	t.Cleanup(func() {
		syscall.Kill(-v.cmd.Process.Pid, syscall.SIGKILL)
		<-v.done
	})
	return v
}

// killed reports whether the victim died (waiting a little: a signal is delivered, then
// acted on).
func (v *victim) killed() bool {
	select {
	case <-v.done:
		return true
	case <-time.After(2 * time.Second):
		return false
	}
}

// A confined command sees only its own process tree: it cannot read another process's
// environment or command line, signal it or trace it.
func TestCommandReachesNoOtherProcess(t *testing.T) {
	k := kernel(t)
	whoami(t)
	type vcase struct {
		procCase
		// effect on the victim, given the output
		hit func(v *victim, out string) bool
	}
	environ := func(v *victim, out string) bool { return strings.Contains(out, v.envSecret) }
	args := func(v *victim, out string) bool { return strings.Contains(out, v.cmdArg) }
	dead := func(v *victim, _ string) bool { return v.killed() }
	cases := []vcase{
		{procCase{name: "read its environ", script: `cat /proc/$V/environ`}, environ},
		{procCase{name: "read its environ with tr", script: `tr '\0' '\n' < /proc/$V/environ`}, environ},
		{procCase{name: "read its environ through python", needs: []string{"python3"},
			script: `python3 -c 'import sys; print(open("/proc/%s/environ" % sys.argv[1], "rb").read())' $V`}, environ},
		{procCase{name: "read its environ with ps", needs: []string{"ps"}, script: `ps eww -p $V`}, environ},
		{procCase{name: "read every environ by glob", script: `cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep -a ENVSECRET`}, environ},
		{procCase{name: "read its cmdline", script: `cat /proc/$V/cmdline`}, args},
		{procCase{name: "read its command line with ps", needs: []string{"ps"}, script: `ps -o args= -p $V`}, args},
		{procCase{name: "list every process with ps", needs: []string{"ps"}, script: `ps auxww`}, args},
		{procCase{name: "read every cmdline by glob", script: `cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' ' '`}, args},
		{procCase{name: "kill it", script: `kill -9 $V`}, dead},
		{procCase{name: "terminate it", script: `kill -TERM $V`}, dead},
		{procCase{name: "kill its process group", script: `kill -9 -- -$V`}, dead},
		{procCase{name: "kill it through python", needs: []string{"python3"}, script: `python3 -c 'import os, sys; os.kill(int(sys.argv[1]), 9)' $V`}, dead},
		// $ARG holds the victim's own mark, which the script's command line does not.
		{procCase{name: "kill it by name", needs: []string{"pkill"}, script: `pkill -KILL -f "$ARG"`}, dead},
		{procCase{name: "trace it with strace", needs: []string{"strace", "timeout"}, script: `timeout 1 strace -p $V -e trace=none 2>&1`},
			func(_ *victim, out string) bool { return strings.Contains(out, "attached") }},
		{procCase{name: "attach to it with ptrace", needs: []string{"python3"},
			script: `python3 -c 'import ctypes, sys; l = ctypes.CDLL(None, use_errno=True); print("PTRACE-ATTACHED" if l.ptrace(16, int(sys.argv[1]), 0, 0) == 0 else "refused")' $V`},
			func(_ *victim, out string) bool { return strings.Contains(out, "PTRACE-ATTACHED") }},
		{procCase{name: "read its memory map", script: `cat /proc/$V/maps`},
			func(_ *victim, out string) bool { return strings.Contains(out, "[stack]") }},
		{procCase{name: "attach to it with gdb", needs: []string{"gdb"}, script: `gdb -nx -batch -p $V -ex 'info proc' 2>&1`},
			func(v *victim, out string) bool {
				return strings.Contains(out, "process "+strconv.Itoa(v.cmd.Process.Pid)+"\n")
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Each case has victims of its own; what one case does to processes by
			// name or by glob aims at its own victim's marks only.
			t.Parallel()
			runProcCase(t, k, c.procCase, func(t *testing.T, w *world) ([]string, func(string) bool) {
				v := startVictim(t)
				return []string{"V=" + strconv.Itoa(v.cmd.Process.Pid), "ARG=" + v.cmdArg}, func(out string) bool { return c.hit(v, out) }
			})
		})
	}
}

// setuidAt reports whether one of the files the cases make (f, x/payload) has the
// set-user-ID bit.
func setuidAt(root string) bool {
	for _, rel := range []string{"f", "x/payload"} {
		if fi, err := os.Lstat(filepath.Join(root, rel)); err == nil && fi.Mode()&os.ModeSetuid != 0 {
			return true
		}
	}
	return false
}

// A set-user-ID file planted in a write root runs with its owner's identity later,
// outside the sandbox (root's, when sema runs as root): a confined command can make none,
// however it spells it.
func TestCommandPlantsNoSetuidFile(t *testing.T) {
	k := kernel(t)
	whoami(t)
	// An archive holding a set-user-ID file, made outside the sandbox.
	withArchive := func(t *testing.T, w *world) ([]string, func(string) bool) {
		src := filepath.Join(w.outside, "payload")
		write(t, src, "#!/bin/sh\n")
		if err := os.Chmod(src, 0o755|os.ModeSetuid); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("tar", "-cf", filepath.Join(w.root, "a.tar"), "-C", w.outside, "payload").CombinedOutput()
		if err != nil {
			t.Skipf("tar cannot make the archive: %v %s", err, out)
		}
		return nil, nil
	}
	cases := []struct {
		procCase
		setup func(*testing.T, *world) ([]string, func(string) bool)
	}{
		{procCase{name: "chmod u+s", script: `echo x > f; chmod u+s f`}, nil},
		{procCase{name: "chmod 4755", script: `echo x > f; chmod 4755 f`}, nil},
		{procCase{name: "chmod 6755", script: `echo x > f; chmod 6755 f`}, nil},
		{procCase{name: "install -m 4755", script: `echo x > src; install -m 4755 src f`}, nil},
		{procCase{name: "chmod through python", needs: []string{"python3"},
			script: `python3 -c 'import os; open("f", "w").close(); os.chmod("f", 0o4755)'`}, nil},
		{procCase{name: "fchmod through python", needs: []string{"python3"},
			script: `python3 -c 'import os; fd = os.open("f", os.O_CREAT | os.O_WRONLY, 0o644); os.fchmod(fd, 0o4755)'`}, nil},
		{procCase{name: "create with the bit (open)", needs: []string{"python3"},
			script: `python3 -c 'import os; os.umask(0); os.close(os.open("f", os.O_CREAT | os.O_WRONLY, 0o4755))'`}, nil},
		{procCase{name: "create an unnamed file with the bit and link it", needs: []string{"python3"},
			script: `python3 -c 'import ctypes, os; os.umask(0); fd = os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o4755); ctypes.CDLL(None).linkat(-100, b"/proc/self/fd/%d" % fd, -100, b"f", 0x400)'`}, nil},
		{procCase{name: "mknod a regular file with the bit", needs: []string{"python3"},
			script: `python3 -c 'import os, stat; os.umask(0); os.mknod("f", stat.S_IFREG | 0o4755)'`}, nil},
		{procCase{name: "copy a set-user-ID file keeping its mode", script: `cp -p payload-src f`},
			func(t *testing.T, w *world) ([]string, func(string) bool) {
				src := filepath.Join(w.root, "payload-src")
				write(t, src, "#!/bin/sh\n")
				if err := os.Chmod(src, 0o755|os.ModeSetuid); err != nil {
					t.Fatal(err)
				}
				return nil, nil
			}},
		{procCase{name: "extract a set-user-ID file from an archive", needs: []string{"tar"}, script: `mkdir x && tar -xpf a.tar -C x`}, withArchive},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runProcCase(t, k, c.procCase, func(t *testing.T, w *world) ([]string, func(string) bool) {
				extra := []string(nil)
				if c.setup != nil {
					extra, _ = c.setup(t, w)
				}
				return extra, func(string) bool { return setuidAt(w.root) }
			})
		})
	}
}

// The helper stays as the command's init, its other threads neither confined nor (as
// root) without capabilities: the command must not reach into it. Its own process is the
// calibration: the same reads of itself succeed.
func TestCommandCannotReachIntoItsInit(t *testing.T) {
	k := kernel(t)
	whoami(t)
	w := newWorld(t, nil)
	for _, c := range []struct{ name, self, init string }{
		{"memory map", `cat /proc/self/maps`, `cat /proc/1/maps`},
		{"environment", `cat /proc/self/environ`, `cat /proc/1/environ`},
		{"memory", `dd if=/proc/self/mem bs=1 count=1 skip=$((0x$(head -1 /proc/self/maps | cut -d- -f1))) status=none | wc -c`,
			`dd if=/proc/1/mem bs=1 count=1 skip=$((0x$(head -1 /proc/1/maps | cut -d- -f1))) status=none | wc -c`},
		{"ptrace", `python3 -c 'import ctypes, os; l = ctypes.CDLL(None); p = os.fork()
if p == 0:
    import time; time.sleep(5); os._exit(0)
print("ATTACHED" if l.ptrace(16, p, 0, 0) == 0 else "refused"); os.kill(p, 9)'`,
			`python3 -c 'import ctypes; print("ATTACHED" if ctypes.CDLL(None).ptrace(16, 1, 0, 0) == 0 else "refused")'`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if strings.Contains(c.self, "python3") {
				if _, err := exec.LookPath("python3"); err != nil {
					t.Skipf("python3 is not installed: %v", err)
				}
			}
			k := k
			st, self := runScript(t, &k, policyFor(w), w.root, c.self)
			if st.Code != 0 || strings.TrimSpace(self) == "" || strings.Contains(self, "refused") || strings.TrimSpace(self) == "0" {
				t.Fatalf("calibration: the command could not read itself: %+v %q", st, self)
			}
			st, out := runScript(t, &k, policyFor(w), w.root, `[ "$PPID" = 1 ] || echo "NOT-THE-INIT'S-CHILD"; `+c.init)
			t.Logf("confined: %+v %.300q", st, out)
			if strings.Contains(out, "NOT-THE-INIT'S-CHILD") {
				t.Fatalf("the command is not the init's child: %q", out)
			}
			if strings.Contains(out, "ATTACHED") || strings.Contains(out, "[stack]") || strings.Contains(out, "SEMA_SANDBOX") || strings.Contains(out, "PATH=") || strings.TrimSpace(out) == "1" {
				t.Fatalf("the command reached into its init: %q", out)
			}
		})
	}
}
