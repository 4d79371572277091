package shellscan

import (
	"strings"
	"sync"
)

// interpSpec describes an interpreter's command line well enough to tell whether it
// evaluates code written inline (or read from standard input), which can run any command,
// from running a program file. A program file is outside the model, like a Makefile: the
// rules name commands, and a file's contents are not in the text.
type interpSpec struct {
	flags  string // short options without a value
	vals   string // short options with a value: the rest of the word, else the next word
	inline string // short options whose use means code given inline (python -c, perl -e)
	info   string // short options that only print the version or help
	// clusters: short options bundle freely and any letter of inline anywhere in a bundle
	// counts (perl -lne, ruby -pe); the rest of the bundle is not read further.
	clusters bool
	longVals []string // long options taking the next word as a value (without "=")
	longCode []string // long options whose use means code given inline or from stdin
	longOK   []string // long options without a value
	// modules names, for -m, the modules that evaluate their arguments as code.
	modules map[string]bool
}

var pythonSpec = &interpSpec{flags: "bBdEIOPqRsSuvx", vals: "WXm", inline: "ci", info: "Vh",
	longVals: []string{"check-hash-based-pycs"}, longOK: []string{"help", "version", "help-env", "help-xoptions", "help-all"},
	modules: setOf("timeit", "code", "pdb", "trace", "cProfile", "profile", "runpy", "doctest")}

// interpreters is built on first use, as are the package's other large tables: a
// process that judges no command does not pay for them at start.
var interpreters = sync.OnceValue(func() map[string]*interpSpec {
	return map[string]*interpSpec{
		"perl": {clusters: true, inline: "eEMmd", info: "vh", longOK: []string{"help", "version"}},
		"ruby": {clusters: true, inline: "e", info: "vh", vals: "CEFIrKTW", longOK: []string{"help", "version", "verbose",
			"copyright", "jit", "yjit", "disable-gems"}},
		"node": {flags: "c", info: "vh", vals: "rC", inline: "epi", longVals: []string{"require", "import", "loader",
			"experimental-loader", "conditions", "input-type", "title", "env-file"},
			longCode: []string{"eval", "print", "interactive", "run"},
			longOK:   []string{"help", "version", "check", "trace-warnings", "no-warnings", "enable-source-maps", "test", "watch"}},
		"php":       {flags: "hiHlmnqsvw", vals: "cdftzF", inline: "rRBEa", longOK: []string{"help", "version"}},
		"lua":       {flags: "vEW", vals: "l", inline: "ei", longOK: []string{}},
		"expect":    {flags: "bdDinNv", vals: "f", inline: "ci", longOK: []string{}},
		"tclsh":     {vals: "", longOK: []string{}},
		"wish":      {vals: "", longOK: []string{}},
		"Rscript":   {flags: "", inline: "e", longOK: []string{"help", "version", "verbose", "vanilla", "no-environ", "no-site-file", "no-init-file", "restore", "no-restore", "save", "no-save"}},
		"R":         {flags: "", inline: "e", longOK: []string{"help", "version", "vanilla", "no-environ", "no-site-file", "no-init-file", "no-restore", "no-save", "quiet", "silent", "slave", "no-echo"}},
		"osascript": {inline: "e", vals: "ls", flags: "i"},
	}
})

// interpreterName maps a program name to its interpSpec: python, python3, python3.12,
// pypy3, nodejs and luajit are spelt many ways.
func interpreterName(name string) *interpSpec {
	if sp, ok := interpreters()[name]; ok {
		return sp
	}
	trimmed := strings.TrimRight(name, "0123456789.")
	switch trimmed {
	case "python", "pypy":
		return pythonSpec
	case "perl":
		return interpreters()["perl"]
	case "ruby":
		return interpreters()["ruby"]
	case "nodejs":
		return interpreters()["node"]
	case "lua", "luajit":
		return interpreters()["lua"]
	case "tclsh":
		return interpreters()["tclsh"]
	case "php":
		return interpreters()["php"]
	}
	return nil
}

