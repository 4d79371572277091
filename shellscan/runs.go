package shellscan

import (
	"strings"
)

// maxRunsDepth bounds how deep Runs follows scripts inside scripts; deeper nesting is
// reported as unknown rather than followed.
const maxRunsDepth = 8

// shellPrograms are the programs that run a script given with -c, or else read one from a
// file or standard input.
var shellPrograms = setOf("sh", "bash", "rbash", "dash", "ash", "zsh", "ksh", "ksh93", "mksh", "pdksh",
	"posh", "yash", "fish", "csh", "tcsh")

// ShellScript reads a segment that starts a shell: isShell reports that the command word
// names one (sh, bash, dash, zsh, …, also as a path or as `busybox sh`), and text is the
// script it is given with -c when known is true. known is false when the shell runs a script
// the text does not show — a script file, standard input, or -c text that is expanded — and
// when an option cannot be read. Options are read the way bash reads them: -c is a flag
// anywhere among the options (`bash -c -e TEXT` runs TEXT), -o, +o, -O and +O take the next
// word, and the first operand is the script (with -c) or the script file.
func ShellScript(seg Segment) (text string, isShell, known bool) {
	words := seg.Words
	if len(words) > 0 && wrapperName(words[0]) == "busybox" {
		words = words[1:]
	}
	if len(words) == 0 || !shellPrograms[wrapperName(words[0])] {
		return "", false, false
	}
	cflag := false
	i := 1
options:
	for ; i < len(words); i++ {
		w := words[i]
		if !w.Static {
			return "", true, false
		}
		lit := w.Lit
		switch {
		case lit == "--" || lit == "-":
			i++
			break options
		case len(lit) < 2 || lit[0] != '-' && lit[0] != '+':
			break options
		case strings.HasPrefix(lit, "--"):
			if lit == "--rcfile" || lit == "--init-file" {
				i++
			}
		default:
			for _, c := range lit[1:] {
				switch c {
				case 'c':
					cflag = cflag || lit[0] == '-'
				case 'o', 'O':
					i++
				}
			}
		}
	}
	if !cflag || i >= len(words) || !words[i].Static {
		return "", true, false
	}
	return words[i].Lit, true, true
}

// Run is one command a segment makes the system run (Segment.Follow).
type Run struct {
	Segment
	// Place is where it runs, compared with the segment it was found in: runners such as
	// chroot, su -l or ssh move it.
	Place RunPlace
	// Script is the nested script it is a segment of when it was read from text handed to
	// a shell, eval, trap, an alias or a runner's script option; nil for the segment itself
	// and for a command taken from a wrapper's or runner's words.
	Script *Script
	// Opaque reports that the command word or the arguments of this command could not be
	// read, so what it runs is not known (an unreadable wrapper or runner, an expanded
	// command word): any of its literal words may be the program.
	Opaque bool
}

// Runs lists the commands a segment makes the system run, as far as its text shows them
// (Follow without the places). unknown is non-empty, naming the reason, when the segment
// may run a command the text does not show.
func (s Segment) Runs() (cmds []Segment, unknown string) {
	runs, unknown := s.Follow()
	cmds = make([]Segment, len(runs))
	for i, r := range runs {
		cmds[i] = r.Segment
	}
	return cmds, unknown
}

// Follow lists the commands a segment makes the system run, as far as its text shows
// them: the segment itself first, then the command inside its wrappers (Unwrap: sudo, env,
// timeout, nice, nohup, command, builtin, exec, time, stdbuf, xargs), the command a runner
// takes from its arguments (runners: su, runuser, doas, sg, watch, script, chroot, setsid,
// flock, nsenter, unshare, ionice, chrt, taskset, numactl, systemd-run, strace, ltrace,
// valgrind, firejail, bwrap, proot, fakeroot, dbus-run-session, parallel, …), every
// command of a script handed to a shell with -c (ShellScript), to eval or to trap, the
// words env -S splits, the command after find -exec, -execdir, -ok and -okdir, an alias's
// value and the applet busybox runs, each read again the same way.
//
// unknown is non-empty, naming the reason, when the segment may run a command the text does
// not show: a command word that is not a literal ($x, $(…), "${cmd}", a glob), a wrapper or
// runner whose arguments cannot be read (an option the model does not know is one), a shell
// or runner that reads commands from a file or standard input (bash f.sh, su, at, crontab),
// a program that runs commands of its own language or on another machine (gdb, tmux,
// screen, ssh), an interpreter evaluating code given inline or on standard input
// (python -c, perl -e, node -e, awk with system or a pipe, sed's e command), eval, trap or
// env -S text that is expanded, source, hash -p, find arguments that are expanded and
// could become -exec, a script that does not parse, hidden code (Evaluation.Hidden), or
// nesting deeper than the limit.
func (s Segment) Follow() (runs []Run, unknown string) {
	r := runReader{}
	r.segment(s, 0, runAt{})
	return r.runs, r.unknown
}

