package files

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/env/envtest"
	"github.com/sema-agent/sema/tools"
)

// faultFix is the read tools over a host root behind a fault-injecting env.
func faultFix(t *testing.T) (*readFix, *envtest.Faulty) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := envtest.NewFaulty(env.NewHost())
	return newReadFixAt(t, e, root), e
}

func TestReadToolsReportEnvFailures(t *testing.T) {
	t.Parallel()
	f, e := faultFix(t)
	f.put(map[string]string{
		"ok/a.txt":     "needle\n",
		"locked/b.txt": "needle\n",
		"bad.txt":      "needle\n",
		"f.txt":        "text\n",
	})
	e.Inject(envtest.Errno(envtest.OpReadDir, f.path("locked"), syscall.EACCES))
	e.Inject(envtest.Errno(envtest.OpOpen, f.path("bad.txt"), syscall.EIO))
	e.Inject(envtest.Errno(envtest.OpOpen, f.path("f.txt"), syscall.EACCES))

	got := f.rel(f.ok("Grep", map[string]any{"pattern": "needle"}))
	want := "Found 1 file\n<root>/ok/a.txt\n(1 directory could not be read; 2 files could not be read.)"
	if got != want {
		t.Errorf("Grep:\ngot  %q\nwant %q", got, want)
	}
	got = f.rel(f.ok("Glob", map[string]any{"pattern": "**/*.txt"}))
	if !strings.Contains(got, "(1 directory could not be read; what is below is not listed.)") || strings.Contains(got, "b.txt") {
		t.Errorf("Glob: %q", got)
	}
	if got := f.ok("LS", map[string]any{}); !strings.Contains(got, "(1 directory could not be read.)") {
		t.Errorf("LS: %q", got)
	}
	if msg := f.fails("Read", map[string]any{"file_path": "f.txt"}, CodeReadFailed); !strings.Contains(msg, "permission denied") {
		t.Errorf("Read: %q", msg)
	}
	if _, ok := f.rs.Lookup(f.path("f.txt")); ok {
		t.Error("a failed read was recorded")
	}
}

// TestGrepCancelledMidWalk cancels a search while the walk is blocked in the env: the
// call answers "cancelled" and leaves no goroutine behind.
func TestGrepCancelledMidWalk(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	f, e := faultFix(t)
	files := map[string]string{}
	for _, d := range []string{"a", "b", "c"} {
		for _, n := range []string{"1", "2", "3"} {
			files[d+"/"+n+".txt"] = "needle\n"
		}
	}
	f.put(files)
	hold := make(chan struct{})
	defer close(hold)
	e.Inject(envtest.Fault{Op: envtest.OpReadDir, Path: f.path("b"), Hold: hold})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan tools.Result, 1)
	go func() {
		done <- f.tools["Grep"].Run(ctx, json.RawMessage(`{"pattern":"needle","output_mode":"content"}`))
	}()
	for e.Calls(envtest.OpReadDir) < 3 { // the root, a, and the held b
		time.Sleep(time.Millisecond)
	}
	cancel()
	r := <-done
	if !r.IsError || r.Code != tools.CodeCancelled {
		t.Errorf("a cancelled Grep answered %v %s: %s", r.IsError, r.Code, r.TextOf())
	}
}
