package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/internal/pgtest"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/anthropic"
	"github.com/sema-agent/sema/server"
)

// BenchmarkServeLoad is the service under load: SEMA_LOAD_SESSIONS (default 1,000)
// tasks submitted at once over the API, each a new session whose model (a local server
// speaking the Messages API's event stream) asks for one Read and then answers. It
// reports throughput, the engine's gap per turn (from the end of a response to the
// arrival of the session's next request: the runner, the tool, the store and the queue)
// at p50 and p99, errors, and — after a second wave of tasks that all park at a
// question — the heap and resident memory each idle parked session costs.
// SEMA_LOAD_MODEL_MS gives the model a think time per response (uniform between half and
// one and a half times it; default 0: it answers at once), as a real model has: the
// sessions then share the machine the way a service's do, instead of all competing for
// it at every instant. SEMA_LOAD_TOOL_TURNS is how many Reads a wave-1 session makes
// before it answers (default 1): with more, the gaps measured are mostly those of
// sessions under way rather than of sessions starting. SEMA_LOAD_LIMITS runs the
// sessions as a tenant the service does not trust would be run, with limits the load
// never reaches, so only their cost shows: "policy" gives the tenant a policy (rules,
// sandbox required, a turn and a token bound) and a concurrency limit, checked as each
// task is submitted and each leg starts; "day" adds a daily token budget, which every
// leg also checks after each response (its spend recorded, the tenant's day summed).
// The machine's one-minute load average at the end of wave 1 is reported too, since a
// shared machine's other work shows in the gaps. Run it with -benchtime 1x:
//
//	go test -run '^$' -bench ServeLoad -benchtime 1x ./server
func BenchmarkServeLoad(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("SEMA_LOAD_SESSIONS")); err == nil && v > 0 {
		n = v
	}
	for _, st := range []store{"sqlite", "postgres"} {
		b.Run(string(st), func(b *testing.B) {
			if st == "postgres" && !pgtest.Available(b) {
				b.Skip(pgtest.How)
			}
			for b.Loop() {
				serveLoad(b, st, n)
			}
		})
	}
}