// HiddenCommand returns the first reason the script may run a command its text does not show
// (Segment.Runs of every segment, and hidden code anywhere), or "".
func (s *Script) HiddenCommand() string {
	if s == nil {
		return ""
	}
	if ev, ok := s.HidesCode(); ok {
		return ev.Reason
	}
	for _, seg := range s.Segments {
		if _, why := seg.Runs(); why != "" {
			return why
		}
	}
	return ""
}

type runReader struct {
	runs    []Run
	unknown string
}

// runAt is what the reader knows about where the next command runs.
type runAt struct {
	place  RunPlace
	script *Script
	owner  int // the Run whose words hold the text being read
}

func (r *runReader) hide(why string) {
	if r.unknown == "" {
		r.unknown = why
	}
}

// segment records s as a Run and follows what it runs in turn — through wrappers,
// shells, runners and builtins — up to maxRunsDepth scripts deep.
func (r *runReader) segment(s Segment, depth int, at runAt) {
	if len(s.Words) == 0 {
		return
	}
	if depth > maxRunsDepth {
		r.hide("the command nests scripts deeper than can be followed")
		return
	}
	k := len(r.runs)
	r.runs = append(r.runs, Run{Segment: s, Place: at.place, Script: at.script})
	opaque := func(why string) {
		r.runs[k].Opaque = true
		r.hide(why)
	}
	if ev, ok := s.EvaluatesCode(); ok && ev.Hidden {
		r.hide(ev.Reason)
	}
	w0 := s.Words[0]
	if !w0.Static {
		opaque("the command word `" + w0.Raw + "` is expanded, so the program it runs is not known")
		return
	}
	// Commands taken from this segment's words are not segments of a nested script.
	words := runAt{place: at.place, owner: k}
	inner, wrappers, place, ok := s.unwrap()
	if len(wrappers) > 0 {
		words.place = max(words.place, place)
		if ok {
			r.segment(inner, depth+1, words)
			return
		}
		last := wrappers[len(wrappers)-1]
		if last == "env" {
			if split, why := envSplit(inner); why == "" {
				r.segment(split, depth+1, words)
				return
			} else if why != "-" {
				opaque(why)
				return
			}
		}
		opaque("the arguments of `" + last + "` cannot be read, so the command it runs is not known")
		return
	}
	name := wrapperName(w0)
	args := s.Words[1:]
	if text, isShell, known := ShellScript(s); isShell {
		if !known {
			opaque("`" + w0.Raw + "` runs a script the command text does not show")
			return
		}
		r.script(text, depth, words)
		return
	}
	if rs, ok := runners()[name]; ok {
		r.runner(s, name, rs, depth, k, words)
		return
	}
	if sp := interpreterName(name); sp != nil {
		if why := interpreterCode(name, sp, args); why != "" {
			opaque(why)
		}
		return
	}
	r.command(s, name, args, depth, k, words, opaque)
}

// command reads the commands and scripts a builtin or a known program runs from its
// arguments: parallel, awk, sed, busybox, eval, trap, source, alias, hash and find.
func (r *runReader) command(s Segment, name string, args []Word, depth, k int, words runAt, opaque func(string)) {
	switch name {
	case "parallel":
		r.parallel(s, depth, k, words)
	case "awk", "gawk", "mawk", "nawk":
		if why := awkCode(name, args); why != "" {
			opaque(why)
		}
	case "sed":
		if c := readSed(args); c.script.exec || !c.complete && !sedSandboxed(args) {
			opaque("`sed` may run a command with its e command, or its script cannot be read")
		}
	case "busybox":
		if len(args) > 0 {
			next := s
			next.Words = args
			r.segment(next, depth+1, words)
		}
	case "eval":
		parts := make([]string, 0, len(args))
		for _, w := range args {
			if !w.Static {
				opaque("`eval` runs the expanded word `" + w.Raw + "` as a command")
				return
			}
			parts = append(parts, w.Lit)
		}
		r.script(strings.Join(parts, " "), depth, words)
	case "trap":
		r.trap(args, depth, words)
	case "source", ".":
		opaque("`" + name + "` runs the commands of a file the command text does not show")
	case "alias":
		for _, w := range args {
			if !w.Static {
				opaque("`alias " + w.Raw + "` defines a command the text does not show")
				return
			}
			if _, value, ok := strings.Cut(w.Lit, "="); ok {
				r.script(value, depth, words)
			}
		}
	case "hash":
		for _, w := range args {
			if !w.Static || strings.HasPrefix(w.Lit, "-") && strings.Contains(w.Lit, "p") {
				opaque("`hash " + w.Raw + "` can make a command name run another program")
				return
			}
		}
	case "find":
		r.find(args, depth, k, words)
	}
}

// sedSandboxed reports sed --sandbox, under which GNU sed refuses e, r and w.
func sedSandboxed(args []Word) bool {
	for _, w := range args {
		if w.Static && w.Lit == "--sandbox" {
			return true
		}
	}
	return false
}

