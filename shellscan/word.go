package shellscan

import (
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// word converts one parsed word, performing quote removal and classifying every expansion.
// The parser keeps backslashes and quote kinds as written; the rules applied here are bash's:
// an unquoted backslash quotes the next character, single quotes are literal, $'…' decodes
// ANSI-C escapes, and inside double quotes a backslash quotes only $ ` " \ and newline.
func (b *builder) word(w *syntax.Word) Word {
	out := Word{Raw: b.raw(w.Pos(), w.End())}
	if len(w.Parts) == 1 {
		// The common case, a bare literal without escapes, needs no rewriting: its value is its
		// own shape.
		if l, ok := w.Parts[0].(*syntax.Lit); ok && !strings.Contains(l.Value, `\`) {
			v := l.Value
			shape := []byte(v)
			out.Tilde = strings.HasPrefix(v, "~")
			expands := hasGlob(shape) || hasBraceExpansion(shape)
			laterTilde := hasLaterTilde(shape)
			out.Static = !expands && !out.Tilde && !laterTilde
			if !expands && !laterTilde {
				out.Lit = v
			}
			out.OptionSafe = v != "" && v[0] != '-' && (out.Static || strings.IndexByte("*?[{~", v[0]) < 0)
			return out
		}
	}
	var r wordReader
	for i, part := range w.Parts {
		r.part(&out, i, part)
		if r.leadKind == 0 {
			if r.lit.Len() > 0 {
				r.leadKind = 1
			} else if r.expands {
				r.leadKind = 2
			}
		}
	}
	if hasGlob(r.shape) || hasBraceExpansion(r.shape) {
		r.expands = true
	}
	laterTilde := hasLaterTilde(r.shape)
	out.Static = !r.expands && !out.Tilde && !laterTilde
	if !r.expands && !laterTilde {
		out.Lit = r.lit.String()
	}
	first := byte(0)
	if len(r.shape) > 0 {
		first = r.shape[0]
	}
	if out.Static {
		out.OptionSafe = !strings.HasPrefix(out.Lit, "-")
		return out
	}
	out.OptionSafe = !r.splits && r.leadKind == 1 && r.lit.String()[0] != '-' &&
		first != '*' && first != '?' && first != '[' && first != '{' && first != '~'
	return out
}

// wordReader is word's state while it reads a word part by part.
type wordReader struct {
	lit      strings.Builder
	shape    []byte // one byte per literal byte: the character when unquoted, 0 when quoted
	expands  bool   // any expansion other than a leading tilde
	splits   bool   // an unquoted expansion that undergoes field splitting
	leadKind int    // 0: unknown yet, 1: the word starts with a literal, 2: with an expansion
}

// part reads the i-th part of a word into r, and what it says of the word into out.
func (r *wordReader) part(out *Word, i int, part syntax.WordPart) {
	switch p := part.(type) {
	case *syntax.Lit:
		v := p.Value
		if i == 0 && strings.HasPrefix(v, "~") {
			out.Tilde = true
		}
		for j := 0; j < len(v); j++ {
			c := v[j]
			if c == '\\' {
				out.Quoted = true
				if j+1 < len(v) {
					j++
					c = v[j]
				}
				r.lit.WriteByte(c)
				r.shape = append(r.shape, 0)
				continue
			}
			r.lit.WriteByte(c)
			r.shape = append(r.shape, c)
		}
	case *syntax.SglQuoted:
		out.Quoted = true
		val := p.Value
		if p.Dollar {
			var ok bool
			if val, ok = ansiC(val); !ok {
				r.expands = true
			}
		}
		r.lit.WriteString(val)
		r.shape = append(r.shape, make([]byte, len(val))...)
	case *syntax.DblQuoted:
		out.Quoted = true
		if p.Dollar {
			r.expands = true // $"…" is translated through the locale's message catalog
			if r.leadKind == 0 && r.lit.Len() == 0 {
				r.leadKind = 2
			}
		}
		for _, q := range p.Parts {
			l, ok := q.(*syntax.Lit)
			if !ok {
				r.expands = true
				if r.leadKind == 0 && r.lit.Len() == 0 {
					r.leadKind = 2
				}
				continue
			}
			n := r.lit.Len()
			unescapeDouble(&r.lit, l.Value)
			r.shape = append(r.shape, make([]byte, r.lit.Len()-n)...)
		}
	default:
		// ParamExp, CmdSubst, ArithmExp, ProcSubst, ExtGlob, BraceExp.
		r.expands = true
		switch part.(type) {
		case *syntax.ParamExp, *syntax.CmdSubst, *syntax.ArithmExp:
			r.splits = true
		}
	}
}

// unescapeDouble appends the value of a literal inside double quotes.
func unescapeDouble(dst *strings.Builder, v string) {
	for j := 0; j < len(v); j++ {
		c := v[j]
		if c == '\\' && j+1 < len(v) {
			switch v[j+1] {
			case '$', '`', '"', '\\':
				j++
				dst.WriteByte(v[j])
				continue
			case '\n':
				j++
				continue
			}
		}
		dst.WriteByte(c)
	}
}

// hasGlob reports an unquoted pathname-expansion character.
func hasGlob(shape []byte) bool {
	for _, c := range shape {
		if c == '*' || c == '?' || c == '[' {
			return true
		}
	}
	return false
}

// hasBraceExpansion reports an unquoted { followed by an unquoted , or .. and a later unquoted }:
// the shape of every brace expansion bash performs (it errs towards reporting one).
func hasBraceExpansion(shape []byte) bool {
	open := -1
	for i, c := range shape {
		if c == '{' {
			open = i
			break
		}
	}
	if open < 0 {
		return false
	}
	sep := false
	for i := open + 1; i < len(shape); i++ {
		switch c := shape[i]; {
		case c == ',':
			sep = true
		case c == '.' && i+1 < len(shape) && shape[i+1] == '.':
			sep = true
		case c == '}' && sep:
			return true
		}
	}
	return false
}

// hasLaterTilde reports an unquoted ~ right after an unquoted = or :, which bash expands in
// assignments and, outside POSIX mode, in any word that looks like one (`dd of=~/x`).
func hasLaterTilde(shape []byte) bool {
	for i := 1; i < len(shape); i++ {
		if shape[i] == '~' && (shape[i-1] == '=' || shape[i-1] == ':') {
			return true
		}
	}
	return false
}

// ansiC decodes the body of a $'…' string. It reports false for what it does not decode
// exactly as bash does: \c control escapes, and \u and \U, whose value depends on the locale
// bash runs in (outside a UTF-8 locale bash keeps the escape as written); and for a NUL, which
// truncates the word in bash.
func ansiC(s string) (string, bool) {
	if !strings.Contains(s, `\`) {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'e', 'E':
			b.WriteByte(27)
		case 'f':
			b.WriteByte(12)
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte(11)
		case '\\', '\'', '"', '?':
			b.WriteByte(e)
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			n, _ := strconv.ParseUint(s[i:j], 8, 16)
			b.WriteByte(byte(n))
			i = j - 1
		case 'x':
			j := i + 1
			for j < len(s) && j < i+3 && isHex(s[j]) {
				j++
			}
			if j == i+1 {
				b.WriteByte('\\')
				b.WriteByte(e)
				continue
			}
			n, _ := strconv.ParseUint(s[i+1:j], 16, 8)
			b.WriteByte(byte(n))
			i = j - 1
		case 'u', 'U':
			return "", false
		case 'c':
			return "", false
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	out := b.String()
	if strings.IndexByte(out, 0) >= 0 {
		return "", false
	}
	return out, true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
