package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkEditTask19 runs the sema process through a scripted 19-request edit task
// (globs, greps, reads, edits and writes over six Go files, then an answer) against a
// local server that streams the Anthropic Messages API's events, with a fresh state
// directory each time. It reports what the process costs, model time excluded:
//   - cpu-ms: the process's user + system time;
//   - maxrss-MiB: its peak resident set;
//   - first-request-ms: process start to the first request's arrival;
//   - gap-ms/turn: the mean time from the end of one response to the arrival of the
//     next request (the engine's turn plus the tool's run);
//   - wall-ms: the whole run.
func BenchmarkEditTask19(b *testing.B) {
	files := map[string]string{}
	for _, n := range []string{"a", "b", "c", "e", "f"} {
		var s strings.Builder
		fmt.Fprintf(&s, "package demo\n\n// TODO: document %s.\n", n)
		for i := range 40 {
			fmt.Fprintf(&s, "func %s%d() int { return %d }\n", strings.ToUpper(n), i, i)
		}
		files[n+".go"] = s.String()
	}
	var root string
	script := func() []scriptedTurn {
		p := func(name string) string { return filepath.Join(root, name) }
		read := func(name string) scriptedTurn { return toolTurn("Read", map[string]any{"file_path": p(name)}) }
		edit := func(name, from, to string) scriptedTurn {
			return toolTurn("Edit", map[string]any{"file_path": p(name), "old_string": from, "new_string": to})
		}
		return []scriptedTurn{
			toolTurn("Glob", map[string]any{"pattern": "**/*.go"}),
			read("a.go"), edit("a.go", "func A1() int { return 1 }", "func A1() int { return 100 }"),
			read("b.go"), edit("b.go", "func B2() int { return 2 }", "func B2() int { return 200 }"),
			toolTurn("Grep", map[string]any{"pattern": "func [A-Z]3\\(", "output_mode": "content"}),
			read("c.go"), edit("c.go", "func C3() int { return 3 }", "func C3() int { return 300 }"),
			toolTurn("Write", map[string]any{"file_path": p("d_test.go"), "content": "package demo\n\nimport \"testing\"\n\nfunc TestA1(t *testing.T) {\n\tif A1() != 100 {\n\t\tt.Fatal(A1())\n\t}\n}\n"}),
			read("e.go"), edit("e.go", "func E4() int { return 4 }", "func E4() int { return 400 }"),
			read("f.go"), edit("f.go", "func F5() int { return 5 }", "func F5() int { return 500 }"),
			toolTurn("Grep", map[string]any{"pattern": "TODO", "output_mode": "files_with_matches"}),
			read("a.go"), edit("a.go", "// TODO: document a.", "// Package demo returns numbers."),
			toolTurn("Write", map[string]any{"file_path": p("NOTES.md"), "content": "# Notes\n\nA1, B2, C3, E4 and F5 return hundreds now.\n"}),
			toolTurn("Glob", map[string]any{"pattern": "*.md"}),
			{text: "Done: five functions changed, a test and notes written."},
		}
	}
	for b.Loop() {
		b.StopTimer()
		root = writeTree(b, files)
		b.StartTimer()
		st := runScripted(b, root, script(), "--permission-mode", "acceptEdits")
		if st.requests != 19 {
			b.Fatalf("the task made %d requests, want 19", st.requests)
		}
		if got, _ := os.ReadFile(filepath.Join(root, "a.go")); !strings.Contains(string(got), "return 100") || !strings.Contains(string(got), "Package demo") {
			b.Fatalf("a.go was not edited:\n%s", got)
		}
		st.report(b)
	}
}

// BenchmarkLongTaskTurnCost runs the sema process through 300 requests that each read a
// 1 KB file, and reports the engine's gap (end of a response to the next request's
// arrival) around turn 10 and around turn 300: with a transcript that grows every turn,
// a cost per turn that grows with it shows here.
func BenchmarkLongTaskTurnCost(b *testing.B) {
	const turns = 300
	files := map[string]string{}
	for i := range 5 {
		files[fmt.Sprintf("f%d.txt", i)] = strings.Repeat(fmt.Sprintf("line of file %d\n", i), 70)
	}
	for b.Loop() {
		b.StopTimer()
		root := writeTree(b, files)
		script := make([]scriptedTurn, 0, turns)
		for i := range turns - 1 {
			script = append(script, toolTurn("Read", map[string]any{"file_path": filepath.Join(root, fmt.Sprintf("f%d.txt", i%5))}))
		}
		script = append(script, scriptedTurn{text: "read them all"})
		b.StartTimer()
		st := runScripted(b, root, script)
		if st.requests != turns {
			b.Fatalf("the task made %d requests, want %d", st.requests, turns)
		}
		st.report(b)
		b.ReportMetric(st.meanGap(6, 15), "gap-ms/turn10")
		b.ReportMetric(st.meanGap(turns-9, turns), "gap-ms/turn300")
	}
}

