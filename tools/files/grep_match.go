package files

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"sync"
	"unicode/utf8"

	"github.com/sema-agent/sema"
)

// grepMatcher finds the lines of a buffer that match a pattern.
//
// Without multiline, a match never spans lines (grep's semantics): the pattern is rewritten
// so that no character class, "." or anchor can cross a newline, which lets the regexp run
// over a whole file at once instead of line by line. A literal that every match must
// contain (extracted with regexp/syntax) skips files and lines without it; a pattern that
// is only a literal runs no regexp at all; a pattern without such a literal runs a lazy
// DFA (lineDFA) instead of the regexp.
type grepMatcher struct {
	re        *regexp.Regexp
	multiline bool
	// lits: every match contains at least one of them. Empty when none is known.
	lits []grepLiteral
	// pure: the pattern is exactly lits[0], so finding it is a match.
	pure bool
	// foldRisk: some literal has grepLiteral.foldRisk.
	foldRisk bool
	// chunk is how many bytes of whole lines one regexp call is given when the regexp
	// must scan a buffer without multiline: small enough for Go's backtracking matcher,
	// which is several times faster than its NFA on long inputs. 0: the whole buffer.
	chunk int
	// dfas holds *lineDFA for scans without a literal (nil pool New: no DFA, the
	// regexp scans); each scan takes its own, so the states it learned serve the next
	// file the same worker searches.
	dfas sync.Pool
}

// Go's regexp backtracks (instead of running its NFA) when the program has at most
// 500 instructions and the input is shorter than 256 Kbit divided by their number.
const (
	reMaxBacktrackProg   = 500
	reMaxBacktrackVector = 256 * 1024
)

// grepLiteral is a byte string a prefilter searches for.
type grepLiteral struct {
	b []byte
	// fold: match ASCII letters without case; b is lower case.
	fold bool
	// foldRisk: b holds k or s, which (?i) also matches as the Kelvin sign and the long s;
	// a file holding either is searched without the prefilter.
	foldRisk bool
	// rare is the index in b of the byte the search looks for first.
	rare int
}

// grepMaxLiterals bounds the alternatives a prefilter tries (foo|bar|…).
const grepMaxLiterals = 8

// compileGrep compiles pattern. Errors are *sema.Error with CodePatternInvalid.
func compileGrep(pattern string, ignoreCase, multiline bool) (*grepMatcher, error) {
	flags := syntax.Perl &^ syntax.OneLine // ^ and $ match at line boundaries, as grep's do
	if ignoreCase {
		flags |= syntax.FoldCase
	}
	if multiline {
		flags |= syntax.DotNL
	}
	tree, err := syntax.Parse(pattern, flags)
	if err != nil {
		return nil, sema.Errorf(CodePatternInvalid, "the regular expression %q does not compile: %v (the syntax is RE2: no lookaround or backreferences)", pattern, err)
	}
	if !multiline {
		if err := confineToLine(tree); err != nil {
			return nil, sema.Errorf(CodePatternInvalid, "the regular expression %q %v; set multiline to true to match across lines", pattern, err)
		}
	}
	tree = tree.Simplify()
	re, err := regexp.Compile(tree.String())
	if err != nil {
		return nil, sema.Errorf(CodePatternInvalid, "the regular expression %q does not compile: %v", pattern, err)
	}
	m := &grepMatcher{re: re, multiline: multiline}
	if prog, err := syntax.Compile(tree); err == nil && !multiline {
		if len(prog.Inst) <= reMaxBacktrackProg {
			m.chunk = reMaxBacktrackVector/len(prog.Inst) - 1
		}
		if newLineDFA(prog) != nil {
			m.dfas.New = func() any { return newLineDFA(prog) }
		}
	}
	if lits, ok := requiredLiterals(tree); ok && usefulLiterals(lits) {
		m.lits = lits
		for i := range m.lits {
			m.lits[i].rare = rarestByte(m.lits[i].b)
			m.foldRisk = m.foldRisk || m.lits[i].foldRisk
		}
		_, whole := wholeLiteral(tree)
		m.pure = len(lits) == 1 && !lits[0].foldRisk && whole
	}
	return m, nil
}

