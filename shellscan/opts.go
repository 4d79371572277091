package shellscan

import (
	"strings"
)

// argKind says whether a long option takes a value.
type argKind uint8

const (
	argNone     argKind = iota
	argRequired         // --name=value or --name value
	argOptional         // --name or --name=value, never the next word
)

// optSpec describes one program's command-line options the way getopt_long reads them.
type optSpec struct {
	flags   string // short options without a value
	vals    string // short options with a value: the rest of the word, else the next word
	optVals string // short options whose value can only be attached (sed -i.bak)
	// long lists the long options as spec takes them. It is read in place rather than
	// built into a map: the package has dozens of specs, building them all cost most of
	// its initialisation at every start of the process, and a lookup is rare (a long
	// option in a command) and short (a few hundred bytes to scan).
	long    string
	numeric bool // -NUM is an option (head -5, nice -10)
	// strict makes every option the spec does not know an unknown one. Otherwise an unknown
	// long option without "=" is taken for a flag, which only ever makes the next word an
	// operand (the cautious reading when operands are what is being collected).
	strict bool
	// posix stops option parsing at the first operand (getopt with a leading "+"); GNU
	// programs otherwise accept options anywhere before "--".
	posix bool
	// reads and writes name the options (short letter or long name) whose value is a file the
	// program reads or writes.
	reads, writes map[string]bool
	// follows names the options that make the program follow symbolic links (while it walks
	// a tree, or through the links it meets), nameLists those whose value is a file holding
	// the names of the files to read. Either way the program reads places the command text
	// does not show: a link inside the roots can point anywhere, and a list is read at run
	// time.
	follows, nameLists map[string]bool
}

// spec builds an optSpec. long lists long options separated by spaces, each "name" (flag),
// "name=" (required value) or "name?" (optional attached value). Every spec also knows
// --help and --version, as flags.
func spec(flags, vals, optVals, long string) *optSpec {
	return &optSpec{flags: flags, vals: vals, optVals: optVals, long: long}
}

// longOpt splits one entry of a long option list into its name and kind.
func longOpt(f string) (string, argKind) {
	switch {
	case strings.HasSuffix(f, "="):
		return f[:len(f)-1], argRequired
	case strings.HasSuffix(f, "?"):
		return f[:len(f)-1], argOptional
	default:
		return f, argNone
	}
}

func (s *optSpec) withReads(names ...string) *optSpec {
	s.reads = setOf(names...)
	return s
}

func (s *optSpec) withWrites(names ...string) *optSpec {
	s.writes = setOf(names...)
	return s
}

func (s *optSpec) withFollows(names ...string) *optSpec {
	s.follows = setOf(names...)
	return s
}

func (s *optSpec) withNameLists(names ...string) *optSpec {
	s.nameLists = setOf(names...)
	return s
}

func (s *optSpec) numericOpt() *optSpec { s.numeric = true; return s }
func (s *optSpec) strictOpts() *optSpec { s.strict = true; return s }
func (s *optSpec) posixOpts() *optSpec  { s.posix = true; return s }

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// option is one parsed option: Name is the short letter or the full long name.
type option struct {
	name     string
	value    Word
	hasValue bool
}

// parsedArgs is the result of reading a program's arguments against its optSpec.
type parsedArgs struct {
	opts     []option
	operands []Word
	// unknown lists options the spec does not know (or an ambiguous abbreviation, or a value
	// given to a flag), as written.
	unknown []string
	// tolerated lists unknown long options a non-strict spec took for flags, by written name.
	tolerated []string
	// risky lists expanded words that could turn into options or into several words.
	risky []Word
	// rest is the index in args where option parsing stopped for a posix spec (the first
	// operand); len(args) otherwise.
	rest int
}

func (p *parsedArgs) has(names ...string) bool {
	for _, o := range p.opts {
		for _, n := range names {
			if o.name == n {
				return true
			}
		}
	}
	return false
}

func (p *parsedArgs) values(names ...string) []Word {
	var out []Word
	for _, o := range p.opts {
		if !o.hasValue {
			continue
		}
		for _, n := range names {
			if o.name == n {
				out = append(out, o.value)
			}
		}
	}
	return out
}

// resolveLong finds the long option a written name means, as getopt_long does: an exact match,
// else the one option the name abbreviates. ok is false for an unknown or ambiguous name.
func (s *optSpec) resolveLong(name string) (string, argKind, bool) {
	found, kind, n := "", argNone, 0
	match := func(l string, k argKind) bool {
		if l == name {
			found, kind, n = l, k, 1
			return true
		}
		if strings.HasPrefix(l, name) && l != found {
			found, kind = l, k
			n++
		}
		return false
	}
	// --help and --version are flags whatever the list says.
	for _, l := range [...]string{"help", "version"} {
		if match(l, argNone) {
			return found, kind, true
		}
	}
	for f := range strings.FieldsSeq(s.long) {
		l, k := longOpt(f)
		if l == "help" || l == "version" {
			continue
		}
		if match(l, k) {
			return found, kind, true
		}
	}
	if n == 1 {
		return found, kind, true
	}
	return "", argNone, false
}

// attached returns the part of a static option word after its first off characters as a
// word of its own (the value of -ofile or --output=file).
func attached(w Word, off int) Word {
	v := w.Lit[off:]
	return Word{Raw: v, Lit: v, Static: true, Quoted: w.Quoted, OptionSafe: !strings.HasPrefix(v, "-")}
}