// scriptedTurn is one streamed response: a tool call, or an answer when tool is empty.
type scriptedTurn struct {
	tool  string
	input string
	text  string
}

func toolTurn(name string, input map[string]any) scriptedTurn {
	raw, err := json.Marshal(input)
	if err != nil {
		panic(err)
	}
	return scriptedTurn{tool: name, input: string(raw)}
}

// taskStats is what one scripted run measured.
type taskStats struct {
	requests     int
	wall, cpu    time.Duration
	maxRSS       int64 // KiB
	firstRequest time.Duration
	// gaps[i] is the time from the end of response i-1 to the arrival of request i;
	// gaps[0] is unused.
	gaps []time.Duration
}

func (s taskStats) meanGap(from, to int) float64 {
	from, to = max(from, 1), min(to, len(s.gaps)-1)
	var sum time.Duration
	for _, g := range s.gaps[from : to+1] {
		sum += g
	}
	return float64(sum.Microseconds()) / float64(to-from+1) / 1000
}

func (s taskStats) report(b *testing.B) {
	b.ReportMetric(float64(s.cpu.Microseconds())/1000, "cpu-ms")
	b.ReportMetric(float64(s.maxRSS)/1024, "maxrss-MiB")
	b.ReportMetric(float64(s.firstRequest.Microseconds())/1000, "first-request-ms")
	b.ReportMetric(s.meanGap(1, len(s.gaps)-1), "gap-ms/turn")
	b.ReportMetric(float64(s.wall.Microseconds())/1000, "wall-ms")
}

// runScripted runs `sema run` in root against a server that answers each request with
// the next scripted turn, streamed as the Anthropic Messages API streams.
func runScripted(b *testing.B, root string, script []scriptedTurn, flags ...string) taskStats {
	b.Helper()
	var (
		mu            sync.Mutex
		st            taskStats
		arrived, done []time.Time
		start         time.Time
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		mu.Lock()
		n := len(arrived)
		arrived = append(arrived, now)
		done = append(done, time.Time{})
		mu.Unlock()
		io.Copy(io.Discard, r.Body)
		if n >= len(script) {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"no scripted turn left"}}`)
			return
		}
		streamTurn(w, n, script[n])
		end := time.Now()
		mu.Lock()
		done[n] = end
		mu.Unlock()
	}))
	defer srv.Close()
	home := b.TempDir()
	args := append([]string{"run", "--model", "anthropic/claude-sonnet-4-5", "--output-format", "json"}, flags...)
	args = append(args, "do the task")
	cmd := exec.Command(semaBin, args...)
	cmd.Dir = root
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ANTHROPIC_API_KEY=test-key", "ANTHROPIC_BASE_URL=" + srv.URL}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	start = time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("sema: %v\nstdout: %s\nstderr: %s", err, out.String(), errb.String())
	}
	st.wall = time.Since(start)
	st.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		st.maxRSS = ru.Maxrss
	}
	var res struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(out.String()), &res); err != nil || res.Status != "completed" {
		b.Fatalf("the task did not complete (%v): %s\n%s", err, out.String(), errb.String())
	}
	mu.Lock()
	defer mu.Unlock()
	st.requests = len(arrived)
	if st.requests > 0 {
		st.firstRequest = arrived[0].Sub(start)
	}
	st.gaps = make([]time.Duration, st.requests)
	for i := 1; i < st.requests; i++ {
		// The next request can arrive a moment before the handler that answered the
		// last one has taken the time; that gap is nil, not negative.
		st.gaps[i] = max(0, arrived[i].Sub(done[i-1]))
	}
	return st
}

// streamTurn writes one response as the Messages API streams it: message_start, a
// block's start, deltas and stop, message_delta with the stop reason, message_stop.
func streamTurn(w http.ResponseWriter, n int, t scriptedTurn) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	event := func(name string, data any) {
		raw, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, raw)
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_%03d", n), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 100 + 40*n, "output_tokens": 1, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
	}})
	stop := "end_turn"
	if t.tool == "" {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, part := range strings.SplitAfter(t.text, " ") {
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": part}})
		}
	} else {
		stop = "tool_use"
		event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%03d", n), "name": t.tool, "input": map[string]any{}}})
		for i := 0; i < len(t.input); i += 24 {
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": t.input[i:min(i+24, len(t.input))]}})
		}
	}
	event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 30}})
	event("message_stop", map[string]any{"type": "message_stop"})
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
