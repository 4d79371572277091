package e2e

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
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
