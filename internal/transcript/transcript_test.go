package transcript

import (
	"encoding/json"
	"testing"

	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/tools/files"
)

func entry(t *testing.T, id, kind string, payload any) session.Entry {
	t.Helper()
	data, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	return session.Entry{ID: id, Kind: kind, Payload: data}
}

func ptr(n int) *int { return &n }

// A stored transcript must keep reading the same way: the payloads' JSON names are the
// stored format.
func TestPayloadShapes(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{Assistant{Turn: 2, Message: model.Message{Role: model.RoleAssistant}, Intents: true, Boundaries: ptr(3)},
			`{"turn":2,"message":{"role":"assistant","content":null},"intents":true,"boundaries":3}`},
		{Assistant{Turn: 1, Message: model.Message{Role: model.RoleAssistant}},
			`{"turn":1,"message":{"role":"assistant","content":null}}`},
		{CallStarted{ID: "c1", Tool: "Write"}, `{"id":"c1","tool":"Write"}`},
		{ReadState{Forget: []string{"a.go"}}, `{"forget":["a.go"]}`},
		{ReadState{}, `{}`},
		{Rewind{ToTurn: 4}, `{"to_turn":4}`},
	} {
		got, err := json.Marshal(c.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("%T encodes as %s, want %s", c.v, got, c.want)
		}
	}
	var rs ReadState
	if err := json.Unmarshal([]byte(`{"records":{"a.go":{}},"forget":["b.go"]}`), &rs); err != nil {
		t.Fatal(err)
	}
	if _, ok := rs.Records["a.go"]; !ok || len(rs.Forget) != 1 || rs.Forget[0] != "b.go" {
		t.Errorf("read state decodes as %+v", rs)
	}
}

func chain(t *testing.T) []session.Entry {
	return []session.Entry{
		entry(t, "u1", KindUser, model.Message{Role: model.RoleUser}),
		entry(t, "a1", KindAssistant, Assistant{Turn: 1, Boundaries: ptr(0)}),
		entry(t, "r1", KindToolResults, model.Message{Role: model.RoleUser}),
		entry(t, "a2", KindAssistant, Assistant{Turn: 2}), // no boundary count recorded
		entry(t, "r2", KindToolResults, model.Message{Role: model.RoleUser}),
		entry(t, "a3", KindAssistant, Assistant{Turn: 3, Boundaries: ptr(2)}),
	}
}

func TestTurnStart(t *testing.T) {
	c := chain(t)
	for _, tc := range []struct {
		turn  int
		head  string
		at    *int
		found bool
	}{
		{turn: 0, head: "a3", at: ptr(0), found: true}, // the beginning: at is 0, head unused
		{turn: 1, head: "u1", at: ptr(0), found: true},
		{turn: 2, head: "r1", found: true}, // recorded no count
		{turn: 3, head: "r2", at: ptr(2), found: true},
		{turn: 4, head: "a3", found: false},
	} {
		head, at, found := TurnStart(c, tc.turn)
		if found != tc.found || (found && tc.turn > 0 && head != tc.head) {
			t.Errorf("turn %d: head %q found %v, want %q %v", tc.turn, head, found, tc.head, tc.found)
		}
		if (at == nil) != (tc.at == nil) || (at != nil && *at != *tc.at) {
			t.Errorf("turn %d: at %v, want %v", tc.turn, at, tc.at)
		}
	}
}

// A chain that skips a turn's number (a rewind branched it away) returns to the first
// turn at or after it, and does not claim its boundary count.
func TestTurnStartPastAGap(t *testing.T) {
	c := []session.Entry{
		entry(t, "u1", KindUser, model.Message{Role: model.RoleUser}),
		entry(t, "a3", KindAssistant, Assistant{Turn: 3, Boundaries: ptr(5)}),
	}
	head, at, found := TurnStart(c, 2)
	if !found || head != "u1" || at != nil {
		t.Errorf("turn 2 of a chain at turn 3: head %q at %v found %v", head, at, found)
	}
}

func TestCutAt(t *testing.T) {
	c := chain(t)
	if got := CutAt(c, "r1"); len(got) != 3 || got[2].ID != "r1" {
		t.Errorf("cut at r1 keeps %d entries", len(got))
	}
	if got := CutAt(c, "missing"); len(got) != len(c) {
		t.Errorf("a cut at an id the chain lacks keeps %d of %d entries", len(got), len(c))
	}
}

func TestReadChange(t *testing.T) {
	stored := map[string]files.ReadRecord{"same": {Size: 1, Hash: "a"}, "changed": {Size: 1, Hash: "a"}, "gone": {}, "also-gone": {}}
	now := map[string]files.ReadRecord{"same": {Size: 1, Hash: "a"}, "changed": {Size: 2, Hash: "b"}, "new": {Hash: "c"}}
	c := ReadChange(stored, now)
	if len(c.Records) != 2 || c.Records["changed"].Hash != "b" || c.Records["new"].Hash != "c" {
		t.Errorf("records %v, want changed and new", c.Records)
	}
	if len(c.Forget) != 2 || c.Forget[0] != "also-gone" || c.Forget[1] != "gone" {
		t.Errorf("forget %v, want also-gone and gone, sorted", c.Forget)
	}
	if c := ReadChange(now, now); c.Records != nil || c.Forget != nil {
		t.Errorf("no change: %+v", c)
	}
}
