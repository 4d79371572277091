package shellscan

import (
	"path"
	"strings"
	"sync"
)

// wrapStatus is what a wrapper's argument reader concluded.
type wrapStatus uint8

const (
	wrapped    wrapStatus = iota // a command follows at start
	notWrapper                   // the program runs no command here (env alone, command -v)
	wrapBad                      // the arguments cannot be read statically
)

// wrapResult is one wrapper's reading of its arguments.
type wrapResult struct {
	status   wrapStatus
	start    int      // index into the wrapper's arguments where the command begins
	assigns  []string // NAME=value words the wrapper puts into the command's environment
	appended bool     // the command receives further arguments at run time
	implicit string   // the command the wrapper runs when none is written (xargs: echo)
	place    RunPlace // where the command runs (sudo -i: the target user's home)
}

var wrapperSpecs = sync.OnceValue(func() map[string]*optSpec {
	return map[string]*optSpec{
		"sudo": spec("AbEHiKklnPSsVve", "CDghpRrTtUu", "",
			"askpass background close-from= chdir= preserve-env? edit group= set-home host= login "+
				"remove-timestamp reset-timestamp list non-interactive preserve-groups prompt= chroot= "+
				"role= stdin shell type= command-timeout= other-user= user= validate").strictOpts().posixOpts(),
		"env": spec("i0v", "uCS", "",
			"ignore-environment null unset= chdir= split-string= debug block-signal? default-signal? "+
				"ignore-signal? list-signal-handling").strictOpts().posixOpts(),
		"timeout": spec("fv", "ks", "", "foreground kill-after= signal= verbose preserve-status").strictOpts().posixOpts(),
		"nice":    spec("", "n", "", "adjustment=").numericOpt().strictOpts().posixOpts(),
		"nohup":   spec("", "", "", "").strictOpts().posixOpts(),
		"time":    spec("pqva", "fo", "", "portability verbose quiet append format= output=").strictOpts().posixOpts(),
		"command": spec("pvV", "", "", "").strictOpts().posixOpts(),
		"stdbuf":  spec("", "ioe", "", "input= output= error=").strictOpts().posixOpts(),
		"xargs": spec("0prtxo", "adEILnPs", "eil",
			"null arg-file= delimiter= eof? replace? max-lines? max-args= max-procs= interactive "+
				"no-run-if-empty max-chars= verbose exit show-limits open-tty process-slot-var=").strictOpts().posixOpts(),
		"builtin": spec("", "", "", "").strictOpts().posixOpts(),
		"exec":    spec("cl", "a", "", "").strictOpts().posixOpts(),
	}
})

// wrapperName returns the program a word names when it is a literal, looking through a path
// (/usr/bin/env) and through quoting ("sudo" runs sudo).
func wrapperName(w Word) string {
	if !w.Static || w.Lit == "" {
		return ""
	}
	if strings.Contains(w.Lit, "/") {
		return path.Base(w.Lit)
	}
	return w.Lit
}

// Unwrap looks through the wrappers in front of a command — sudo, env (with its NAME=value and
// -i/-u arguments), timeout (with its duration and flags), nice, nohup, time, command (not -v/-V),
// stdbuf, xargs, builtin and exec — and returns the command inside and the wrapper names in
// order. A wrapper is recognized by its literal value, also when written as a path
// (/usr/bin/env) or quoted. NAME=value words a wrapper passes on (env, sudo) are appended to
// the inner segment's Assignments; the command inside xargs has Appended set, and when xargs
// names no command the inner segment is the implicit `echo`.
//
// A wrapper whose arguments cannot be read statically — an expanded word among its options, an
// unknown option, an option that moves the command elsewhere (env -C, env -S, sudo -D, sudo -R)
// or makes the wrapper write a file (time -o), sudo -e/-l, sudo -s/-i with no command (a
// shell reading standard input) — yields ok=false; inner is then the segment as far as it was
// unwrapped and wrappers ends with the wrapper that stopped it. A
// segment whose command word is not a wrapper is returned unchanged with ok=true.
func (s Segment) Unwrap() (inner Segment, wrappers []string, ok bool) {
	inner, wrappers, _, ok = s.unwrap()
	return inner, wrappers, ok
}

