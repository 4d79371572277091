package termmd

import (
	"strings"

	east "github.com/yuin/goldmark/extension/ast"
)

// table renders a GFM table as columns parted by │, the header underlined with ─. A
// table wider than width is shown instead as one block per row, each cell on a line of
// its own after its column's name: a row cut at the screen's edge, or cells wrapped into
// a thin grid, read worse than that.
func (r *renderer) table(n *east.Table, width int) []string {
	var rows [][][]span // rows of cells; the header is row 0
	header := false
	for row := n.FirstChild(); row != nil; row = row.NextSibling() {
		var cells [][]span
		for cell := row.FirstChild(); cell != nil; cell = cell.NextSibling() {
			st := sty{}
			if row.Kind() == east.KindTableHeader {
				st.a = aBold
			}
			cells = append(cells, oneLine(r.inlines(cell, st)))
		}
		if row.Kind() == east.KindTableHeader {
			header = true
		}
		rows = append(rows, cells)
	}
	if len(rows) == 0 {
		return nil
	}
	cols := 0
	for _, row := range rows {
		cols = max(cols, len(row))
	}
	widths := make([]int, cols)
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], spansWidth(cell))
		}
	}
	total := 3 * (cols - 1)
	for _, w := range widths {
		total += w
	}
	if total > width {
		return r.tableByRow(rows, header, width)
	}
	sep := r.paint(" │ ", sty{r: rRule})
	var out []string
	for ri, row := range rows {
		var b strings.Builder
		last := len(row) - 1 // the last cell with text: no border follows it
		for last >= 0 && len(row[last]) == 0 {
			last--
		}
		for i := range last + 1 {
			cell := row[i]
			pad := widths[i] - spansWidth(cell)
			left := 0
			switch align(n, i) {
			case east.AlignRight:
				left = pad
			case east.AlignCenter:
				left = pad / 2
			}
			if i > 0 {
				b.WriteString(sep)
			}
			b.WriteString(strings.Repeat(" ", left))
			b.WriteString(r.emit(cell))
			if i < last {
				b.WriteString(strings.Repeat(" ", pad-left))
			}
		}
		out = append(out, strings.TrimRight(b.String(), " "))
		if ri == 0 && header {
			var rule strings.Builder
			for i, w := range widths {
				if i > 0 {
					rule.WriteString("─┼─")
				}
				rule.WriteString(strings.Repeat("─", w))
			}
			out = append(out, r.paint(rule.String(), sty{r: rRule}))
		}
	}
	return out
}

// tableByRow shows each body row as its cells, each after its column's name, a blank
// line between rows.
func (r *renderer) tableByRow(rows [][][]span, header bool, width int) []string {
	var names [][]span
	if header {
		names, rows = rows[0], rows[1:]
	}
	var out []string
	for ri, row := range rows {
		if ri > 0 {
			out = append(out, "")
		}
		for i, cell := range row {
			var line []span
			if i < len(names) && len(names[i]) > 0 {
				line = append(line, names[i]...)
				line = append(line, span{": ", sty{a: aBold}})
			}
			line = append(line, cell...)
			out = append(out, hang(r.emitAll(wrap(line, width-2)), "", "  ")...)
		}
	}
	if len(rows) == 0 { // a header and no rows: the names, one a line
		for _, name := range names {
			out = append(out, r.emitAll(wrap(name, width))...)
		}
	}
	return out
}

func align(n *east.Table, i int) east.Alignment {
	if i < len(n.Alignments) {
		return n.Alignments[i]
	}
	return east.AlignNone
}

// oneLine makes a cell's spans one line: a hard break becomes a space.
func oneLine(spans []span) []span {
	for i := range spans {
		if spans[i].text == hardBreak {
			spans[i].text = " "
		}
	}
	return spans
}

func spansWidth(spans []span) int {
	w := 0
	for _, s := range spans {
		w += displayWidth(s.text)
	}
	return w
}