func serveLoad(b *testing.B, st store, n int) {
	ctx := context.Background()
	base, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "f.txt"), []byte("hello\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	fake := newLoadModel(filepath.Join(base, "f.txt"), n)
	if v, err := strconv.Atoi(os.Getenv("SEMA_LOAD_MODEL_MS")); err == nil && v > 0 {
		fake.think = time.Duration(v) * time.Millisecond
	}
	if v, err := strconv.Atoi(os.Getenv("SEMA_LOAD_TOOL_TURNS")); err == nil && v > 0 {
		fake.reads = v
	}
	ms := httptest.NewServer(fake)
	defer ms.Close()
	// The provider's own client, as sema serve runs it.
	p, err := anthropic.New(anthropic.Config{APIKey: "load", BaseURL: ms.URL})
	if err != nil {
		b.Fatal(err)
	}
	cfg := server.Config{
		Home:         b.TempDir(),
		OpenProvider: func(string) (model.Provider, string, error) { return p, "claude-sonnet-4-5", nil },
		Workers:      n,
		Poll:         100 * time.Millisecond,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if st == "postgres" {
		cfg.Postgres = pgtest.Schema(b)
	}
	srv, err := server.New(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		b.Fatal(err)
	}
	api := httptest.NewServer(srv.Handler())
	defer func() {
		api.Close()
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		srv.Close()
	}()
	tok, err := loadTenant(ctx, srv, base, n, os.Getenv("SEMA_LOAD_LIMITS"))
	if err != nil {
		b.Fatal(err)
	}
	c := client.New(api.URL, tok)
	c.HTTP = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

	// Wave 1: n sessions that each read a file and answer.
	start := time.Now()
	ids, submitErrs := submitAll(ctx, c, n, func(i int) client.TaskSpec {
		return client.TaskSpec{Prompt: fmt.Sprintf("task %d: read f.txt", i), Cwd: base, AllowedTools: []string{"Read"}}
	})
	statuses := waitAll(ctx, c, ids, func(s string) bool { return s != client.StatusQueued && s != client.StatusRunning }, 10*time.Minute)
	wall := time.Since(start)
	errs := submitErrs
	for _, s := range statuses {
		if s != "completed" {
			errs++
		}
	}
	gaps, steady := fake.gaps()
	b.ReportMetric(float64(len(ids)-errs+submitErrs)/wall.Seconds(), "tasks/s")
	b.ReportMetric(float64(errs), "errors")
	b.ReportMetric(percentile(gaps, 50), "p50-gap-ms")
	b.ReportMetric(percentile(gaps, 99), "p99-gap-ms")
	if len(steady) > 0 {
		b.ReportMetric(percentile(steady, 99), "p99-started-gap-ms")
	}
	b.ReportMetric(loadAverage(), "loadavg-1m")

	// Wave 2: n sessions that park at a question and stay parked.
	fake.park.Store(true)
	runtime.GC()
	heap0, rss0 := memNow()
	parked, perrs := submitAll(ctx, c, n, func(i int) client.TaskSpec {
		return client.TaskSpec{Prompt: fmt.Sprintf("park %d: write g.txt", i), Cwd: base}
	})
	pst := waitAll(ctx, c, parked, func(s string) bool { return s != client.StatusQueued && s != client.StatusRunning }, 10*time.Minute)
	for _, s := range pst {
		if s != client.StatusAwaitingApproval {
			perrs++
		}
	}
	runtime.GC()
	heap1, rss1 := memNow()
	b.ReportMetric(float64(perrs), "park-errors")
	b.ReportMetric(float64(int64(heap1)-int64(heap0))/float64(n)/1024, "heap-KiB/parked")
	b.ReportMetric(float64(int64(rss1)-int64(rss0))/float64(n)/1024, "rss-KiB/parked")
}

// loadTenant creates the benchmark's tenant with the limits SEMA_LOAD_LIMITS names (see
// BenchmarkServeLoad) and returns its token.
func loadTenant(ctx context.Context, srv *server.Server, base string, n int, limits string) (string, error) {
	var cfg server.TenantConfig
	switch limits {
	case "":
		return srv.CreateToken(ctx, "load", base, cfg)
	case "day":
		cfg.TokensPerDay = 1 << 40 // far more than both waves spend
		fallthrough
	case "policy":
		cfg.MaxConcurrent = 2 * n // both waves' tasks at once
	default:
		return "", fmt.Errorf("SEMA_LOAD_LIMITS=%q: give policy, day, or nothing", limits)
	}
	tok, err := srv.CreateToken(ctx, "load", base, cfg)
	if err != nil {
		return "", err
	}
	return tok, srv.SetPolicy(ctx, "load", server.Policy{
		PermissionModes: []string{"default"}, Deny: []string{"Bash(curl:*)"}, Ask: []string{"WebFetch"},
		Sandbox: "required", Network: "off", MaxTurns: 50, MaxTokensPerTask: 1 << 30,
	})
}

// loadAverage is the machine's one-minute load average (0 where /proc has none).
func loadAverage() float64 {
	data, _ := os.ReadFile("/proc/loadavg")
	f, _ := strconv.ParseFloat(strings.Fields(string(data) + " 0")[0], 64)
	return f
}

func submitAll(ctx context.Context, c *client.Client, n int, spec func(int) client.TaskSpec) ([]string, int) {
	ids := make([]string, n)
	var errs atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			t, err := c.SubmitTask(ctx, spec(i))
			if err != nil {
				errs.Add(1)
				return
			}
			ids[i] = t.TaskID
		}()
	}
	wg.Wait()
	return slices.DeleteFunc(ids, func(s string) bool { return s == "" }), int(errs.Load())
}

// waitAll polls every task until done says its status is final, and returns them.
func waitAll(ctx context.Context, c *client.Client, ids []string, done func(string) bool, within time.Duration) []string {
	out := make([]string, len(ids))
	deadline := time.Now().Add(within)
	for i := 0; i < len(ids); {
		t, err := c.Task(ctx, ids[i])
		if err == nil && done(t.Status) {
			out[i] = t.Status
			i++
			continue
		}
		if time.Now().After(deadline) {
			out[i] = "timeout"
			i++
			continue
		}
		time.Sleep(50 * time.Millisecond)
	}
	return out
}

