package permission

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/shellscan"
)

// shellFacts is the analysis of one Bash command, computed once per Decide.
type shellFacts struct {
	script *shellscan.Script
	err    error

	writes         []placed
	writesComplete bool
	reads          []placed
	readsComplete  bool
	// recursive is RecursiveSegments of the script, computed on first use.
	recursive []bool

	// cands are the readings of each segment a restrictive rule is matched against,
	// computed on first use.
	cands [][]shellscan.Segment
	// hidden is Script.HiddenCommand, computed on first use (hiddenDone).
	hidden     string
	hiddenDone bool

	// git is the gate's answer about the repository git would run in (gitPrograms),
	// computed on first use.
	git      string
	gitAsked bool
}

// placed is one shell target, placed on the filesystem.
type placed struct {
	t shellscan.Target
	// abs is the target made absolute against the root (or home), cleaned lexically;
	// "" when it cannot be placed (not static, "~user").
	abs string
	// canonical is abs with its links resolved; "" when it cannot be placed or resolved.
	canonical string
	// sink marks a device that is not a file write (/dev/null and friends).
	sink bool
	// hardLinked marks a read of a regular file with another name (Resolver.HardLinked):
	// its content may be a file outside the roots, so the read cannot be placed.
	hardLinked bool
}

// ok reports that the target was placed and resolved.
func (p *placed) ok() bool { return p.canonical != "" }

