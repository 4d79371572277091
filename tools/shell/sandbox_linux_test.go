//go:build linux

package shell

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/shellscan"
)

// sandboxed configures a fix whose commands the kernel confines, skipping (with the
// reason) where it cannot.
func sandboxed(t *testing.T) func(*Config) {
	t.Helper()
	k := sandbox.Probe()
	if !k.Available() {
		t.Skipf("no kernel sandbox on this machine: %s", k.Reason)
	}
	return func(c *Config) { c.Sandbox = &Sandbox{Kernel: k} }
}

func TestSandboxedBashWorksInsideAndNotOutside(t *testing.T) {
	f := newFix(t, sandboxed(t))
	outside := tempDir(t)
	out := f.bash(`mkdir -p sub && echo inside > sub/f && cat sub/f && cd sub && echo "tmp=$TMPDIR"`)
	if !strings.Contains(out, "inside") || !strings.Contains(out, "tmp="+filepath.Join(f.set.ScratchDir(), "tmp")) {
		t.Fatalf("output %q", out)
	}
	if got := f.bash(`pwd`); strings.TrimSpace(got) != f.path("sub") {
		t.Fatalf("the working directory did not carry over: %q", got)
	}
	r := f.call(context.Background(), NameBash, map[string]any{"command": "echo pwned > " + shq(filepath.Join(outside, "x"))})
	if _, err := os.Stat(filepath.Join(outside, "x")); err == nil {
		t.Fatalf("a write outside the roots happened: %s", r.TextOf())
	}
	if !r.IsError && !strings.Contains(r.TextOf(), "exited with") {
		t.Fatalf("the failed write was not reported: %q", r.TextOf())
	}
}

func TestSandboxCoversBackgroundTasksAndTheirChildren(t *testing.T) {
	outside := tempDir(t)
	cmd := func(name string) string {
		return `sh -c '(sleep 0.1; echo pwned > ` + shq(filepath.Join(outside, name)) + `; echo finished > bg-done) & wait'`
	}
	// Calibration: without the sandbox the grandchild writes outside.
	free := newFix(t)
	id := free.start(cmd("free"))
	free.until(id, "")
	waitFile(t, free.path("bg-done"))
	if _, err := os.Stat(filepath.Join(outside, "free")); err != nil {
		t.Fatalf("calibration: the unconfined grandchild did not write: %v", err)
	}
	f := newFix(t, sandboxed(t))
	id = f.start(cmd("confined"))
	f.until(id, "")
	waitFile(t, f.path("bg-done"))
	if _, err := os.Stat(filepath.Join(outside, "confined")); err == nil {
		t.Fatal("a background task's grandchild wrote outside the roots")
	}
}

func TestSandboxSaysWhenTheNetworkIsOff(t *testing.T) {
	f := newFix(t, sandboxed(t))
	r := f.call(context.Background(), NameBash, map[string]any{"command": "exec 3<>/dev/tcp/10.255.255.1/80"})
	if !strings.Contains(r.TextOf(), "The sandbox gives commands no network") {
		t.Fatalf("no network note: %q", r.TextOf())
	}
}

func TestSandboxHoldsBashReadonlyWhereTheAllowlistErred(t *testing.T) {
	// A deployment's allowlist that names a program which writes: the analysis passes
	// it, the kernel does not.
	allow := append(append([]string(nil), shellscan.DefaultReadOnlyAllow...), "touch")
	free := newFix(t, func(c *Config) { c.ReadOnly, c.ReadonlyAllow = true, allow })
	if code, out := free.readonly("touch made"); code != "" {
		t.Fatalf("calibration: the allowlist did not pass touch: %s %s", code, out)
	}
	if _, err := os.Stat(free.path("made")); err != nil {
		t.Fatalf("calibration: touch did not write: %v", err)
	}
	sb := sandboxed(t)
	f := newFix(t, sb, func(c *Config) { c.ReadOnly, c.ReadonlyAllow = true, allow })
	f.readonly("touch made")
	if _, err := os.Stat(f.path("made")); err == nil {
		t.Fatal("bash_readonly wrote inside the root under the sandbox")
	}
}