// confineToLine rewrites tree so that no match can contain a newline: classes lose "\n",
// "." stops at newlines, and \A and \z become line anchors. A literal newline is an error.
func confineToLine(re *syntax.Regexp) error {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if r == '\n' {
				return errString("contains a newline, which a single line cannot match")
			}
		}
	case syntax.OpCharClass:
		re.Rune = classWithoutNewline(re.Rune)
		if len(re.Rune) == 0 {
			re.Op = syntax.OpNoMatch
		}
	case syntax.OpAnyChar:
		re.Op = syntax.OpAnyCharNotNL
	case syntax.OpBeginText:
		re.Op = syntax.OpBeginLine
	case syntax.OpEndText:
		re.Op = syntax.OpEndLine
		re.Flags &^= syntax.WasDollar
	}
	for _, s := range re.Sub {
		if err := confineToLine(s); err != nil {
			return err
		}
	}
	return nil
}

type errString string

func (e errString) Error() string { return string(e) }

// classWithoutNewline removes '\n' from a class given as rune range pairs.
func classWithoutNewline(ranges []rune) []rune {
	out := make([]rune, 0, len(ranges)+2)
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		if lo > '\n' || hi < '\n' {
			out = append(out, lo, hi)
			continue
		}
		if lo < '\n' {
			out = append(out, lo, '\n'-1)
		}
		if hi > '\n' {
			out = append(out, '\n'+1, hi)
		}
	}
	return out
}

// wholeLiteral returns the one string re matches, when it is a literal (or a capture or
// concatenation of literals with the same case folding).
func wholeLiteral(re *syntax.Regexp) (grepLiteral, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return literalOf(re)
	case syntax.OpCapture:
		return wholeLiteral(re.Sub[0])
	case syntax.OpConcat:
		var out grepLiteral
		for i, s := range re.Sub {
			l, ok := wholeLiteral(s)
			if !ok || i > 0 && l.fold != out.fold {
				return grepLiteral{}, false
			}
			out = joinLiterals(out, l)
		}
		return out, len(re.Sub) > 0
	}
	return grepLiteral{}, false
}

func joinLiterals(a, b grepLiteral) grepLiteral {
	return grepLiteral{b: append(append([]byte(nil), a.b...), b.b...), fold: b.fold, foldRisk: a.foldRisk || b.foldRisk}
}

// requiredLiterals returns literals at least one of which occurs in every match of re.
func requiredLiterals(re *syntax.Regexp) ([]grepLiteral, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		l, ok := literalOf(re)
		if !ok {
			return nil, false
		}
		return []grepLiteral{l}, true
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiterals(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiterals(re.Sub[0])
		}
	case syntax.OpConcat:
		if l, ok := wholeLiteral(re); ok {
			return []grepLiteral{l}, true
		}
		var best []grepLiteral
		consider := func(lits []grepLiteral) {
			if betterLiterals(lits, best) {
				best = lits
			}
		}
		// Runs of adjacent literals ("abc" "abc" from (?:abc){2}) are one literal.
		for i := 0; i < len(re.Sub); {
			j := i
			var run grepLiteral
			for ; j < len(re.Sub); j++ {
				l, ok := wholeLiteral(re.Sub[j])
				if !ok || j > i && l.fold != run.fold {
					break
				}
				run = joinLiterals(run, l)
			}
			if j > i {
				consider([]grepLiteral{run})
				i = j
				continue
			}
			if lits, ok := requiredLiterals(re.Sub[i]); ok {
				consider(lits)
			}
			i++
		}
		return best, best != nil
	case syntax.OpAlternate:
		var all []grepLiteral
		for _, s := range re.Sub {
			lits, ok := requiredLiterals(s)
			if !ok {
				return nil, false
			}
			all = append(all, lits...)
		}
		if len(all) > grepMaxLiterals {
			return nil, false
		}
		return all, true
	}
	return nil, false
}

// literalOf converts an OpLiteral node. A case-folded literal is usable only when its
// letters are ASCII (the prefilter folds ASCII only).
func literalOf(re *syntax.Regexp) (grepLiteral, bool) {
	fold := re.Flags&syntax.FoldCase != 0
	var b []byte
	l := grepLiteral{fold: fold}
	for _, r := range re.Rune {
		if fold {
			if r >= utf8.RuneSelf {
				return grepLiteral{}, false
			}
			c := lowerASCII(byte(r))
			if c == 'k' || c == 's' {
				l.foldRisk = true
			}
			b = append(b, c)
			continue
		}
		b = utf8.AppendRune(b, r)
	}
	l.b = b
	return l, true
}

