// Package termmd renders Markdown as terminal text: wrapped to a width, styled with SGR
// escapes for a dark or light background, or plain. It is not glamour because glamour's
// syntax highlighter builds its registries in the initialisation of every process that
// links it, about 20 ms of each start of the binary; code here is coloured by a small
// highlighter of its own, and the parser is built on first use.
package termmd

import (
	"strconv"
	"strings"
	"sync"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Style chooses the colours of the output, or none.
type Style int

const (
	// Dark colours text for a dark background.
	Dark Style = iota
	// Light colours text for a light background.
	Light
	// NoTTY writes no escape sequences at all: the structure (markers, indentation,
	// rules) only.
	NoTTY
)

// The parser is built once, on first use: goldmark parsers are safe for concurrent use
// and building one sorts its parser tables.
var (
	parserOnce sync.Once
	mdParser   parser.Parser
)

func theParser() parser.Parser {
	parserOnce.Do(func() {
		mdParser = parser.NewParser(
			parser.WithBlockParsers(parser.DefaultBlockParsers()...),
			parser.WithInlineParsers(parser.DefaultInlineParsers()...),
			parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...),
			parser.WithParagraphTransformers(util.Prioritized(tables{}, 200)),
			parser.WithInlineParsers(
				util.Prioritized(strikethrough{}, 500),
				util.Prioritized(taskBoxParser{}, 0),
				util.Prioritized(bareURL{}, 999),
			),
		)
	})
	return mdParser
}

// Render renders the Markdown src as lines of at most width cells (code blocks excepted:
// their lines are kept whole, for the caller to cut), one blank line between blocks, no
// blank line at the start or the end, and no trailing spaces. src is untrusted: no
// control character of it reaches the output (each is shown as its control picture),
// and the only escape sequences written are the renderer's own SGR ones. A width below 1
// means no limit.
func Render(src string, width int, style Style) string {
	if width < 1 {
		width = int(^uint(0) >> 2)
	}
	if strings.IndexByte(src, '\r') >= 0 {
		// CommonMark ends a line at \r\n or a lone \r too; the parser sees \n only.
		src = strings.ReplaceAll(src, "\r\n", "\n")
		src = strings.ReplaceAll(src, "\r", "\n")
	}
	source := []byte(src)
	doc := theParser().Parse(text.NewReader(source))
	r := &renderer{src: source, style: style}
	lines := r.blocks(doc, width)
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}

type renderer struct {
	src   []byte
	style Style
	depth int // how many lists the block being rendered is in, for the bullet's shape
}

// blocks renders the block children of parent at width, a blank line between two
// blocks unless the first is a tight list item's text (which the next block, a nested
// list, continues).
func (r *renderer) blocks(parent ast.Node, width int) []string {
	var out []string
	var prev ast.Node
	for c := parent.FirstChild(); c != nil; c = c.NextSibling() {
		lines := r.block(c, width)
		if len(lines) == 0 {
			continue
		}
		if prev != nil && prev.Kind() != ast.KindTextBlock {
			out = append(out, "")
		}
		out = append(out, lines...)
		prev = c
	}
	return out
}

func (r *renderer) block(n ast.Node, width int) []string {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		return r.emitAll(wrap(r.inlines(n, sty{}), width))
	case *ast.Heading:
		return r.heading(n, width)
	case *ast.ThematicBreak:
		return []string{r.paint(strings.Repeat("─", min(width, 80)), sty{r: rRule})}
	case *ast.FencedCodeBlock:
		lang := ""
		if n.Info != nil {
			lang = string(n.Language(r.src))
		}
		return r.code(n.Lines(), lang)
	case *ast.CodeBlock:
		return r.code(n.Lines(), "")
	case *ast.Blockquote:
		return r.quote(n, width)
	case *ast.List:
		return r.list(n, width)
	case *ast.HTMLBlock:
		return r.htmlBlock(n, width)
	case *east.Table:
		return r.table(n, width)
	}
	if n.HasChildren() {
		return r.blocks(n, width)
	}
	return nil
}

// heading marks every level with its #s, so the level reads without colour; colour and
// weight set it apart where there is colour, the first level underlined besides.
func (r *renderer) heading(n *ast.Heading, width int) []string {
	st := sty{a: aBold, r: rHeading}
	if n.Level == 1 {
		st.a |= aUnderline
	}
	marker := strings.Repeat("#", n.Level) + " "
	body := r.emitAll(wrap(r.inlines(n, st), width-len(marker)))
	if len(body) == 0 {
		return []string{r.paint(strings.TrimSpace(marker), sty{a: aBold, r: rHeading})}
	}
	return hang(body, r.paint(marker, sty{a: aBold, r: rHeading}), strings.Repeat(" ", len(marker)))
}