// sinks are devices a redirection may name without writing a file.
var sinks = []string{"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/0", "/dev/fd/1", "/dev/fd/2", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/stdin"}

// shell returns the analysis of the fold's command, computing it on first use.
func (g *Gate) shell(ctx context.Context, f *fold) *shellFacts {
	if f.shell != nil {
		return f.shell
	}
	sf := &shellFacts{}
	f.shell = sf
	sf.script, sf.err = shellscan.Parse(f.call.Command)
	if sf.err == nil {
		sf.err = ambiguousErr(sf.script)
	}
	if sf.err != nil {
		return sf
	}
	w, wc := shellscan.WriteTargets(sf.script)
	r, rc := shellscan.ReadTargets(sf.script)
	sf.writesComplete, sf.readsComplete = wc, rc
	pl := placer{g: g, scope: &f.call.Scope, moved: dirMoved(sf.script), memo: map[string]string{}}
	sf.writes = pl.place(ctx, w)
	sf.reads = pl.place(ctx, r)
	nw, nr := nestedTargets(sf.script)
	sf.writes = append(sf.writes, pl.place(ctx, nw)...)
	sf.reads = append(sf.reads, pl.place(ctx, nr)...)
	return sf
}

// ambiguousErr turns a script bash could read differently from the analyzer into the error of
// a command that cannot be analyzed. The words of such a script may not be the ones bash runs,
// so every station treats it as unreadable: a deny rule for Bash refuses it, no rule matches
// it, and the safety station leaves it to a person — an allow decision or a deny rule that
// misses it would both be guesses.
func ambiguousErr(s *shellscan.Script) error {
	why := s.Ambiguous()
	if why == "" {
		return nil
	}
	return &sema.Error{Code: shellscan.CodeParse, Message: "the command text has " + why + ", which bash may read differently from the analyzer"}
}

// removers are the programs whose work is removing files.
var removers = []string{"rm", "rmdir", "unlink", "shred", "find", "mv"}

// nestedTargets lists targets the script's own lists cannot hold: the write and read
// targets of every command a segment runs through indirection (shellscan.Segment.Follow:
// a script given to `sh -c '…'` or eval, a trap action, env -S, find -exec, the command
// behind a wrapper or a runner such as setsid, flock, su -c or chroot), and an
// unplaceable removal for a removal program whose targets cannot be read — a command the
// reading could not follow (env -C dir rm …, unshare --unknown rm …) or one fed by xargs.
// Each target carries the top-level segment that runs it, so a move of the working
// directory before it is honoured; a nested script that moves its own directory, or a
// runner that runs its command in another directory, leaves relative targets unplaced,
// and one that runs it in another root or on another machine leaves every target
// unplaced. The delete guard and the boundary stations judge these like any other target;
// they never make a command acceptable (the command's own lists are incomplete).
func nestedTargets(s *shellscan.Script) (writes, reads []shellscan.Target) {
	for i, seg := range s.Segments {
		runs, _ := seg.Follow()
		done := map[*shellscan.Script]bool{}
		for k, run := range runs {
			inner, _, ok := run.Unwrap()
			if run.Opaque || !ok || inner.Appended {
				if removalIn(inner, run.Opaque || !ok) != "" {
					writes = append(writes, shellscan.Target{Op: shellscan.OpRemove, Segment: i})
				}
			}
			if k == 0 {
				continue // the segment itself: the script's own lists hold its targets
			}
			one := run.Script
			moved := false
			if one != nil {
				if done[one] {
					continue
				}
				done[one] = true
				moved = dirMoved(one) >= 0
				if one.Ambiguous() != "" {
					// Bash may read the nested text differently from its parse: it may
					// remove anything.
					writes = append(writes, shellscan.Target{Path: one.Source, Op: shellscan.OpRemove, Segment: i})
				}
			} else {
				one = &shellscan.Script{Segments: []shellscan.Segment{run.Segment}}
			}
			w, _ := shellscan.WriteTargets(one)
			r, _ := shellscan.ReadTargets(one)
			for _, list := range [2][]shellscan.Target{w, r} {
				for j, t := range list {
					list[j].Segment = i
					relative := !strings.HasPrefix(t.Path, "/") && !strings.HasPrefix(t.Path, "~")
					switch {
					case run.Place == shellscan.PlaceElsewhere:
						list[j].Static, list[j].Path = false, "(in another root) "+t.Path
					case relative && (moved || run.Place == shellscan.PlaceOtherDir):
						list[j].Static = false
					}
				}
			}
			writes, reads = append(writes, w...), append(reads, r...)
		}
	}
	return writes, reads
}

// removalIn returns the removal program a segment runs, or "". With anywhere set (the
// command's arguments could not be read) every literal word counts as a possible
// command word.
func removalIn(seg shellscan.Segment, anywhere bool) string {
	for i, w := range seg.Words {
		if i > 0 && !anywhere {
			break
		}
		if !w.Static {
			continue
		}
		if inList(removers, filepath.Base(w.Lit)) {
			return filepath.Base(w.Lit)
		}
		if anywhere {
			// A word may be script text a program runs (sh -c 'rm …' behind env -C, a
			// script that does not parse): every name in it counts.
			for _, f := range strings.FieldsFunc(w.Lit, func(r rune) bool { return strings.ContainsRune(" \t\n;&|()`'\"$<>{}", r) }) {
				if inList(removers, filepath.Base(f)) {
					return filepath.Base(f)
				}
			}
		}
	}
	return ""
}

// dirMoved returns the index of the first segment whose relative paths may no longer be
// below the task root, or -1 when there is none: the segment after one that may change
// the shell's working directory (cd, pushd, popd, a sourced or evaluated script, a
// command word the shell expands), or a segment whose wrapper cannot be read (env -C
// moves its own command). In a script with control structures every segment counts (a
// loop may run an earlier segment again after the move).
func dirMoved(s *shellscan.Script) int {
	for i, seg := range s.Segments {
		moves, self := changesDir(seg)
		if !moves {
			continue
		}
		switch {
		case s.HasControl:
			return 0
		case self:
			return i
		}
		return i + 1
	}
	return -1
}

// changesDir reports whether a segment may change the working directory of what follows
// it, and whether it may run its own command elsewhere.
func changesDir(seg shellscan.Segment) (moves, self bool) {
	if len(seg.Words) == 0 {
		return false, false
	}
	inner, _, ok := seg.Unwrap()
	if !ok {
		return true, true
	}
	for _, s := range [2]shellscan.Segment{seg, inner} {
		if len(s.Words) == 0 {
			continue
		}
		w := s.Words[0]
		if !w.Static {
			return true, true
		}
		switch filepath.Base(w.Lit) {
		case "cd", "pushd", "popd", "source", ".", "eval":
			return true, false
		}
	}
	return false, false
}

// placer resolves the targets of one command.
type placer struct {
	g     *Gate
	scope *Scope
	// moved is dirMoved's answer: relative targets of that segment and later ones
	// (and of compound redirections) cannot be placed.
	moved int
	// memo holds the resolutions already made for this command.
	memo map[string]string
}

// tildePath reports a target whose only expansion is a leading "~" or "~/": shellscan
// keeps the tilde in its Path. Anything else the shell would expand is not placed.
func tildePath(t shellscan.Target) bool {
	return (t.Path == "~" || strings.HasPrefix(t.Path, "~/")) && !strings.ContainsAny(t.Path, "$`*?[]{}\\'\"")
}

// place resolves shell targets. A relative path is relative to the task root, where the
// shell tool runs commands, unless the directory may have moved before it.
func (pl *placer) place(ctx context.Context, ts []shellscan.Target) []placed {
	g, s := pl.g, pl.scope
	out := make([]placed, 0, len(ts))
	// A path named again with the same operation is judged once: every station reads
	// only the placement and the operation.
	seen := make(map[[2]string]bool, len(ts))
	for _, t := range ts {
		p := placed{t: t}
		if t.Path == "" || !t.Static && !tildePath(t) {
			out = append(out, p)
			continue
		}
		relative := !strings.HasPrefix(t.Path, "/") && !strings.HasPrefix(t.Path, "~")
		if relative && pl.moved >= 0 && (t.Segment < 0 || t.Segment >= pl.moved) {
			out = append(out, p)
			continue
		}
		raw, ok := joinPath(s, t.Path)
		if !ok {
			out = append(out, p)
			continue
		}
		p.abs = filepath.Clean(raw)
		key := [2]string{raw, t.Op}
		if seen[key] {
			continue
		}
		seen[key] = true
		if inList(sinks, p.abs) {
			p.sink = true
			p.canonical = p.abs
			out = append(out, p)
			continue
		}
		if c, ok := pl.memo[raw]; ok {
			p.canonical = c
		} else if g.resolver != nil {
			if c, err := g.resolver.Canonicalize(ctx, raw); err == nil {
				p.canonical = c
			}
			pl.memo[raw] = p.canonical
		}
		if t.Op == shellscan.OpRead && p.canonical != "" && g.resolver != nil {
			p.hardLinked = g.resolver.HardLinked(ctx, p.canonical)
		}
		out = append(out, p)
	}
	return out
}

// gitPrograms says whether git, run by this command, would run a program its repository's
// configuration names: a sentence naming it, or "". The repository is the one around the
// task root, where the shell tools start; a command that may change directory first, or a
// resolver that cannot read git configuration, leaves it unknown, which counts as naming
// one.
func (g *Gate) gitPrograms(ctx context.Context, f *fold) string {
	sf := g.shell(ctx, f)
	if sf.gitAsked {
		return sf.git
	}
	sf.gitAsked = true
	reader, ok := g.resolver.(GitProgramsReader)
	switch {
	case !ok:
		sf.git = "the repository's git configuration cannot be read here"
	case sf.script != nil && dirMoved(sf.script) >= 0:
		sf.git = "the command changes directory before git runs, so the repository whose configuration git reads is not known"
	default:
		sf.git = reader.GitPrograms(ctx, f.call.root())
	}
	return sf.git
}

// gitPlace is the place of the fold's command for shellscan.ReadOnlyAt. used, when not nil,
// is set once the answer was asked for.
func (g *Gate) gitPlace(ctx context.Context, f *fold, used *bool) shellscan.Place {
	return shellscan.Place{GitPrograms: func() string {
		if used != nil {
			*used = true
		}
		return g.gitPrograms(ctx, f)
	}}
}

// shellPlacer places targets of the fold's command for ReadDenial.ShellRisk, as the
// command's own targets are placed: relative to the task root unless the directory may
// have moved before the segment.
func (g *Gate) shellPlacer(f *fold) Placer {
	pl := placer{g: g, scope: &f.call.Scope, moved: dirMoved(f.shell.script), memo: map[string]string{}}
	return func(ctx context.Context, t shellscan.Target) (string, string, bool) {
		ps := pl.place(ctx, []shellscan.Target{t})
		if len(ps) == 0 || !ps[0].ok() {
			return "", "", false
		}
		return ps[0].abs, ps[0].canonical, true
	}
}

// shellDenyStation refuses, at station 1, a command that cannot be analyzed while a Bash
// deny rule is in force, and a command that touches the deny set.
func (g *Gate) shellDenyStation(ctx context.Context, f *fold) (Decision, bool) {
	sf := g.shell(ctx, f)
	if sf.err != nil {
		if g.bashDeny {
			return Decision{Behavior: Deny, Reason: ReasonRule,
				Message: fmt.Sprintf("The command cannot be analyzed (%v), and a deny rule for Bash is in force, so it was refused.", sf.err)}, true
		}
		return Decision{}, false
	}
	// A deny rule on a command cannot be checked against a program the text does not show
	// ($x, eval "$s", bash -c "$s", hidden code): the answer is a person's, never an allow.
	if r := firstCommandRule(g.rules.Deny); r != nil {
		if why := g.hiddenCommand(ctx, f); why != "" {
			return Decision{Behavior: Ask, Reason: ReasonRule, Rule: r.String(), PersonOnly: true,
				Message: fmt.Sprintf("The command may run a program its text does not show (%s), and the deny rule %s is in force; only a person can approve it.", why, r.String())}, true
		}
	}
	if g.resolver == nil {
		return Decision{}, false
	}
	for _, list := range [2][]placed{sf.writes, sf.reads} {
		for _, p := range list {
			if p.ok() && !p.sink && (g.resolver.Denied(p.canonical) || p.abs != p.canonical && g.resolver.Denied(p.abs)) {
				return Decision{Behavior: Deny, Reason: ReasonSafety,
					Message: fmt.Sprintf("The command touches %s, a location no tool may read or write.", p.t.Path)}, true
			}
		}
	}
	return Decision{}, false
}

// segmentCandidates are the readings of a segment a deny or ask rule is matched against:
// every command the segment runs as far as its text shows (shellscan.Segment.Runs: the
// segment itself, the command inside its wrappers, the commands of a script given to
// `bash -c`, eval or trap, env -S, find -exec, xargs …), and each with an absolute command
// word shortened to its base name, so "/bin/rm", "sudo rm" and `bash -c 'rm …'` meet a
// rule about rm. Redirections and leading assignments are dropped: a restrictive rule
// names the command, whatever its environment or its output.
func segmentCandidates(seg shellscan.Segment) []shellscan.Segment {
	runs, _ := seg.Runs()
	out := make([]shellscan.Segment, 0, len(runs)+1)
	for _, s := range runs {
		s.Redirects, s.Assignments = nil, nil
		out = append(out, s)
		if len(s.Words) > 0 {
			w := s.Words[0]
			if w.Static && strings.Contains(w.Lit, "/") {
				base := w.Lit[strings.LastIndexByte(w.Lit, '/')+1:]
				if base != "" {
					b := s
					b.Words = append([]shellscan.Word{{Raw: base, Lit: base, Static: true}}, s.Words[1:]...)
					out = append(out, b)
				}
			}
		}
	}
	return out
}

// hiddenCommand returns, once per Decide, why the command may run a program its text does
// not show (shellscan.Script.HiddenCommand), or "".
func (g *Gate) hiddenCommand(ctx context.Context, f *fold) string {
	sf := g.shell(ctx, f)
	if sf.err != nil {
		return ""
	}
	if !sf.hiddenDone {
		sf.hidden, sf.hiddenDone = sf.script.HiddenCommand(), true
	}
	return sf.hidden
}

// firstCommandRule returns the first Bash command rule (prefix or exact) of a list, or nil.
func firstCommandRule(rules []Rule) *Rule {
	for i := range rules {
		if rules[i].kind == kindBashPrefix || rules[i].kind == kindBashExact {
			return &rules[i]
		}
	}
	return nil
}

// shellRuleMatches reports whether a deny or ask command rule names any segment.
func (g *Gate) shellRuleMatches(ctx context.Context, f *fold, r *Rule) bool {
	sf := g.shell(ctx, f)
	if sf.err != nil {
		return false
	}
	if sf.cands == nil {
		sf.cands = make([][]shellscan.Segment, len(sf.script.Segments))
		for i, seg := range sf.script.Segments {
			sf.cands[i] = segmentCandidates(seg)
		}
	}
	for _, cs := range sf.cands {
		for _, c := range cs {
			if ruleNamesSegment(r, c) {
				return true
			}
		}
	}
	return false
}

func ruleNamesSegment(r *Rule, seg shellscan.Segment) bool {
	if r.kind == kindBashPrefix {
		return shellscan.PrefixMatch(seg, r.words)
	}
	return shellscan.ExactMatch(seg, r.words)
}

// shellPathRuleMatches reports whether a deny or ask Read or Edit path rule names a
// target of the command: Read rules name what it reads and writes, Edit rules what it
// writes.
func (g *Gate) shellPathRuleMatches(ctx context.Context, f *fold, r *Rule) bool {
	sf := g.shell(ctx, f)
	if sf.err != nil {
		return false
	}
	root, home := f.call.root(), f.call.Home
	lists := [][]placed{sf.writes}
	if r.Tool == "Read" {
		lists = append(lists, sf.reads)
	}
	for _, list := range lists {
		for _, p := range list {
			if p.abs == "" || p.sink {
				continue
			}
			if g.pathNamed(r, p.abs, root, home) || g.pathNamed(r, p.canonical, root, home) {
				return true
			}
		}
	}
	return false
}

// shellSafetyStation is station 5 for a Bash call.
func (g *Gate) shellSafetyStation(ctx context.Context, f *fold) (Decision, bool) {
	sf := g.shell(ctx, f)
	c := &f.call
	ask := func(format string, args ...any) (Decision, bool) {
		return Decision{Behavior: Ask, Reason: ReasonSafety, PersonOnly: true, Message: fmt.Sprintf(format, args...)}, true
	}
	if sf.err != nil {
		return ask("The command cannot be analyzed (%v); only a person can approve it.", sf.err)
	}
	// The delete guard, in every mode.
	for _, p := range sf.writes {
		if p.t.Op != shellscan.OpRemove {
			continue
		}
		if !p.ok() {
			return ask("The command removes %s, which cannot be placed; only a person can approve a removal that might reach the root, a workspace root or the home directory.", shown(p))
		}
		if what := guarded(c, p.abs, p.canonical); what != "" {
			return ask("The command removes %s, which is %s; only a person can approve that.", shown(p), what)
		}
	}
	// Deny rules and the deny set stand in every mode: a read the command makes without
	// naming it, which could reach what they cover, is a person's question.
	if why := g.ReadDenial(c.Scope).ShellRisk(ctx, sf.script, g.shellPlacer(f)); why != "" {
		return ask("The command may read what a deny rule or the deny set keeps from reads: %s; only a person can approve it.", why)
	}
	if f.mode == ModeBypassPermissions {
		return Decision{}, false
	}
	for _, p := range sf.writes {
		if p.sink || !p.ok() || g.resolver == nil {
			continue
		}
		if prot, why := g.resolver.IsProtected(p.canonical); prot {
			return ask("The command writes the protected path %s (%s); only a person can approve it.", p.canonical, why)
		}
	}
	for _, p := range sf.writes {
		switch {
		case p.sink:
		case !p.ok():
			return ask("The command writes %s, which cannot be placed inside the write roots; only a person can approve it.", shown(p))
		case g.sandboxed:
			// The kernel refuses this write whatever the answer: it is no longer a
			// question only a person may answer, and the command goes on to the
			// ordinary one.
		case !inAny(c.WriteRoots, p.canonical) && !inExempt(&c.Scope, p.canonical):
			return ask("The command writes %s, outside the write roots (%s); only a person can approve it.", p.canonical, strings.Join(c.WriteRoots, ", "))
		}
	}
	for _, p := range sf.reads {
		switch {
		case p.sink:
		case !p.ok():
			return ask("The command reads %s, which cannot be placed inside the read roots; only a person can approve it.", shown(p))
		case p.hardLinked:
			return ask("The command reads %s, a file with more than one hard link: the same file may live outside the read roots under another name; only a person can approve it.", shown(p))
		case !inAny(c.ReadRoots, p.canonical) && !inAny(c.WriteRoots, p.canonical) && !inExempt(&c.Scope, p.canonical):
			return ask("The command reads %s, outside the read roots (%s); only a person can approve it.", p.canonical, strings.Join(c.ReadRoots, ", "))
		}
	}
	return Decision{}, false
}

// shown names a target in a sentence.
func shown(p placed) string {
	if p.t.Path != "" {
		return fmt.Sprintf("%q", p.t.Path)
	}
	if p.t.Reason != "" {
		return "files the command text does not name (" + p.t.Reason + ")"
	}
	return "files the command text does not name"
}

// guarded says what a removal target is when the delete guard keeps it: "/", the home
// directory, a root, or an ancestor of one; "" otherwise. Both spellings are judged.
func guarded(c *Call, spellings ...string) string {
	for _, p := range spellings {
		if p == "" {
			continue
		}
		if p == "/" {
			return "the filesystem root"
		}
		if c.Home != "" && fence.Contains(p, c.Home) {
			return "the home directory or one of its ancestors"
		}
		for _, list := range [2][]string{c.WriteRoots, c.ReadRoots} {
			for _, r := range list {
				if fence.Contains(p, r) {
					return "a workspace root or one of its ancestors"
				}
			}
		}
		if r := c.root(); fence.Contains(p, r) {
			return "the task root or one of its ancestors"
		}
	}
	return ""
}

// shellAllowed is station 6 for Bash: the call is allowed when a whole-tool Bash rule
// allows it, or when every segment is named by some allow rule or is itself read-only.
// A prefix or exact rule never names a segment with a redirection, and no rule names a
// command with a substitution or a redirection on a compound command.
func (g *Gate) shellAllowed(ctx context.Context, f *fold) (string, bool) {
	var cmdRules []*Rule
	for i := range g.rules.Allow {
		r := &g.rules.Allow[i]
		if r.kind == kindTool && r.Tool == "Bash" {
			return r.String(), true
		}
		if r.kind == kindBashPrefix || r.kind == kindBashExact {
			cmdRules = append(cmdRules, r)
		}
	}
	if len(cmdRules) == 0 {
		return "", false
	}
	sf := g.shell(ctx, f)
	if sf.err != nil || len(sf.script.CompoundRedirects) > 0 || len(sf.script.Segments) == 0 {
		return "", false
	}
	// A rule names words; it never approves words bash evaluates as code (a substitution,
	// arithmetic over variables, ${x@P}, printf -v a[$(…)], …). The one judgement of that
	// is shellscan's, which the read-only analyzer and acceptEdits consult too.
	if _, evaluates := sf.script.EvaluatesCode(); evaluates {
		return "", false
	}
	var used []string
	var readOnly map[string]bool // verdicts by rebuilt text, for repeated segments
	for i, seg := range sf.script.Segments {
		var hit *Rule
		if len(seg.Redirects) == 0 {
			for _, r := range cmdRules {
				if ruleNamesSegment(r, seg) {
					hit = r
					break
				}
			}
		}
		if hit == nil {
			text, ok := rebuild(seg)
			if !ok {
				return "", false
			}
			ro, seen := readOnly[text]
			if !seen {
				ro = g.textReadOnly(ctx, f, text)
				if readOnly == nil {
					readOnly = map[string]bool{}
				}
				readOnly[text] = ro
			}
			if !ro || g.walksDenied(ctx, sf, i) {
				return "", false
			}
			continue
		}
		if reads, unread := shellscan.RunsGitReader(seg); unread || reads && g.gitPrograms(ctx, f) != "" {
			// The rule grants git, not a program the repository's configuration (or
			// configuration given on the command line) would make it run.
			return "", false
		}
		if s := hit.String(); !inList(used, s) {
			used = append(used, s)
		}
	}
	if len(used) == 0 {
		// Every segment was read-only on its own: that is the mode station's answer, not
		// a rule's.
		return "", false
	}
	return strings.Join(used, ", "), true
}

// rebuild returns one segment as a command of its own, from its source words; false for
// a segment that cannot stand alone (inside a substitution, no command word).
func rebuild(seg shellscan.Segment) (string, bool) {
	if seg.InSubstitution || len(seg.Words) == 0 {
		return "", false
	}
	var b strings.Builder
	for _, a := range seg.Assignments {
		b.WriteString(a)
		b.WriteByte(' ')
	}
	for _, w := range seg.Words {
		b.WriteString(w.Raw)
		b.WriteByte(' ')
	}
	for _, r := range seg.Redirects {
		b.WriteString(r.Op)
		b.WriteString(r.Target.Raw)
		b.WriteByte(' ')
	}
	return b.String(), true
}

// maxReadOnlyMemo bounds the gate's memory of single-command read-only verdicts.
const maxReadOnlyMemo = 1024

// textReadOnly proves a rebuilt segment read-only with the analyzer. A verdict that did
// not ask about git's configuration is a function of the text and the gate's allowlist
// alone, so the gate remembers it (up to maxReadOnlyMemo texts): a leg runs the same small
// commands again and again. One that asked depends on files that can change between calls
// and is never remembered.
func (g *Gate) textReadOnly(ctx context.Context, f *fold, text string) bool {
	if v, ok := g.roMemo.Load(text); ok {
		return v.(bool)
	}
	s, err := shellscan.Parse(text)
	askedGit := false
	ok := err == nil && len(s.Segments) == 1 && shellscan.ReadOnlyAt(s, g.roAllow, g.gitPlace(ctx, f, &askedGit)).OK
	if askedGit {
		return ok
	}
	if g.roMemoN.Load() < maxReadOnlyMemo {
		if _, loaded := g.roMemo.LoadOrStore(text, ok); !loaded {
			g.roMemoN.Add(1)
		}
	}
	return ok
}

// shellAccepted is acceptEdits' reading of a Bash call (station 7): every segment a plain
// file command (shellscan.AcceptsFileCommand) and every write target established inside
// the write roots, the write list complete.
func (g *Gate) shellAccepted(ctx context.Context, f *fold) bool {
	sf := g.shell(ctx, f)
	if sf.err != nil || !sf.writesComplete || !sf.readsComplete {
		return false
	}
	if !shellscan.AcceptsFileCommand(sf.script, f.call.RunInBackground) {
		return false
	}
	c := &f.call
	for _, p := range sf.writes {
		if p.sink || !p.ok() || !inAny(c.WriteRoots, p.canonical) && !inExempt(&c.Scope, p.canonical) {
			return false
		}
		if p.t.Op == shellscan.OpRemove && guarded(c, p.abs, p.canonical) != "" {
			return false
		}
	}
	for _, p := range sf.reads {
		if !p.ok() || p.hardLinked || !p.sink && !inAny(c.ReadRoots, p.canonical) && !inAny(c.WriteRoots, p.canonical) {
			return false
		}
	}
	return true
}

// shellReadOnly is station 7's read-only reading of a Bash call: the analyzer proves the
// command read-only and every file it reads is placed inside the read roots.
func (g *Gate) shellReadOnly(ctx context.Context, f *fold) bool {
	sf := g.shell(ctx, f)
	if sf.err != nil || !sf.readsComplete || !sf.writesComplete {
		return false
	}
	if !shellscan.ReadOnlyAt(sf.script, g.roAllow, g.gitPlace(ctx, f, nil)).OK {
		return false
	}
	c := &f.call
	for _, p := range sf.writes {
		if !p.sink {
			return false
		}
	}
	for _, p := range sf.reads {
		if p.sink {
			continue
		}
		if !p.ok() || p.hardLinked || !inAny(c.ReadRoots, p.canonical) && !inAny(c.WriteRoots, p.canonical) && !inExempt(&c.Scope, p.canonical) {
			return false
		}
	}
	return !g.walksDenied(ctx, sf, -1)
}

// walksDenied reports whether a recursive reader of the command (RecursiveSegments) walks
// a read target that could hold files of the deny set (Resolver.MayContainDenied): the
// deny set is refused for reads, and a walk of a directory above it would read it
// unnamed, so such a command is not read-only for the mode's purposes and goes to the
// ordinary question. seg limits the check to one segment; -1 checks every segment.
func (g *Gate) walksDenied(ctx context.Context, sf *shellFacts, seg int) bool {
	if g.resolver == nil {
		return false // nothing is placed: no Bash read is answered by a mode
	}
	if sf.recursive == nil {
		sf.recursive = RecursiveSegments(sf.script)
	}
	for _, p := range sf.reads {
		i := p.t.Segment
		if seg >= 0 && i != seg || i < 0 || i >= len(sf.recursive) || !sf.recursive[i] || p.sink {
			continue
		}
		if !p.ok() || g.resolver.MayContainDenied(ctx, p.canonical) {
			return true
		}
	}
	return false
}
