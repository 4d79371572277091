//go:build linux

package sandbox_test

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/sandbox"
)

// These tests bypass the permission fold on purpose: the command runs as if every
// question had been answered yes, and only the kernel stands between it and its effect.
// Each case first runs unconfined, in a world of its own, to prove the command really has
// its effect under plain bash; then confined, in a fresh world, where it must not.

type hostile struct {
	name string
	// script runs in the task root with $OUT (outside the roots), $STATE (the state
	// directory) and $PORT (a listener outside the sandbox) set.
	script string
	// mounts: the case needs the mount namespace (hidden or read-only paths).
	mounts bool
	// effect reports whether the command had its effect, given its output.
	effect func(w *world, out string) bool
	// world adjusts the fence (nil: root, outside and state are siblings).
	world func(base string, c *fence.Config)
}

func fileExists(rel func(w *world) string) func(*world, string) bool {
	return func(w *world, _ string) bool { return exists(rel(w)) }
}

func printed(marker string) func(*world, string) bool {
	return func(_ *world, out string) bool { return strings.Contains(out, marker) }
}

func TestKernelStopsWhatTheAnalyzerMissed(t *testing.T) {
	k := kernel(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("NET-REACHED\n"))
			c.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)

	cases := []hostile{
		{name: "write outside the roots", script: `echo pwned > "$OUT/x"`,
			effect: fileExists(func(w *world) string { return filepath.Join(w.outside, "x") })},
		{name: "write outside through a symlink in the root", script: `ln -s "$OUT" link && echo pwned > link/y`,
			effect: fileExists(func(w *world) string { return filepath.Join(w.outside, "y") })},
		{name: "a background grandchild writes outside", script: `sh -c '(sleep 0.05; echo pwned > "$OUT/g") & wait'`,
			effect: fileExists(func(w *world) string { return filepath.Join(w.outside, "g") })},
		{name: "a grandchild in a new session writes outside", script: `setsid sh -c 'echo pwned > "$OUT/s"'; sleep 0.1`,
			effect: fileExists(func(w *world) string { return filepath.Join(w.outside, "s") })},
		{name: "remove a file outside", script: `rm -f "$OUT/secret"`,
			effect: func(w *world, _ string) bool { return !exists(filepath.Join(w.outside, "secret")) }},
		{name: "hard-link an outside file into the root", script: `ln "$OUT/secret" hl && cat hl`,
			effect: printed("OUTSIDE-SECRET")},
		{name: "read outside the roots", script: `cat "$OUT/secret"`, effect: printed("OUTSIDE-SECRET")},
		{name: "read the state directory", script: `cat "$STATE/sema.db"`, effect: printed("STATE-SECRET")},
		{name: "read the state directory inside the root", mounts: true, script: `cat .state/sema.db; grep -r STATE . 2>/dev/null`,
			effect: printed("STATE-SECRET"),
			world:  func(base string, c *fence.Config) { c.StateDir = filepath.Join(c.Root, ".state") }},
		{name: "write a git hook", mounts: true, script: `echo 'touch "$OUT/hooked"' > .git/hooks/pre-commit`,
			effect: fileExists(func(w *world) string { return filepath.Join(w.root, ".git", "hooks", "pre-commit") })},
		{name: "symlink a git hook", mounts: true, script: `ln -s ../../evil.sh .git/hooks/post-checkout`,
			effect: fileExists(func(w *world) string { return filepath.Join(w.root, ".git", "hooks", "post-checkout") })},
		{name: "rewrite the git config", mounts: true, script: `printf '[core]\n\tfsmonitor = touch /x\n' >> .git/config; cat .git/config`,
			effect: printed("fsmonitor")},
		{name: "remove the git config", mounts: true, script: `rm -f .git/config`,
			effect: func(w *world, _ string) bool { return !exists(filepath.Join(w.root, ".git", "config")) }},
		{name: "move the git directory away and replace it", mounts: true, script: `mv .git .git-old && mkdir -p .git/hooks && echo x > .git/hooks/pre-commit`,
			effect: fileExists(func(w *world) string { return filepath.Join(w.root, ".git", "hooks", "pre-commit") })},
		{name: "unmount the read-only git directory", mounts: true, script: `umount -l .git 2>/dev/null; umount .git 2>/dev/null; echo x > .git/hooks/pre-push`,
			effect: fileExists(func(w *world) string { return filepath.Join(w.root, ".git", "hooks", "pre-push") })},
		{name: "reach the network", script: `exec 3<>/dev/tcp/127.0.0.1/$PORT && cat <&3`, effect: printed("NET-REACHED")},
		{name: "reach the network from a grandchild", script: `sh -c 'bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT && cat <&3"' & wait`, effect: printed("NET-REACHED")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.mounts {
				needMounts(t, k)
			}
			mk := func() *world {
				return newWorld(t, func(cfg *fence.Config) {
					if c.world != nil {
						c.world(filepath.Dir(cfg.Root), cfg)
					}
				})
			}
			script := func(w *world) string {
				return "export OUT=" + strconv.Quote(w.outside) + " STATE=" + strconv.Quote(w.fence.DenyPaths()[0]) + " PORT=" + port + "; " + c.script
			}
			free := mk()
			if os.Getenv("PATH") == "" {
				t.Skip("no PATH")
			}
			if _, out := run(t, nil, sandbox.Policy{}, free.root, script(free)); !c.effect(free, out) {
				t.Fatalf("calibration: plain bash did not have the effect; output %q", out)
			}
			w := mk()
			p := sandbox.ForFence(w.fence, sandbox.Options{}).WithProtected(w.fence, false)
			code, out := run(t, &k, p, w.root, script(w))
			if code == sandbox.HelperFailed || strings.Contains(out, "sema sandbox:") {
				t.Fatalf("the helper did not run the command, so the case proves nothing: %q", out)
			}
			if c.effect(w, out) {
				t.Fatalf("the confined command had its effect (exit %d); output %q", code, out)
			}
		})
	}
}

