package shellscan

import (
	"strings"
)

// sedScript is what a sed script does beyond printing its edited input.
type sedScript struct {
	writes []string // files named by w, W and the w flag of s
	reads  []string // files named by r and R
	exec   bool     // the e command or the e flag of s: runs a shell command
}

// parseSed reads a sed script the way GNU sed does and reports false for anything it cannot
// read completely. It understands addresses (numbers, $, first~step, /re/ and \cREc with I/M,
// addr,+N, addr,~N), negation, blocks, comments, labels, the a/i/c text forms (one-line and
// classic), s with any delimiter and its flags, y, and every one-letter command of GNU sed 4.
// Delimited parts are read as GNU's scanner reads them (a backslash quotes the next character;
// brackets are not special); a delimiter inside a bracket expression, which other seds read
// differently, makes the script unreadable rather than guessed.
func parseSed(src string) (sedScript, bool) {
	p := sedParser{src: src}
	ok := p.run()
	return p.out, ok && p.depth == 0
}

type sedParser struct {
	src   string
	i     int
	depth int
	out   sedScript
}

func (p *sedParser) more() bool { return p.i < len(p.src) }
func (p *sedParser) peek() byte { return p.src[p.i] }

func (p *sedParser) skipBlank() {
	for p.more() && (p.peek() == ' ' || p.peek() == '\t') {
		p.i++
	}
}

func (p *sedParser) restOfLine() string {
	start := p.i
	for p.more() && p.peek() != '\n' {
		p.i++
	}
	return p.src[start:p.i]
}

func (p *sedParser) digits() bool {
	start := p.i
	for p.more() && p.peek() >= '0' && p.peek() <= '9' {
		p.i++
	}
	return p.i > start
}

func (p *sedParser) run() bool {
	for {
		for p.more() && strings.IndexByte(" \t\n;", p.peek()) >= 0 {
			p.i++
		}
		if !p.more() {
			return true
		}
		if p.peek() == '#' {
			p.restOfLine()
			continue
		}
		hasAddr, ok := p.address()
		if !ok {
			return false
		}
		p.skipBlank()
		if hasAddr && p.more() && p.peek() == ',' {
			p.i++
			p.skipBlank()
			if !p.more() {
				return false
			}
			if c := p.peek(); c == '+' || c == '~' {
				p.i++
				if !p.digits() {
					return false
				}
			} else if got, ok := p.address(); !ok || !got {
				return false
			}
			p.skipBlank()
		}
		for p.more() && p.peek() == '!' {
			p.i++
			p.skipBlank()
		}
		if !p.more() {
			return false
		}
		opensBlock := p.peek() == '{'
		if !p.command() {
			return false
		}
		if opensBlock {
			continue // a command may follow { directly
		}
		p.skipBlank()
		if p.more() && strings.IndexByte(";\n}#", p.peek()) < 0 {
			return false
		}
	}
}

// address reads one optional address.
func (p *sedParser) address() (bool, bool) {
	if !p.more() {
		return false, true
	}
	switch c := p.peek(); {
	case c >= '0' && c <= '9':
		p.digits()
		if p.more() && p.peek() == '~' {
			p.i++
			if !p.digits() {
				return false, false
			}
		}
		return true, true
	case c == '$':
		p.i++
		return true, true
	case c == '/' || c == '\\':
		if c == '\\' {
			p.i++
			if !p.more() || p.peek() == '\n' || p.peek() == '\\' {
				return false, false
			}
		}
		delim := p.peek()
		p.i++
		if !p.delimited(delim, true) {
			return false, false
		}
		for p.more() && (p.peek() == 'I' || p.peek() == 'M') {
			p.i++
		}
		return true, true
	}
	return false, true
}

// delimited skips one delimited part (a regex or a replacement) and its closing delimiter.
func (p *sedParser) delimited(delim byte, regex bool) bool {
	inBracket := false
	for p.more() {
		c := p.peek()
		switch {
		case c == '\\':
			p.i += 2
			continue
		case c == '\n':
			return false
		case c == delim:
			if inBracket {
				return false
			}
			p.i++
			return true
		case regex && c == '[' && !inBracket:
			inBracket = true
			p.i++
			if p.more() && p.peek() == '^' {
				p.i++
			}
			if p.more() && p.peek() == ']' {
				p.i++
			}
			continue
		case c == ']':
			inBracket = false
		}
		p.i++
	}
	return false
}

func (p *sedParser) label() {
	p.skipBlank()
	for p.more() && strings.IndexByte(";\n", p.peek()) < 0 {
		p.i++
	}
}