// toolchain runs a project's tests through sandboxed Bash.
func toolchainTest(t *testing.T, prog string, files map[string]string, command, want string) {
	if _, err := exec.LookPath(prog); err != nil {
		t.Skipf("%s is not installed: %v", prog, err)
	}
	f := newFix(t, sandboxed(t))
	for name, body := range files {
		f.put(name, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r := f.call(ctx, NameBash, map[string]any{"command": command, "timeout": 300000})
	if r.IsError || !strings.Contains(r.TextOf(), want) || strings.Contains(r.TextOf(), "exited with") {
		t.Fatalf("%s under the sandbox: %s: %s", command, r.Code, r.TextOf())
	}
}

func TestSandboxedGoTestPasses(t *testing.T) {
	toolchainTest(t, "go", map[string]string{
		"go.mod":        "module example.com/fresh\n\ngo 1.22\n",
		"fresh.go":      "package fresh\n\nfunc Add(a, b int) int { return a + b }\n",
		"fresh_test.go": "package fresh\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"sum\")\n\t}\n\tif err := os.WriteFile(t.TempDir()+\"/x\", []byte(\"x\"), 0o644); err != nil {\n\t\tt.Fatal(err)\n\t}\n}\n",
	}, "go vet ./... && go test -count=1 ./...", "ok")
}

func TestSandboxedNpmTestPasses(t *testing.T) {
	toolchainTest(t, "npm", map[string]string{
		"package.json": `{"name":"fresh","version":"1.0.0","scripts":{"test":"node test.js"}}`,
		"test.js":      "const assert = require('assert'); const fs = require('fs'); const os = require('os'); assert.strictEqual(1 + 2, 3); fs.writeFileSync(os.tmpdir() + '/npm-test', 'x'); console.log('npm tests passed');\n",
	}, "npm test", "npm tests passed")
}

func TestSandboxedPythonTestsPass(t *testing.T) {
	toolchainTest(t, "python3", map[string]string{
		"test_fresh.py": "import tempfile, unittest\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(1 + 2, 3)\n        with tempfile.NamedTemporaryFile() as f:\n            f.write(b'x')\n",
	}, "python3 -m unittest -v 2>&1", "OK")
}

// BenchmarkBashTrueSandboxed is BenchmarkBashTrue with the kernel sandbox: the helper's
// exec, the namespaces, the mounts and Landlock are the difference.
func BenchmarkBashTrueSandboxed(b *testing.B) { benchBashTrueSandboxed(b) }

// BenchmarkBashTrueSandboxedCold is BenchmarkBashTrueSandboxed with spares off: every
// command's helper is the executable started again, its namespaces made then.
func BenchmarkBashTrueSandboxedCold(b *testing.B) {
	env.WarmStart(false)
	defer env.WarmStart(true)
	benchBashTrueSandboxed(b)
}

// BenchmarkBashTrueSandboxedPaced and its Cold twin leave 20 ms between commands, not
// timed, as a model's turn does: what a command costs when the machine had a moment
// to start the spare for it.
func BenchmarkBashTrueSandboxedPaced(b *testing.B) { benchBashTrueSandboxed(b, 20*time.Millisecond) }

func BenchmarkBashTrueSandboxedPacedCold(b *testing.B) {
	env.WarmStart(false)
	defer env.WarmStart(true)
	benchBashTrueSandboxed(b, 20*time.Millisecond)
}

func benchBashTrueSandboxed(b *testing.B, pace ...time.Duration) {
	k := sandbox.Probe()
	if !k.Available() {
		b.Skipf("no kernel sandbox on this machine: %s", k.Reason)
	}
	f := newFix(b, func(c *Config) { c.Sandbox = &Sandbox{Kernel: k} })
	f.put(".git/config", "[core]\n")
	tool := f.tools[NameBash]
	input := []byte(`{"command":"true"}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if r := tool.Run(ctx, input); r.IsError {
			b.Fatal(r.TextOf())
		}
		if len(pace) > 0 {
			b.StopTimer()
			time.Sleep(pace[0])
			b.StartTimer()
		}
	}
}

// BenchmarkBackgroundStartSandboxed and BenchmarkBackgroundStart measure starting a
// background task (the call that answers with its id), with and without the sandbox;
// waiting for the task to end is not timed.
func BenchmarkBackgroundStartSandboxed(b *testing.B) {
	k := sandbox.Probe()
	if !k.Available() {
		b.Skipf("no kernel sandbox on this machine: %s", k.Reason)
	}
	benchBackground(b, func(c *Config) { c.Sandbox = &Sandbox{Kernel: k} })
}

func BenchmarkBackgroundStart(b *testing.B) { benchBackground(b) }

func benchBackground(b *testing.B, configure ...func(*Config)) {
	f := newFix(b, configure...)
	b.ReportAllocs()
	for b.Loop() {
		id := f.start("true")
		b.StopTimer()
		f.set.mu.Lock()
		t := f.set.tasks[id]
		f.set.mu.Unlock()
		<-t.done
		b.StartTimer()
	}
}

// A set asked to confine on a kernel that cannot is refused by name, and leaves nothing
// behind.
func TestSandboxUnavailableIsRefused(t *testing.T) {
	scratch := t.TempDir()
	h := env.NewHost()
	fc, err := fence.New(context.Background(), fence.Config{Env: h, Root: tempDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(Config{Env: h, Fence: fc, ScratchDir: scratch, Sandbox: &Sandbox{Kernel: sandbox.Kernel{Reason: "no Landlock"}}})
	if !sema.IsCode(err, sandbox.CodeUnavailable) {
		t.Fatalf("err %v, want %s", err, sandbox.CodeUnavailable)
	}
	if ents, _ := os.ReadDir(scratch); len(ents) != 0 {
		t.Fatalf("the refused set left %v in its scratch directory", ents)
	}
}

// Each confined command mounts the caches' layers with work directories of its own
// (a background task and the next command may run at once), and they go when it ends:
// after foreground commands and a finished background task, the layer holds its upper
// directories and the work directories of the spare readied for the next command
// alone, which go with it.
func TestCommandsLeaveNoCacheWorkBehind(t *testing.T) {
	k := sandbox.Probe()
	if !k.Available() || !k.Overlay {
		t.Skipf("no cache layers on this machine: %s", k.Reason)
	}
	home, _ := os.UserHomeDir()
	_, write := sandbox.Toolchain(home, os.Getenv)
	if !slices.ContainsFunc(write, func(d string) bool { fi, err := os.Stat(d); return err == nil && fi.IsDir() }) {
		t.Skipf("no toolchain cache exists on this machine (of %v)", write)
	}
	f := newFix(t, sandboxed(t))
	f.bash("true")
	r := f.call(context.Background(), NameBash, map[string]any{"command": "sleep 0.2", "run_in_background": true})
	if r.IsError {
		t.Fatal(r.TextOf())
	}
	f.bash("true")
	time.Sleep(600 * time.Millisecond)
	f.bash("true") // the finished task is reaped by now
	layer := filepath.Join(f.set.ScratchDir(), "cache")
	uppers, _ := filepath.Glob(filepath.Join(layer, "*", "upper"))
	if len(uppers) == 0 {
		t.Fatalf("no cache layer was mounted (layer %s)", layer)
	}
	// What is left once the ended commands' helpers exited is held: the spares readied
	// for the next command.
	deadline := time.Now().Add(5 * time.Second)
	for {
		locks, _ := filepath.Glob(filepath.Join(layer, "*", "work-*.lock"))
		free := 0
		for _, l := range locks {
			if lockIsFree(t, l) {
				free++
			}
		}
		if free == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the work directories' locks are free (left by ended commands): %v", free, locks)
		}
		sandbox.SweepCacheWork(layer) // as the commands' own tidying does
		time.Sleep(50 * time.Millisecond)
	}
	env.EndPrimed(f.set.scratch)
	sandbox.SweepCacheWorkWhenFree(layer, 5*time.Second) // as Shutdown does
	if left, _ := filepath.Glob(filepath.Join(layer, "*", "work*")); len(left) != 0 {
		t.Fatalf("work directories left once the readied spare ended: %v", left)
	}
}

// lockIsFree reports whether no process holds the lock file path.
func lockIsFree(t *testing.T, path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false // gone: swept
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return false
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return true
}
