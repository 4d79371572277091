package shell

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/tools"
)

// The host starts programs from one goroutine that never returns (env/host_start_linux.go).
func TestMain(m *testing.M) {
	if dir := os.Getenv(orphanParentEnv); dir != "" {
		orphanParent(dir)
		return
	}
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/sema-agent/sema/env.startLoop"))
}

// fix is one leg's shell tools over a temporary task root on the host.
type fix struct {
	t     testing.TB
	root  string
	set   *Set
	tools map[string]tools.Tool
}

func newFix(t testing.TB, configure ...func(*Config)) *fix {
	t.Helper()
	root := tempDir(t)
	h := env.NewHost()
	fc, err := fence.New(context.Background(), fence.Config{Env: h, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Env: h, Fence: fc, ScratchDir: t.TempDir()}
	for _, c := range configure {
		c(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	f := &fix{t: t, root: root, set: s, tools: map[string]tools.Tool{}}
	for _, tl := range s.Tools() {
		f.tools[tl.Spec().Name] = tl
	}
	return f
}

// tempDir is a canonical temporary directory.
func tempDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (f *fix) call(ctx context.Context, tool string, input any) tools.Result {
	f.t.Helper()
	tl := f.tools[tool]
	if tl == nil {
		f.t.Fatalf("no tool %s mounted", tool)
	}
	b, err := json.Marshal(input)
	if err != nil {
		f.t.Fatal(err)
	}
	return tl.Run(ctx, b)
}

// bash runs a foreground command and fails the test on an error result.
func (f *fix) bash(command string) string {
	f.t.Helper()
	r := f.call(context.Background(), NameBash, map[string]any{"command": command})
	if r.IsError {
		f.t.Fatalf("Bash %q: %s: %s", command, r.Code, r.TextOf())
	}
	return r.TextOf()
}

func (f *fix) path(rel string) string { return filepath.Join(f.root, rel) }

func (f *fix) put(rel, content string) {
	f.t.Helper()
	p := f.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// waitFile polls until a file exists, failing the test after a generous bound.
func waitFile(t *testing.T, p string) []byte {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, err := os.ReadFile(p); err == nil && len(b) > 0 && bytes.HasSuffix(b, []byte("\n")) {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", p)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pidIn reads a pid a command wrote to a file.
func pidIn(t *testing.T, p string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(string(waitFile(t, p))))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// alive reports whether pid is a live process: present and not an unreaped exit.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		if os.IsNotExist(err) {
			return false
		}
		return syscall.Kill(pid, 0) == nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return true
	}
	return b[i+2] != 'Z' && b[i+2] != 'X'
}

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
}

// git runs git in dir with a fixed identity and no user or system configuration.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitTestEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

var gitTestEnv = []string{
	"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
	"GIT_AUTHOR_NAME=Tester", "GIT_AUTHOR_EMAIL=tester@example.com",
	"GIT_COMMITTER_NAME=Tester", "GIT_COMMITTER_EMAIL=tester@example.com",
}

// gitPrefix is the same fixed identity, spelled as assignments in front of a command.
const gitPrefix = "GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=Tester GIT_AUTHOR_EMAIL=tester@example.com GIT_COMMITTER_NAME=Tester GIT_COMMITTER_EMAIL=tester@example.com "
