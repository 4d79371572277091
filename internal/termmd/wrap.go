package termmd

import (
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// attr is a set of text attributes.
type attr uint8

const (
	aBold attr = 1 << iota
	aItalic
	aUnderline
	aStrike
)

// role is what a span of text is, which picks its colour.
type role uint8

const (
	rNone role = iota
	rHeading
	rCode // inline code
	rLink
	rURL
	rQuote
	rMarker // list bullets, numbers and task boxes
	rRule   // horizontal rules and table borders
	rKeyword
	rString
	rNumber
	rComment
	rKey // a YAML key
	rAdded
	rRemoved
	rHunk
	nRoles
)

// sty is a span's style: its attributes and its role's colour.
type sty struct {
	a attr
	r role
}

// The colours, as SGR parameters (256-colour foregrounds; a comment is italic besides).
var palettes = [2][nRoles]string{
	Dark: {
		rHeading: "38;5;75",
		rCode:    "38;5;209",
		rLink:    "38;5;81",
		rURL:     "38;5;245",
		rQuote:   "38;5;241",
		rMarker:  "38;5;141",
		rRule:    "38;5;241",
		rKeyword: "38;5;176",
		rString:  "38;5;114",
		rNumber:  "38;5;215",
		rComment: "3;38;5;245",
		rKey:     "38;5;75",
		rAdded:   "38;5;114",
		rRemoved: "38;5;210",
		rHunk:    "38;5;81",
	},
	Light: {
		rHeading: "38;5;25",
		rCode:    "38;5;166",
		rLink:    "38;5;31",
		rURL:     "38;5;243",
		rQuote:   "38;5;248",
		rMarker:  "38;5;97",
		rRule:    "38;5;248",
		rKeyword: "38;5;127",
		rString:  "38;5;28",
		rNumber:  "38;5;130",
		rComment: "3;38;5;244",
		rKey:     "38;5;25",
		rAdded:   "38;5;28",
		rRemoved: "38;5;160",
		rHunk:    "38;5;31",
	},
}

// sgrParams returns the SGR parameters that set st, "" for none (and always in NoTTY).
func (r *renderer) sgrParams(st sty) string {
	if r.style != Dark && r.style != Light || st == (sty{}) {
		return ""
	}
	var b strings.Builder
	for _, a := range [...]struct {
		bit attr
		p   string
	}{{aBold, "1"}, {aItalic, "3"}, {aUnderline, "4"}, {aStrike, "9"}} {
		if st.a&a.bit != 0 {
			if b.Len() > 0 {
				b.WriteByte(';')
			}
			b.WriteString(a.p)
		}
	}
	if c := palettes[r.style][st.r]; c != "" {
		if b.Len() > 0 {
			b.WriteByte(';')
		}
		b.WriteString(c)
	}
	return b.String()
}

// paint returns s in st, the escapes closed at its end so each line stands alone.
func (r *renderer) paint(s string, st sty) string {
	p := r.sgrParams(st)
	if p == "" {
		return s
	}
	return "\x1b[" + p + "m" + s + "\x1b[m"
}

// emit writes a line's spans, neighbours in one style joined under one escape.
func (r *renderer) emit(spans []span) string {
	var b strings.Builder
	for i := 0; i < len(spans); {
		j := i + 1
		for j < len(spans) && spans[j].st == spans[i].st {
			j++
		}
		p := r.sgrParams(spans[i].st)
		if p != "" {
			b.WriteString("\x1b[")
			b.WriteString(p)
			b.WriteByte('m')
		}
		for _, s := range spans[i:j] {
			b.WriteString(s.text)
		}
		if p != "" {
			b.WriteString("\x1b[m")
		}
		i = j
	}
	return b.String()
}

// wrap lays spans out in lines of at most width cells, breaking at spaces; a word wider
// than a line is cut where the line ends. Runs of spaces become one, and no line starts
// or ends with one.
func wrap(spans []span, width int) [][]span {
	width = max(width, 1)
	var (
		lines [][]span
		cur   []span // the line being filled
		curW  int
		word  []span // the word being read, not yet placed
		wordW int
		gap   bool // whether a space comes before word
		gapSt sty  // the space's style
	)
	newLine := func() {
		lines = append(lines, cur)
		cur, curW = nil, 0
	}
	place := func() {
		if len(word) == 0 {
			return
		}
		if curW > 0 && curW+1+wordW > width {
			newLine()
		}
		if curW > 0 && gap {
			cur = append(cur, span{" ", gapSt})
			curW++
		}
		if curW+wordW <= width {
			cur = append(cur, word...)
			curW += wordW
		} else {
			for _, s := range word {
				t := s.text
				for t != "" {
					room := width - curW
					if room <= 0 {
						newLine()
						room = width
					}
					w := displayWidth(t)
					if w <= room {
						cur = append(cur, span{t, s.st})
						curW += w
						break
					}
					head := ansi.Truncate(t, room, "")
					if head == "" || !strings.HasPrefix(t, head) {
						if curW > 0 {
							newLine()
							continue
						}
						_, n := utf8.DecodeRuneInString(t) // a wide character on a one-cell line
						head = t[:n]
					}
					cur = append(cur, span{head, s.st})
					curW += displayWidth(head)
					t = t[len(head):]
				}
			}
		}
		word, wordW, gap = word[:0:0], 0, false
	}
	for _, s := range spans {
		if s.text == hardBreak {
			place()
			newLine()
			continue
		}
		t := s.text
		for t != "" {
			i := strings.IndexByte(t, ' ')
			if i < 0 {
				word = append(word, span{t, s.st})
				wordW += displayWidth(t)
				break
			}
			if i > 0 {
				word = append(word, span{t[:i], s.st})
				wordW += displayWidth(t[:i])
			}
			place()
			if curW > 0 {
				gap, gapSt = true, s.st
			}
			t = t[i+1:]
		}
	}
	place()
	if len(cur) > 0 {
		lines = append(lines, cur)
	}
	// A hard break at the end draws nothing.
	for len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// displayWidth is the cells s takes. Text here has no control characters (clean saw to
// it), so ASCII text takes a cell a byte, which spares most words the grapheme reader.
func displayWidth(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return ansi.StringWidth(s)
		}
	}
	return len(s)
}
