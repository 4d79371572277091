package instructions

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Imports returns the paths a Markdown text imports, in order of first appearance and
// each once. An import is "@" followed by a path, at the start of the text or after
// white space ("see @docs/style.md"); the path runs to the next white space ("\ " is
// a space inside it) or backquote. A "#fragment" is dropped, and so are the sentence
// marks a path rarely ends with (".,;:!?" and closing brackets or quotes), so "see
// @docs/style.md." imports docs/style.md.
//
// Only what a reader sees as prose is scanned, as Claude Code does: nothing inside a
// code span (`@x`), a fenced code block (``` or ~~~) or an indented code block (four
// spaces or a tab after a blank line, outside a list) is an import, so an example
// in the instructions does not load a file. The paths are returned as written: a
// relative one is relative to the importing file, "~/" is the home directory.
//
// A token counts as a path when it starts with "./", "../", "~/", "/" followed by
// more, or a letter, digit, ".", "_" or "-"; "@@x", "@{x}" and a bare "@" are not
// imports, and neither is "name@example.com" (no white space before the "@").
func Imports(text string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, para := range prose(text) {
		scanProse(para, add)
	}
	return out
}

// prose splits text into its paragraphs of prose, leaving out fenced and indented
// code blocks. It is a line-level reading of CommonMark's block structure, close
// enough for deciding what an author meant as an example: fences open with three or
// more backquotes or tildes indented by at most three spaces and close with a run of
// the same character at least as long; an indented line after a blank line is code
// unless a list item came before it (where it continues the item).
func prose(text string) []string {
	var (
		paras     []string
		para      []string
		fence     byte // the fence character of an open fenced block, 0 for none
		fenceLen  int
		indented  bool // inside an indented code block
		prevBlank = true
		inList    bool
	)
	flush := func() {
		if len(para) > 0 {
			paras = append(paras, strings.Join(para, "\n"))
			para = para[:0]
		}
	}
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSuffix(line, "\r")
		indent, rest := leadingIndent(line)
		if fence != 0 {
			if indent <= 3 && closesFence(rest, fence, fenceLen) {
				fence = 0
				prevBlank = true
			}
			continue
		}
		if strings.TrimSpace(line) == "" {
			flush()
			prevBlank = true
			continue
		}
		if indented {
			if indent >= 4 {
				continue
			}
			indented = false
		}
		if indent <= 3 {
			if c, n, ok := opensFence(rest); ok {
				flush()
				fence, fenceLen = c, n
				continue
			}
		}
		if indent >= 4 && prevBlank && !inList {
			flush()
			indented = true
			continue
		}
		switch {
		case indent <= 3 && isListItem(rest):
			inList = true
		case indent == 0 && prevBlank:
			// A paragraph at the margin after a blank line ends the list.
			inList = false
		}
		para = append(para, line)
		prevBlank = false
	}
	flush()
	return paras
}

// leadingIndent returns the width of line's leading white space (a tab counts to the
// next multiple of four) and the rest of the line.
func leadingIndent(line string) (int, string) {
	w := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case ' ':
			w++
		case '\t':
			w += 4 - w%4
		default:
			return w, line[i:]
		}
	}
	return w, ""
}

// opensFence reports whether rest (a line without its indentation) opens a fenced
// code block, and with which character and run length. A backquote fence whose info
// string holds a backquote is not a fence (it is inline code), as CommonMark says.
func opensFence(rest string) (byte, int, bool) {
	if rest == "" || rest[0] != '`' && rest[0] != '~' {
		return 0, 0, false
	}
	c := rest[0]
	n := 0
	for n < len(rest) && rest[n] == c {
		n++
	}
	if n < 3 || c == '`' && strings.IndexByte(rest[n:], '`') >= 0 {
		return 0, 0, false
	}
	return c, n, true
}

// closesFence reports whether rest closes a fence of c opened with n characters: a run
// of at least n, then only white space.
func closesFence(rest string, c byte, n int) bool {
	m := 0
	for m < len(rest) && rest[m] == c {
		m++
	}
	return m >= n && strings.TrimSpace(rest[m:]) == ""
}

// isListItem reports whether rest starts a list item: "-", "*" or "+", or one to nine
// digits and "." or ")", followed by white space or the end of the line.
func isListItem(rest string) bool {
	if rest == "" {
		return false
	}
	i := 0
	switch {
	case rest[0] == '-' || rest[0] == '*' || rest[0] == '+':
		i = 1
	case rest[0] >= '0' && rest[0] <= '9':
		for i < len(rest) && i < 9 && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i >= len(rest) || rest[i] != '.' && rest[i] != ')' {
			return false
		}
		i++
	default:
		return false
	}
	return i == len(rest) || rest[i] == ' ' || rest[i] == '\t'
}

// scanProse calls add with each import of one paragraph, skipping code spans. A code
// span opens with a run of backquotes and closes with the next run of the same length;
// an unclosed run is literal text. A backslash escapes the next character, so "\@x"
// and "\`" are text.
func scanProse(s string, add func(string)) {
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '\\':
			i += 2
		case c == '`':
			n := run(s, i, '`')
			if end := closingRun(s, i+n, n); end >= 0 {
				i = end
			} else {
				i += n
			}
		case c == '@' && (i == 0 || spaceBefore(s, i)):
			tok, end := token(s, i+1)
			if p, ok := importPath(tok); ok {
				add(p)
			}
			i = max(end, i+1)
		default:
			i++
		}
	}
}

// run returns the length of the run of c starting at s[i].
func run(s string, i int, c byte) int {
	n := 0
	for i+n < len(s) && s[i+n] == c {
		n++
	}
	return n
}

// closingRun returns the index just past the first run of exactly n backquotes at or
// after from, or -1 when there is none.
func closingRun(s string, from, n int) int {
	for i := from; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		m := run(s, i, '`')
		if m == n {
			return i + m
		}
		i += m
	}
	return -1
}

// spaceBefore reports whether the character before s[i] is white space.
func spaceBefore(s string, i int) bool {
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return unicode.IsSpace(r)
}

// token reads the path after an "@" at s[from:]: up to white space, a backquote or a
// backslash that does not escape a space. It returns the path with "\ " unescaped and
// the index where it ended.
func token(s string, from int) (string, int) {
	var b strings.Builder
	i := from
	for i < len(s) {
		if s[i] == '\\' {
			if i+1 < len(s) && s[i+1] == ' ' {
				b.WriteByte(' ')
				i += 2
				continue
			}
			break
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == '`' || unicode.IsSpace(r) {
			break
		}
		b.WriteString(s[i : i+size])
		i += size
	}
	return b.String(), i
}

// importPath cleans a token into the path it imports, and reports whether it is one.
func importPath(tok string) (string, bool) {
	if i := strings.IndexByte(tok, '#'); i >= 0 {
		tok = tok[:i]
	}
	tok = strings.TrimRight(tok, `.,;:!?)]}>"'`)
	switch {
	case tok == "" || tok == "/" || tok == "~":
		return "", false
	case strings.HasPrefix(tok, "./"), strings.HasPrefix(tok, "../"), strings.HasPrefix(tok, "~/"), strings.HasPrefix(tok, "/"):
		return tok, true
	}
	c := tok[0]
	ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
	return tok, ok
}