// betterLiterals reports whether a is a stronger prefilter than b: a longer shortest
// literal, then fewer alternatives.
func betterLiterals(a, b []grepLiteral) bool {
	if b == nil {
		return true
	}
	sa, sb := shortest(a), shortest(b)
	if sa != sb {
		return sa > sb
	}
	return len(a) < len(b)
}

func shortest(lits []grepLiteral) int {
	n := -1
	for _, l := range lits {
		if n < 0 || len(l.b) < n {
			n = len(l.b)
		}
	}
	return n
}

// usefulLiterals reports whether a prefilter on lits pays for itself: single bytes match
// too often.
func usefulLiterals(lits []grepLiteral) bool {
	return len(lits) > 0 && shortest(lits) >= 2
}

// byteRank orders bytes from rare (0) to common in source code and prose; the prefilter
// looks for the rarest byte of a literal first, as memchr-based searchers do, so that
// few candidates need checking.
var byteRank = func() (r [256]uint8) {
	const common = "'\\`~^$%@#?!+|&><zjqZQJXKYVWUHGBFMPLDCONIARSTE9876543210][;-/x*}{:=kvwyb_\",).(\t\n\r" +
		"gfmphudclrsnioate "
	for i := 0; i < len(common); i++ {
		r[common[i]] = uint8(i + 1)
	}
	return r
}()

