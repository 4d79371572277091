package termmd

import "strings"

// A small highlighter: comments, strings, numbers and keywords, read by one scan with no
// grammar, which is what a terminal answer needs of a code block. It knows a handful of
// languages; any other is plain.

// syntax is what the scanner needs to know of a language.
type syntax struct {
	lineComment  []string // what starts a comment to the end of the line
	blockComment bool     // /* … */
	hashAfterGap bool     // # starts a comment only at a line's start or after a space
	quotes       string   // the characters that open a string
	multiline    string   // the quotes whose strings may span lines (and take no escapes)
	triple       bool     // """ and ''' strings
	quoteAfter   string   // when set, a quote opens a string only after one of these, a space or a line's start
	keywords     string   // the keywords, each between spaces
	yamlKeys     bool     // a line's leading "key:" is a key
	diff         bool     // lines coloured by their first character, nothing else
}

var (
	cLike = " auto break case catch char class const continue default delete do double else enum extern false final float for goto if import inline int interface long namespace new null nullptr package private protected public register return short signed sizeof static struct super switch template this throw throws try typedef typename union unsigned using virtual void volatile while boolean byte extends implements abstract override var bool true "
	goSyn = syntax{lineComment: []string{"//"}, blockComment: true, quotes: "\"'`", multiline: "`",
		keywords: " break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var nil true false iota "}
	pySyn = syntax{lineComment: []string{"#"}, quotes: "\"'", triple: true,
		keywords: " False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield self match case "}
	jsSyn = syntax{lineComment: []string{"//"}, blockComment: true, quotes: "\"'`", multiline: "`",
		keywords: " break case catch class const continue debugger default delete do else export extends finally for function if import in instanceof let new return super switch this throw try typeof var void while with yield async await of null undefined true false interface type enum implements private public protected readonly static abstract as from declare namespace keyof "}
	rustSyn = syntax{lineComment: []string{"//"}, blockComment: true, quotes: "\"",
		keywords: " as async await break const continue crate dyn else enum extern false fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait true type unsafe use where while "}
	shSyn = syntax{lineComment: []string{"#"}, hashAfterGap: true, quotes: "\"'", multiline: "\"'", quoteAfter: "=(|;&$",
		keywords: " if then else elif fi case esac for while until do done in function return local export readonly declare exit break continue select time "}
	cSyn    = syntax{lineComment: []string{"//"}, blockComment: true, quotes: "\"'", keywords: cLike}
	jsonSyn = syntax{lineComment: []string{"//"}, quotes: "\"", keywords: " true false null "}
	yamlSyn = syntax{lineComment: []string{"#"}, hashAfterGap: true, quotes: "\"'", quoteAfter: ":-[{,", yamlKeys: true,
		keywords: " true false null yes no on off True False Null TRUE FALSE NULL "}
	diffSyn = syntax{diff: true}
)

// syntaxFor returns the syntax of a fenced block's language, nil for one it does not know.
func syntaxFor(lang string) *syntax {
	switch strings.ToLower(lang) {
	case "go", "golang":
		return &goSyn
	case "python", "py", "python3":
		return &pySyn
	case "js", "javascript", "jsx", "mjs", "cjs", "ts", "typescript", "tsx":
		return &jsSyn
	case "rust", "rs":
		return &rustSyn
	case "sh", "bash", "shell", "zsh", "console", "shell-session":
		return &shSyn
	case "c", "h", "cpp", "c++", "cc", "cxx", "hpp", "java", "cs", "csharp", "kotlin", "kt":
		return &cSyn
	case "json", "jsonc", "json5":
		return &jsonSyn
	case "yaml", "yml":
		return &yamlSyn
	case "diff", "patch", "udiff":
		return &diffSyn
	}
	return nil
}

