package gitconf

import (
	"strings"
)

// entry is one variable of a git configuration file. section and key are lower case (git
// compares them without case); sub, the subsection, keeps its case.
type entry struct {
	section, sub, key string
	value             string
	hasValue          bool // "key = value"; a bare "key" is a boolean true
}

// parse reads a git configuration file (git-config(1), "CONFIGURATION FILE"). ok is false for
// anything it cannot read the way git would; the caller then assumes the worst.
func parse(src string) (entries []entry, ok bool) {
	p := &parser{src: src}
	for {
		p.skipSpaceAndComments()
		if p.eof() {
			return p.entries, true
		}
		c := p.src[p.i]
		switch {
		case c == '[':
			if !p.header() {
				return nil, false
			}
		case isAlpha(c):
			if p.section == "" && !p.sawHeader {
				return nil, false // a variable before any section: git refuses the file
			}
			if !p.variable() {
				return nil, false
			}
		default:
			return nil, false
		}
	}
}

type parser struct {
	src       string
	i         int
	section   string
	sub       string
	sawHeader bool
	entries   []entry
}

func (p *parser) eof() bool { return p.i >= len(p.src) }

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isKeyChar(c byte) bool { return isAlpha(c) || c >= '0' && c <= '9' || c == '-' }

// skipSpaceAndComments skips blanks, newlines and comment lines.
func (p *parser) skipSpaceAndComments() {
	for !p.eof() {
		switch p.src[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		case '#', ';':
			for !p.eof() && p.src[p.i] != '\n' {
				p.i++
			}
		default:
			return
		}
	}
}

// header reads [section], [section "subsection"] or the old [section.subsection].
func (p *parser) header() bool {
	p.i++ // [
	start := p.i
	for !p.eof() && (isKeyChar(p.src[p.i]) || p.src[p.i] == '.') {
		p.i++
	}
	name := p.src[start:p.i]
	if name == "" {
		return false
	}
	p.sub = ""
	if !p.eof() && (p.src[p.i] == ' ' || p.src[p.i] == '\t') {
		for !p.eof() && (p.src[p.i] == ' ' || p.src[p.i] == '\t') {
			p.i++
		}
		if p.eof() || p.src[p.i] != '"' || strings.Contains(name, ".") {
			return false
		}
		p.i++
		var sub strings.Builder
		for {
			if p.eof() || p.src[p.i] == '\n' {
				return false
			}
			c := p.src[p.i]
			p.i++
			if c == '"' {
				break
			}
			if c == '\\' {
				if p.eof() || p.src[p.i] == '\n' {
					return false
				}
				c = p.src[p.i]
				p.i++
			}
			sub.WriteByte(c)
		}
		p.sub = sub.String()
	} else if dot := strings.IndexByte(name, '.'); dot >= 0 {
		// [section.sub] is the deprecated spelling; its subsection is compared without case.
		name, p.sub = name[:dot], strings.ToLower(name[dot+1:])
	}
	if p.eof() || p.src[p.i] != ']' {
		return false
	}
	p.i++
	p.section = strings.ToLower(name)
	p.sawHeader = true
	return true
}

// variable reads "key", "key = value" (with quotes, escapes, comments and continued lines).
func (p *parser) variable() bool {
	start := p.i
	for !p.eof() && isKeyChar(p.src[p.i]) {
		p.i++
	}
	en := entry{section: p.section, sub: p.sub, key: strings.ToLower(p.src[start:p.i])}
	for !p.eof() && (p.src[p.i] == ' ' || p.src[p.i] == '\t') {
		p.i++
	}
	if p.eof() || p.src[p.i] == '\n' || p.src[p.i] == '\r' || p.src[p.i] == '#' || p.src[p.i] == ';' {
		p.entries = append(p.entries, en)
		return true
	}
	if p.src[p.i] != '=' {
		return false
	}
	p.i++
	v, ok := p.value()
	if !ok {
		return false
	}
	en.value, en.hasValue = v, true
	p.entries = append(p.entries, en)
	return true
}

// value reads a value up to the end of its (possibly continued) line.
func (p *parser) value() (string, bool) {
	var b strings.Builder
	quoted := false
	pendingSpace := 0 // blanks seen outside quotes, kept only if more text follows
	started := false
	for !p.eof() {
		c := p.src[p.i]
		p.i++
		switch {
		case c == '\n':
			if quoted {
				return "", false
			}
			return b.String(), true
		case c == '\r' && !p.eof() && p.src[p.i] == '\n':
			continue
		case !quoted && (c == '#' || c == ';'):
			for !p.eof() && p.src[p.i] != '\n' {
				p.i++
			}
		case !quoted && (c == ' ' || c == '\t'):
			if started {
				pendingSpace++
			}
		case c == '"':
			quoted = !quoted
			started = true
		case c == '\\':
			if p.eof() {
				return "", false
			}
			e := p.src[p.i]
			p.i++
			switch e {
			case '\n':
				continue // a continued line
			case '\r':
				if !p.eof() && p.src[p.i] == '\n' {
					p.i++
					continue
				}
				return "", false
			case 'n':
				e = '\n'
			case 't':
				e = '\t'
			case 'b':
				e = '\b'
			case '"', '\\':
			default:
				return "", false // git refuses an unknown escape
			}
			b.WriteString(strings.Repeat(" ", pendingSpace))
			pendingSpace = 0
			b.WriteByte(e)
			started = true
		default:
			b.WriteString(strings.Repeat(" ", pendingSpace))
			pendingSpace = 0
			b.WriteByte(c)
			started = true
		}
	}
	if quoted {
		return "", false
	}
	return b.String(), true
}
