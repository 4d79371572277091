package mcp

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
)

// guardOutput runs input through a frameGuard of the given limit and returns what it
// hands on, and the drops it reported.
func guardOutput(t *testing.T, input string, limit int) (string, []drop) {
	t.Helper()
	var drops []drop
	g := newFrameGuard(io.NopCloser(strings.NewReader(input)), limit, func(size int64, response bool) {
		drops = append(drops, drop{size, response})
	})
	out, err := io.ReadAll(g)
	if err != nil {
		t.Fatalf("reading through the guard: %v", err)
	}
	return string(out), drops
}

// drop is one report of a message over the limit.
type drop struct {
	size     int64
	response bool
}

func TestFrameGuard(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 200)
	cases := []struct {
		name  string
		input string
		want  []string // the messages handed on; "ERR id" is the error answer to id
		drops []bool   // the messages over the limit: whether each was a response
	}{
		{name: "small messages pass", input: "{\"a\":1}\n{\"b\":2}\n", want: []string{"{\"a\":1}\n", "{\"b\":2}\n"}},
		{name: "last message without newline", input: "{\"a\":1}\n{\"b\":2}", want: []string{"{\"a\":1}\n", "{\"b\":2}"}},
		{name: "exactly the limit", input: `{"s":"` + strings.Repeat("x", 91) + "\"}\n", want: []string{`{"s":"` + strings.Repeat("x", 91) + "\"}\n"}},
		{
			name:  "response with a number id is answered",
			input: `{"jsonrpc":"2.0","id":7,"result":{"text":"` + big + "\"}}\n{\"ok\":1}\n",
			want:  []string{"ERR 7", "{\"ok\":1}\n"}, drops: []bool{true},
		},
		{
			name:  "id after the result, as other SDKs write it",
			input: `{"result":{"text":"` + big + `","id":99},"jsonrpc":"2.0","id":"req-1"}` + "\n",
			want:  []string{`ERR "req-1"`}, drops: []bool{true},
		},
		{
			name:  "id inside a string or a nested object is not the id",
			input: `{"result":{"id":5,"t":"\"id\":6,` + big + `"},"id":-3}` + "\n",
			want:  []string{"ERR -3"}, drops: []bool{true},
		},
		{
			name:  "notification over the limit is dropped",
			input: `{"jsonrpc":"2.0","method":"notifications/message","params":{"d":"` + big + "\"}}\n{\"ok\":1}\n",
			want:  []string{"{\"ok\":1}\n"}, drops: []bool{false},
		},
		{
			name:  "request from the server over the limit is dropped",
			input: `{"jsonrpc":"2.0","id":1,"method":"x","params":{"d":"` + big + "\"}}\n",
			drops: []bool{false},
		},
		{
			name:  "batch over the limit is dropped",
			input: `[{"jsonrpc":"2.0","id":1,"result":"` + big + "\"}]\n",
			drops: []bool{false},
		},
		{
			name:  "id that is an object is no id",
			input: `{"id":{"a":1},"result":"` + big + "\"}\n",
			drops: []bool{false},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, drops := guardOutput(t, c.input, 100)
			for _, w := range c.want {
				line, rest, _ := strings.Cut(got, "\n")
				if rest != "" || strings.HasSuffix(got, "\n") {
					line += "\n"
				}
				got = rest
				id, isErr := strings.CutPrefix(w, "ERR ")
				if !isErr {
					if line != w {
						t.Fatalf("handed on %q, want %q", line, w)
					}
					continue
				}
				var resp struct {
					ID    json.RawMessage `json:"id"`
					Error struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					} `json:"error"`
				}
				if err := json.Unmarshal([]byte(line), &resp); err != nil || string(resp.ID) != id || resp.Error.Code != rpcMessageTooLarge ||
					!strings.Contains(resp.Error.Message, "limit of 100 bytes") {
					t.Fatalf("handed on %q, want the error answer to %s", line, id)
				}
			}
			if got != "" {
				t.Fatalf("handed on %q more", got)
			}
			var want []drop
			for _, line := range strings.SplitAfter(c.input, "\n") {
				if len(line) > 100 {
					want = append(want, drop{int64(len(line)), c.drops[len(want)]})
				}
			}
			if fmt.Sprint(drops) != fmt.Sprint(want) {
				t.Fatalf("drops %v, want %v", drops, want)
			}
		})
	}
}

