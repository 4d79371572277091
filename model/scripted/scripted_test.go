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
