package gitignore

import (
	"path"
	"regexp"
	"strings"
)

// Gitignore semantics, as git documents them (gitignore(5)) and as every walk of the
// roots applies them (Glob, Grep, file history's snapshot of Bash changes):
//
//   - blank lines and lines starting with "#" are skipped; "\#" and "\!" escape a leading
//     "#" or "!"; trailing spaces are dropped unless escaped with a backslash;
//   - a leading "!" re-includes what an earlier pattern excluded; the last matching pattern
//     wins, and patterns of a deeper .gitignore win over those of a shallower one;
//   - a trailing "/" makes a pattern match directories only;
//   - a pattern with a "/" at its start or in its middle is anchored to the directory of its
//     .gitignore; any other pattern matches the base name at every depth;
//   - "*" and "?" never match "/"; "[...]" is a bracket expression ("[!...]" negates);
//     "**/" at the start matches in every directory, "/**" at the end matches everything
//     inside, "/**/" matches zero or more directories;
//   - an ignored directory is not entered, so nothing below it can be re-included (git's
//     rule too).

// ignoreRuleKind selects how a rule matches, so the common shapes ("node_modules",
// "*.log") skip the regexp engine.
type ignoreRuleKind uint8

const (
	ignoreExactBase  ignoreRuleKind = iota // base name equals lit
	ignoreSuffixBase                       // base name ends with lit ("*" + lit)
	ignoreRegexp                           // re matches (the base name, or the relative path when anchored)
)

// ignoreRule is one pattern line of a .gitignore file.
type ignoreRule struct {
	kind     ignoreRuleKind
	negate   bool
	dirOnly  bool
	anchored bool
	lit      string
	re       *regexp.Regexp
}

// ignoreFile is the parsed content of one .gitignore file; its patterns are relative to
// base, the canonical directory holding it.
type ignoreFile struct {
	base  string
	rules []ignoreRule
}

// ignoreStack is the chain of ignore files in force in one directory of a walk, the
// deepest first. A nil *ignoreStack ignores nothing. It is immutable, so the subtrees of a
// walk share their ancestors' chain.
type ignoreStack struct {
	file   *ignoreFile
	parent *ignoreStack
}

// push returns the stack with f on top (s itself when f has no rules).
func (s *ignoreStack) push(f *ignoreFile) *ignoreStack {
	if f == nil || len(f.rules) == 0 {
		return s
	}
	return &ignoreStack{file: f, parent: s}
}

// ignored reports whether the canonical path p (a directory when isDir) is excluded.
func (s *ignoreStack) ignored(p string, isDir bool) bool {
	for st := s; st != nil; st = st.parent {
		rel, ok := relUnder(st.file.base, p)
		if !ok || rel == "" {
			continue
		}
		base := path.Base(rel)
		rules := st.file.rules
		for i := len(rules) - 1; i >= 0; i-- {
			if rules[i].match(rel, base, isDir) {
				return !rules[i].negate
			}
		}
	}
	return false
}

func (r *ignoreRule) match(rel, base string, isDir bool) bool {
	if r.dirOnly && !isDir {
		return false
	}
	switch r.kind {
	case ignoreExactBase:
		return base == r.lit
	case ignoreSuffixBase:
		return strings.HasSuffix(base, r.lit)
	}
	if r.anchored {
		return r.re.MatchString(rel)
	}
	return r.re.MatchString(base)
}

// relUnder returns p relative to dir with "/" separators, and whether p is dir or lies
// beneath it.
func relUnder(dir, p string) (string, bool) {
	if p == dir {
		return "", true
	}
	if dir == "/" {
		if strings.HasPrefix(p, "/") {
			return p[1:], true
		}
		return "", false
	}
	if len(p) > len(dir) && p[len(dir)] == '/' && p[:len(dir)] == dir {
		return p[len(dir)+1:], true
	}
	return "", false
}

// parseIgnore parses the content of a .gitignore file whose patterns are relative to the
// canonical directory base. Lines that cannot be compiled are skipped, as git skips them.
func parseIgnore(base string, content []byte) *ignoreFile {
	f := &ignoreFile{base: base}
	for _, line := range strings.Split(string(content), "\n") {
		if r, ok := compileIgnoreRule(line); ok {
			f.rules = append(f.rules, r)
		}
	}
	return f
}

