package instrfiles

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// Each read tool names its path in its own field; Glob's is its directory joined with
// the static start of its pattern.
func TestReadPath(t *testing.T) {
	abs := filepath.FromSlash("/w/sub")
	for _, c := range []struct{ tool, input, want string }{
		{"Read", `{"file_path":"/w/a/b.go","path":"/ignored"}`, "/w/a/b.go"},
		{"LS", `{"path":"/w/a"}`, "/w/a"},
		{"Grep", `{"pattern":"x","path":"/w/g"}`, "/w/g"},
		{"Glob", `{"pattern":"src/pkg/**/*.go","path":"/w"}`, filepath.Join("/w", "src", "pkg")},
		{"Glob", `{"pattern":"/w/sub/*.go"}`, abs},
		{"Glob", `{"pattern":"*.go","path":"/w"}`, "/w"},
		{"Read", `not json`, ""},
	} {
		if got := ReadPath(c.tool, json.RawMessage(c.input)); got != c.want {
			t.Errorf("ReadPath(%s, %s) = %q, want %q", c.tool, c.input, got, c.want)
		}
	}
}