func (p *sedParser) command() bool {
	c := p.peek()
	p.i++
	switch c {
	case '{':
		p.depth++
	case '}':
		p.depth--
		if p.depth < 0 {
			return false
		}
	case '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
	case 'l', 'L', 'q', 'Q':
		p.skipBlank()
		p.digits()
	case ':':
		p.label()
	case 'b', 't', 'T':
		p.label()
	case 'v':
		p.label()
	case 'a', 'i', 'c':
		p.text()
	case 'r', 'R':
		p.skipBlank()
		p.out.reads = append(p.out.reads, p.restOfLine())
	case 'w', 'W':
		p.skipBlank()
		p.out.writes = append(p.out.writes, p.restOfLine())
	case 'e':
		p.out.exec = true
		p.restOfLine()
	case 's':
		return p.substitute()
	case 'y':
		if !p.more() {
			return false
		}
		delim := p.peek()
		if delim == '\n' || delim == '\\' {
			return false
		}
		p.i++
		return p.delimited(delim, false) && p.delimited(delim, false)
	default:
		return false
	}
	return true
}

// text skips the text of a, i or c: up to the first newline that is not escaped.
func (p *sedParser) text() {
	p.skipBlank()
	if p.more() && p.peek() == '\\' {
		p.i++
		p.skipBlank()
		if p.more() && p.peek() == '\n' {
			p.i++
		}
	}
	for p.more() {
		switch p.peek() {
		case '\\':
			p.i += 2
			continue
		case '\n':
			return
		}
		p.i++
	}
	if p.i > len(p.src) {
		p.i = len(p.src)
	}
}

func (p *sedParser) substitute() bool {
	if !p.more() {
		return false
	}
	delim := p.peek()
	if delim == '\n' || delim == '\\' {
		return false
	}
	p.i++
	if !p.delimited(delim, true) || !p.delimited(delim, false) {
		return false
	}
	for p.more() {
		switch c := p.peek(); {
		case strings.IndexByte("gpiImM", c) >= 0:
			p.i++
		case c >= '0' && c <= '9':
			p.digits()
		case c == 'e':
			p.out.exec = true
			p.i++
		case c == 'w':
			p.i++
			p.skipBlank()
			p.out.writes = append(p.out.writes, p.restOfLine())
			return true
		default:
			return true
		}
	}
	return true
}

// sedSpec is GNU sed's command line.
var sedSpec = spec("nrsuzEb", "efl", "i",
	"quiet silent expression= file= in-place? line-length= null-data zero-terminated separate "+
		"unbuffered regexp-extended posix sandbox debug follow-symlinks binary").strictOpts()

// sedCall is one reading of a sed command line.
type sedCall struct {
	inPlace  bool
	suffix   string // the -i backup suffix, "" for none
	script   sedScript
	files    []Word // the input files
	complete bool   // the options and the script were read completely
	// scriptKnown reports that the whole script is in the command text and parseSed read
	// it: not a -f file, not an expanded word. A script that is not known may run commands
	// or write files.
	scriptKnown bool
}

// readSed reads sed's arguments. complete is false for an unknown option, an expanded word
// that could be an option, a script that is not a literal, a script file (-f), or a script
// parseSed cannot read.
func readSed(args []Word) sedCall {
	p := parseOpts(args, sedSpec)
	call := sedCall{complete: len(p.unknown) == 0 && len(p.risky) == 0, scriptKnown: true}
	for _, o := range p.opts {
		if o.name == "i" || o.name == "in-place" {
			call.inPlace = true
			if o.hasValue {
				call.suffix = o.value.Lit
			}
		}
	}
	var scripts []string
	for _, w := range p.values("e", "expression") {
		if !w.Static {
			call.complete, call.scriptKnown = false, false
		}
		scripts = append(scripts, w.Lit)
	}
	if p.has("f", "file") {
		call.complete, call.scriptKnown = false, false
	}
	operands := p.operands
	if len(scripts) == 0 && !p.has("f", "file") {
		if len(operands) == 0 {
			call.complete, call.scriptKnown = false, false
			return call
		}
		if !operands[0].Static {
			call.complete, call.scriptKnown = false, false
		}
		scripts = append(scripts, operands[0].Lit)
		operands = operands[1:]
	}
	call.files = operands
	script, ok := parseSed(strings.Join(scripts, "\n"))
	call.script = script
	if !ok {
		call.complete, call.scriptKnown = false, false
	}
	return call
}