func TestApprovedCallMayWriteProtectedPaths(t *testing.T) {
	k := kernel(t)
	needMounts(t, k)
	w := newWorld(t, nil)
	hook := filepath.Join(w.root, ".git", "hooks", "pre-commit")
	p := sandbox.ForFence(w.fence, sandbox.Options{})
	if code, out := run(t, &k, p.WithProtected(w.fence, true), w.root, `echo ok > .git/hooks/pre-commit`); code != 0 || !exists(hook) {
		t.Fatalf("an approved call could not write .git: exit %d, %q", code, out)
	}
}

func TestHiddenCredentialStoreInsideTheRoot(t *testing.T) {
	whoami(t)
	k := kernel(t)
	needMounts(t, k)
	w := newWorld(t, nil)
	// The task root is the home directory: its .ssh is a credential store.
	ssh := filepath.Join(w.root, ".ssh")
	os.MkdirAll(ssh, 0o700)
	write(t, filepath.Join(ssh, "id_ed25519"), "KEY-SECRET")
	write(t, filepath.Join(w.root, ".netrc"), "machine x password NETRC-SECRET")
	script := `cat .ssh/id_ed25519 .netrc; grep -r SECRET . 2>/dev/null; echo k >> .netrc; rm -rf .ssh`
	if _, out := run(t, nil, sandbox.Policy{}, w.root, `cat .ssh/id_ed25519 .netrc`); !strings.Contains(out, "KEY-SECRET") || !strings.Contains(out, "NETRC-SECRET") {
		t.Fatalf("calibration: %q", out)
	}
	p := sandbox.ForFence(w.fence, sandbox.Options{Home: w.root}).WithProtected(w.fence, false)
	_, out := run(t, &k, p, w.root, script)
	if strings.Contains(out, "KEY-SECRET") || strings.Contains(out, "NETRC-SECRET") {
		t.Fatalf("a credential store was readable: %q", out)
	}
	if b, _ := os.ReadFile(filepath.Join(ssh, "id_ed25519")); string(b) != "KEY-SECRET" {
		t.Fatalf("the key was changed or removed: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(w.root, ".netrc")); !strings.HasSuffix(string(b), "NETRC-SECRET") {
		t.Fatalf(".netrc was changed: %q", b)
	}
}

// The helper trusts no one's word that it is in namespaces of its own: started directly
// with the environment claiming a mount namespace, it refuses rather than change the
// machine's mounts.
func TestHelperRefusesAClaimedNamespace(t *testing.T) {
	kernel(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "/bin/true")
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/mnt", &st); err != nil {
		t.Fatal(err)
	}
	// The helper is started in this very namespace, and told it is in a new one.
	cmd.Env = append(os.Environ(), "SEMA_SANDBOX_POLICY={\"read\":[\"/\"]}", "SEMA_SANDBOX_NS=m"+strconv.FormatUint(st.Ino, 10))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != sandbox.HelperFailed || !strings.Contains(string(out), "not in a mnt namespace of its own") {
		t.Fatalf("err %v, output %q", err, out)
	}
}

// Root makes namespaces directly; anyone else goes through a user namespace whose lent
// capabilities the helper drops before the command runs. When the tests run as root, run
// the kernel tests once more as an unprivileged user, so that path is proven too.
func TestKernelWallsAlsoHoldForAnUnprivilegedUser(t *testing.T) {
	kernel(t)
	if os.Getenv("SEMA_SANDBOX_UNPRIVILEGED_RUN") != "" {
		t.Skip("already the unprivileged run")
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: the tests above already ran unprivileged")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skipf("setpriv (util-linux) is not installed, so the tests cannot drop to another user: %v", err)
	}
	tmp := t.TempDir()
	if err := os.Chmod(tmp, 0o1777); err != nil {
		t.Fatal(err)
	}
	// t.TempDir's parent is private to root; the unprivileged run needs a directory it can
	// reach, and the test binary itself.
	for d := filepath.Dir(tmp); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	bin, _ := os.Executable()
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin,
		"-test.run", "TestKernelStopsWhatTheAnalyzerMissed|TestApprovedCallMayWriteProtectedPaths|TestHiddenCredentialStoreInsideTheRoot|TestConfinedCommandStillWorksInsideTheRoot", "-test.v")
	cmd.Dir = tmp
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + tmp, "TMPDIR=" + tmp, "SEMA_SANDBOX_UNPRIVILEGED_RUN=1"}
	out, err := cmd.CombinedOutput()
	if err == nil && strings.Contains(string(out), "no mount namespace on this machine") {
		t.Skipf("an unprivileged user cannot make namespaces here (unprivileged user namespaces are off); Landlock alone was checked:\n%s", out)
	}
	if err != nil || strings.Contains(string(out), "--- SKIP") || !strings.Contains(string(out), "--- PASS: TestKernelStopsWhatTheAnalyzerMissed") {
		t.Fatalf("the unprivileged run: %v\n%s", err, out)
	}
}
