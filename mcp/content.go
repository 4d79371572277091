package mcp

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/imagefit"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/tools"
)

// convert turns a server's answer into the Result the model sees:
//
//   - text becomes text blocks;
//   - an image becomes an image block, downsampled through Options.Downsample when it
//     is over the limits a model accepts; one that cannot be shown becomes a line
//     saying why;
//   - an embedded resource becomes its text, under a line naming its URI; a binary
//     one is shown when it is an image, and is otherwise a line naming its URI, type
//     and size;
//   - a resource link becomes a line naming its URI (and its name, type and size);
//   - audio becomes a line saying it cannot be played to the model;
//   - structuredContent, when there is no content, becomes its JSON as text;
//   - nothing at all becomes a line saying so, since an empty answer reads as a
//     failure to most models.
//
// All text together, the lines standing for other content included, is held to
// Options.OutputLimit (tokens of 4 bytes): beyond it the text is cut at a character
// boundary, a last line says how much was cut, and the notice CodeOutputTruncated is
// sent. At most maxImages images are shown; a line says how many more were left out.
// A result the server marked isError is an error Result of code CodeToolError with the
// same content.
func (m *Mount) convert(ctx context.Context, t *tool, res *sdk.CallToolResult) tools.Result {
	out := &collector{budget: m.opts.OutputLimit * bytesPerToken}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			out.text(c.Text)
		case *sdk.ImageContent:
			m.image(ctx, out, c.Data, "")
		case *sdk.EmbeddedResource:
			m.resource(ctx, out, c.Resource)
		case *sdk.ResourceLink:
			out.note(resourceLinkLine(c))
		case *sdk.AudioContent:
			out.note(fmt.Sprintf("[Audio (%s, %s) not shown: the model cannot hear it.]", orUnknown(c.MIMEType), byteSize(len(c.Data))))
		default:
			out.note(fmt.Sprintf("[Content of a kind this client does not show (%T).]", c))
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		if raw, err := json.Marshal(res.StructuredContent); err == nil {
			out.text(string(raw))
		}
	}
	if len(out.blocks) == 0 && out.cut == 0 {
		out.closing("(The tool returned no content.)")
	}
	if out.imagesLeft > 0 {
		out.closing(fmt.Sprintf("[%d more images not shown: at most %d are shown of one answer.]", out.imagesLeft, maxImages))
	}
	if out.cut > 0 {
		shown := out.used
		out.closing(fmt.Sprintf("[Output truncated: %d of %d bytes of text shown, %d bytes (about %d tokens) cut; the limit is %d tokens. Ask the tool for less, or for a part at a time.]",
			shown, shown+out.cut, out.cut, out.cut/bytesPerToken, m.opts.OutputLimit))
		m.notice(CodeOutputTruncated, fmt.Sprintf("the output of %s was cut to %d tokens (%d bytes cut)", t.spec.Name, m.opts.OutputLimit, out.cut),
			map[string]any{"server": t.c.srv.Name, "tool": t.spec.Name, "cut_bytes": out.cut, "limit_tokens": m.opts.OutputLimit})
	}
	r := tools.Result{Content: out.blocks}
	if res.IsError {
		r.IsError, r.Code = true, CodeToolError
	}
	return r
}

// image adds an image, fitted to the model's limits, or a line saying why it cannot be
// shown. label names where it came from, for that line.
func (m *Mount) image(ctx context.Context, out *collector, data []byte, label string) {
	if label == "" {
		label = "the image"
	}
	if out.images == maxImages {
		out.imagesLeft++
		return
	}
	img, resized, err := imagefit.Fit(ctx, m.opts.Downsample, data)
	if err != nil {
		out.note(fmt.Sprintf("[%s (%s) cannot be shown: %s]", upperFirst(label), byteSize(len(data)), sema.MessageOf(err)))
		return
	}
	if resized {
		out.note(fmt.Sprintf("[%s was %s, over the limits a model accepts, and is shown downsampled to %s.]", upperFirst(label), describeImage(data), describeImage(img.Data)))
	}
	out.images++
	out.blocks = append(out.blocks, model.Block{Kind: model.KindImage, MediaType: img.MediaType, Data: img.Data})
}

