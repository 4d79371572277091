package termmd

import (
	"strings"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// The GitHub extensions (tables, strikethrough, task lists, bare URLs), parsed here
// into goldmark's own node types. goldmark's extension package has them too, but its
// initialisation compiles regular expressions (the URL ones large) in every process
// that links it, about a millisecond of each start; these read the text by hand.

// strikethrough parses ~text~ and ~~text~~.
type strikethrough struct{}

func (strikethrough) Trigger() []byte { return []byte{'~'} }

func (s strikethrough) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	before := block.PrecendingCharacter()
	line, seg := block.PeekLine()
	d := parser.ScanDelimiter(line, before, 1, s)
	if d == nil || d.OriginalLength > 2 || before == '~' {
		return nil
	}
	d.Segment = seg.WithStop(seg.Start + d.OriginalLength)
	block.Advance(d.OriginalLength)
	pc.PushDelimiter(d)
	return d
}

func (strikethrough) CloseBlock(ast.Node, parser.Context) {}

func (strikethrough) IsDelimiter(b byte) bool { return b == '~' }

func (strikethrough) CanOpenCloser(opener, closer *parser.Delimiter) bool {
	return opener.Char == closer.Char
}

func (strikethrough) OnMatch(int) ast.Node { return east.NewStrikethrough() }

// taskBoxParser parses the [ ] or [x] a list item's text starts with.
type taskBoxParser struct{}

func (taskBoxParser) Trigger() []byte { return []byte{'['} }

func (taskBoxParser) Parse(parent ast.Node, block text.Reader, _ parser.Context) ast.Node {
	item, ok := parent.Parent().(*ast.ListItem)
	if !ok || item.FirstChild() != parent || parent.HasChildren() {
		return nil
	}
	line, _ := block.PeekLine()
	if len(line) < 3 || line[2] != ']' || (line[1] != ' ' && line[1] != 'x' && line[1] != 'X') {
		return nil
	}
	n := 3
	if n < len(line) && !util.IsSpace(line[n]) {
		return nil
	}
	for n < len(line) && util.IsSpace(line[n]) {
		n++
	}
	block.Advance(n)
	return east.NewTaskCheckBox(line[1] != ' ')
}

func (taskBoxParser) CloseBlock(ast.Node, parser.Context) {}

// bareURL parses a URL written without <>: http://, https://, ftp:// or www. at the
// start of a word, to the next space, less the punctuation that ends a sentence. The
// parser is asked at a space (which stands for a line's start too) or at what may come
// before a URL's word, *_~(, and keeps that character as text.
type bareURL struct{}

func (bareURL) Trigger() []byte { return []byte{' ', '*', '_', '~', '('} }

func (bareURL) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	if pc.IsInLinkLabel() {
		return nil
	}
	line, seg := block.PeekLine()
	lead := 0
	if len(line) > 0 && strings.IndexByte(" *_~(", line[0]) >= 0 {
		lead = 1
	}
	url := line[lead:]
	head := strings.ToLower(string(url[:min(len(url), 8)]))
	start := 0
	for _, p := range []string{"https://", "http://", "ftp://", "www."} {
		if strings.HasPrefix(head, p) {
			start = len(p)
			break
		}
	}
	if start == 0 {
		return nil
	}
	end := start
	for end < len(url) && !util.IsSpace(url[end]) && url[end] != '<' {
		end++
	}
	// A sentence's punctuation after the URL is not part of it, nor is a ) closing a
	// parenthesis the URL did not open.
	for end > start {
		c := url[end-1]
		if strings.IndexByte("?!.,:*_~'\";", c) >= 0 ||
			c == ')' && strings.Count(string(url[:end]), ")") > strings.Count(string(url[:end]), "(") {
			end--
			continue
		}
		break
	}
	host := string(url[start:end])
	if i := strings.IndexAny(host, "/?#"); i >= 0 {
		host = host[:i]
	}
	if host == "" || (head[0] == 'w' && !strings.Contains(host, ".")) {
		return nil
	}
	if lead > 0 {
		ast.MergeOrAppendTextSegment(parent, seg.WithStop(seg.Start+lead))
	}
	block.Advance(lead + end)
	at := seg.Start + lead
	return ast.NewAutoLink(ast.AutoLinkURL, ast.NewTextSegment(text.NewSegment(at, at+end)))
}

func (bareURL) CloseBlock(ast.Node, parser.Context) {}

