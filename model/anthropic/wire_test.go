package anthropic

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// decoded is what a wireEvent says, in plain values, for comparisons.
type decoded struct {
	Type         string
	Index        count
	Model        string
	MessageUsage usage
	Usage        usage
	Block, Delta decodedContent
}

type decodedContent struct {
	Type, Text, Thinking, Signature, ID, Name, PartialJSON, StopReason string
	Input                                                              string // raw JSON
}

func plainEvent(e *wireEvent) decoded {
	c := func(c content) decodedContent {
		return decodedContent{
			Type: string(c.Type), Text: string(c.Text), Thinking: string(c.Thinking), Signature: string(c.Signature),
			ID: string(c.ID), Name: string(c.Name), PartialJSON: string(c.PartialJSON), StopReason: string(c.StopReason),
			Input: string(c.Input),
		}
	}
	return decoded{
		Type: string(e.Type), Index: e.Index, Model: string(e.Model), MessageUsage: e.MessageUsage, Usage: e.Usage,
		Block: c(e.Block), Delta: c(e.Delta),
	}
}

func TestDecodeEvent(t *testing.T) {
	t.Parallel()
	n := func(v int64) count { return count{N: v, OK: true} }
	tests := []struct {
		name, data string
		want       decoded
	}{
		{
			name: "message_start",
			data: msgStart,
			want: decoded{Type: "message_start", Model: "claude-x", MessageUsage: usage{Input: n(10), Output: n(1), CacheRead: n(2), CacheWrite: n(3)}},
		},
		{
			name: "text delta with escapes, a surrogate pair and a lone surrogate",
			data: `{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"a\"b\\c\/\n\t\u00e9\ud83d\ude00\ud800x"}}`,
			want: decoded{Type: "content_block_delta", Index: n(3), Delta: decodedContent{Type: "text_delta", Text: "a\"b\\c/\n\té😀\uFFFDx"}},
		},
		{
			name: "invalid UTF-8 becomes U+FFFD",
			data: "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"a\xffb\"}}",
			want: decoded{Type: "content_block_delta", Index: n(0), Delta: decodedContent{Type: "text_delta", Text: "a\uFFFDb"}},
		},
		{
			name: "tool_use start keeps its input raw",
			data: `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"Read","input":{"a": [1, {"b": null}]}}}`,
			want: decoded{Type: "content_block_start", Index: n(1), Block: decodedContent{Type: "tool_use", ID: "toolu_1", Name: "Read", Input: `{"a": [1, {"b": null}]}`}},
		},
		{
			name: "message_delta with null and missing counts, whitespace everywhere",
			data: " {\n \"type\" : \"message_delta\" ,\r\n\t\"delta\" : {\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":7,\"input_tokens\":null}} \n",
			want: decoded{Type: "message_delta", Delta: decodedContent{StopReason: "end_turn"}, Usage: usage{Output: n(7)}},
		},
		{
			name: "fields of other types are zero; unknown fields are skipped",
			data: `{"type":"content_block_delta","index":1.5,"extra":[true,false,null,-0.5e+3,"x",{}],"delta":{"type":"text_delta","text":5}}`,
			want: decoded{Type: "content_block_delta", Delta: decodedContent{Type: "text_delta"}},
		},
		{
			name: "the last of a duplicated key counts",
			data: `{"type":"x","type":"ping","delta":{"text":"a"},"delta":{"type":"t"},"index":1,"index":"2"}`,
			want: decoded{Type: "ping", Delta: decodedContent{Type: "t"}},
		},
		{
			name: "integers at the edges of int64",
			data: `{"index":-9223372036854775808,"usage":{"input_tokens":9223372036854775807,"output_tokens":9223372036854775808,"cache_read_input_tokens":-0}}`,
			want: decoded{Index: n(-1 << 63), Usage: usage{Input: n(1<<63 - 1), CacheRead: n(0)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var e wireEvent
			if err := e.decode([]byte(tt.data)); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if diff := cmp.Diff(tt.want, plainEvent(&e)); diff != "" {
				t.Errorf("event (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeEventRefuses(t *testing.T) {
	t.Parallel()
	for _, data := range []string{
		``, ` `, `null`, `[]`, `"x"`, `{`, `{"type"}`, `{"type":}`, `{"type":"x",}`, `{"type":"x"}}`, `{"type":"x"} x`,
		`{"a":01}`, `{"a":1.}`, `{"a":1e}`, `{"a":-}`, `{"a":.5}`, `{"a":+1}`, `{"a":tru}`, `{"a":nul}`, `{"a":[1,]}`,
		`{"a":"\x"}`, `{"a":"\u12G4"}`, "{\"a\":\"\x01\"}", `{"a":"unterminated}`, `{'a':1}`, `{a:1}`,
		`{"a":1 "b":2}`, `{"a":[1 2]}`, `{"a":"\`,
	} {
		var e wireEvent
		if err := e.decode([]byte(data)); err == nil {
			t.Errorf("decode(%q) = nil, want an error", data)
		}
	}
}

func TestDecodeEventDepth(t *testing.T) {
	t.Parallel()
	// encoding/json takes 10000 levels of nesting and refuses one more; so does decode.
	for _, depth := range []int{maxDepth, maxDepth + 1} {
		data := `{"a":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`
		var e wireEvent
		err := e.decode([]byte(data))
		if valid := json.Valid([]byte(data)); (err == nil) != valid {
			t.Errorf("depth %d: decode error %v, json.Valid %v", depth, err, valid)
		}
	}
}

// FuzzDecodeEvent holds decode to encoding/json: it accepts exactly the JSON objects
// encoding/json accepts, and reads the same values from them.
func FuzzDecodeEvent(f *testing.F) {
	for _, s := range []string{
		msgStart, msgStop, textStart(0), textDelta(2, "héllo \"x\"\n"), blockStop(1), msgDelta("tool_use"),
		toolStart(1, "toolu_1", "Bash"), inputDelta(1, `{"command": "ls`),
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":"sig"}}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":1,"cache_read_input_tokens":null,"output_tokens":2.5}}`,
		`{"type":"x","type":3,"delta":{"text":"\ud83d\ude00\udc00"},"index":-0}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		var e wireEvent
		err := e.decode([]byte(data))
		trimmed := bytes.TrimLeft([]byte(data), " \t\r\n")
		wantOK := json.Valid([]byte(data)) && len(trimmed) > 0 && trimmed[0] == '{'
		if (err == nil) != wantOK {
			t.Fatalf("decode(%q) error = %v; encoding/json says valid object: %v", data, err, wantOK)
		}
		if err != nil {
			return
		}
		dec := json.NewDecoder(strings.NewReader(data))
		dec.UseNumber()
		var top map[string]any
		if err := dec.Decode(&top); err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		got := plainEvent(&e)
		message, _ := top["message"].(map[string]any)
		want := decoded{
			Type:         str(top["type"]),
			Index:        num(top["index"]),
			Model:        str(message["model"]),
			MessageUsage: usageOf(message["usage"]),
			Usage:        usageOf(top["usage"]),
		}
		for _, c := range []struct {
			key      string
			got, dst *decodedContent
		}{{"content_block", &got.Block, &want.Block}, {"delta", &got.Delta, &want.Delta}} {
			m, _ := top[c.key].(map[string]any)
			*c.dst = decodedContent{
				Type: str(m["type"]), Text: str(m["text"]), Thinking: str(m["thinking"]), Signature: str(m["signature"]),
				ID: str(m["id"]), Name: str(m["name"]), PartialJSON: str(m["partial_json"]), StopReason: str(m["stop_reason"]),
			}
			// The raw input must say what encoding/json read.
			in, ok := m["input"]
			if ok != (c.got.Input != "") {
				t.Fatalf("%s.input: present %v, raw %q", c.key, ok, c.got.Input)
			}
			if ok {
				var v any
				d := json.NewDecoder(strings.NewReader(c.got.Input))
				d.UseNumber()
				if err := d.Decode(&v); err != nil || !reflect.DeepEqual(v, in) {
					t.Fatalf("%s.input: raw %q reads as %v (%v), want %v", c.key, c.got.Input, v, err, in)
				}
				c.dst.Input = c.got.Input
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("decode(%q) (-encoding/json +decode):\n%s", data, diff)
		}
	})
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func num(v any) count {
	n, ok := v.(json.Number)
	if !ok {
		return count{}
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		return count{}
	}
	return count{N: i, OK: true}
}

func usageOf(v any) usage {
	m, _ := v.(map[string]any)
	return usage{
		Input: num(m["input_tokens"]), Output: num(m["output_tokens"]),
		CacheRead: num(m["cache_read_input_tokens"]), CacheWrite: num(m["cache_creation_input_tokens"]),
	}
}
