package scripted

import (
	"context"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
)

func TestParseRefusesBadScripts(t *testing.T) {
	for _, bad := range []string{
		`{"turns":[{"txt":"typo"}]}`,
		`{"turns":[{"tool_calls":[{"input":{}}]}]}`,
		`{"turns":[{"tool_calls":[{"name":"Read","input":"{not json"}]}]}`,
		`not json`,
	} {
		if _, err := Parse([]byte(bad)); sema.CodeOf(err) != model.CodeConfig {
			t.Errorf("Parse(%s) = %v, want %s", bad, err, model.CodeConfig)
		}
	}
}

func TestReplayInOrderThenExhausted(t *testing.T) {
	s, err := Parse([]byte(`{"turns":[{"text":"a b","tool_calls":[{"name":"Read"}]},{"error":{"code":"model.overloaded","message":"busy"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	p := New(s)
	var deltas string
	resp, err := p.Stream(context.Background(), &model.Request{}, func(d model.Delta) { deltas += d.Text })
	if err != nil || resp.StopReason != model.StopToolUse || deltas != "a b" || string(resp.ToolCalls()[0].Input) != "{}" {
		t.Fatalf("turn 1: %+v %v %q", resp, err, deltas)
	}
	if _, err := p.Stream(context.Background(), &model.Request{}, nil); sema.CodeOf(err) != model.CodeOverloaded {
		t.Fatalf("turn 2: %v", err)
	}
	if _, err := p.Stream(context.Background(), &model.Request{}, nil); sema.CodeOf(err) != CodeExhausted {
		t.Fatalf("turn 3: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New(s).Stream(ctx, &model.Request{}, nil); sema.CodeOf(err) != model.CodeCancelled {
		t.Fatalf("cancelled: %v", err)
	}
}

// Threads answer each conversation from its own turns, whatever the order the
// conversations' requests arrive in.
func TestThreadsAnswerTheirOwnConversation(t *testing.T) {
	s, err := Parse([]byte(`{"turns": [{"text": "main 1"}, {"text": "main 2"}],
		"threads": [{"match": "find the tests", "turns": [{"text": "explore 1"}, {"text": "explore 2"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	p := New(s)
	ask := func(first string) string {
		t.Helper()
		req := &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: []model.Block{model.TextBlock(first)}}}}
		resp, err := p.Stream(context.Background(), req, nil)
		if err != nil {
			return sema.CodeOf(err)
		}
		return resp.Text()
	}
	got := []string{ask("please find the tests now"), ask("the task"), ask("find the tests"), ask("the task"), ask("find the tests")}
	want := []string{"explore 1", "main 1", "explore 2", "main 2", CodeExhausted}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("answer %d = %q, want %q", i+1, got[i], want[i])
		}
	}
	if _, err := Parse([]byte(`{"turns": [], "threads": [{"match": "", "turns": []}]}`)); sema.CodeOf(err) != model.CodeConfig {
		t.Errorf("a thread without a match: %v, want %s", err, model.CodeConfig)
	}
}
