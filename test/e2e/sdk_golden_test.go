package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/sema-agent/sema/internal/golden"
)

// The Agent SDK protocol's transcripts, pinned: each archive in testdata/sdk is one
// session of sema started with the SDKs' launch line. Its sections:
//
//	args            extra flags, one a line (optional)
//	model           the scripted model's script
//	files/NAME      a file of the workspace (optional)
//	stdin           what the test does, a step a line:
//	                  a JSON object: send it; a control_request's control_response is
//	                  waited for at once, and filed right under the request
//	                  await TEXT: wait for a stdout line that contains TEXT
//	transcript      written by -update: "> " a line sent, "< " a line received
//	                (rewritten by golden.Rewriter), and the exit code last
//
// The lines received go into the transcript in the order sema wrote them, each under the
// step that waited for it (the lines after the last step, once stdin has ended, last),
// but for two kinds whose place is a race, which the protocol ties to their request by
// id rather than by place: the answers to the test's own control requests (sema answers
// them from another goroutine than the turn's) are filed right under the request, and
// sema's withdrawals of its own questions (control_cancel_request, written by the
// goroutine that asked, which an interrupted turn no longer waits for: it may come after
// the next turn's lines) are listed after everything else, before the exit code.
// `go test ./test/e2e -run Golden -update` rewrites the transcripts.
func TestGoldenSDKProtocol(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "sdk", "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no archives in testdata/sdk: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			t.Parallel()
			a := golden.Load(t, path)
			got := runSDKScenario(t, a)
			golden.Check(t, path, a, "transcript", got, *update)
		})
	}
}

// sdkScenarioTimeout bounds each wait of a scenario.
const sdkScenarioTimeout = 60 * time.Second

// sdkTranscript drives one scenario and records its transcript.
type sdkTranscript struct {
	t       *testing.T
	stdin   io.WriteCloser
	lines   chan string
	pending []string // received, not yet in the transcript
	// withdrawn are sema's control_cancel_request lines, listed last.
	withdrawn []string
	out       strings.Builder
	mu        sync.Mutex
	stderr    *strings.Builder
}

func runSDKScenario(t *testing.T, a *txtar.Archive) string {
	t.Helper()
	files := map[string]string{}
	for _, f := range a.Files {
		if name, ok := strings.CutPrefix(f.Name, "files/"); ok {
			files[name] = string(f.Data)
		}
	}
	dir := writeTree(t, files)
	homeDir := t.TempDir()
	script, _ := golden.Section(a, "model")
	scriptPath := writeScript(t, script)
	args := []string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json", "--sandbox=off", "--model=scripted/" + scriptPath}
	if extra, ok := golden.Section(a, "args"); ok {
		args = append(args, strings.Fields(extra)...)
	}
	steps, ok := golden.Section(a, "stdin")
	if !ok {
		t.Fatal("the archive has no stdin section")
	}

	sourcesOnce.Do(touchSources)
	ctx, cancel := context.WithTimeout(context.Background(), 2*sdkScenarioTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, semaBin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + homeDir, "SEMA_HOME=" + filepath.Join(homeDir, "state")}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	tr := &sdkTranscript{t: t, stdin: stdin, lines: make(chan string, 1024), stderr: &strings.Builder{}}
	cmd.Stderr = &lockedWriter{b: tr.stderr, mu: &tr.mu}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			tr.lines <- sc.Text()
		}
		close(tr.lines)
	}()

	for _, step := range strings.Split(strings.TrimSpace(steps), "\n") {
		step = strings.TrimSpace(step)
		switch {
		case step == "" || strings.HasPrefix(step, "#"):
		case strings.HasPrefix(step, "await "):
			text := strings.TrimPrefix(step, "await ")
			i := tr.find(func(l string) bool { return strings.Contains(l, text) }, "a line with "+text)
			tr.record(tr.pending[:i+1]...)
			tr.pending = slices.Delete(tr.pending, 0, i+1)
		default:
			tr.send(step)
		}
	}
	stdin.Close()
	for l := range tr.lines {
		tr.pending = append(tr.pending, l)
	}
	tr.record(tr.pending...)
	for _, l := range tr.withdrawn {
		tr.out.WriteString("< " + l + "\n")
	}
	code := 0
	if err := cmd.Wait(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("sema: %v", err)
		}
		code = ee.ExitCode()
	}
	fmt.Fprintf(&tr.out, "exit %d\n", code)

	var rw golden.Rewriter
	rw.Path(dir, "$ROOT")
	rw.Path(homeDir, "$HOME")
	rw.Path(scriptPath, "$SCRIPT")
	rw.Numbers("pid", "duration_ms", "duration_api_ms", "input_tokens", "output_tokens", "inputTokens", "outputTokens", "system_prompt_chars")
	return rw.Rewrite(tr.out.String())
}

// send writes one line; a control request's answer is then waited for and filed under it.
func (tr *sdkTranscript) send(line string) {
	tr.t.Helper()
	var req struct {
		Type      string `json:"type"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal([]byte(line), &req); err != nil {
		tr.t.Fatalf("a stdin step is neither JSON nor a directive: %q", line)
	}
	if _, err := io.WriteString(tr.stdin, line+"\n"); err != nil {
		tr.t.Fatalf("writing to sema: %v", err)
	}
	tr.out.WriteString("> " + line + "\n")
	if req.Type != "control_request" {
		return
	}
	want := `"request_id":` + strconv.Quote(req.RequestID)
	i := tr.find(func(l string) bool {
		return strings.HasPrefix(l, `{"response":`) && strings.Contains(l, `"type":"control_response"`) && strings.Contains(l, want)
	}, "the control_response to "+req.RequestID)
	tr.record(tr.pending[i])
	tr.pending = slices.Delete(tr.pending, i, i+1)
}

// find returns the index in pending of the first line match accepts, reading more lines
// until one comes.
func (tr *sdkTranscript) find(match func(string) bool, what string) int {
	tr.t.Helper()
	for i, l := range tr.pending {
		if match(l) {
			return i
		}
	}
	timeout := time.After(sdkScenarioTimeout)
	for {
		select {
		case l, ok := <-tr.lines:
			if !ok {
				tr.t.Fatalf("sema's stdout ended before %s\ntranscript so far:\n%s%s\nstderr:\n%s", what, tr.out.String(), strings.Join(tr.pending, "\n"), tr.errText())
			}
			tr.pending = append(tr.pending, l)
			if match(l) {
				return len(tr.pending) - 1
			}
		case <-timeout:
			tr.t.Fatalf("no %s within %s\ntranscript so far:\n%s%s\nstderr:\n%s", what, sdkScenarioTimeout, tr.out.String(), strings.Join(tr.pending, "\n"), tr.errText())
		}
	}
}

func (tr *sdkTranscript) record(lines ...string) {
	for _, l := range lines {
		if strings.Contains(l, `"type":"control_cancel_request"`) {
			tr.withdrawn = append(tr.withdrawn, l)
			continue
		}
		tr.out.WriteString("< " + l + "\n")
	}
}

func (tr *sdkTranscript) errText() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.stderr.String()
}
