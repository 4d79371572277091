package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sema-agent/sema/model/anthropic/anthropictest"
	"github.com/sema-agent/sema/model/openai/openaitest"
)

// repo is the workspace the provider tests ask about.
var repo = map[string]string{
	"go.mod":        "module example.com/shop\n",
	"cart/cart.go":  "package cart\n\n// Total sums the cart.\nfunc Total(xs []int) int {\n\tt := 0\n\tfor _, x := range xs {\n\t\tt += x\n\t}\n\treturn t\n}\n",
	"cart/tax.go":   "package cart\n\n// TODO: rates per region\nconst Rate = 0.2\n",
	"docs/notes.md": "Nothing to see.\n",
	".gitignore":    "build/\n",
	"build/out.go":  "package build // TODO: ignored\n",
}

func anthropicEnv(srv *anthropictest.Server) []string {
	return []string{"ANTHROPIC_API_KEY=test-key", "ANTHROPIC_BASE_URL=" + srv.URL()}
}

func TestAnthropicMultiTurnReadTools(t *testing.T) {
	dir := writeTree(t, repo)
	srv := anthropictest.NewServer(t,
		anthropictest.Turn{Text: "Let me look.", ToolCalls: []anthropictest.ToolCall{
			{Name: "Glob", Input: `{"pattern":"**/*.go"}`},
			{Name: "Grep", Input: `{"pattern":"TODO","output_mode":"content","-n":true}`},
		}, Usage: anthropictest.Usage{InputTokens: 100, OutputTokens: 20, CacheCreationInputTokens: 50}},
		anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{{Name: "Read", Input: `{"file_path":"cart/cart.go"}`}},
			Usage: anthropictest.Usage{InputTokens: 10, OutputTokens: 5, CacheReadInputTokens: 150}},
		anthropictest.Turn{Text: "Total sums the cart; one TODO in cart/tax.go.", Usage: anthropictest.Usage{InputTokens: 10, OutputTokens: 12}},
	)
	r := sema(t, dir, anthropicEnv(srv), "", "run", "--model", "anthropic/claude-sonnet-4-5", "--output-format", "json", "what does cart do?")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	obj := jsonResult(t, r.stdout)
	if obj["status"] != "completed" || obj["num_turns"] != 3.0 || !strings.Contains(obj["result"].(string), "one TODO") {
		t.Fatalf("result %v", obj)
	}
	usage := obj["usage"].(map[string]any)
	if usage["input_tokens"] != 120.0 || usage["output_tokens"] != 37.0 || usage["cache_read_input_tokens"] != 150.0 || usage["cache_creation_input_tokens"] != 50.0 {
		t.Fatalf("usage %v", usage)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	if reqs[0].Header.Get("x-api-key") != "test-key" || reqs[0].Body["model"] != "claude-sonnet-4-5" {
		t.Fatalf("first request header/model: %v %v", reqs[0].Header, reqs[0].Body["model"])
	}
	// The second request carries the tool results of the first turn: the Glob answer
	// lists both Go files of the workspace but not the gitignored one, and the Grep
	// answer finds the TODO with its line number.
	second, _ := json.Marshal(reqs[1].Body["messages"])
	for _, want := range []string{"cart.go", "tax.go", "tax.go:3", "rates per region"} {
		if !strings.Contains(string(second), want) {
			t.Errorf("second request lacks %q", want)
		}
	}
	if strings.Contains(string(second), "build/out.go") {
		t.Errorf("an ignored file reached the model: %s", second)
	}
	third, _ := json.Marshal(reqs[2].Body["messages"])
	if !strings.Contains(string(third), "Total sums the cart") {
		t.Errorf("the Read result did not reach the model")
	}
}

func TestAnthropicRetriesThenSucceeds(t *testing.T) {
	srv := anthropictest.NewServer(t,
		anthropictest.Turn{Status: 429},
		anthropictest.Turn{Text: "fine"},
	)
	r := sema(t, t.TempDir(), anthropicEnv(srv), "", "-p", "hi", "--model", "anthropic/claude-sonnet-4-5")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "fine" || srv.RequestCount() != 2 {
		t.Fatalf("exit %d stdout %q stderr %q requests %d", r.code, r.stdout, r.stderr, srv.RequestCount())
	}
}

func TestAnthropicAuthErrorIsCoded(t *testing.T) {
	srv := anthropictest.NewServer(t, anthropictest.Turn{Status: 401})
	r := sema(t, t.TempDir(), anthropicEnv(srv), "", "run", "--model", "anthropic/claude-sonnet-4-5", "--output-format", "json", "hi")
	obj := jsonResult(t, r.stdout)
	if r.code != 1 || obj["status"] != "error" || obj["error"].(map[string]any)["code"] != "model.auth" || srv.RequestCount() != 1 {
		t.Fatalf("exit %d stdout %s requests %d", r.code, r.stdout, srv.RequestCount())
	}
}

func TestAnthropicMalformedStream(t *testing.T) {
	srv := anthropictest.NewServer(t, anthropictest.Turn{Text: "x", Fault: anthropictest.FaultMalformed})
	r := sema(t, t.TempDir(), anthropicEnv(srv), "", "run", "--model", "anthropic/claude-sonnet-4-5", "--output-format", "json", "hi")
	obj := jsonResult(t, r.stdout)
	if r.code != 1 || obj["error"].(map[string]any)["code"] != "model.malformed_stream" {
		t.Fatalf("exit %d stdout %s stderr %s", r.code, r.stdout, r.stderr)
	}
}

