// Package e2e drives the built sema binary as a user would: real processes, real files,
// and fake model servers that speak the providers' wire formats.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// semaBin is the binary under test, built once by TestMain.
var semaBin string

func TestMain(m *testing.M) {
	serveTinyMCP()
	if bin := os.Getenv("SEMA_E2E_BIN"); bin != "" {
		// A binary built elsewhere (say, to profile it after the run, or to compare
		// two builds in the benchmarks).
		semaBin = bin
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "sema-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	semaBin = filepath.Join(dir, "sema")
	// sema-serve beside sema: `sema serve` runs it.
	build := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "../../cmd/sema", "../../cmd/sema-serve")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building sema:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is what one invocation of the binary produced.
type result struct {
	code           int
	stdout, stderr string
}

// sema runs the binary with args in dir, with a clean environment plus extra variables.
func sema(t *testing.T, dir string, env []string, stdin string, args ...string) result {
	t.Helper()
	sourcesOnce.Do(touchSources)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, semaBin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running sema: %v", err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// writeTree creates files (name → content) under a new temp dir and returns it.
func writeTree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// jsonResult decodes a --output-format json result object.
func jsonResult(t *testing.T, stdout string) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(stdout), &obj); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	return obj
}

// streamEvents decodes --output-format stream-json lines.
func streamEvents(t *testing.T, stdout string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Fatalf("line is not JSON: %v\n%s", err, line)
		}
		evs = append(evs, obj)
	}
	return evs
}

var sourcesOnce sync.Once

// touchSources stats every Go source of the module. The go command's test cache records
// the files a test looks at (once the tests run, not in TestMain), so this makes a cached e2e result stale whenever the code
// the binary is built from changes.
func touchSources() {
	filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") {
			os.Stat(path)
		}
		return nil
	})
}