// highlight splits code into lines of spans coloured for lang.
func highlight(code, lang string) [][]span {
	syn := syntaxFor(lang)
	if syn == nil {
		lines := strings.Split(code, "\n")
		out := make([][]span, len(lines))
		for i, l := range lines {
			if l != "" {
				out[i] = []span{{text: l}}
			}
		}
		return out
	}
	if syn.diff {
		return highlightDiff(code)
	}
	var toks []span
	emit := func(s string, r role) {
		if s == "" {
			return
		}
		if n := len(toks); n > 0 && toks[n-1].st.r == r {
			toks[n-1].text += s
			return
		}
		toks = append(toks, span{s, sty{r: r}})
	}
	s := code
	plain := 0 // where the text not yet emitted starts
	lineStart := true
	for i := 0; i < len(s); {
		c := s[i]
		tok, r := 0, rNone
		switch {
		case c == '\n':
			lineStart = true
			i++
			continue
		case syn.yamlKeys && lineStart:
			tok, r = yamlKey(s[i:]), rKey
		}
		if tok == 0 {
			switch {
			case c == ' ':
			case syn.blockComment && strings.HasPrefix(s[i:], "/*"):
				end := strings.Index(s[i+2:], "*/")
				tok, r = len(s)-i, rComment
				if end >= 0 {
					tok = end + 4
				}
			case syn.lineCommentAt(s, i, lineStart):
				tok, r = lineLen(s[i:]), rComment
			case syn.triple && (strings.HasPrefix(s[i:], `"""`) || strings.HasPrefix(s[i:], "'''")):
				end := strings.Index(s[i+3:], s[i:i+3])
				tok, r = len(s)-i, rString
				if end >= 0 {
					tok = end + 6
				}
			case strings.IndexByte(syn.quotes, c) >= 0 && syn.quoteOpens(s, i, lineStart):
				tok, r = quoted(s[i:], strings.IndexByte(syn.multiline, c) >= 0, c == '`' || (c == '\'' && syn == &shSyn)), rString
			case c >= '0' && c <= '9' && (i == 0 || !identByte(s[i-1])):
				tok, r = identLen(s[i:]), rNumber
			case identStart(c):
				tok = identLen(s[i:])
				if (i == 0 || !identByte(s[i-1])) && strings.Contains(syn.keywords, " "+s[i:i+tok]+" ") {
					r = rKeyword
				}
			}
		}
		if c != ' ' {
			lineStart = false
		}
		if tok == 0 {
			i++
			continue
		}
		if r == rNone {
			i += tok
			continue
		}
		emit(s[plain:i], rNone)
		emit(s[i:i+tok], r)
		i += tok
		plain = i
		if strings.HasSuffix(s[:i], "\n") {
			lineStart = true
		}
	}
	emit(s[plain:], rNone)
	return splitLines(toks)
}

func (syn *syntax) lineCommentAt(s string, i int, lineStart bool) bool {
	for _, p := range syn.lineComment {
		if strings.HasPrefix(s[i:], p) {
			if p == "#" && syn.hashAfterGap && !lineStart && s[i-1] != ' ' {
				return false
			}
			return true
		}
	}
	return false
}

func (syn *syntax) quoteOpens(s string, i int, lineStart bool) bool {
	if syn.quoteAfter == "" || lineStart || s[i-1] == ' ' {
		return true
	}
	return strings.IndexByte(syn.quoteAfter, s[i-1]) >= 0
}

// quoted returns the length of the string s starts with (its quote is s[0]): to the
// closing quote, or the line's end for an unclosed one that may not span lines. raw
// strings take no backslash escapes.
func quoted(s string, multiline, raw bool) int {
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case q:
			return i + 1
		case '\\':
			if !raw {
				i++
			}
		case '\n':
			if !multiline {
				return i
			}
		}
	}
	return len(s)
}

// yamlKey returns the length of the key a YAML line starts with ("key:" or "- key:"
// after any indentation, the key only), 0 when it starts with none.
func yamlKey(s string) int {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '-') {
		i++
	}
	j := i
	for j < len(s) && s[j] != ':' && s[j] != '\n' && s[j] != '#' && s[j] != '"' && s[j] != '\'' {
		j++
	}
	if j == i || j >= len(s) || s[j] != ':' || (j+1 < len(s) && s[j+1] != ' ' && s[j+1] != '\n') {
		return 0
	}
	return j
}

func lineLen(s string) int {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return i
	}
	return len(s)
}

func identStart(c byte) bool {
	return c == '_' || (c|0x20) >= 'a' && (c|0x20) <= 'z'
}

func identByte(c byte) bool {
	return identStart(c) || c >= '0' && c <= '9'
}

// identLen returns the length of the word s starts with (an identifier or a number, with
// its dots, exponent and suffix).
func identLen(s string) int {
	i := 0
	for i < len(s) && (identByte(s[i]) || (s[i] == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9')) {
		i++
	}
	return max(i, 1)
}

// highlightDiff colours a diff's lines: additions, removals, hunk headers, file headers.
func highlightDiff(code string) [][]span {
	lines := strings.Split(code, "\n")
	out := make([][]span, len(lines))
	for i, l := range lines {
		st := sty{}
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"), strings.HasPrefix(l, "diff "), strings.HasPrefix(l, "index "):
			st.a = aBold
		case strings.HasPrefix(l, "+"):
			st.r = rAdded
		case strings.HasPrefix(l, "-"):
			st.r = rRemoved
		case strings.HasPrefix(l, "@@"):
			st.r = rHunk
		}
		if l != "" {
			out[i] = []span{{l, st}}
		}
	}
	return out
}

// splitLines cuts a token stream at its newlines into lines.
func splitLines(toks []span) [][]span {
	var out [][]span
	var cur []span
	for _, t := range toks {
		for {
			i := strings.IndexByte(t.text, '\n')
			if i < 0 {
				if t.text != "" {
					cur = append(cur, t)
				}
				break
			}
			if i > 0 {
				cur = append(cur, span{t.text[:i], t.st})
			}
			out = append(out, cur)
			cur = nil
			t.text = t.text[i+1:]
		}
	}
	return append(out, cur)
}
