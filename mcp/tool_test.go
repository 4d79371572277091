package mcp

import (
	"strings"
	"testing"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestRequiresUserInteractionMeta(t *testing.T) {
	t.Parallel()
	cases := []struct {
		meta sdk.Meta
		want bool
	}{
		{nil, false},
		{sdk.Meta{"requiresUserInteraction": true}, true},
		{sdk.Meta{"requires_user_interaction": true}, true},
		{sdk.Meta{"requiresUserInteraction": "true"}, true},
		{sdk.Meta{"requiresUserInteraction": "TRUE"}, true},
		{sdk.Meta{"requiresUserInteraction": false}, false},
		{sdk.Meta{"requiresUserInteraction": "yes"}, false},
		{sdk.Meta{"requiresUserInteraction": 1}, false},
		{sdk.Meta{"other": true}, false},
	}
	for _, c := range cases {
		if got := requiresUserInteraction(c.meta); got != c.want {
			t.Errorf("requiresUserInteraction(%v) = %v, want %v", c.meta, got, c.want)
		}
	}
}

func TestObjectSchema(t *testing.T) {
	t.Parallel()
	cases := []struct {
		schema any
		want   string
		ok     bool
	}{
		{nil, `{"type":"object"}`, false},
		{map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}, `{"properties":{"a":{"type":"string"}},"type":"object"}`, true},
		{map[string]any{"type": "string"}, `{"type":"object"}`, false},
		{map[string]any{"properties": map[string]any{}}, `{"type":"object"}`, false},
		{[]any{1}, `{"type":"object"}`, false},
		{map[string]any{"type": "object", "description": strings.Repeat("d", maxSchema)}, `{"type":"object"}`, false},
	}
	for _, c := range cases {
		got, ok := objectSchema(c.schema)
		if string(got) != c.want || ok != c.ok {
			t.Errorf("objectSchema(%.60v) = %s, %v; want %s, %v", c.schema, got, ok, c.want, c.ok)
		}
	}
}

// newTool bounds what a server's listing puts before the model.
func TestNewToolBounds(t *testing.T) {
	t.Parallel()
	c := &conn{srv: Server{Name: "s"}}
	long := newTool(c, &sdk.Tool{Name: "t", Description: strings.Repeat("é", 2000), InputSchema: map[string]any{"type": "object"}}, "mcp__s__t")
	if d := long.spec.Description; len(d) > maxDescription+len("…") || !strings.HasSuffix(d, "…") || !utf8.ValidString(d) {
		t.Fatalf("a long description became %d bytes", len(d))
	}
	bare := newTool(c, &sdk.Tool{Name: "t", InputSchema: map[string]any{"type": "array"}}, "mcp__s__t")
	if d := bare.spec.Description; !strings.Contains(d, `The tool "t" of the MCP server "s"`) || !strings.Contains(d, "input schema is missing") {
		t.Fatalf("description %q", d)
	}
	if string(bare.spec.InputSchema) != `{"type":"object"}` {
		t.Fatalf("schema %s", bare.spec.InputSchema)
	}
}
