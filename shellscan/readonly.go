package shellscan

import (
	"slices"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// Verdict is the read-only analyzer's answer. Reason names the first construct that stops the
// command from being proven read-only, in words the caller can act on; it is empty when OK.
type Verdict struct {
	// OK reports that the command is proven read-only.
	OK bool
	// Reason says why it is not; empty when OK.
	Reason string
}

// DefaultReadOnlyAllow is the read-only allowlist used when ReadOnly gets a nil list. An entry
// of one word allows that program (subject to its argument rules); an entry of two words allows
// only that subcommand of the program, which must then be the program's first argument (for
// git: the first word after git's global options). Entries of more words are ignored. The list
// is read when the package is initialized; to use another one, pass it to ReadOnly.
var DefaultReadOnlyAllow = []string{
	"ls", "cat", "head", "tail", "wc", "grep", "rg", "find", "stat", "file", "du", "df", "pwd",
	"echo", "printf", "which", "env", "date", "diff", "sort", "uniq", "cut", "tr", "tree", "jq",
	"true", "false", "basename", "dirname", "realpath", "readlink",
	"git status", "git log", "git diff", "git show", "git branch", "git rev-parse", "git ls-files",
}

// allowList is an allowlist in lookup form.
type allowList struct {
	cmds map[string]bool            // programs allowed with any subcommand
	subs map[string]map[string]bool // programs allowed only with these subcommands
}

func (a allowList) program(name string) bool { return a.cmds[name] || a.subs[name] != nil }

func (a allowList) subcommand(name, sub string) bool { return a.cmds[name] || a.subs[name][sub] }

func newAllowList(entries []string) allowList {
	a := allowList{cmds: map[string]bool{}, subs: map[string]map[string]bool{}}
	for _, e := range entries {
		f := strings.Fields(e)
		switch len(f) {
		case 1:
			a.cmds[f[0]] = true
		case 2:
			if a.subs[f[0]] == nil {
				a.subs[f[0]] = map[string]bool{}
			}
			a.subs[f[0]][f[1]] = true
		}
	}
	return a
}

// defaultAllow is DefaultReadOnlyAllow as it stood when the package was initialized: the
// default cannot be changed by mutating the exported slice. The copy is taken then; the
// lookup form is built on first use.
var defaultAllow = func() func() allowList {
	entries := slices.Clone(DefaultReadOnlyAllow)
	return sync.OnceValue(func() allowList { return newAllowList(entries) })
}()

// neverReadOnly names programs that run other commands or code, refused even when an allowlist
// names them: the proof would have to cover the command they run.
var neverReadOnly = sync.OnceValue(func() map[string]string {
	return map[string]string{
		"eval":     "runs its arguments as a new command",
		"source":   "runs the commands in a file",
		".":        "runs the commands in a file",
		"exec":     "replaces the shell with another command",
		"builtin":  "runs another command",
		"command":  "runs another command",
		"sudo":     "runs another command with other privileges",
		"doas":     "runs another command with other privileges",
		"su":       "runs a shell with other privileges",
		"xargs":    "runs another command with arguments it reads at run time",
		"timeout":  "runs another command",
		"nice":     "runs another command",
		"nohup":    "runs another command and can write nohup.out",
		"time":     "runs another command",
		"stdbuf":   "runs another command",
		"watch":    "runs another command",
		"trap":     "runs a command when a signal arrives",
		"alias":    "redefines commands",
		"bash":     "starts a shell that can run anything",
		"sh":       "starts a shell that can run anything",
		"zsh":      "starts a shell that can run anything",
		"dash":     "starts a shell that can run anything",
		"ksh":      "starts a shell that can run anything",
		"mksh":     "starts a shell that can run anything",
		"fish":     "starts a shell that can run anything",
		"csh":      "starts a shell that can run anything",
		"tcsh":     "starts a shell that can run anything",
		"busybox":  "runs any of its applets",
		"awk":      "runs a program that can write files and run commands",
		"gawk":     "runs a program that can write files and run commands",
		"mawk":     "runs a program that can write files and run commands",
		"nawk":     "runs a program that can write files and run commands",
		"perl":     "runs a program that can write files and run commands",
		"python":   "runs a program that can write files and run commands",
		"python3":  "runs a program that can write files and run commands",
		"ruby":     "runs a program that can write files and run commands",
		"node":     "runs a program that can write files and run commands",
		"declare":  "sets shell variables and attributes",
		"typeset":  "sets shell variables and attributes",
		"local":    "sets shell variables and attributes",
		"export":   "sets shell variables and attributes",
		"readonly": "sets shell variables and attributes",
		"nameref":  "sets shell variables and attributes",
		"let":      "evaluates arithmetic that can run commands through array subscripts",
	}
})

// ReadOnlyCommand parses cmd and judges it with ReadOnly; a parse failure is a refusal whose
// reason carries the parser's message.
//
// A script whose text bash could read differently from the parser (Script.Ambiguous) is never
// read-only.
func ReadOnlyCommand(cmd string, allow []string) Verdict {
	s, err := Parse(cmd)
	if err != nil {
		return Verdict{Reason: err.Error()}
	}
	return ReadOnly(s, allow)
}

// Place is what the caller knows about where a command runs that its text cannot say.
type Place struct {
	// GitPrograms is asked, at most once per judgement and only when the command runs git,
	// about the repository the command would run git in: it returns a sentence naming a
	// program that repository's configuration makes git run — a diff driver's textconv or
	// command, a clean or smudge filter, diff.external, core.fsmonitor, a pager, an ssh
	// command, a credential helper, an include it cannot follow — or "" when the
	// configuration was read and names none. Environment overrides cannot switch off a
	// driver that attributes select by name, so such a repository makes every git command
	// unprovable. nil means nothing is known: every git command is then refused.
	GitPrograms func() string
}

// judge carries one judgement's allowlist and place, and the git answer once asked.
type judge struct {
	al       allowList
	at       Place
	git      string
	gitAsked bool
}

// gitPrograms asks the place about git's configuration once; known is false when the place
// cannot answer.
func (j *judge) gitPrograms() (why string, known bool) {
	if j.at.GitPrograms == nil {
		return "", false
	}
	if !j.gitAsked {
		j.gitAsked = true
		j.git = j.at.GitPrograms()
	}
	return j.git, true
}

// ReadOnly is the bash_readonly analyzer. It answers OK only if every simple command in the
// script — through pipes, lists, subshells and groups — has a plain literal command word on the
// allowlist (nil allow means DefaultReadOnlyAllow) and passes that program's argument rules,
// with no redirection that can write (only /dev/null and fd duplication; `<` from a file, a
// here-document and a here-string are reads), no command or process substitution, no leading
// assignment, no `&`, no control structure other than ( … ) and { … } groups, and no arithmetic
// or parameter expansion that evaluates variable contents as code. Programs that run other
// commands or code (eval, exec, source, shells, sudo, xargs, awk, …) are refused even when the
// allowlist names them. Everything Script.EvaluatesCode reports is refused.
//
// Argument rules (they hold for every allowlist):
//   - find: no -exec, -execdir, -ok, -okdir, -delete, -fprint, -fprint0, -fprintf, -fls;
//   - sort: no -o/--output, no -T/--temporary-directory (it writes its temporary files
//     there), no --compress-program;
//   - rg: no --pre, no --hostname-bin (-z/--search-zip is allowed: it only runs the standard
//     decompressors on the files being searched);
//   - git: only --no-pager, -P, --no-optional-locks, --no-replace-objects, --no-advice and the
//     pathspec switches before the subcommand (-c, --config-env, -C, --git-dir, --work-tree,
//     --namespace and --exec-path are refused: they select another repository or configuration,
//     whose settings can run programs); the subcommand must be on the allowlist; no --output,
//     --ext-diff, --textconv or --show-signature; `git branch` only lists (its listing options,
//     and a pattern only in list mode); and the place (ReadOnlyAt) must report that the
//     repository's configuration names no program git would run;
//   - env: no arguments at all (env with a command is a wrapper); date: no -s/--set and no
//     operand other than +FORMAT; tree: no -o, no -R; file: no -C/--compile, no
//     -p/--preserve-date (it writes access times); uniq: at most one operand (the second is an
//     output file); printf: no -v;
//   - sed and tee, when an allowlist names them: sed without -i, -f and a script that writes or
//     runs commands; tee with no file operand;
//   - for the programs above, an expanded argument that could turn into an option or into
//     several words is refused; long options are matched with their abbreviations.
//
// ReadOnly knows nothing of the place the command runs in, so it refuses every git command;
// ReadOnlyAt is the same judgement with what the caller knows.
func ReadOnly(s *Script, allow []string) Verdict {
	return ReadOnlyAt(s, allow, Place{})
}

// ReadOnlyAt is ReadOnly for a command that runs at the place described: a git command
// counts as read-only only when at.GitPrograms reports that the repository's configuration
// names no program.
func ReadOnlyAt(s *Script, allow []string, at Place) Verdict {
	if s == nil || len(s.notes) == 0 {
		return Verdict{Reason: "the command is empty"}
	}
	if s.ambiguous != "" {
		return Verdict{Reason: ambiguousReason(s.ambiguous)}
	}
	al := defaultAllow()
	if allow != nil {
		al = newAllowList(allow)
	}
	j := &judge{al: al, at: at}
	for _, n := range s.notes {
		var reason string
		switch n.kind {
		case noteSegment:
			reason = segmentReadOnly(s.Segments[n.index], j)
		case noteGroup:
		case noteControl:
			reason = controlReason(n.text)
		case noteCompoundRedirect:
			reason = redirectReason(s.CompoundRedirects[n.index])
		}
		// Whatever evaluates code is judged by the one judgement the allow rules use too
		// (Script.EvaluatesCode), after the program's own reason, which is the more useful
		// one to read.
		if reason == "" {
			if ev, ok := s.evaluation(n); ok {
				reason = ev.Reason
			}
		}
		if reason != "" {
			return Verdict{Reason: reason}
		}
	}
	return Verdict{OK: true}
}

// ambiguousReason is the refusal of a script whose text bash could read differently.
func ambiguousReason(why string) string {
	return "the command text has " + why + ", which bash may read differently from the analyzer; write the command on plain lines without it"
}

func controlReason(kind string) string {
	switch kind {
	case "function":
		return "function definitions cannot be proven read-only; run the commands directly"
	case "((":
		return "arithmetic commands `(( … ))` cannot be proven read-only"
	case "[[":
		return "test commands `[[ … ]]` cannot be proven read-only"
	case "coproc":
		return "`coproc` runs a command in the background"
	case "time":
		return "`time` in front of a pipeline or compound command cannot be proven read-only"
	case "unsupported construct":
		return "the command uses a shell construct that cannot be proven read-only"
	}
	return "`" + kind + "` statements cannot be proven read-only; run the commands one by one"
}

func segmentReadOnly(seg Segment, j *judge) string {
	al := j.al
	if len(seg.Assignments) > 0 {
		if len(seg.Words) == 0 {
			return "the assignment `" + seg.Assignments[0] + "` changes the shell's variables; read-only commands cannot assign"
		}
		return "the assignment `" + seg.Assignments[0] + "` in front of the command changes its environment; drop it"
	}
	if len(seg.Words) == 0 {
		for _, r := range seg.Redirects {
			if reason := redirectReason(r); reason != "" {
				return reason
			}
		}
		return "a redirection without a command is not a read-only command"
	}
	name := seg.Name()
	if name == "" {
		return "the command word `" + seg.Words[0].Raw + "` is quoted, escaped or expanded; write the program name as a plain word"
	}
	if why, ok := neverReadOnly()[name]; ok {
		return "`" + name + "` " + why + ", so it cannot be proven read-only"
	}
	if !al.program(name) {
		return "`" + name + "` is not on the read-only allowlist"
	}
	if !al.cmds[name] && name != "git" {
		// Only some subcommands are listed; git reads its global options first and checks its
		// subcommand itself.
		if len(seg.Words) < 2 || !seg.Words[1].Static || !al.subs[name][seg.Words[1].Lit] {
			shown := name
			if len(seg.Words) > 1 {
				shown += " " + seg.Words[1].Raw
			}
			return "`" + shown + "` is not on the read-only allowlist"
		}
	}
	if rule, ok := argRules[name]; ok {
		if reason := rule(seg.Words[1:], j); reason != "" {
			return reason
		}
	}
	for _, r := range seg.Redirects {
		if reason := redirectReason(r); reason != "" {
			return reason
		}
	}
	if seg.Background {
		return "`&` runs `" + name + "` in the background; run it in the foreground"
	}
	return ""
}

// redirectReason judges one redirection for the read-only analyzer.
func redirectReason(r Redirect) string {
	t := r.Target
	switch r.kind() {
	case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return ""
	case syntax.RdrIn:
		switch {
		case !t.Static:
			return "redirection `" + r.Op + " " + t.Raw + "` reads from an expanded name that cannot be checked; spell the path out"
		case strings.HasPrefix(t.Lit, "/dev/tcp/") || strings.HasPrefix(t.Lit, "/dev/udp/"):
			return "redirection `" + r.Op + " " + t.Raw + "` opens a network connection"
		}
		return ""
	case syntax.DplIn, syntax.DplOut:
		if isFDTarget(t) {
			return ""
		}
	}
	if t.Static && t.Lit == "/dev/null" {
		return ""
	}
	return "redirection `" + r.Op + " " + t.Raw + "` can write a file; only /dev/null may be written"
}

// argRule judges a program's arguments (the words after the command word).
type argRule func(args []Word, j *judge) string

var argRules map[string]argRule

func init() {
	argRules = map[string]argRule{
		"find":   findReadOnly,
		"sort":   sortReadOnly,
		"rg":     rgReadOnly,
		"git":    gitReadOnly,
		"env":    envReadOnly,
		"date":   dateReadOnly,
		"tree":   treeReadOnly,
		"file":   fileReadOnly,
		"uniq":   uniqReadOnly,
		"printf": printfReadOnly,
		"sed":    sedReadOnly,
		"tee":    teeReadOnly,
	}
}

func expandedArg(prog string, w Word) string {
	return "argument `" + w.Raw + "` of `" + prog + "` is expanded and could become an option; spell it out or quote it"
}

func dangerous(prog string, args []Word, shorts string, why map[string]string, longs ...string) string {
	if w, opt, ok := findDangerous(args, shorts, longs...); ok {
		shown := opt
		if w.Lit != opt && !strings.HasPrefix(w.Lit, opt+"=") {
			shown = opt + " (written " + w.Lit + ")"
		}
		return "`" + prog + " " + shown + "` " + why[opt]
	}
	return ""
}

var findDanger = map[string]string{
	"-exec":    "runs another command",
	"-execdir": "runs another command",
	"-ok":      "runs another command",
	"-okdir":   "runs another command",
	"-delete":  "removes files",
	"-fprint":  "writes a file",
	"-fprint0": "writes a file",
	"-fprintf": "writes a file",
	"-fls":     "writes a file",
}

func findReadOnly(args []Word, _ *judge) string {
	for _, w := range args {
		if !w.Static {
			if w.OptionSafe {
				continue
			}
			return "argument `" + w.Raw + "` of `find` is expanded and could become an action such as -delete; spell it out or quote it"
		}
		if why, ok := findDanger[w.Lit]; ok {
			return "`find " + w.Lit + "` " + why
		}
	}
	return ""
}

func sortReadOnly(args []Word, _ *judge) string {
	if w, ok := firstRisky(args); ok {
		return expandedArg("sort", w)
	}
	return dangerous("sort", args, "oT", map[string]string{
		"-o":                    "writes a file",
		"--output":              "writes a file",
		"-T":                    "writes temporary files into the directory it names",
		"--temporary-directory": "writes temporary files into the directory it names",
		"--compress-program":    "runs another program",
	}, "output", "temporary-directory", "compress-program")
}

func rgReadOnly(args []Word, _ *judge) string {
	if w, ok := firstRisky(args); ok {
		return expandedArg("rg", w)
	}
	return dangerous("rg", args, "", map[string]string{
		"--pre":          "runs a preprocessor command on every file",
		"--hostname-bin": "runs a program",
	}, "pre", "hostname-bin")
}

func envReadOnly(args []Word, _ *judge) string {
	if len(args) > 0 {
		return "`env` with arguments runs another command or changes its environment; run the command directly"
	}
	return ""
}

var dateSpec = spec("Ru", "dfrs", "I", "date= file= iso-8601? rfc-3339= reference= set= utc universal rfc-email rfc-2822 debug resolution")

func dateReadOnly(args []Word, _ *judge) string {
	if w, ok := firstRisky(args); ok {
		return expandedArg("date", w)
	}
	if r := dangerous("date", args, "s", map[string]string{"-s": "sets the system clock", "--set": "sets the system clock"}, "set"); r != "" {
		return r
	}
	p := parseOpts(args, dateSpec)
	if len(p.unknown) > 0 {
		return "`date " + p.unknown[0] + "` is not an option the read-only analyzer knows"
	}
	for _, w := range p.operands {
		if !w.Static || !strings.HasPrefix(w.Lit, "+") {
			return "`date " + w.Raw + "`: an operand other than +FORMAT sets the system clock"
		}
	}
	return ""
}

func treeReadOnly(args []Word, _ *judge) string {
	if w, ok := firstRisky(args); ok {
		return expandedArg("tree", w)
	}
	return dangerous("tree", args, "oR", map[string]string{
		"-o":       "writes a file",
		"--output": "writes a file",
		"-R":       "writes an HTML file into every directory",
	}, "output")
}

func fileReadOnly(args []Word, _ *judge) string {
	if w, ok := firstRisky(args); ok {
		return expandedArg("file", w)
	}
	return dangerous("file", args, "Cp", map[string]string{
		"-C":              "compiles and writes a magic file",
		"--compile":       "compiles and writes a magic file",
		"-p":              "resets the access time of the files it reads",
		"--preserve-date": "resets the access time of the files it reads",
	}, "compile", "preserve-date")
}

var uniqSpec = spec("cdDiuz", "fsw", "", "count repeated all-repeated? group? ignore-case unique zero-terminated skip-fields= skip-chars= check-chars=")

func uniqReadOnly(args []Word, _ *judge) string {
	p := parseOpts(args, uniqSpec)
	for _, w := range p.operands {
		if !w.Static {
			return "argument `" + w.Raw + "` of `uniq` is expanded and could name a second file, which uniq writes; spell it out"
		}
	}
	if len(p.risky) > 0 {
		return expandedArg("uniq", p.risky[0])
	}
	if len(p.operands) > 1 {
		return "`uniq` writes its second operand `" + p.operands[1].Raw + "`; drop it to print to the output"
	}
	return ""
}

func printfReadOnly(args []Word, _ *judge) string {
	if len(args) == 0 {
		return ""
	}
	first := args[0]
	switch {
	case !first.Static && !first.OptionSafe:
		return expandedArg("printf", first)
	case first.Static && strings.HasPrefix(first.Lit, "-v"):
		return "`printf -v` assigns a shell variable; print to the output instead"
	}
	return ""
}

func sedReadOnly(args []Word, _ *judge) string {
	call := readSed(args)
	switch {
	case call.inPlace:
		return "`sed -i` edits files in place"
	case len(call.script.writes) > 0:
		return "the sed script writes the file `" + call.script.writes[0] + "`"
	case call.script.exec:
		return "the sed script runs a shell command (e)"
	case !call.complete:
		return "the sed command line or script could not be read completely; write it as sed 'SCRIPT' FILE… without -f"
	}
	return ""
}

func teeReadOnly(args []Word, _ *judge) string {
	p := parseOpts(args, teeSpec)
	if len(p.operands) > 0 || len(p.risky) > 0 || len(p.unknown) > 0 {
		return "`tee` writes to its file operands"
	}
	return ""
}

var teeSpec = spec("aip", "", "", "append ignore-interrupts output-error?")

// gitGlobalReadOnly lists the git options allowed before the subcommand.
var gitGlobalReadOnly = setOf("--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs",
	"--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--no-replace-objects", "--no-advice")

func gitReadOnly(args []Word, j *judge) string {
	al := j.al
	i := 0
	for ; i < len(args); i++ {
		w := args[i]
		if !w.Static {
			return expandedArg("git", w)
		}
		if !strings.HasPrefix(w.Lit, "-") {
			break
		}
		if gitGlobalReadOnly[w.Lit] {
			continue
		}
		name, _, _ := strings.Cut(w.Lit, "=")
		switch {
		case name == "-c" || strings.HasPrefix(name, "-c") && !strings.HasPrefix(name, "--") || name == "--config-env":
			return "`git " + w.Lit + "` changes git's configuration, which can make git run programs"
		case name == "-C" || strings.HasPrefix(name, "-C") && !strings.HasPrefix(name, "--") ||
			name == "--git-dir" || name == "--work-tree" || name == "--namespace":
			return "`git " + w.Lit + "` points git at another repository, whose configuration can run programs; run git from inside the repository"
		}
		return "the git option `" + w.Lit + "` is not allowed in a read-only command"
	}
	if i == len(args) {
		return "`git` needs a read-only subcommand (status, log, diff, show, branch, rev-parse, ls-files)"
	}
	sub := args[i].Lit
	if !al.subcommand("git", sub) {
		return "`git " + sub + "` is not on the read-only allowlist"
	}
	rest := args[i+1:]
	for _, w := range rest {
		if w.Static && w.Lit == "--" {
			break
		}
		if !w.Static && !w.OptionSafe {
			return expandedArg("git "+sub, w)
		}
	}
	if r := dangerous("git "+sub, rest, "", map[string]string{
		"--output":         "writes a file",
		"--ext-diff":       "runs an external diff program",
		"--textconv":       "runs text conversion filters",
		"--show-signature": "runs the signature program (gpg.program) on every signed commit",
	}, "output", "ext-diff", "textconv", "show-signature"); r != "" {
		return r
	}
	if sub == "branch" {
		if r := gitBranchReadOnly(rest); r != "" {
			return r
		}
	}
	why, known := j.gitPrograms()
	switch {
	case !known:
		return "`git " + sub + "` runs programs its repository's configuration names (diff drivers, filters, fsmonitor), and that configuration was not read here, so it cannot be proven read-only"
	case why != "":
		return "`git " + sub + "` would run a program the repository's configuration names (" + strings.TrimSuffix(why, ".") + "); run it with Bash instead"
	}
	return ""
}

// gitBranchFlags are the listing options of git branch; gitBranchValue take a value (=v or
// the next word), gitBranchCommit take an optional commit (the next word unless it starts with
// "-") and put git branch in list mode.
var (
	gitBranchFlags = setOf("-a", "--all", "-r", "--remotes", "-l", "--list", "-v", "-vv", "--verbose",
		"-i", "--ignore-case", "--show-current", "--no-color", "--no-column", "--omit-empty", "--no-abbrev",
		"--color", "--column", "--abbrev")
	gitBranchOptVal = setOf("--color", "--column", "--abbrev")
	gitBranchValue  = setOf("--sort", "--format", "--points-at")
	gitBranchCommit = setOf("--contains", "--no-contains", "--merged", "--no-merged")
)

func gitBranchReadOnly(args []Word) string {
	listMode := false
	var positional []Word
	for i := 0; i < len(args); i++ {
		w := args[i]
		if w.Static && w.Lit == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if !w.Static || !strings.HasPrefix(w.Lit, "-") || w.Lit == "-" {
			positional = append(positional, w)
			continue
		}
		name, _, hasEq := strings.Cut(w.Lit, "=")
		switch {
		case gitBranchFlags[name] && (!hasEq || gitBranchOptVal[name]):
			if name == "-l" || name == "--list" {
				listMode = true
			}
		case gitBranchValue[name]:
			if name == "--points-at" {
				listMode = true
			}
			if !hasEq {
				i++
			}
		case gitBranchCommit[name]:
			listMode = true
			if !hasEq && i+1 < len(args) && args[i+1].Static && !strings.HasPrefix(args[i+1].Lit, "-") {
				i++
			}
		case !strings.HasPrefix(name, "--") && strings.Trim(name[1:], "arlvi") == "":
			if strings.ContainsRune(name, 'l') {
				listMode = true
			}
		default:
			return "`git branch " + w.Lit + "` changes branches; only listing branches is read-only"
		}
	}
	if len(positional) > 0 && !listMode {
		return "`git branch " + positional[0].Raw + "` creates a branch; only listing branches is read-only (use --list PATTERN)"
	}
	return ""
}
