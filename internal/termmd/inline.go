package termmd

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/util"
)

// span is a run of text in one style. Inline text is split into spans with no spaces in
// them (the spaces are where lines may break) but for the spaces wrap puts back.
type span struct {
	text string
	st   sty
}

// hardBreak is the span text of a hard line break; clean never leaves a newline in text.
const hardBreak = "\n"

// inlines returns the inline content of n as spans in st.
func (r *renderer) inlines(n ast.Node, st sty) []span {
	var out []span
	r.inline(n, st, &out)
	return out
}

func (r *renderer) inline(n ast.Node, st sty, out *[]span) {
	add := func(s string, st sty) {
		if s = clean(s); s != "" {
			*out = append(*out, span{s, st})
		}
	}
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			v := c.Segment.Value(r.src)
			if c.IsRaw() {
				add(string(v), st)
			} else {
				add(unescape(v), st)
			}
			switch {
			case c.HardLineBreak():
				*out = append(*out, span{hardBreak, st})
			case c.SoftLineBreak():
				add(" ", st)
			}
		case *ast.String:
			add(string(c.Value), st)
		case *ast.CodeSpan:
			var b strings.Builder
			for t := c.FirstChild(); t != nil; t = t.NextSibling() {
				switch t := t.(type) {
				case *ast.Text:
					b.Write(t.Segment.Value(r.src))
				case *ast.String:
					b.Write(t.Value)
				}
			}
			add(b.String(), sty{a: st.a &^ aItalic, r: rCode})
		case *ast.Emphasis:
			inner := st
			if c.Level >= 2 {
				inner.a |= aBold
			} else {
				inner.a |= aItalic
			}
			r.inline(c, inner, out)
		case *east.Strikethrough:
			inner := st
			inner.a |= aStrike
			r.inline(c, inner, out)
		case *ast.Link:
			start := len(*out)
			r.inline(c, sty{a: st.a | aUnderline, r: rLink}, out)
			r.url(string(c.Destination), plainText((*out)[start:]), len(*out) > start, st, out)
		case *ast.Image:
			add("Image:", st)
			start := len(*out)
			r.inline(c, sty{a: st.a, r: rLink}, out)
			if len(*out) > start {
				// The alt text follows "Image:" after a space.
				*out = append((*out)[:start], append([]span{{" ", st}}, (*out)[start:]...)...)
			}
			r.url(string(c.Destination), "", len(*out) > start, st, out)
		case *ast.AutoLink:
			add(string(c.Label(r.src)), sty{a: st.a | aUnderline, r: rLink})
		case *ast.RawHTML:
			for i := range c.Segments.Len() {
				seg := c.Segments.At(i)
				add(string(seg.Value(r.src)), st)
			}
		case *east.TaskCheckBox:
			// The list's marker shows the box.
		default:
			r.inline(c, st, out)
		}
	}
}

// url follows a link's text with its destination in parentheses, unless the text is the
// destination already; with no text before it, the destination stands alone.
func (r *renderer) url(dest, text string, hasText bool, st sty, out *[]span) {
	dest = clean(dest)
	if dest == "" || dest == text || dest == "mailto:"+text {
		return
	}
	if !hasText {
		*out = append(*out, span{" ", st}, span{dest, sty{a: st.a, r: rURL}})
		return
	}
	*out = append(*out, span{" (", st}, span{dest, sty{a: st.a, r: rURL}}, span{")", st})
}

func plainText(spans []span) string {
	var b strings.Builder
	for _, s := range spans {
		b.WriteString(s.text)
	}
	return b.String()
}

// unescape reads a text segment as CommonMark does: a backslash before punctuation is
// dropped, and entity and numeric character references become their characters.
func unescape(v []byte) string {
	if !strings.ContainsAny(string(v), "\\&\x00") {
		return string(v)
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\' && i+1 < len(v) && util.IsPunct(v[i+1]):
			b.WriteByte(v[i+1])
			i++
			continue
		case c == 0:
			b.WriteRune(utf8.RuneError)
			continue
		case c == '&':
			if s, n := reference(v[i:]); n > 0 {
				b.WriteString(s)
				i += n - 1
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// reference decodes the character reference v starts with (&name; &#N; &#xH;), and how
// many bytes it took; 0 when v starts with none.
func reference(v []byte) (string, int) {
	end := strings.IndexByte(string(v[:min(len(v), 40)]), ';')
	if end < 2 {
		return "", 0
	}
	body := string(v[1:end])
	if body[0] != '#' {
		for i := range len(body) {
			if !util.IsAlphaNumeric(body[i]) {
				return "", 0
			}
		}
		if e, ok := util.LookUpHTML5EntityByName(body); ok {
			return string(e.Characters), end + 1
		}
		return "", 0
	}
	digits, base := body[1:], 10
	if digits != "" && (digits[0] == 'x' || digits[0] == 'X') {
		digits, base = digits[1:], 16
	}
	if digits == "" || (base == 10 && len(digits) > 7) || (base == 16 && len(digits) > 6) {
		return "", 0
	}
	n, err := strconv.ParseUint(digits, base, 32)
	if err != nil {
		return "", 0
	}
	c := rune(n)
	if c == 0 || !utf8.ValidRune(c) {
		c = utf8.RuneError
	}
	return string(c), end + 1
}

// clean makes text safe to write to a terminal: newlines and tabs become spaces, a
// carriage return goes, any other C0 control and DEL are shown as their control pictures
// (␛ for ESC), a C1 control and a byte that is not UTF-8 as U+FFFD. No escape sequence
// of the input reaches the output.
func clean(s string) string {
	if safe(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		c, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case c == '\n' || c == '\t':
			b.WriteByte(' ')
		case c == '\r':
		case c < 0x20:
			b.WriteRune(0x2400 + c)
		case c == 0x7f:
			b.WriteRune(0x2421)
		case c >= 0x80 && c <= 0x9f, c == utf8.RuneError:
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// cleanCode is clean for a line of code: its tabs become spaces to the next stop of four.
func cleanCode(line string) string {
	if strings.IndexByte(line, '\t') < 0 {
		return clean(line)
	}
	var b strings.Builder
	col := 0
	for _, c := range line {
		if c == '\t' {
			n := 4 - col%4
			b.WriteString("    "[:n])
			col += n
			continue
		}
		b.WriteRune(c)
		col++
	}
	return clean(b.String())
}

// safe reports whether s holds no control character and is valid UTF-8, which is nearly
// always: then clean returns s as it is.
func safe(s string) bool {
	ascii := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c < 0x20 || c == 0x7f:
			return false
		case c == 0xc2 && i+1 < len(s) && s[i+1] < 0xa0:
			return false // U+0080–U+009F, the C1 controls
		case c >= 0x80:
			ascii = false
		}
	}
	return ascii || utf8.ValidString(s)
}