// hang puts first before the first line and rest before the others (blank lines stay
// blank: no line ends in spaces).
func hang(lines []string, first, rest string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		switch {
		case i == 0:
			out[i] = first + l
		case l == "":
		default:
			out[i] = rest + l
		}
	}
	return out
}

func (r *renderer) quote(n *ast.Blockquote, width int) []string {
	body := r.blocks(n, max(width-2, 1))
	bar := r.paint("│", sty{r: rQuote})
	out := make([]string, len(body))
	for i, l := range body {
		if l == "" {
			out[i] = bar
		} else {
			out[i] = bar + " " + l
		}
	}
	return out
}

// list renders the items with their markers, each item's later lines indented under its
// text. A task item's box takes the bullet's place.
func (r *renderer) list(n *ast.List, width int) []string {
	count := 0
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		count++
	}
	numW := 0
	if n.IsOrdered() {
		numW = len(strconv.Itoa(n.Start + count - 1))
	}
	bullet := "•"
	if r.depth%2 == 1 {
		bullet = "◦"
	}
	r.depth++
	defer func() { r.depth-- }()
	var out []string
	i := 0
	for item := n.FirstChild(); item != nil; item = item.NextSibling() {
		marker := bullet
		if n.IsOrdered() {
			num := strconv.Itoa(n.Start + i)
			marker = strings.Repeat(" ", numW-len(num)) + num + string(n.Marker)
		}
		if box, ok := taskBox(item); ok {
			if n.IsOrdered() {
				marker += " " + box
			} else {
				marker = box
			}
		}
		ind := displayWidth(marker) + 1
		body := r.blocks(item, max(width-ind, 1))
		if i > 0 && !n.IsTight {
			out = append(out, "")
		}
		painted := r.paint(marker, sty{r: rMarker})
		if len(body) == 0 {
			out = append(out, painted)
		} else {
			out = append(out, hang(body, painted+" ", strings.Repeat(" ", ind))...)
		}
		i++
	}
	return out
}

// taskBox returns the box of a task list item, [x] or [ ].
func taskBox(item ast.Node) (string, bool) {
	first := item.FirstChild()
	if first == nil {
		return "", false
	}
	box, ok := first.FirstChild().(*east.TaskCheckBox)
	if !ok {
		return "", false
	}
	if box.IsChecked {
		return "[x]", true
	}
	return "[ ]", true
}

// htmlBlock shows raw HTML as the text it is, each of its lines wrapped as a line of
// its own.
func (r *renderer) htmlBlock(n *ast.HTMLBlock, width int) []string {
	var out []string
	add := func(seg text.Segment) {
		line := strings.TrimRight(string(seg.Value(r.src)), " \t\n")
		out = append(out, r.emitAll(wrap([]span{{text: clean(line)}}, width))...)
	}
	lines := n.Lines()
	for i := range lines.Len() {
		add(lines.At(i))
	}
	if n.HasClosure() {
		add(n.ClosureLine)
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// code renders a code block's lines indented two spaces, highlighted for lang, never
// wrapped: a long line stays whole, for the caller to cut to the screen.
func (r *renderer) code(lines *text.Segments, lang string) []string {
	var b strings.Builder
	for i := range lines.Len() {
		seg := lines.At(i)
		line := strings.TrimRight(string(seg.Value(r.src)), "\n")
		if seg.Padding > 0 {
			line = strings.Repeat(" ", seg.Padding) + line
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(cleanCode(line))
	}
	var out []string
	for _, l := range highlight(b.String(), lang) {
		out = append(out, r.emitCode(l))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	for len(out) > 0 && out[0] == "" {
		out = out[1:]
	}
	return out
}

func (r *renderer) emitCode(spans []span) string {
	// Trailing spaces draw nothing; a line of spaces is blank.
	for len(spans) > 0 {
		last := &spans[len(spans)-1]
		t := strings.TrimRight(last.text, " ")
		if t != "" {
			last.text = t
			break
		}
		spans = spans[:len(spans)-1]
	}
	if len(spans) == 0 {
		return ""
	}
	return "  " + r.emit(spans)
}

func (r *renderer) emitAll(lines [][]span) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = r.emit(l)
	}
	return out
}
