package mcp

import (
	"context"
	"fmt"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sema-agent/sema/mcp/internal/testserver"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/tools"
)

// convertWith converts res as a mount with the given output limit would.
func convertWith(t *testing.T, limit int, res *sdk.CallToolResult) tools.Result {
	t.Helper()
	opts, err := Options{OutputLimit: limit}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	m := &Mount{opts: opts}
	tl := &tool{c: &conn{m: m, srv: Server{Name: "s"}}, name: "t", spec: tools.Spec{Name: "mcp__s__t"}}
	return m.convert(context.Background(), tl, res)
}

// Whatever a server sends, the text of a Result stays within the budget (but for the
// client's one closing line), and images within their count.
func TestConvertBounds(t *testing.T) {
	t.Parallel()
	many := func(n int, c func(i int) sdk.Content) []sdk.Content {
		out := make([]sdk.Content, n)
		for i := range out {
			out[i] = c(i)
		}
		return out
	}
	png := testserver.PNG(4, 4)
	cases := []struct {
		name    string
		content []sdk.Content
		images  int
		last    string
	}{
		{"many links", many(1000, func(i int) sdk.Content {
			return &sdk.ResourceLink{URI: fmt.Sprintf("https://x/%d/%s", i, strings.Repeat("p", 2000)), Description: strings.Repeat("d", 600)}
		}), 0, "[Output truncated"},
		{"many blobs", many(1000, func(int) sdk.Content {
			return &sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///b", MIMEType: strings.Repeat("m", 500), Blob: []byte{1}}}
		}), 0, "[Output truncated"},
		{"many texts", many(1000, func(int) sdk.Content { return &sdk.TextContent{Text: strings.Repeat("t", 100)} }), 0, "[Output truncated"},
		{"many images", many(50, func(int) sdk.Content { return &sdk.ImageContent{Data: png, MIMEType: "image/png"} }), maxImages, "[30 more images not shown"},
		{"nothing", nil, 0, "(The tool returned no content.)"},
	}
	for _, c := range cases {
		r := convertWith(t, 1000, &sdk.CallToolResult{Content: c.content})
		text, images := 0, 0
		for _, b := range r.Content[:len(r.Content)-1] {
			text += len(b.Text)
			if b.Kind == model.KindImage {
				images++
			}
		}
		if text > 1000*bytesPerToken || images != c.images {
			t.Errorf("%s: %d bytes of text, %d images", c.name, text, images)
		}
		if last := r.Content[len(r.Content)-1].Text; !strings.HasPrefix(last, c.last) {
			t.Errorf("%s: the last line is %q", c.name, clip(last, 100))
		}
	}
}

// Text is cut at a character boundary, never inside one.
func TestConvertCutsAtCharacters(t *testing.T) {
	t.Parallel()
	r := convertWith(t, 1, &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ab€€"}}})
	if r.Content[0].Text != "ab" || !strings.Contains(r.Content[1].Text, "2 of 8 bytes") {
		t.Fatalf("content %+v", r.Content)
	}
}
