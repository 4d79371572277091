//go:build linux

package sandbox_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/sandbox"
)

// kernel skips the test, saying why, where the kernel cannot confine commands.
func kernel(t *testing.T) sandbox.Kernel {
	t.Helper()
	k := sandbox.Probe()
	if !k.Available() {
		t.Skipf("no kernel sandbox on this machine: %s", k.Reason)
	}
	return k
}

// needMounts skips where hidden and read-only paths cannot be enforced.
func needMounts(t *testing.T, k sandbox.Kernel) {
	t.Helper()
	if !k.MountNamespace {
		t.Skipf("no mount namespace on this machine: %s", k.Reason)
	}
}

// world is a task root, a place outside it and a state directory, all in a fresh temp dir.
type world struct {
	root, outside, state string
	fence                *fence.Fence
}

func newWorld(t *testing.T, mut func(*fence.Config)) *world {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := &world{root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside"), state: filepath.Join(base, "state")}
	for _, d := range []string{w.root, w.outside, w.state, filepath.Join(w.root, ".git", "hooks")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(w.outside, "secret"), "OUTSIDE-SECRET")
	write(t, filepath.Join(w.root, ".git", "config"), "[core]\n")
	cfg := fence.Config{Env: env.NewHost(), Root: w.root, StateDir: w.state}
	if mut != nil {
		mut(&cfg)
	}
	w.state = cfg.StateDir
	if err := os.MkdirAll(w.state, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.state, "sema.db"), "STATE-SECRET")
	w.fence, err = fence.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// run runs script under bash in dir, confined by p when k is non-nil, and returns the
// exit code and the interleaved output.
func run(t *testing.T, k *sandbox.Kernel, p sandbox.Policy, dir, script string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	req := env.ExecRequest{Argv: []string{"bash", "--noprofile", "--norc", "-c", script}, Dir: dir, Stdout: &out, Stderr: &out}
	if k != nil {
		var err error
		if req, err = k.Wrap(req, p); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pr, err := env.NewHost().Start(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	st, err := pr.Wait()
	pr.Close()
	if err != nil {
		t.Fatal(err)
	}
	return st.Code, out.String()
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func TestProbeFindsLandlock(t *testing.T) {
	k := kernel(t)
	t.Logf("landlock ABI %d, mount namespace %v, network namespace %v (%s)", k.Landlock, k.MountNamespace, k.NetworkNamespace, k.Reason)
	if k.Landlock < 1 || !k.Available() {
		t.Fatalf("available with Landlock ABI %d", k.Landlock)
	}
	// The reason is empty exactly when nothing is missing.
	if whole := k.MountNamespace && k.NetworkNamespace; whole != (k.Reason == "") {
		t.Fatalf("namespaces %v/%v with reason %q", k.MountNamespace, k.NetworkNamespace, k.Reason)
	}
	if again := sandbox.Probe(); again != k {
		t.Fatalf("a second probe answered %+v, the first %+v", again, k)
	}
}

func TestConfinedCommandStillWorksInsideTheRoot(t *testing.T) {
	k := kernel(t)
	w := newWorld(t, nil)
	p := sandbox.ForFence(w.fence, sandbox.Options{}).WithProtected(w.fence, false)
	code, out := run(t, &k, p, w.root, `mkdir -p sub && echo hi > sub/f && mv sub/f sub/g && cat sub/g && ls | sort && rm -r sub && git --version >/dev/null && echo done`)
	if code != 0 || !strings.Contains(out, "hi\n") || !strings.HasSuffix(out, "done\n") {
		t.Fatalf("exit %d, output %q", code, out)
	}
}

func TestMain(m *testing.M) {
	if _, err := exec.LookPath("bash"); err != nil {
		os.Stdout.WriteString("sandbox tests need bash: " + err.Error() + "\n")
		os.Exit(0)
	}
	os.Exit(m.Run())
}