// parseOpts reads args against s.
func parseOpts(args []Word, s *optSpec) parsedArgs {
	var p parsedArgs
	p.rest = len(args)
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Static {
			if !w.OptionSafe {
				p.risky = append(p.risky, w)
			}
			p.operands = append(p.operands, w)
			if s.posix {
				p.rest = i
				p.operands = append(p.operands, args[i+1:]...)
				return p
			}
			continue
		}
		lit := w.Lit
		switch {
		case lit == "--":
			p.operands = append(p.operands, args[i+1:]...)
			if s.posix {
				p.rest = i + 1
			}
			return p
		case len(lit) < 2 || lit[0] != '-':
			p.operands = append(p.operands, w)
			if s.posix {
				p.rest = i
				p.operands = append(p.operands, args[i+1:]...)
				return p
			}
		case strings.HasPrefix(lit, "--"):
			name, val, hasEq := strings.Cut(lit[2:], "=")
			full, kind, ok := s.resolveLong(name)
			if !ok {
				if s.strict || hasEq {
					p.unknown = append(p.unknown, lit)
				} else {
					p.tolerated = append(p.tolerated, name)
				}
				continue
			}
			o := option{name: full}
			switch {
			case hasEq && kind == argNone:
				p.unknown = append(p.unknown, lit)
				continue
			case hasEq:
				o.value, o.hasValue = attached(w, len(lit)-len(val)), true
			case kind == argRequired && i+1 < len(args):
				i++
				o.value, o.hasValue = args[i], true
			case kind == argRequired:
				p.unknown = append(p.unknown, lit) // a missing value: the program refuses
			}
			p.opts = append(p.opts, o)
		default:
			i = s.parseShort(args, i, &p)
		}
	}
	return p
}

// parseShort reads one bundle of short options (-abc, -ofile, -n5) starting at args[i] and
// returns the index of the last word it consumed.
func (s *optSpec) parseShort(args []Word, i int, p *parsedArgs) int {
	w := args[i]
	lit := w.Lit
	for j := 1; j < len(lit); j++ {
		c := lit[j]
		switch {
		case s.numeric && c >= '0' && c <= '9':
			k := j
			for k < len(lit) && lit[k] >= '0' && lit[k] <= '9' {
				k++
			}
			p.opts = append(p.opts, option{name: "#", value: attached(w, j), hasValue: true})
			j = k - 1
			if k < len(lit) {
				p.unknown = append(p.unknown, lit)
				return i
			}
		case strings.IndexByte(s.vals, c) >= 0:
			o := option{name: string(c), hasValue: true}
			switch {
			case j+1 < len(lit):
				o.value = attached(w, j+1)
			case i+1 < len(args):
				i++
				o.value = args[i]
			default:
				o.hasValue = false
				p.unknown = append(p.unknown, lit)
			}
			p.opts = append(p.opts, o)
			return i
		case strings.IndexByte(s.optVals, c) >= 0:
			o := option{name: string(c)}
			if j+1 < len(lit) {
				o.value, o.hasValue = attached(w, j+1), true
			}
			p.opts = append(p.opts, o)
			return i
		case strings.IndexByte(s.flags, c) >= 0:
			p.opts = append(p.opts, option{name: string(c)})
		default:
			p.unknown = append(p.unknown, "-"+string(c))
		}
	}
	return i
}

// optionWord reports whether a static word is an option word (not an operand) and returns the
// long name or the short letters it carries.
func optionWord(w Word) (long string, shorts string, ok bool) {
	if !w.Static || len(w.Lit) < 2 || w.Lit[0] != '-' || w.Lit == "--" {
		return "", "", false
	}
	if strings.HasPrefix(w.Lit, "--") {
		name, _, _ := strings.Cut(w.Lit[2:], "=")
		return name, "", true
	}
	return "", w.Lit[1:], true
}

// findDangerous returns the first option word before "--" that carries one of the short
// letters anywhere in its bundle, or whose long name is one of longs or an abbreviation of
// one. It errs towards finding: a bundle whose letters are an option's value still counts.
func findDangerous(args []Word, shorts string, longs ...string) (Word, string, bool) {
	for _, w := range args {
		if w.Static && w.Lit == "--" {
			return Word{}, "", false
		}
		long, short, ok := optionWord(w)
		if !ok {
			continue
		}
		if long != "" {
			for _, l := range longs {
				if strings.HasPrefix(l, long) {
					return w, "--" + l, true
				}
			}
			continue
		}
		for k := 0; k < len(short); k++ {
			if strings.IndexByte(shorts, short[k]) >= 0 {
				return w, "-" + string(short[k]), true
			}
		}
	}
	return Word{}, "", false
}

// firstRisky returns the first word before "--" that is expanded in a way that could turn it
// into an option or into several words.
func firstRisky(args []Word) (Word, bool) {
	for _, w := range args {
		if w.Static && w.Lit == "--" {
			return Word{}, false
		}
		if !w.Static && !w.OptionSafe {
			return w, true
		}
	}
	return Word{}, false
}

// abbreviates reports whether a written long option name could stand for one of names: equal to
// it or a prefix of it (getopt_long accepts any unambiguous prefix).
func abbreviates(written string, names ...string) bool {
	if written == "" {
		return false
	}
	for _, n := range names {
		if strings.HasPrefix(n, written) {
			return true
		}
	}
	return false
}
