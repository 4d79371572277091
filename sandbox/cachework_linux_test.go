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

	"github.com/sema-agent/sema/env"
)

// Commands of one leg may run at once over the same cache layer (a background task and
// the next command, MCP servers starting together): each mounts with work directories of
// its own, every write lands in the shared upper layer, the real cache stays as it was,
// and RemoveCacheWork leaves no work directory behind.
func TestConcurrentCommandsShareACacheLayer(t *testing.T) {
	k := Probe()
	if !k.Available() || !k.MountNamespace || !k.Overlay {
		t.Skipf("no overlay mounts in the sandbox here: %s", k.Reason)
	}
	dir := t.TempDir()
	cache, layer, root := filepath.Join(dir, "cache"), filepath.Join(dir, "layer"), filepath.Join(dir, "root")
	for _, d := range []string{cache, layer, root} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	works := make([]string, n)
	for i := range n {
		works[i] = NewCacheWork()
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := Policy{Read: existing(resolved(systemReadable)), Write: []string{root},
				Caches: []string{cache}, CacheLayer: layer, CacheWork: works[i]}
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
	for _, w := range works {
		if err := RemoveCacheWork(layer, w); err != nil {
			t.Errorf("RemoveCacheWork: %v", err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(layer, "*", "work*")); len(left) != 0 {
		t.Errorf("work directories left: %v", left)
	}
	// A name NewCacheWork could not have made is never a path to remove.
	for _, bad := range []string{"", "../x", "a/b", "ZZ", strings.Repeat("a", 65)} {
		if validCacheWork(bad) {
			t.Errorf("%q accepted as a work name", bad)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
