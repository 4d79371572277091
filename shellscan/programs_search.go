package shellscan

import "strings"

// The models of programs that search and compare trees: diff, rsync, grep, rg, jq, find.

// diffReads models diff: GNU diff follows symbolic links unless told --no-dereference, so a
// recursive comparison can walk out of the directories it names.
func diffReads(c *collector, args []Word) {
	p := parseOpts(args, diffSpec)
	c.mustKnow(p)
	if p.has("r", "recursive") && !p.has("no-dereference") {
		c.unknown(OpRead, "`diff -r` follows symbolic links while it walks directories (unless --no-dereference is given), so it can read files outside the places the command names")
	}
	c.optionFiles(p, diffSpec.reads, OpRead)
	c.addAll(p.operands, OpRead)
}

// rsyncReads models what rsync reads only as far as its link-following and name-list options
// go: remote paths, filter rules and daemon settings are not modeled, so the reading is
// always incomplete. rsync's short options come in bundles; a letter anywhere in one counts.
func rsyncReads(c *collector, args []Word) {
	c.complete = false
	var operands []Word
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Static {
			operands = append(operands, w)
			continue
		}
		long, short, isOpt := optionWord(w)
		switch {
		case w.Lit == "--":
			operands = append(operands, args[i+1:]...)
			i = len(args)
		case !isOpt:
			operands = append(operands, w)
		case long != "":
			switch {
			case abbreviates(long, "copy-links", "copy-dirlinks", "copy-unsafe-links") && len(long) >= 6:
				c.unknown(OpRead, followSentence("rsync", long, OpRead))
			case abbreviates(long, "files-from") && len(long) >= 3:
				c.unknown(OpRead, nameListSentence("rsync", "files-from"))
			}
		case strings.ContainsAny(short, "Lk"):
			c.unknown(OpRead, followSentence("rsync", short[strings.IndexAny(short, "Lk"):][:1], OpRead))
		}
	}
	if n := len(operands); n > 1 {
		c.addAll(operands[:n-1], OpRead)
	}
}

func grepReads(c *collector, args []Word) {
	p := parseOpts(args, grepSpec)
	c.mustKnow(p)
	c.indirect(p, grepSpec, OpRead)
	c.optionFiles(p, grepSpec.reads, OpRead)
	operands := p.operands
	if !p.has("e", "regexp", "f", "file") && len(operands) > 0 {
		operands = operands[1:] // the pattern
	}
	c.addAll(operands, OpRead)
	if len(operands) == 0 && p.has("r", "R", "recursive", "dereference-recursive") {
		c.addPath(".", OpRead)
	}
}

func rgReads(c *collector, args []Word) {
	p := parseOpts(args, rgSpec)
	c.mustKnow(p)
	c.indirect(p, rgSpec, OpRead)
	c.optionFiles(p, rgSpec.reads, OpRead)
	operands := p.operands
	if !p.has("e", "regexp", "f", "file", "files", "type-list") && len(operands) > 0 {
		operands = operands[1:] // the pattern
	}
	c.addAll(operands, OpRead)
	if len(operands) == 0 && !p.has("type-list") {
		c.addPath(".", OpRead)
	}
}

// jqLong are jq 1.7's long options that take no value or are handled below; jq matches long
// options exactly, never by abbreviation.
var jqLong = setOf("--seq", "--stream", "--stream-errors", "--slurp", "--raw-input", "--null-input",
	"--compact-output", "--tab", "--color-output", "--monochrome-output", "--ascii-output",
	"--unbuffered", "--sort-keys", "--raw-output", "--raw-output0", "--join-output", "--exit-status",
	"--binary", "--help", "--version", "--build-configuration")

// jqImports reports a filter that loads modules or data: import and include name files that
// jq finds on its library path at run time (by default ~/.jq and directories next to jq).
func jqImports(filter Word) bool {
	text := filter.Lit
	if !filter.Static {
		text = filter.Raw
	}
	return strings.Contains(text, "import") || strings.Contains(text, "include") || strings.Contains(text, "modulemeta")
}

