package e2e

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkColdStartToFirstRequest measures the time from starting the sema process to
// its first request reaching the model server: process start, flag parsing, provider
// and fence setup, the sandbox probe (off: none), system prompt. The server answers 401
// so the process exits at once.
func BenchmarkColdStartToFirstRequest(b *testing.B) {
	for _, mode := range []string{"auto", "off"} {
		b.Run("sandbox="+mode, func(b *testing.B) { coldStart(b, mode) })
	}
}

func coldStart(b *testing.B, sandboxMode string) {
	srv, arrived := firstRequestServer()
	defer srv.Close()
	dir := b.TempDir()
	var total time.Duration
	for b.Loop() {
		cmd := exec.Command(semaBin, "run", "--sandbox", sandboxMode, "--model", "anthropic/claude-sonnet-4-5", "hello")
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "ANTHROPIC_API_KEY=test-key", "ANTHROPIC_BASE_URL=" + srv.URL}
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		select {
		case at := <-arrived:
			total += at.Sub(start)
		case <-time.After(10 * time.Second):
			b.Fatal("no request arrived")
		}
		cmd.Wait()
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms-to-first-request")
}

// minimalClient is the floor a process's first request is compared with: a Go program
// that only posts to the server named by its one argument and exits.
const minimalClient = `package main

import (
	"net/http"
	"os"
	"strings"
)

func main() {
	resp, err := http.Post(os.Args[1], "application/json", strings.NewReader("{}"))
	if err == nil {
		resp.Body.Close()
	}
}
`

// BenchmarkFirstRequestPaired measures, in one run and alternately, the time from
// starting a process to its first request reaching the model server for sema (sandbox
// auto, a fresh state directory each time, as a first run in a repository has) and for
// a minimal Go HTTP client built from the same toolchain: the machine's floor for
// "start a Go program and reach a local server". It reports both and their ratio, and
// the same for testdata/floorclient (floor-ms, floor-ratio): a program that links only
// the Anthropic SDK and SQLite and does only what a first request needs with them — how
// much of sema's time the work itself asks for, and how much the rest of the binary.
func BenchmarkFirstRequestPaired(b *testing.B) {
	dir := b.TempDir()
	src := filepath.Join(dir, "client")
	if err := os.MkdirAll(src, 0o755); err != nil {
		b.Fatal(err)
	}
	os.WriteFile(filepath.Join(src, "main.go"), []byte(minimalClient), 0o644)
	os.WriteFile(filepath.Join(src, "go.mod"), []byte("module client\n\ngo 1.22\n"), 0o644)
	client := filepath.Join(dir, "minimal-client")
	build := exec.Command("go", "build", "-o", client, ".")
	build.Dir = src
	build.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building the minimal client: %v\n%s", err, out)
	}
	floor := filepath.Join(dir, "floor-client")
	build = exec.Command("go", "build", "-o", floor, "./testdata/floorclient")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building the floor client: %v\n%s", err, out)
	}
	srv, arrived := firstRequestServer()
	defer srv.Close()
	firstRequest := func(cmd *exec.Cmd) time.Duration {
		b.Helper()
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer cmd.Wait()
		select {
		case at := <-arrived:
			return at.Sub(start)
		case <-time.After(10 * time.Second):
			b.Fatal("no request arrived")
			return 0
		}
	}
	var semaTotal, minimalTotal, floorTotal time.Duration
	for b.Loop() {
		home := b.TempDir() // a fresh state directory
		cmd := exec.Command(semaBin, "run", "--sandbox", "auto", "--model", "anthropic/claude-sonnet-4-5", "hello")
		cmd.Dir = home
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ANTHROPIC_API_KEY=test-key", "ANTHROPIC_BASE_URL=" + srv.URL}
		semaTotal += firstRequest(cmd)
		minimalTotal += firstRequest(exec.Command(client, srv.URL+"/v1/messages"))
		fc := exec.Command(floor)
		fc.Env = []string{"HOME=" + b.TempDir(), "ANTHROPIC_API_KEY=test-key", "ANTHROPIC_BASE_URL=" + srv.URL}
		floorTotal += firstRequest(fc)
	}
	n := float64(b.N)
	b.ReportMetric(float64(semaTotal.Microseconds())/n/1000, "sema-ms")
	b.ReportMetric(float64(minimalTotal.Microseconds())/n/1000, "minimal-ms")
	b.ReportMetric(float64(semaTotal)/float64(minimalTotal), "ratio")
	b.ReportMetric(float64(floorTotal.Microseconds())/n/1000, "floor-ms")
	b.ReportMetric(float64(floorTotal)/float64(minimalTotal), "floor-ratio")
}

// firstRequestServer is a model server that notes when each first request arrives (on
// arrived, one at a time) and answers 401, so the process exits at once.
func firstRequestServer() (*httptest.Server, <-chan time.Time) {
	arrived := make(chan time.Time, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- time.Now():
		default:
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`))
	}))
	return srv, arrived
}