// unwrap is Unwrap that also says where the inner command runs.
func (s Segment) unwrap() (inner Segment, wrappers []string, place RunPlace, ok bool) {
	inner = s
	for len(inner.Words) > 0 {
		name := wrapperName(inner.Words[0])
		sp, isWrapper := wrapperSpecs()[name]
		if !isWrapper {
			break
		}
		r := readWrapper(name, sp, inner.Words[1:])
		switch r.status {
		case notWrapper:
			return inner, wrappers, place, true
		case wrapBad:
			return inner, append(wrappers, name), place, false
		}
		place = max(place, r.place)
		wrappers = append(wrappers, name)
		next := inner
		next.Words = inner.Words[1+r.start:]
		if len(next.Words) == 0 && r.implicit != "" {
			next.Words = []Word{literalWord(r.implicit)}
		}
		if len(r.assigns) > 0 {
			next.Assignments = append(append([]string(nil), inner.Assignments...), r.assigns...)
		}
		next.Appended = inner.Appended || r.appended
		inner = next
	}
	return inner, wrappers, place, true
}

// readWrapper reads one wrapper's arguments.
func readWrapper(name string, sp *optSpec, args []Word) wrapResult {
	p := parseOpts(args, sp)
	// A risky word is the first operand (posix parsing stops there): an expansion that could
	// still turn into the wrapper's own options.
	if len(p.unknown) > 0 || len(p.risky) > 0 {
		return wrapResult{status: wrapBad}
	}
	start := p.rest
	r := wrapResult{status: wrapped, start: start}
	switch name {
	case "sudo":
		if p.has("e", "edit", "l", "list", "K", "remove-timestamp", "v", "validate", "V", "D", "chdir", "R", "chroot") {
			return wrapResult{status: wrapBad}
		}
		// sudo -s and -i with no command start a shell that reads standard input; with a
		// command they hand it to that shell, -i after moving to the user's home.
		shell := p.has("s", "shell", "i", "login")
		if shell && start >= len(args) {
			return wrapResult{status: wrapBad}
		}
		if p.has("i", "login") {
			r.place = PlaceOtherDir
		}
		for start < len(args) && isAssignment(args[start]) {
			r.assigns = append(r.assigns, args[start].Lit)
			start++
		}
		if start < len(args) && !args[start].Static && strings.Contains(args[start].Raw, "=") {
			return wrapResult{status: wrapBad}
		}
	case "env":
		if p.has("C", "chdir", "S", "split-string") {
			return wrapResult{status: wrapBad}
		}
		// A lone "-" is the same as -i.
		if start < len(args) && args[start].Static && args[start].Lit == "-" {
			start++
		}
		for start < len(args) && isAssignment(args[start]) {
			r.assigns = append(r.assigns, args[start].Lit)
			start++
		}
		if start < len(args) && !args[start].Static && strings.Contains(args[start].Raw, "=") {
			return wrapResult{status: wrapBad}
		}
	case "timeout":
		if start >= len(args) {
			return wrapResult{status: notWrapper}
		}
		if !args[start].Static {
			return wrapResult{status: wrapBad}
		}
		start++ // the duration
	case "time":
		if p.has("o", "output") {
			return wrapResult{status: wrapBad}
		}
	case "command":
		if p.has("v", "V") {
			return wrapResult{status: notWrapper}
		}
	case "xargs":
		r.appended = true
		r.implicit = "echo"
	}
	r.start = start
	if start >= len(args) && r.implicit == "" {
		return wrapResult{status: notWrapper}
	}
	return r
}

// isAssignment reports a static NAME=value word.
func isAssignment(w Word) bool {
	if !w.Static {
		return false
	}
	name, _, ok := strings.Cut(w.Lit, "=")
	if !ok || name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