// tables turns a paragraph whose second line is a delimiter row (|---|:--:|) into a
// table, the lines before the header staying a paragraph.
type tables struct{}

func (tables) Transform(node *ast.Paragraph, reader text.Reader, _ parser.Context) {
	lines := node.Lines()
	src := reader.Source()
	for i := 1; i < lines.Len(); i++ {
		delim, head := lines.At(i), lines.At(i-1)
		aligns := delimiterRow(delim.Value(src))
		if aligns == nil {
			continue
		}
		if len(splitCells(string(head.Value(src)))) != len(aligns) {
			return
		}
		header := tableRow(lines.At(i-1), aligns, src)
		table := east.NewTable()
		table.Alignments = aligns
		table.AppendChild(table, east.NewTableHeader(header))
		for j := i + 1; j < lines.Len(); j++ {
			table.AppendChild(table, tableRow(lines.At(j), aligns, src))
		}
		parent := node.Parent()
		parent.InsertAfter(parent, node, table)
		if i == 1 {
			parent.RemoveChild(parent, node)
		} else {
			lines.SetSliced(0, i-1)
			last := lines.At(i - 2)
			last = last.TrimRightSpace(src)
			lines.Set(i-2, last)
		}
		return
	}
}

// delimiterRow reads a table's delimiter row: each cell dashes with an optional colon at
// either end (|:--|:-:|--:|). nil when the line is not one.
func delimiterRow(line []byte) []east.Alignment {
	cells := splitCells(string(line))
	if cells == nil || strings.IndexByte(string(line), '-') < 0 {
		return nil
	}
	out := make([]east.Alignment, 0, len(cells))
	for _, c := range cells {
		c = strings.TrimSpace(c)
		left, right := strings.HasPrefix(c, ":"), strings.HasSuffix(c, ":")
		dashes := strings.TrimSuffix(strings.TrimPrefix(c, ":"), ":")
		if dashes == "" || strings.Trim(dashes, "-") != "" {
			return nil
		}
		switch {
		case left && right:
			out = append(out, east.AlignCenter)
		case left:
			out = append(out, east.AlignLeft)
		case right:
			out = append(out, east.AlignRight)
		default:
			out = append(out, east.AlignNone)
		}
	}
	return out
}

// splitCells splits a row at its pipes (not \|), less the outer ones; nil for a line
// that is no row (no pipe, or nothing but one).
func splitCells(line string) []string {
	line = strings.TrimSpace(line)
	var cells []string
	start := 0
	pipes := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case '|':
			pipes++
			cells = append(cells, line[start:i])
			start = i + 1
		}
	}
	cells = append(cells, line[start:])
	if pipes == 0 || len(cells) < 2 && strings.TrimSpace(cells[0]) == "" {
		return nil
	}
	if strings.HasPrefix(line, "|") {
		cells = cells[1:]
	}
	if len(cells) > 0 && strings.HasSuffix(line, "|") && !strings.HasSuffix(line, "\\|") {
		cells = cells[:len(cells)-1]
	}
	if len(cells) == 0 {
		return nil
	}
	return cells
}

// tableRow reads a row's cells into nodes whose lines the inline parser reads later: as
// many as the table has columns, the missing ones empty.
func tableRow(seg text.Segment, aligns []east.Alignment, src []byte) *east.TableRow {
	row := east.NewTableRow(aligns)
	seg = seg.TrimLeftSpace(src)
	seg = seg.TrimRightSpace(src)
	line := seg.Value(src)
	pos, limit := 0, len(line)
	if limit > 0 && line[0] == '|' {
		pos++
	}
	if limit > pos && line[limit-1] == '|' && (limit < 2 || line[limit-2] != '\\') {
		limit--
	}
	for i := 0; i < len(aligns); i++ {
		cell := east.NewTableCell()
		cell.Alignment = aligns[i]
		if pos <= limit {
			end := pos
			for end < limit && line[end] != '|' {
				if line[end] == '\\' && end+1 < limit {
					end++
				}
				end++
			}
			cellSeg := text.NewSegment(seg.Start+pos, seg.Start+min(end, limit))
			cellSeg = cellSeg.TrimLeftSpace(src)
			cell.Lines().Append(cellSeg.TrimRightSpace(src))
			pos = end + 1
		}
		row.AppendChild(row, cell)
	}
	return row
}