func memNow() (heap uint64, rss uint64) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	data, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			rss = kb * 1024
		}
	}
	return m.HeapInuse, rss
}

func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p/100))]
}

// loadModel is a Messages API server for many concurrent sessions: a conversation with
// reads tool results gets an answer, any other a tool call — a Read, or a Write (which
// asks for approval) once park is set. It keeps, per session (its first
// prompt), when its last response ended, and the gaps to the next request.
type loadModel struct {
	file  string
	think time.Duration // the mean time before a response starts
	reads int           // the Reads a session makes before it answers
	park  atomic.Bool
	mu    sync.Mutex
	last  map[string]time.Time
	gap   []float64
	// started is when the last session's first request arrived (zero until then, or
	// when park is set): the gaps measured after it are those of sessions under way,
	// none competing with a leg's start.
	started time.Time
	steady  []float64
	want    int // sessions in the wave
}

var bodyBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func newLoadModel(file string, sessions int) *loadModel {
	return &loadModel{file: file, reads: 1, last: map[string]time.Time{}, want: sessions}
}

func (m *loadModel) gaps() (all, steady []float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.gap), slices.Clone(m.steady)
}

func (m *loadModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	// The body is read into a pooled buffer and only what is needed is parsed: decoding
	// every body whole made this server a quarter of the process's allocation, and so of
	// the collections the service's gaps share the process with.
	buf := bodyBufs.Get().(*bytes.Buffer)
	buf.Reset()
	// Back in the pool before the think time: a thousand requests waiting held a
	// thousand buffers, a sixth of the live heap the service's collections scanned.
	putBuf := sync.OnceFunc(func() { bodyBufs.Put(buf) })
	defer putBuf()
	if _, err := buf.ReadFrom(r.Body); err != nil {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad body"}}`, http.StatusBadRequest)
		return
	}
	body := buf.Bytes()
	// The session is its first prompt's text (the blocks around it vary: a cache marker
	// moves along the conversation).
	var first struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	at := bytes.Index(body, []byte(`"messages":[`))
	if at < 0 || json.NewDecoder(bytes.NewReader(body[at+len(`"messages":[`):])).Decode(&first) != nil || len(first.Content) == 0 {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad body"}}`, http.StatusBadRequest)
		return
	}
	key := first.Content[0].Text
	// One Read a turn: a tool_result block per result message.
	results := bytes.Count(body, []byte(`"type":"tool_result"`))
	putBuf()
	m.mu.Lock()
	if end, ok := m.last[key]; ok {
		g := float64(arrived.Sub(end).Microseconds()) / 1000
		m.gap = append(m.gap, g)
		if !m.started.IsZero() {
			m.steady = append(m.steady, g)
		}
	} else if !m.park.Load() {
		m.last[key] = time.Time{}
		if len(m.last) == m.want {
			m.started = arrived
		}
	}
	m.mu.Unlock()
	if m.think > 0 {
		time.Sleep(m.think/2 + rand.N(m.think))
	}
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(name, data string) { fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data) }
	ev("message_start", `{"type":"message_start","message":{"id":"msg_load","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":20,"output_tokens":1}}}`)
	stop := "end_turn"
	if results >= m.reads || (results > 0 && m.park.Load()) {
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"done"}}`)
	} else {
		stop = "tool_use"
		name, input := "Read", map[string]string{"file_path": m.file}
		if m.park.Load() {
			name, input = "Write", map[string]string{"file_path": filepath.Join(filepath.Dir(m.file), "g.txt"), "content": "x"}
		}
		in, _ := json.Marshal(input)
		partial, _ := json.Marshal(string(in))
		ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_%d","name":%q,"input":{}}}`, arrived.UnixNano(), name))
		ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":%s}}`, partial))
	}
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
	ev("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":5}}`, stop))
	// The response ends with message_stop; the client may send the session's next
	// request as soon as it reads it, before this handler returns — so the end is taken
	// just before it is written.
	m.mu.Lock()
	m.last[key] = time.Now()
	m.mu.Unlock()
	ev("message_stop", `{"type":"message_stop"}`)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
