package gate

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/internal/rulematch"
	"github.com/sema-agent/sema/permission"
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
	// recursive is the script's RecursiveSegments, computed on first use.
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
		sf.git = reader.GitPrograms(ctx, scopeRoot(&f.call.Scope))
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
func (g *Gate) shellPlacer(f *fold) shellscan.Placer {
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
func (g *Gate) shellDenyStation(ctx context.Context, f *fold) (permission.Decision, bool) {
	sf := g.shell(ctx, f)
	if sf.err != nil {
		if g.bashDeny {
			return permission.Decision{Behavior: permission.Deny, DecidedBy: permission.LayerRule,
				Reason: fmt.Sprintf("The command cannot be analyzed (%v), and a deny rule for Bash is in force, so it was refused.", sf.err)}, true
		}
		return permission.Decision{}, false
	}
	// A deny rule on a command cannot be checked against a program the text does not show
	// ($x, eval "$s", bash -c "$s", hidden code): the answer is a person's, never an allow.
	if r := firstCommandRule(g.rules.Deny); r != nil {
		if why := g.hiddenCommand(ctx, f); why != "" {
			return permission.Decision{Behavior: permission.Ask, DecidedBy: permission.LayerRule, Rule: r.String(), PersonOnly: true,
				Reason: fmt.Sprintf("The command may run a program its text does not show (%s), and the deny rule %s is in force; only a person can approve it.", why, r.String())}, true
		}
	}
	if g.resolver == nil {
		return permission.Decision{}, false
	}
	for _, list := range [2][]placed{sf.writes, sf.reads} {
		for _, p := range list {
			if p.ok() && !p.sink && (g.resolver.Denied(p.canonical) || p.abs != p.canonical && g.resolver.Denied(p.abs)) {
				return permission.Decision{Behavior: permission.Deny, DecidedBy: permission.LayerSafety,
					Reason: fmt.Sprintf("The command touches %s, a location no tool may read or write.", p.t.Path)}, true
			}
		}
	}
	return permission.Decision{}, false
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
func firstCommandRule(rules []rulematch.Rule) *rulematch.Rule {
	for i := range rules {
		if rules[i].Kind == rulematch.KindBashPrefix || rules[i].Kind == rulematch.KindBashExact {
			return &rules[i]
		}
	}
	return nil
}

// shellRuleMatches reports whether a deny or ask command rule names any segment.
func (g *Gate) shellRuleMatches(ctx context.Context, f *fold, r *rulematch.Rule) bool {
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

func ruleNamesSegment(r *rulematch.Rule, seg shellscan.Segment) bool {
	if r.Kind == rulematch.KindBashPrefix {
		return shellscan.PrefixMatch(seg, r.Words)
	}
	return shellscan.ExactMatch(seg, r.Words)
}

// shellPathRuleMatches reports whether a deny or ask Read or Edit path rule names a
// target of the command: Read rules name what it reads and writes, Edit rules what it
// writes.
func (g *Gate) shellPathRuleMatches(ctx context.Context, f *fold, r *rulematch.Rule) bool {
	sf := g.shell(ctx, f)
	if sf.err != nil {
		return false
	}
	root, home := scopeRoot(&f.call.Scope), f.call.Home
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
func (g *Gate) shellSafetyStation(ctx context.Context, f *fold) (permission.Decision, bool) {
	sf := g.shell(ctx, f)
	c := &f.call
	ask := func(format string, args ...any) (permission.Decision, bool) {
		return permission.Decision{Behavior: permission.Ask, DecidedBy: permission.LayerSafety, PersonOnly: true, Reason: fmt.Sprintf(format, args...)}, true
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
	if f.mode == permission.ModeBypassPermissions {
		return permission.Decision{}, false
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
	return permission.Decision{}, false
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
func guarded(c *permission.Call, spellings ...string) string {
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
		if r := scopeRoot(&c.Scope); fence.Contains(p, r) {
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
	var cmdRules []*rulematch.Rule
	for i := range g.rules.Allow {
		r := &g.rules.Allow[i]
		if r.Kind == rulematch.KindTool && r.Tool == "Bash" {
			return r.String(), true
		}
		if r.Kind == rulematch.KindBashPrefix || r.Kind == rulematch.KindBashExact {
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
		var hit *rulematch.Rule
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
		if s := hit.String(); !slices.Contains(used, s) {
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

// walksDenied reports whether a recursive reader of the command (shellscan.Script.RecursiveSegments) walks
// a read target that could hold files of the deny set (Resolver.MayContainDenied): the
// deny set is refused for reads, and a walk of a directory above it would read it
// unnamed, so such a command is not read-only for the mode's purposes and goes to the
// ordinary question. seg limits the check to one segment; -1 checks every segment.
func (g *Gate) walksDenied(ctx context.Context, sf *shellFacts, seg int) bool {
	if g.resolver == nil {
		return false // nothing is placed: no Bash read is answered by a mode
	}
	if sf.recursive == nil {
		sf.recursive = sf.script.RecursiveSegments()
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
