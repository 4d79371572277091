package session_test

import (
	"encoding/json"
	"testing"

	"github.com/sema-agent/sema/session"
)

func TestCanonicalJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
		wantErr  bool
	}{
		{`{"b":1,"a":{"d":[3,2],"c":null}}`, `{"a":{"c":null,"d":[3,2]},"b":1}`, false},
		{" {\n\t\"x\" : 1.50e3 } ", `{"x":1.50e3}`, false},
		{`{"html":"<a href='x'>&</a>"}`, `{"html":"<a href='x'>&</a>"}`, false},
		{`{"a":1,"a":2}`, `{"a":2}`, false},
		{`"\u00e9"`, `"é"`, false},
		{`12345678901234567890123`, `12345678901234567890123`, false},
		{``, "", true},
		{`{"a":1} {"b":2}`, "", true},
		{`{"a":}`, "", true},
		{`[1,2`, "", true},
	} {
		got, err := session.CanonicalJSON([]byte(tc.in))
		if (err != nil) != tc.wantErr {
			t.Fatalf("CanonicalJSON(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
		}
		if string(got) != tc.want {
			t.Errorf("CanonicalJSON(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// The canonical form is a fixed point, is valid JSON, and exists for every valid value:
// the bytes an approver saw are the bytes that run and that were hashed.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"command":"ls","timeout":1}`, `[1,{"b":2,"a":[]}]`, `"x"`, `1e400`, `{"a":"\ud800"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		c, err := session.CanonicalJSON([]byte(in))
		if err != nil {
			var v any
			if json.Unmarshal([]byte(in), &v) == nil && json.Valid([]byte(in)) {
				t.Fatalf("a valid JSON value was refused: %q: %v", in, err)
			}
			return
		}
		if !json.Valid(c) {
			t.Fatalf("canonical form of %q is not JSON: %s", in, c)
		}
		again, err := session.CanonicalJSON(c)
		if err != nil || string(again) != string(c) {
			t.Fatalf("not a fixed point: %q → %s → %s (%v)", in, c, again, err)
		}
	})
}