// resource adds an embedded resource.
func (m *Mount) resource(ctx context.Context, out *collector, r *sdk.ResourceContents) {
	switch {
	case r == nil:
		out.note("[An embedded resource without contents.]")
	case r.Blob != nil && strings.HasPrefix(r.MIMEType, "image/"):
		m.image(ctx, out, r.Blob, "the image resource "+clip(r.URI, maxURI))
	case r.Blob != nil:
		out.note(fmt.Sprintf("[Resource %s: binary content (%s, %s), not shown.]", clip(r.URI, maxURI), orUnknown(r.MIMEType), byteSize(len(r.Blob))))
	default:
		out.text(fmt.Sprintf("[Resource %s]\n%s", clip(r.URI, maxURI), r.Text))
	}
}

// resourceLinkLine is the line that stands for a resource link.
func resourceLinkLine(l *sdk.ResourceLink) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[Resource link: %s", clip(l.URI, maxURI))
	var facts []string
	if name := strings.TrimSpace(cmp.Or(l.Title, l.Name)); name != "" {
		facts = append(facts, clip(name, 200))
	}
	if l.MIMEType != "" {
		facts = append(facts, clip(l.MIMEType, 100))
	}
	if l.Size != nil {
		facts = append(facts, byteSize(int(*l.Size)))
	}
	if len(facts) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(facts, ", "))
	}
	if d := strings.TrimSpace(l.Description); d != "" {
		fmt.Fprintf(&b, ": %s", clip(d, 500))
	}
	b.WriteString("]")
	return b.String()
}

// Bounds on one Result beyond OutputLimit.
const (
	maxImages = 20   // images shown of one answer: each costs the model about as much as a page of text
	maxURI    = 1000 // bytes of a URI quoted in a line of the client's
)

// collector builds a Result's blocks, holding the text to a budget of bytes.
type collector struct {
	blocks     []model.Block
	budget     int // bytes of text the Result may hold
	used       int // bytes of text held
	cut        int // bytes of text cut
	images     int // images shown
	imagesLeft int // images left out
}

// text adds text, as much of it as the budget allows.
func (c *collector) text(s string) {
	if s == "" {
		return
	}
	room := c.budget - c.used
	if len(s) > room {
		kept := clipBytes(s, max(room, 0))
		c.cut += len(s) - len(kept)
		s = kept
	}
	if s == "" {
		return
	}
	c.used += len(s)
	c.blocks = append(c.blocks, model.TextBlock(s))
}

// note adds a line of the client's own that stands for content, within the budget:
// whole, or not at all (a cut line would misstate what it stands for), since a server
// can send as many of the things it stands for as it likes.
func (c *collector) note(s string) {
	if len(s) > c.budget-c.used {
		c.cut += len(s)
		return
	}
	c.used += len(s)
	c.blocks = append(c.blocks, model.TextBlock(s))
}

// closing adds one of the client's last lines (no content, content cut), outside the
// budget: there is one of each at most, and dropping it would hide what happened.
func (c *collector) closing(s string) {
	c.blocks = append(c.blocks, model.TextBlock(s))
}

// clipBytes cuts s to at most n bytes, at a character boundary.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// describeImage names an image's type, size in pixels when it decodes, and bytes.
func describeImage(data []byte) string {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return byteSize(len(data))
	}
	return fmt.Sprintf("%dx%d %s (%s)", cfg.Width, cfg.Height, format, byteSize(len(data)))
}

// byteSize formats n bytes for people.
func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// orUnknown is a media type a server sent, clipped for a line, or "unknown type" when
// it sent none.
func orUnknown(s string) string {
	if s == "" {
		return "unknown type"
	}
	return clip(s, 100)
}

// upperFirst capitalises the first letter of an ASCII-led sentence.
func upperFirst(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}