func rarestByte(b []byte) int {
	best := 0
	for i := 1; i < len(b); i++ {
		if byteRank[b[i]] < byteRank[b[best]] {
			best = i
		}
	}
	return best
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// index returns the first offset of l in s, or -1.
func (l *grepLiteral) index(s []byte) int {
	if l.fold {
		return indexFoldASCII(s, l.b, l.rare)
	}
	return indexRare(s, l.b, l.rare)
}

// indexRare finds lit in s by looking for its byte lit[rare] with IndexByte and comparing
// around each hit: for a literal with an uncommon byte that skips most of the buffer at
// memchr speed, where bytes.Index would stop at every occurrence of the first byte.
func indexRare(s, lit []byte, rare int) int {
	n := len(lit)
	if n < 2 {
		return bytes.Index(s, lit)
	}
	c := lit[rare]
	end := len(s) - n + rare + 1 // the rare byte of a match lies in s[rare:end]
	for pos := rare; pos < end; {
		j := bytes.IndexByte(s[pos:end], c)
		if j < 0 {
			return -1
		}
		start := pos + j - rare
		if bytes.Equal(s[start:start+n], lit) {
			return start
		}
		pos += j + 1
	}
	return -1
}

// indexFoldASCII finds lit (lower case) in s ignoring ASCII case. It looks for the byte
// lit[rare] (in both cases when it is a letter) with IndexByte, then compares around it.
func indexFoldASCII(s, lit []byte, rare int) int {
	n := len(lit)
	if n == 0 {
		return 0
	}
	c := lit[rare]
	other := c
	if 'a' <= c && c <= 'z' {
		other = c - ('a' - 'A')
	}
	// Candidate positions of the rare byte lie in s[rare : len(s)-n+rare+1].
	end := len(s) - n + rare + 1
	pos := rare
	nextC, nextO := -2, -2
	for pos < end {
		if nextC != -1 && nextC < pos {
			nextC = indexFrom(s[:end], c, pos)
		}
		if other != c && nextO != -1 && nextO < pos {
			nextO = indexFrom(s[:end], other, pos)
		}
		j := nextC
		if other != c && nextO >= 0 && (j < 0 || nextO < j) {
			j = nextO
		}
		if j < 0 {
			return -1
		}
		if start := j - rare; equalFoldASCII(s[start:start+n], lit) {
			return start
		}
		pos = j + 1
	}
	return -1
}

func indexFrom(s []byte, c byte, from int) int {
	if i := bytes.IndexByte(s[from:], c); i >= 0 {
		return from + i
	}
	return -1
}

// equalFoldASCII compares s with the lower-case lit, ignoring ASCII case.
func equalFoldASCII(s, lit []byte) bool {
	for i, c := range lit {
		if lowerASCII(s[i]) != c {
			return false
		}
	}
	return true
}

// foldRiskBytes are the UTF-8 forms of the Kelvin sign and the long s.
var foldRiskBytes = [][]byte{[]byte("\u212A"), []byte("\u017F")}

// candidate reports whether buf may hold a match, and whether its lines can be found
// through the literals (false: scan the whole buffer with the regexp).
func (m *grepMatcher) candidate(buf []byte) (may, byLiteral bool) {
	if len(m.lits) == 0 || m.foldRisk && hasFoldRisk(buf) {
		return true, false
	}
	for i := range m.lits {
		if m.lits[i].index(buf) >= 0 {
			return true, true
		}
	}
	return false, true
}

func hasFoldRisk(buf []byte) bool {
	for _, b := range foldRiskBytes {
		if bytes.Contains(buf, b) {
			return true
		}
	}
	return false
}

// scan calls hit with the byte span [start, end) of the whole lines of each match, in
// order (end excludes the last line's newline); hit returns false to stop. Without
// multiline each line is reported at most once. A buffer holding a NUL byte is binary
// and its lines are never shown: the scan may stop at the first NUL.
func (m *grepMatcher) scan(buf []byte, hit func(start, end int) bool) {
	may, byLiteral := m.candidate(buf)
	if !may {
		return
	}
	if byLiteral && !m.multiline {
		m.scanByLiteral(buf, hit)
		return
	}
	from := 0
	if m.dfas.New != nil {
		d := m.dfas.Get().(*lineDFA)
		resume, ok := d.scan(buf, 0, hit)
		m.dfas.Put(d)
		if ok {
			return
		}
		from = resume // the DFA gave up (too many states): the regexp finishes
	}
	if m.chunk > 0 && !m.multiline {
		m.scanByChunk(buf, from, hit)
		return
	}
	m.scanFrom(buf, from, len(buf), hit)
}

// scanFrom runs the regexp over buf[from:to] (whole lines) and reports the lines of its
// matches; it reports whether the caller should go on.
func (m *grepMatcher) scanFrom(buf []byte, from, to int, hit func(start, end int) bool) bool {
	pos := from
	for pos <= to {
		loc := m.re.FindIndex(buf[pos:to])
		if loc == nil {
			return true
		}
		s, e := pos+loc[0], pos+loc[1]
		if s == len(buf) && (s == 0 || buf[s-1] == '\n') {
			return true // an empty match after the last line is not on a line
		}
		last := s
		if e > s {
			last = e - 1 // a match ending with a newline ends on the line it closes
		}
		ls, le := lineStart(buf, s), lineEnd(buf, last)
		if !hit(ls, le) {
			return false
		}
		if m.multiline {
			// The next match may start on a line this one ended on; the caller merges lines.
			pos = max(e, s+1)
			continue
		}
		pos = le + 1
	}
	return true
}

// scanByChunk runs the regexp over runs of whole lines of about m.chunk bytes, from the
// line starting at from: without multiline no match crosses a line, so the answer is the
// same as over the whole buffer.
func (m *grepMatcher) scanByChunk(buf []byte, from int, hit func(start, end int) bool) {
	for pos := from; pos <= len(buf); {
		end := len(buf)
		if pos+m.chunk < len(buf) {
			if j := bytes.IndexByte(buf[pos+m.chunk:], '\n'); j >= 0 {
				end = pos + m.chunk + j
			}
			if j := bytes.LastIndexByte(buf[pos:pos+m.chunk], '\n'); j > 0 {
				end = pos + j // end the chunk at the last line that fits
			}
		}
		if !m.scanFrom(buf, pos, end, hit) {
			return
		}
		pos = end + 1
	}
}

// scanByLiteral visits only the lines holding one of the literals, and runs the regexp on
// each such line (no regexp at all for a pure literal).
func (m *grepMatcher) scanByLiteral(buf []byte, hit func(start, end int) bool) {
	next := make([]int, len(m.lits)) // next occurrence of each literal at or after pos; -2 unknown
	for i := range next {
		next[i] = -2
	}
	pos := 0
	for pos <= len(buf) {
		at := -1
		for i := range m.lits {
			if next[i] == -1 {
				continue
			}
			if next[i] < pos {
				if j := m.lits[i].index(buf[pos:]); j >= 0 {
					next[i] = pos + j
				} else {
					next[i] = -1
					continue
				}
			}
			if at < 0 || next[i] < at {
				at = next[i]
			}
		}
		if at < 0 {
			return
		}
		ls, le := lineStart(buf, at), lineEnd(buf, at)
		if m.pure || m.re.Match(buf[ls:le]) {
			if !hit(ls, le) {
				return
			}
		}
		pos = le + 1
	}
}

func lineStart(buf []byte, i int) int {
	return bytes.LastIndexByte(buf[:i], '\n') + 1
}

func lineEnd(buf []byte, i int) int {
	if i >= len(buf) {
		return len(buf)
	}
	if j := bytes.IndexByte(buf[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(buf)
}