func TestMissingKeyNamesTheVariable(t *testing.T) {
	r := sema(t, t.TempDir(), nil, "", "run", "--model", "anthropic/claude-sonnet-4-5", "hi")
	if r.code != 2 || !strings.Contains(r.stderr, "ANTHROPIC_API_KEY") {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	r = sema(t, t.TempDir(), nil, "", "run", "--model", "openai/gpt-4.1", "hi")
	if r.code != 2 || !strings.Contains(r.stderr, "OPENAI_API_KEY") {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
}

// TestCancellationMidStream interrupts sema while the model stream stalls: the process
// ends promptly with status cancelled.
func TestCancellationMidStream(t *testing.T) {
	srv := anthropictest.NewServer(t, anthropictest.Turn{Text: "never", Fault: anthropictest.FaultStall})
	cmd := exec.Command(semaBin, "run", "--model", "anthropic/claude-sonnet-4-5", "--output-format", "json", "hi")
	cmd.Dir = t.TempDir()
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + cmd.Dir}, anthropicEnv(srv)...)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for srv.RequestCount() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // let the stream start
	start := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if took := time.Since(start); took > 20*time.Second { // a hang detector, not a speed test
		t.Fatalf("sema took %v to stop after SIGINT", took)
	}
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v", err)
	}
	if obj := jsonResult(t, out.String()); obj["status"] != "cancelled" {
		t.Fatalf("result %v", obj)
	}
}

func openaiEnv(srv *openaitest.Server) []string {
	return []string{"OPENAI_API_KEY=test-key", "OPENAI_BASE_URL=" + srv.URL()}
}

func TestOpenAIMultiTurnReadTools(t *testing.T) {
	dir := writeTree(t, repo)
	srv := openaitest.NewServer(t,
		openaitest.Turn{Text: "Looking.", ToolCalls: []openaitest.ToolCall{
			{Name: "Glob", Arguments: `{"pattern":"**/*.go"}`},
			{Name: "Grep", Arguments: `{"pattern":"TODO","output_mode":"files_with_matches"}`},
		}},
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "Read", Arguments: `{"file_path":"cart/tax.go"}`}}},
		openaitest.Turn{Text: "The tax rate is 0.2."},
	)
	r := sema(t, dir, openaiEnv(srv), "", "run", "--model", "openai/gpt-4.1", "--output-format", "stream-json", "what is the tax rate?")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	evs := streamEvents(t, r.stdout)
	last := evs[len(evs)-1]
	if last["type"] != "result" || last["status"] != "completed" || last["result"] != "The tax rate is 0.2." {
		t.Fatalf("last event %v", last)
	}
	var results []map[string]any
	for _, e := range evs {
		if e["type"] == "tool_result" {
			results = append(results, e)
		}
	}
	if len(results) != 3 {
		t.Fatalf("%d tool results", len(results))
	}
	for _, r := range results {
		if r["is_error"] != false {
			t.Errorf("tool result failed: %v", r)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || reqs[0].Header.Get("Authorization") != "Bearer test-key" {
		t.Fatalf("requests: %d", len(reqs))
	}
	second, _ := json.Marshal(reqs[1].Body)
	if !strings.Contains(string(second), `"role":"tool"`) || !strings.Contains(string(second), "tax.go") {
		t.Errorf("second request lacks the tool messages: %s", second)
	}
}

func TestOpenAICompatibleNeedsBaseURLAndWorksWithoutKey(t *testing.T) {
	r := sema(t, t.TempDir(), nil, "", "run", "--model", "openai-compatible/llama3.1", "hi")
	if r.code != 2 || !strings.Contains(r.stderr, "config.base_url_missing") {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	srv := openaitest.NewServer(t, openaitest.Turn{Text: "hello from llama"})
	r = sema(t, t.TempDir(), nil, "", "run", "--model", "openai-compatible/llama3.1", "--base-url", srv.URL(), "hi")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "hello from llama" {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if m := srv.Requests()[0].Body["model"]; m != "llama3.1" {
		t.Fatalf("model %v", m)
	}
}

func TestOpenAIRateLimitThenSuccessAndMalformed(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Turn{Status: 429}, openaitest.Turn{Text: "ok"})
	r := sema(t, t.TempDir(), openaiEnv(srv), "", "-p", "hi", "--model", "openai/gpt-4.1")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "ok" || srv.RequestCount() != 2 {
		t.Fatalf("exit %d stdout %q stderr %q requests %d", r.code, r.stdout, r.stderr, srv.RequestCount())
	}
	// A cut stream is retried within the budget (two retries by default); cut every
	// time, the call fails with the last attempt's error.
	cut := openaitest.Turn{Text: "x", Fault: openaitest.FaultTruncated}
	bad := openaitest.NewServer(t, cut, cut, cut)
	r = sema(t, t.TempDir(), openaiEnv(bad), "", "run", "--model", "openai/gpt-4.1", "--output-format", "json", "hi")
	if obj := jsonResult(t, r.stdout); r.code != 1 || obj["error"].(map[string]any)["code"] != "model.malformed_stream" || bad.RequestCount() != 3 {
		t.Fatalf("exit %d stdout %s requests %d", r.code, r.stdout, bad.RequestCount())
	}
}