// compileIgnoreRule compiles one .gitignore line; ok is false for blank lines, comments
// and patterns that match nothing.
func compileIgnoreRule(line string) (r ignoreRule, ok bool) {
	line = strings.TrimSuffix(line, "\r")
	if line == "" || line[0] == '#' {
		return r, false
	}
	// Trailing spaces go unless the last one is escaped.
	for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, "\\ ") {
		line = line[:len(line)-1]
	}
	if line == "" {
		return r, false
	}
	if line[0] == '!' {
		r.negate = true
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	r.anchored = strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	if line == "" {
		return r, false
	}
	if !r.anchored {
		switch {
		case !strings.ContainsAny(line, `*?[\`):
			r.kind, r.lit = ignoreExactBase, line
			return r, true
		case line[0] == '*' && !strings.ContainsAny(line[1:], `*?[\`):
			r.kind, r.lit = ignoreSuffixBase, line[1:]
			return r, true
		}
	}
	re, err := regexp.Compile("^" + ignoreGlobToRegexp(line) + "$")
	if err != nil {
		return r, false
	}
	r.kind, r.re = ignoreRegexp, re
	return r, true
}

// ignoreGlobToRegexp translates a gitignore glob (without its "!" and trailing "/") into
// RE2 syntax matching a whole slash-separated relative path.
func ignoreGlobToRegexp(g string) string {
	var b strings.Builder
	for i := 0; i < len(g); i++ {
		c := g[i]
		switch c {
		case '*':
			j := i
			for j < len(g) && g[j] == '*' {
				j++
			}
			run := j - i
			atStart := i == 0 || g[i-1] == '/'
			atEnd := j == len(g) || g[j] == '/'
			switch {
			case run >= 2 && atStart && j == len(g):
				b.WriteString(".*")
			case run >= 2 && atStart && atEnd:
				b.WriteString("(?:.*/)?")
				j++ // the "/" after "**" is part of "(?:.*/)?"
			default:
				b.WriteString("[^/]*")
			}
			i = j - 1
		case '?':
			b.WriteString("[^/]")
		case '[':
			if class, n, ok := ignoreBracket(g[i:]); ok {
				b.WriteString(class)
				i += n - 1
			} else {
				b.WriteString(`\[`)
			}
		case '\\':
			if i+1 < len(g) {
				i++
				b.WriteString(regexp.QuoteMeta(g[i : i+1]))
			} else {
				b.WriteString(`\\`)
			}
		default:
			b.WriteString(regexp.QuoteMeta(g[i : i+1]))
		}
	}
	return b.String()
}

// ignoreBracket translates the bracket expression at the start of s into an RE2 class
// that never matches "/", returning it and the number of bytes of s it used.
func ignoreBracket(s string) (class string, n int, ok bool) {
	var b strings.Builder
	i := 1
	negate := false
	if i < len(s) && (s[i] == '!' || s[i] == '^') {
		negate = true
		i++
	}
	b.WriteByte('[')
	if negate {
		b.WriteString("^/")
	}
	first := true
	for i < len(s) {
		c := s[i]
		switch {
		case c == ']' && !first:
			b.WriteByte(']')
			return b.String(), i + 1, true
		case c == '[' && i+1 < len(s) && s[i+1] == ':':
			end := strings.Index(s[i+2:], ":]")
			if end < 0 {
				return "", 0, false
			}
			b.WriteString(s[i : i+2+end+2])
			i += 2 + end + 2
			first = false
			continue
		case c == '\\' && i+1 < len(s):
			i++
			if e := s[i]; e < 0x80 && !isWordByte(e) {
				b.WriteByte('\\')
			}
			b.WriteByte(s[i])
		case c == '\\' || c == '[' || c == ']' || c == '^':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
		first = false
		i++
	}
	return "", 0, false
}

// isWordByte reports whether c is an ASCII letter, digit or underscore.
func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
