package replay_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/anthropic"
	"github.com/sema-agent/sema/model/anthropic/anthropictest"
	"github.com/sema-agent/sema/model/openai"
	"github.com/sema-agent/sema/model/openai/openaitest"
	"github.com/sema-agent/sema/model/providertest"
	"github.com/sema-agent/sema/model/replay"
	"github.com/sema-agent/sema/model/scripted"
)

// TestConformance records each of the suite's turns from the fake Anthropic API, with
// retries off, writes the recording to a file and replays it: a replay is a provider
// like any other.
func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Harness{New: func(t *testing.T, turns ...providertest.Turn) model.Provider {
		srv := anthropictest.NewServer(t)
		for _, turn := range turns {
			if turn.Failure == providertest.FailStall {
				t.Skip("a stalled call never ends, so there is nothing to record")
			}
			srv.Enqueue(anthropictest.ConformanceTurn(turn))
		}
		rec := replay.NewRecorder(newAnthropic(t, srv.URL()))
		for range turns {
			rec.Stream(context.Background(), prompt("record"), nil)
		}
		return load(t, rec)
	}})
}

// TestRoundTrip records a session from each fake API and replays it: the replay
// answers each call as the provider did, then says the recording has ended.
func TestRoundTrip(t *testing.T) {
	usage := anthropictest.Usage{InputTokens: 120, OutputTokens: 30, CacheReadInputTokens: 4000, CacheCreationInputTokens: 64}
	withAnthropic := func(t *testing.T) (model.Provider, int) {
		srv := anthropictest.NewServer(t,
			anthropictest.Turn{Text: "Let me look.", ToolCalls: []anthropictest.ToolCall{{Name: "Glob", Input: `{"pattern":"**/*.go"}`}, {Name: "Read", Input: `{"path":"a.go"}`}}, Usage: usage},
			anthropictest.Turn{Status: http.StatusNotFound, ErrorMessage: "model: claude-nope"},
			anthropictest.Turn{Thinking: "Two files.", Text: "There are two Go files.", Usage: usage},
			anthropictest.Turn{Text: "Cut", StopReason: "max_tokens"},
		)
		return newAnthropic(t, srv.URL()), srv.Remaining()
	}
	withOpenAI := func(t *testing.T) (model.Provider, int) {
		srv := openaitest.NewServer(t,
			openaitest.Turn{Text: "Let me look.", ToolCalls: []openaitest.ToolCall{{Name: "Glob", Arguments: `{"pattern":"**/*.go"}`}}, Usage: openaitest.Usage{PromptTokens: 500, CompletionTokens: 20, CachedTokens: 300}},
			openaitest.Turn{Status: http.StatusUnauthorized},
			openaitest.Turn{Text: "There are two Go files."},
		)
		p, err := openai.New(openai.Config{BaseURL: srv.URL(), MaxRetries: -1})
		if err != nil {
			t.Fatal(err)
		}
		return p, srv.Remaining()
	}
	for name, newProvider := range map[string]func(*testing.T) (model.Provider, int){"anthropic": withAnthropic, "openai": withOpenAI} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, calls := newProvider(t)
			rec := replay.NewRecorder(p)
			var recorded []answer
			for range calls {
				recorded = append(recorded, answerOf(rec.Stream(context.Background(), prompt("which files?"), nil)))
			}
			r := load(t, rec)
			if r.Remaining() != len(recorded) {
				t.Fatalf("the recording holds %d turns, want %d", r.Remaining(), len(recorded))
			}
			for i, want := range recorded {
				if diff := cmp.Diff(withoutThinking(want), answerOf(r.Stream(context.Background(), prompt("which files?"), nil))); diff != "" {
					t.Errorf("call %d replayed (-recorded +replayed):\n%s", i+1, diff)
				}
			}
			if r.Remaining() != 0 {
				t.Errorf("%d turns left after the whole run", r.Remaining())
			}
			if _, err := r.Stream(context.Background(), prompt("one more"), nil); !sema.IsCode(err, scripted.CodeExhausted) {
				t.Errorf("a call past the recording: %v, want %s", err, scripted.CodeExhausted)
			}
		})
	}
}

// TestRecorderLeavesCancelledCallsOut: a call the caller cancelled is its own doing,
// which a replay's caller does again; recording it would shift every later turn.
func TestRecorderLeavesCancelledCallsOut(t *testing.T) {
	rec := replay.NewRecorder(scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "only"}}}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := rec.Stream(ctx, prompt("hi"), nil); !sema.IsCode(err, model.CodeCancelled) {
		t.Fatalf("cancelled call: %v", err)
	}
	if _, err := rec.Stream(context.Background(), prompt("hi"), nil); err != nil {
		t.Fatal(err)
	}
	if got := rec.Script().Turns; len(got) != 1 || got[0].Text != "only" {
		t.Errorf("recorded %+v, want the one answered call", got)
	}
}

func TestLoadRefusesWhatIsNotARecording(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"turns":[{"txt":"typo"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	threads := filepath.Join(dir, "threads.json")
	if err := os.WriteFile(threads, []byte(`{"turns":[],"threads":[{"match":"explore","turns":[{"text":"x"}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{bad, threads, filepath.Join(dir, "missing.json")} {
		if _, err := replay.Load(path); !sema.IsCode(err, model.CodeConfig) {
			t.Errorf("Load(%s) = %v, want %s", filepath.Base(path), err, model.CodeConfig)
		}
	}
}

// answer is what the engine takes from one call.
type answer struct {
	Content    []model.Block
	StopReason model.StopReason
	Usage      model.Usage
	Code       string
	Message    string
}

func answerOf(resp *model.Response, err error) answer {
	if err != nil {
		var se *sema.Error
		if !errors.As(err, &se) {
			return answer{Message: err.Error()}
		}
		return answer{Code: se.Code, Message: se.Message}
	}
	return answer{Content: resp.Content, StopReason: resp.StopReason, Usage: resp.Usage}
}

// withoutThinking is a what a recording keeps of a: no thinking blocks.
func withoutThinking(a answer) answer {
	var kept []model.Block
	for _, b := range a.Content {
		if b.Kind != model.KindThinking {
			kept = append(kept, b)
		}
	}
	a.Content = kept
	return a
}

// load writes what rec recorded to a file and loads it back as a replay.
func load(t *testing.T, rec *replay.Recorder) *replay.Provider {
	t.Helper()
	path := filepath.Join(t.TempDir(), "recording.json")
	if err := rec.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	r, err := replay.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func newAnthropic(t *testing.T, url string) model.Provider {
	t.Helper()
	p, err := anthropic.New(anthropic.Config{APIKey: "sk-ant-test", BaseURL: url, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func prompt(s string) *model.Request {
	return &model.Request{Model: "claude-test", Messages: []model.Message{{Role: model.RoleUser, Content: []model.Block{model.TextBlock(s)}}}}
}