// interpreterCode reports, for an interpreter, why the command it runs cannot be known:
// code written inline, code read from standard input (no program file, or "-"), an
// option the model does not read, or an expanded word before the program file. It is ""
// when the interpreter runs a program file (or only prints its version or help).
func interpreterCode(name string, sp *interpSpec, args []Word) string {
	inline := "`" + name + "` evaluates code given inline, which can run any command"
	unknown := func(w Word) string {
		return "`" + name + "` is given the option `" + w.Raw + "` the model does not read, so what it runs is not known"
	}
	info := false
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Static {
			return "`" + name + "` is given the expanded word `" + w.Raw + "`, so the code it runs is not known"
		}
		lit := w.Lit
		switch {
		case lit == "-":
			return "`" + name + "` reads the code it runs from standard input"
		case lit == "--":
			if i+1 < len(args) {
				return ""
			}
			return "`" + name + "` reads the code it runs from standard input"
		case len(lit) < 2 || lit[0] != '-':
			return "" // the program file
		case strings.HasPrefix(lit, "--"):
			long, _, hasEq := strings.Cut(lit[2:], "=")
			switch {
			case inList(sp.longCode, long):
				return inline
			case inList(sp.longVals, long):
				if !hasEq {
					i++
				}
			case inList(sp.longOK, long) || hasEq:
				if long == "help" || long == "version" {
					info = true
				}
			default:
				return unknown(w)
			}
		default:
			for j := 1; j < len(lit); j++ {
				c := lit[j]
				switch {
				case strings.IndexByte(sp.inline, c) >= 0:
					return inline
				case strings.IndexByte(sp.info, c) >= 0:
					info = true
				case sp.clusters:
					continue
				case c == 'm' && sp == pythonSpec:
					mod := ""
					if j+1 < len(lit) {
						mod = lit[j+1:]
					} else if i+1 < len(args) && args[i+1].Static {
						mod = args[i+1].Lit
					}
					if mod == "" || sp.modules[mod] {
						return "`" + name + " -m " + mod + "` evaluates code given in its arguments"
					}
					return "" // a module, like a program file
				case strings.IndexByte(sp.vals, c) >= 0:
					if j+1 == len(lit) {
						i++
					}
					j = len(lit)
				case strings.IndexByte(sp.flags, c) >= 0:
				default:
					return unknown(w)
				}
			}
		}
	}
	if info {
		return ""
	}
	return "`" + name + "` reads the code it runs from standard input"
}

func inList(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// awkCode reports why an awk program written inline may run a command: system(), a pipe
// to or from a command (`print | "cmd"`, `"cmd" | getline`, gawk's |&), an extension it
// loads, or a program that is expanded. Any "|" counts, a regular expression's alternation
// included: the reading errs towards finding. A program file (-f) is outside the model,
// like any interpreter's.
func awkCode(name string, args []Word) string {
	p := parseOpts(args, awkSpec)
	if len(p.risky) > 0 || len(p.unknown) > 0 {
		return "`" + name + "` is given options the model does not read, so what it runs is not known"
	}
	progs := p.values("e", "source")
	if len(progs) == 0 {
		if p.has("f", "file", "E", "exec", "i", "include", "l", "load") {
			return "" // a program file, outside the model like any interpreter's
		}
		if len(p.operands) == 0 {
			return ""
		}
		progs = p.operands[:1]
	}
	for _, prog := range progs {
		if !prog.Static {
			return "`" + name + "` runs the expanded program `" + prog.Raw + "`"
		}
		if strings.Contains(prog.Lit, "system") || strings.Contains(prog.Lit, "|") || strings.Contains(prog.Lit, "@load") {
			return "`" + name + "`'s program can run commands (system or a pipe)"
		}
	}
	return ""
}

// awkSpec covers POSIX awk, mawk and gawk options.
var awkSpec = spec("bcCdDghLMnNOpPrStVyz", "FvfEeil", "", "field-separator= assign= file= exec= "+
	"source= include= load= characters-as-bytes traditional copyright dump-variables? debug? "+
	"gen-pot lint? bignum use-lc-numeric non-decimal-data optimize no-optimize posix re-interval "+
	"sandbox pretty-print? profile? csv").strictOpts()