// The answer in place of an oversized response decodes as a JSON-RPC error response.
func TestFrameGuardAnswerIsJSONRPC(t *testing.T) {
	t.Parallel()
	got, _ := guardOutput(t, `{"jsonrpc":"2.0","id":12,"result":"`+strings.Repeat("y", 500)+"\"}\n", 64)
	var resp struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int    `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(got), &resp); err != nil {
		t.Fatalf("%q: %v", got, err)
	}
	if resp.JSONRPC != "2.0" || resp.ID != 12 || resp.Error.Code != rpcMessageTooLarge || !strings.Contains(resp.Error.Message, "over the client's limit of 64 bytes") {
		t.Fatalf("answer %+v", resp)
	}
}

// However the bytes of a message are split and whatever they hold, the scanner never
// panics, and what it reports as an id is a JSON number or string of bounded length.
func FuzzIDScanner(f *testing.F) {
	for _, s := range []string{`{"id":1,"result":{}}`, `{"result":"\"id\":2","id":"a\"b"}`, `[{"id":1}]`, `{"id":{"x":1}}`, `{"id":1e5,"method":"m"}`, `{"id`, `"`} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, msg string, split int) {
		var sc idScanner
		if split > 0 && split < len(msg) {
			sc.feed([]byte(msg[:split]))
			sc.feed([]byte(msg[split:]))
		} else {
			sc.feed([]byte(msg))
		}
		id, response := sc.result()
		if !response {
			return
		}
		if len(id) == 0 || len(id) > maxIDLen || !json.Valid(id) {
			t.Fatalf("scanning %q gave the id %q", msg, id)
		}
		var v any
		if err := json.Unmarshal(id, &v); err != nil {
			t.Fatal(err)
		}
		switch v.(type) {
		case string, float64:
		default:
			t.Fatalf("scanning %q gave the id %q, neither a number nor a string", msg, id)
		}
	})
}

// eventWatch reports an event over its limit however the stream is split into reads,
// and only such an event.
func TestEventWatch(t *testing.T) {
	t.Parallel()
	small := "event: message\ndata: {\"a\":1}\n\n"
	large := "event: message\ndata: " + strings.Repeat("z", 100) + "\n\n"
	cases := []struct {
		name   string
		stream string
		want   bool
	}{
		{"small events", strings.Repeat(small, 20), false},
		{"small events, CRLF", strings.Repeat(strings.ReplaceAll(small, "\n", "\r\n"), 20), false},
		{"one large event", small + large + small, true},
		{"a large event over many data lines", "data: " + strings.Repeat("z", 30) + "\ndata: " + strings.Repeat("z", 30) + "\ndata: " + strings.Repeat("z", 30) + "\n\n", true},
	}
	for _, c := range cases {
		for _, chunk := range []int{1, 3, 7, 1000} {
			reported := false
			w := &eventWatch{ReadCloser: io.NopCloser(&chunkReader{s: c.stream, n: chunk}), limit: 80, overLimit: func() { reported = true }}
			if _, err := io.ReadAll(w); err != nil {
				t.Fatal(err)
			}
			if reported != c.want {
				t.Errorf("%s, read %d bytes at a time: reported %v, want %v", c.name, chunk, reported, c.want)
			}
		}
	}
}

// chunkReader reads s at most n bytes at a time.
type chunkReader struct {
	s string
	n int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.n)], r.s)
	r.s = r.s[n:]
	return n, nil
}
