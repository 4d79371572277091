package web

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/strikethrough"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"

	"github.com/sema-agent/sema"
)

// newConverter returns the HTML-to-Markdown converter of one tool: CommonMark with
// GitHub's tables and strikethrough. The base plugin drops script, style, head, forms
// and comments, so what remains is what a reader sees. The converter keeps the state of
// a conversion in the conversion, so one serves concurrent calls.
func newConverter() *converter.Converter {
	return converter.NewConverter(converter.WithPlugins(
		base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(),
		table.NewTablePlugin(),
		strikethrough.NewStrikethroughPlugin(),
	))
}

// kind is how WebFetch reads a content type.
type kind int

const (
	kindBinary kind = iota // not read
	kindHTML               // turned into Markdown
	kindText               // passed as it is
)

// textApplications are the application/ types that are text a model can read as it is.
var textApplications = map[string]bool{
	"application/json": true, "application/xml": true, "application/javascript": true,
	"application/ecmascript": true, "application/x-javascript": true, "application/yaml": true,
	"application/x-yaml": true, "application/toml": true, "application/x-sh": true,
	"application/sql": true, "application/graphql": true, "application/x-ndjson": true,
	"application/markdown": true, "application/x-httpd-php": true,
}

// kindOf reads a media type (lower case, without parameters).
func kindOf(mediaType string) kind {
	switch {
	case mediaType == "text/html", mediaType == "application/xhtml+xml":
		return kindHTML
	case strings.HasPrefix(mediaType, "text/"), textApplications[mediaType],
		strings.HasSuffix(mediaType, "+json"), strings.HasSuffix(mediaType, "+xml"), strings.HasSuffix(mediaType, "+yaml"):
		return kindText
	}
	return kindBinary
}

// mediaTypeOf is the page's media type: the one the server declared, or — when it
// declared none, one that does not parse, or the catch-all application/octet-stream
// that servers send for files they know nothing about — the one its first bytes show.
func mediaTypeOf(p *page) (mediaType, contentType string) {
	contentType = p.contentType
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || mt == "application/octet-stream" {
		contentType = http.DetectContentType(p.body)
		mt, _, _ = mime.ParseMediaType(contentType)
	}
	return strings.ToLower(mt), contentType
}

// render turns a page into the text the model reads: Markdown for HTML, the text itself
// for other text types, both decoded to UTF-8 from the charset the server or the page
// declares. Any other type is refused, naming it.
func (t *tool) render(p *page) (string, error) {
	mt, ct := mediaTypeOf(p)
	k := kindOf(mt)
	if k == kindBinary {
		return "", sema.Errorf(CodeContentBinary, "the page is %s, which WebFetch does not read: it reads HTML and text only", mt).With("content_type", mt)
	}
	r, err := charset.NewReader(bytes.NewReader(p.body), ct)
	if err != nil {
		// An unknown charset: read the bytes as UTF-8 and let invalid ones show as
		// replacement characters, rather than refusing a page that is mostly legible.
		r = bytes.NewReader(p.body)
	}
	decoded, err := io.ReadAll(r)
	if err != nil {
		return "", sema.Errorf(CodeConvertFailed, "the page's text could not be decoded: %v", err)
	}
	text := strings.ToValidUTF8(string(decoded), "\uFFFD")
	if k == kindText {
		if strings.ContainsRune(text, 0) {
			return "", sema.Errorf(CodeContentBinary, "the page is declared %s but holds binary data, which WebFetch does not read", mt).With("content_type", mt)
		}
		return text, nil
	}
	doc, err := html.Parse(strings.NewReader(text))
	if err != nil {
		// The parser refuses a page that nests elements more than 512 deep. Its text is
		// still worth reading, without the markup.
		return "[The page's HTML could not be parsed (" + err.Error() + "); its text is shown without formatting.]\n\n" + textOf(text), nil
	}
	md, err := t.conv.ConvertNode(doc, converter.WithDomain(p.final))
	if err != nil {
		return "", sema.Errorf(CodeConvertFailed, "the page's HTML could not be turned into Markdown: %v", err)
	}
	return strings.ToValidUTF8(string(md), "\uFFFD"), nil
}

// textOf is the text of an HTML document read token by token, which needs no tree and
// so no bound on nesting: text outside script, style and the head, a line break at
// each block element, runs of blank space squeezed.
func textOf(doc string) string {
	z := html.NewTokenizer(strings.NewReader(doc))
	var b strings.Builder
	skip := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return strings.TrimSpace(squeeze(b.String()))
		case html.StartTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "script", "style", "head", "noscript", "template":
				skip++
			case "p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "section", "article":
				b.WriteByte('\n')
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "script", "style", "head", "noscript", "template":
				skip = max(skip-1, 0)
			}
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
			}
		}
	}
}

// squeeze keeps at most one blank line between lines and one space between words.
func squeeze(s string) string {
	lines := strings.Split(s, "\n")
	out := make([]string, 0, len(lines))
	blank := false
	for _, l := range lines {
		l = strings.Join(strings.Fields(l), " ")
		if l == "" {
			if !blank && len(out) > 0 {
				out = append(out, "")
			}
			blank = true
			continue
		}
		out = append(out, l)
		blank = false
	}
	return strings.Join(out, "\n")
}
