package shellscan

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// Bash and mvdan.cc/sh are two lexers. Where they could split the same text into different
// words or commands, no reading of the parse tree can be trusted: the analysis would judge one
// command while bash runs another. ambiguity finds such text before any judgement is made, so
// that every judgement can refuse it instead of guessing.
//
// The rule is an allowlist of what is known to read the same: printable UTF-8 text, spaces, tabs
// and newlines, where a backslash-newline (a line continuation) appears only between two words
// of a command. Everything else is ambiguous:
//
//   - a carriage return: bash reads it as an ordinary character of a word, mvdan.cc/sh as a
//     blank, and a backslash before \r\n is a line continuation to mvdan.cc/sh but an escaped
//     carriage return (followed by the end of the command) to bash;
//   - a NUL byte, which ends the command text bash receives, and any other control character
//     (bash uses \x01 and \x7f as internal quoting markers);
//   - bytes that are not UTF-8, which the two lexers split into characters differently;
//   - invisible Unicode format, control and line-separator characters, which make the text a
//     reader sees differ from the text that runs;
//   - a backslash-newline anywhere else: inside a word or quotes, where bash removes it before
//     it looks for `$(`, keywords or operators (so `"$\⏎(cmd)"` is a command substitution to
//     bash); inside a comment, which bash ends at the newline while mvdan.cc/sh continues it;
//     and in any script with a here-document, whose body bash reads line by line with
//     continuations joined, also across the delimiter line.

// ambiguity returns why bash could read src differently from f, the tree mvdan.cc/sh made of
// it; "" when the two readings agree.
func ambiguity(src string, f *syntax.File) string {
	continuation := false
	for i := 0; i < len(src); {
		c := src[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '\r':
				return "a carriage return"
			case c == 0:
				return "a NUL byte"
			case c == '\\' && i+1 < len(src) && src[i+1] == '\n':
				continuation = true
			case c < ' ' && c != '\t' && c != '\n', c == 0x7f:
				return "a control character"
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(src[i:])
		if r == utf8.RuneError && size <= 1 {
			return "bytes that are not UTF-8"
		}
		if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) {
			return "an invisible Unicode control or format character"
		}
		i += size
	}
	if continuation {
		if where := unsafeContinuation(src, f); where != "" {
			return where
		}
	}
	return ""
}

// unsafeContinuation returns where a backslash-newline of src is not provably a plain line
// break between two words, or "".
func unsafeContinuation(src string, f *syntax.File) string {
	// The spans of every word, literal and comment: a continuation inside one of them joins
	// characters bash goes on to lex as one.
	var spans [][2]int
	heredoc := false
	if f != nil {
		syntax.Walk(f, func(n syntax.Node) bool {
			switch x := n.(type) {
			case *syntax.Word, *syntax.Lit, *syntax.Comment:
				spans = append(spans, [2]int{int(x.Pos().Offset()), int(x.End().Offset())})
			case *syntax.Redirect:
				if x.Op == syntax.Hdoc || x.Op == syntax.DashHdoc {
					heredoc = true
				}
			}
			return true
		})
	}
	for i := strings.Index(src, "\\\n"); i >= 0; {
		switch {
		case heredoc:
			return "a line continuation in a script with a here-document"
		case i == 0 || src[i-1] != ' ' && src[i-1] != '\t' || i >= 2 && src[i-2] == '\\':
			return "a line continuation inside a word"
		case strings.Contains(src[strings.LastIndexByte(src[:i], '\n')+1:i], "#"):
			return "a line continuation on a line with a comment or #"
		}
		for _, sp := range spans {
			if sp[0] <= i && i < sp[1] {
				return "a line continuation inside a word"
			}
		}
		j := strings.Index(src[i+2:], "\\\n")
		if j < 0 {
			break
		}
		i += 2 + j
	}
	return ""
}
