package todo

import (
	"encoding/json"
	"testing"
)

// Each refusal names its item by its code; a good list parses, [] is an empty list.
func TestParse(t *testing.T) {
	for _, c := range []struct{ input, code string }{
		{`{"todos":[{"content":" ","status":"pending","activeForm":"x"}]}`, CodeContentEmpty},
		{`{"todos":[{"content":"a","status":"done","activeForm":"x"}]}`, CodeStatusInvalid},
		{`{"todos":[{"content":"a","status":"pending","activeForm":""}]}`, CodeActiveFormEmpty},
		{`{"todos":[{"content":"a","status":"pending","activeForm":"x","id":"1"},{"content":"b","status":"pending","activeForm":"y","id":"1"}]}`, CodeIDDuplicate},
	} {
		if _, bad := Parse(json.RawMessage(c.input)); bad == nil || bad.Code != c.code {
			t.Errorf("%s: %+v, want %s", c.input, bad, c.code)
		}
	}
	list, bad := Parse(json.RawMessage(`{"todos":[]}`))
	if bad != nil || list == nil || len(list) != 0 {
		t.Fatalf("an empty list: %v %+v", list, bad)
	}
	list, bad = Parse(json.RawMessage(`{"todos":[{"content":"a","status":"completed","activeForm":"x"}]}`))
	if bad != nil || len(list) != 1 || Answer(list) != "The todo list is updated: 1 items, 1 completed, 0 in progress, 0 pending. Every item is done." {
		t.Fatalf("a done list: %v %+v %q", list, bad, Answer(list))
	}
}