// script reads text as a script of its own and follows each of its commands.
func (r *runReader) script(text string, depth int, at runAt) {
	sc, err := Parse(text)
	if err != nil {
		r.runs[at.owner].Opaque = true
		r.hide("a nested script does not parse (" + err.Error() + ")")
		return
	}
	if why := sc.Ambiguous(); why != "" {
		// Its words may not be the ones bash runs: what it runs is not known.
		r.hide("a nested script has " + why + ", which bash may read differently")
	}
	if ev, ok := sc.HidesCode(); ok {
		r.hide(ev.Reason)
	}
	at.script = sc
	for _, seg := range sc.Segments {
		r.segment(seg, depth+1, at)
	}
}

// trap follows the action of `trap [-lp] [--] ACTION SIGNAL…`.
func (r *runReader) trap(args []Word, depth int, at runAt) {
	i := 0
	for ; i < len(args); i++ {
		w := args[i]
		if !w.Static {
			r.hide("`trap` runs the expanded word `" + w.Raw + "` as a command")
			return
		}
		if w.Lit == "--" {
			i++
			break
		}
		if !strings.HasPrefix(w.Lit, "-") || w.Lit == "-" {
			break
		}
		if strings.ContainsAny(w.Lit, "lp") {
			return // lists traps or signals
		}
	}
	// A single operand is a signal whose trap is reset.
	if len(args)-i < 2 {
		return
	}
	if action := args[i]; action.Lit != "-" {
		r.script(action.Lit, depth, at)
	}
}

// find follows the command of every -exec, -execdir, -ok and -okdir: the words up to ";" or
// "+".
func (r *runReader) find(args []Word, depth, k int, at runAt) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Static {
			if !w.OptionSafe {
				r.runs[k].Opaque = true
				r.hide("argument `" + w.Raw + "` of `find` is expanded and could become -exec")
				return
			}
			continue
		}
		switch w.Lit {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		j := i + 1
		for j < len(args) && !(args[j].Static && (args[j].Lit == ";" || args[j].Lit == "+")) {
			j++
		}
		if j > i+1 {
			// The command is given the names find finds, at run time.
			r.segment(Segment{Words: args[i+1 : j], Appended: true}, depth+1, at)
		}
		i = j
	}
}

// envSplit reads `env … -S STRING REST…` (also -SSTRING, --split-string=STRING and bundles
// such as -iS): it returns `env WORDS REST…` where WORDS are the words env splits STRING into,
// so that the caller can read that segment as a command of its own. why is "-" when the
// segment uses no -S (another option stopped the wrapper), and names the reason when the
// string cannot be split exactly: it is expanded, or holds a backslash or $ (env's own
// escapes and ${VAR}), or is not a plain list of words.
func envSplit(seg Segment) (Segment, string) {
	if len(seg.Words) == 0 || wrapperName(seg.Words[0]) != "env" {
		return seg, "-"
	}
	sp := wrapperSpecs()["env"]
	args := seg.Words[1:]
	at, value, rest := -1, Word{}, 0
scan:
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Static {
			return seg, "an argument of `env` is expanded, so the command it runs is not known"
		}
		lit := w.Lit
		switch {
		case lit == "--" || len(lit) < 2 || lit[0] != '-':
			break scan
		case strings.HasPrefix(lit, "--"):
			name, v, hasEq := strings.Cut(lit[2:], "=")
			full, kind, ok := sp.resolveLong(name)
			if !ok {
				return seg, "-"
			}
			if full == "split-string" {
				if hasEq {
					at, value, rest = i, attached(w, len(lit)-len(v)), i+1
				} else if i+1 < len(args) {
					at, value, rest = i, args[i+1], i+2
				}
				break scan
			}
			if kind == argRequired && !hasEq {
				i++
			}
		default:
			for j := 1; j < len(lit); j++ {
				c := lit[j]
				if c == 'S' {
					if j+1 < len(lit) {
						at, value, rest = i, attached(w, j+1), i+1
					} else if i+1 < len(args) {
						at, value, rest = i, args[i+1], i+2
					}
					break scan
				}
				if strings.IndexByte(sp.vals, c) >= 0 {
					if j+1 == len(lit) {
						i++
					}
					break
				}
			}
		}
	}
	if at < 0 {
		return seg, "-"
	}
	if !value.Static || strings.ContainsAny(value.Lit, `\$`) {
		return seg, "`env -S` splits a string that cannot be read exactly, so the command it runs is not known"
	}
	sc, err := Parse(value.Lit)
	if err != nil || sc.Ambiguous() != "" || len(sc.Segments) > 1 || sc.HasControl || sc.HasPipe || sc.HasBackground || sc.HasSubstitution {
		return seg, "`env -S` splits a string that is not a plain list of words"
	}
	words := []Word{seg.Words[0]}
	if len(sc.Segments) == 1 {
		split := sc.Segments[0]
		if len(split.Redirects) > 0 {
			return seg, "`env -S` splits a string that is not a plain list of words"
		}
		for _, a := range split.Assignments {
			words = append(words, literalWord(a))
		}
		words = append(words, split.Words...)
	}
	words = append(words, args[rest:]...)
	out := seg
	out.Words = words
	return out, ""
}
