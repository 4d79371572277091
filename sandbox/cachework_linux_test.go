//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sema-agent/sema/env"
)

// Commands of one leg may run at once over the same cache layer (a background task and
// the next command, MCP servers starting together): each mounts with work directories of
// its own, every write lands in the shared upper layer, the real cache stays as it was,
// and once they ended SweepCacheWork leaves no work directory behind.
func TestConcurrentCommandsShareACacheLayer(t *testing.T) {
	k := Probe()
	if !k.Available() || !k.MountNamespace || !k.Overlay {
		t.Skipf("no overlay mounts in the sandbox here: %s", k.Reason)
	}
	cache, layer, root := cacheDirs(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := Policy{Read: existing(resolved(systemReadable)), Write: []string{root},
				Caches: []string{cache}, CacheLayer: layer}
			var out strings.Builder
			var mu sync.Mutex
			w := writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(b) })
			req, err := k.Wrap(env.ExecRequest{Argv: []string{"sh", "-c", fmt.Sprintf("echo %d > %s/f%d && ls %s", i, cache, i, cache)},
				Dir: root, Stdout: w, Stderr: w}, p)
			if err == nil {
				var pr env.Process
				if pr, err = env.NewHost().Start(context.Background(), req); err == nil {
					var st env.ExitStatus
					st, err = pr.Wait()
					pr.Close()
					if err == nil && st.Code != 0 {
						mu.Lock()
						err = fmt.Errorf("exit %d: %s", st.Code, out.String())
						mu.Unlock()
					}
				}
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("command %d: %v", i, err)
		}
	}
	if ents, _ := os.ReadDir(cache); len(ents) != 0 {
		t.Errorf("the real cache was written: %v", ents)
	}
	uppers, _ := filepath.Glob(filepath.Join(layer, "*", "upper", "f*"))
	if len(uppers) != n {
		t.Errorf("the layer holds %d of the %d writes: %v", len(uppers), n, uppers)
	}
	if works, _ := filepath.Glob(filepath.Join(layer, "*", "work-*.lock")); len(works) != n {
		t.Errorf("%d work directories' locks for %d commands: %v", len(works), n, works)
	}
	if err := SweepCacheWorkWhenFree(layer, 5*time.Second); err != nil {
		t.Errorf("SweepCacheWorkWhenFree: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(layer, "*", "work*")); len(left) != 0 {
		t.Errorf("work directories left: %v", left)
	}
}

// A sweep while a command runs leaves that command's work directory (its lock is held
// by its helper) and removes the one of a command that ended; the running command
// still writes through its overlay afterwards.
func TestSweepLeavesARunningCommandsWork(t *testing.T) {
	k := Probe()
	if !k.Available() || !k.MountNamespace || !k.Overlay {
		t.Skipf("no overlay mounts in the sandbox here: %s", k.Reason)
	}
	cache, layer, root := cacheDirs(t)
	p := Policy{Read: existing(resolved(systemReadable)), Write: []string{root}, Caches: []string{cache}, CacheLayer: layer}
	run := func(script string) env.Process {
		t.Helper()
		var out strings.Builder
		var mu sync.Mutex
		w := writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(b) })
		req, err := k.Wrap(env.ExecRequest{Argv: []string{"sh", "-c", script}, Dir: root, Stdout: w, Stderr: w}, p)
		if err != nil {
			t.Fatal(err)
		}
		pr, err := env.NewHost().Start(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return pr
	}
	ended := run("true")
	if st, err := ended.Wait(); err != nil || st.Code != 0 {
		t.Fatalf("the first command: %v %+v", err, st)
	}
	ended.Close()
	gate := filepath.Join(root, "go")
	running := run(fmt.Sprintf("while [ ! -e %s ]; do sleep 0.01; done; echo late > %s/late", gate, cache))
	defer running.Close()
	var locks []string
	for deadline := time.Now().Add(10 * time.Second); len(locks) < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the running command's work directory never appeared: %v", locks)
		}
		locks, _ = filepath.Glob(filepath.Join(layer, "*", "work-*.lock"))
	}
	// The ended command's helper exits just after it reported: its work goes once it has.
	var left []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if err := SweepCacheWork(layer); err != nil {
			t.Fatalf("SweepCacheWork: %v", err)
		}
		if left, _ = filepath.Glob(filepath.Join(layer, "*", "work-*.lock")); len(left) <= 1 || time.Now().After(deadline) {
			break
		}
	}
	left, _ = filepath.Glob(filepath.Join(layer, "*", "work-*.lock"))
	if len(left) != 1 {
		t.Fatalf("after the sweep %d locks are left, want the running command's alone: %v", len(left), left)
	}
	if _, err := os.Stat(strings.TrimSuffix(left[0], ".lock")); err != nil {
		t.Fatalf("the running command's work directory went: %v", err)
	}
	os.WriteFile(gate, nil, 0o644)
	if st, err := running.Wait(); err != nil || st.Code != 0 {
		t.Fatalf("the running command: %v %+v", err, st)
	}
	if b, err := os.ReadFile(filepath.Join(layer, filepath.Base(filepath.Dir(left[0])), "upper", "late")); err != nil || string(b) != "late\n" {
		t.Fatalf("the running command's write after the sweep: %q %v", b, err)
	}
	SweepCacheWorkWhenFree(layer, 5*time.Second)
	if left, _ := filepath.Glob(filepath.Join(layer, "*", "work*")); len(left) != 0 {
		t.Errorf("work directories left once both ended: %v", left)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// cacheDirs makes a cache, a layer directory for it and a root, in a temporary directory.
func cacheDirs(t *testing.T) (cache, layer, root string) {
	dir := t.TempDir()
	cache, layer, root = filepath.Join(dir, "cache"), filepath.Join(dir, "layer"), filepath.Join(dir, "root")
	for _, d := range []string{cache, layer, root} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return cache, layer, root
}