// jqReads models jq: the first operand is the filter unless -f/--from-file names a file; the
// others are input files, except after --args/--jsonargs, where they are values. A library
// path (-L), a filter file and a filter that imports read files the command does not name.
func jqReads(c *collector, args []Word) {
	filterSeen := false
	positionalArgs := false
	filter := func(w Word) {
		filterSeen = true
		if jqImports(w) {
			c.unknown(OpRead, "the jq filter imports modules or data that jq finds on its library path, so the files it reads are not named in the command")
		}
	}
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Static {
			if !w.OptionSafe {
				c.complete = false
			}
			if positionalArgs {
				continue
			}
			if !filterSeen {
				filter(w)
				continue
			}
			c.add(w, OpRead)
			continue
		}
		lit := w.Lit
		switch {
		case lit == "--args" || lit == "--jsonargs":
			positionalArgs = true
		case lit == "-f" || lit == "--from-file":
			if i+1 < len(args) {
				i++
				c.add(args[i], OpRead)
				filterSeen = true
				c.unknown(OpRead, "`jq "+lit+"` runs a filter from a file, which can import files jq finds at run time")
			}
		case lit == "--arg" || lit == "--argjson":
			i += 2
		case lit == "--slurpfile" || lit == "--rawfile" || lit == "--argfile":
			if i+2 < len(args) {
				c.add(args[i+2], OpRead)
			}
			i += 2
		case lit == "--indent":
			i++
		case lit == "-L" || lit == "--library-path" || strings.HasPrefix(lit, "-L"):
			if lit == "-L" || lit == "--library-path" {
				i++
			}
			c.unknown(OpRead, "`jq -L` adds a library directory whose modules the filter loads at run time, so the files it reads are not named in the command")
		case strings.HasPrefix(lit, "--"):
			if !jqLong[lit] {
				c.complete = false // an option this model does not know
			}
		case len(lit) > 1 && lit[0] == '-':
			if strings.Trim(lit[1:], "nrjasCMSecR0h") != "" {
				c.complete = false
			}
		case positionalArgs:
		case !filterSeen:
			filter(w)
		default:
			if lit != "-" {
				c.add(w, OpRead)
			}
		}
	}
}

// findArgs splits find's arguments into starting points and the expression.
func findArgs(args []Word) (starts []Word, expr []Word) {
	i := 0
	for i < len(args) && args[i].Static {
		lit := args[i].Lit
		if lit == "-H" || lit == "-L" || lit == "-P" || strings.HasPrefix(lit, "-O") {
			i++
			continue
		}
		if lit == "-D" {
			i += 2
			continue
		}
		break
	}
	for ; i < len(args); i++ {
		w := args[i]
		if w.Static && (strings.HasPrefix(w.Lit, "-") || w.Lit == "(" || w.Lit == "!" || w.Lit == ")" || w.Lit == ",") {
			break
		}
		if !w.Static && !w.OptionSafe {
			break
		}
		starts = append(starts, w)
	}
	if i > len(args) {
		i = len(args)
	}
	return starts, args[i:]
}

func findWrites(c *collector, args []Word) {
	starts, expr := findArgs(args)
	if len(starts) == 0 {
		starts = []Word{literalWord(".")}
	}
	for i := 0; i < len(expr); i++ {
		w := expr[i]
		if !w.Static {
			if !w.OptionSafe {
				c.complete = false
			}
			continue
		}
		switch w.Lit {
		case "-delete":
			for _, s := range starts {
				c.add(s, OpRemove)
			}
		case "-fprint", "-fprint0", "-fls", "-fprintf":
			if i+1 < len(expr) {
				c.add(expr[i+1], OpWrite)
			}
			i++
			if w.Lit == "-fprintf" {
				i++
			}
		case "-exec", "-execdir", "-ok", "-okdir":
			c.complete = false // the command find runs is not modeled
		}
	}
}

func findReads(c *collector, args []Word) {
	// -L follows every link; -H those on the command line. Both come before the starting
	// points.
	for _, w := range args {
		if !w.Static || !strings.HasPrefix(w.Lit, "-") {
			break
		}
		if w.Lit == "-L" || w.Lit == "-H" {
			c.unknown(OpRead, "`find "+w.Lit+"` follows symbolic links, so it can read files outside the places the command names")
		}
	}
	starts, expr := findArgs(args)
	if len(starts) == 0 {
		c.addPath(".", OpRead)
	}
	c.addAll(starts, OpRead)
	for i := 0; i < len(expr); i++ {
		w := expr[i]
		if !w.Static {
			if !w.OptionSafe {
				c.complete = false
			}
			continue
		}
		switch w.Lit {
		case "-follow":
			c.unknown(OpRead, "`find -follow` follows symbolic links, so it can read files outside the places the command names")
		case "-files0-from":
			c.unknown(OpRead, "`find -files0-from` reads its starting points from a file, so the files it reads are not named in the command")
		}
		switch {
		case w.Lit == "-newer" || w.Lit == "-anewer" || w.Lit == "-cnewer" || w.Lit == "-samefile" ||
			w.Lit == "-files0-from" || strings.HasPrefix(w.Lit, "-newer") && len(w.Lit) == len("-newerXY"):
			if i+1 < len(expr) {
				c.add(expr[i+1], OpRead)
			}
			i++
		case w.Lit == "-exec" || w.Lit == "-execdir" || w.Lit == "-ok" || w.Lit == "-okdir":
			c.complete = false
		}
	}
}
