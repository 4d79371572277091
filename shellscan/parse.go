package shellscan

import (
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"

	"github.com/sema-agent/sema"
)

// CodeParse is the *sema.Error code Parse returns for text that is not valid bash.
const CodeParse = "shell.parse"

// Script is a parsed bash command line: its simple commands in source order and the structural
// facts every analysis starts from.
type Script struct {
	// Source is the text that was parsed.
	Source string
	// Segments holds every simple command in source order, including those inside subshells,
	// { } groups, if/for/while/case bodies, function bodies, pipelines, and command or process
	// substitutions. A statement made only of redirections (`> f`) or of assignments (`A=1`)
	// is a segment with no Words. The builtins bash parses as clauses (declare, local, export,
	// readonly, typeset, nameref, let) and the `time` keyword in front of a simple command are
	// segments too, with the keyword as their first word.
	Segments []Segment
	// CompoundRedirects holds the redirections written on a compound command — `{ …; } > f`,
	// `( … ) 2> f`, `if …; fi < f`, `[[ … ]] > f` — which apply to everything inside it and which
	// no single Segment owns. Segment.Redirects never repeats them.
	CompoundRedirects []Redirect

	// HasSubstitution reports a $(…), `…`, <(…) or >(…) anywhere, also inside double quotes,
	// here-documents, redirect targets, assignments and parameter expansions.
	HasSubstitution bool
	// HasBackground reports a `&` (or a coproc) anywhere.
	HasBackground bool
	// HasPipe reports a `|` or `|&` anywhere.
	HasPipe bool
	// HasControl reports anything but a flat list of simple commands joined by && || ; | & or
	// newlines: if, for, select, while, until, case, function declarations, subshells, { }
	// groups, (( )), [[ ]], coproc, and `time` in front of anything but a simple command.
	HasControl bool

	// ambiguous says why bash could read Source differently from the parser ("" when the two
	// readings agree); see Ambiguous.
	ambiguous string

	// notes records, in source order, every segment and every construct ReadOnly has to judge,
	// so that its reason can name the first offending one.
	notes []note
}

// Segment is one simple command.
type Segment struct {
	// Words holds the command word first, then the arguments; leading assignments are not
	// words.
	Words []Word
	// Assignments holds the leading NAME=value words as written ("FOO=1").
	Assignments []string
	// Redirects holds the redirections written on this command.
	Redirects []Redirect
	// Joiner is the operator written before this segment: "&&", "||", ";", "|", "|&", "&" or
	// "newline". It is "" for the first segment of the script, of a substitution, and of each
	// part of an if, for, select, while, until, case or function; the first segment inside
	// ( … ) or { … } takes the operator written before the group.
	Joiner string
	// InSubstitution reports that the segment runs inside $(…), `…`, <(…) or >(…).
	InSubstitution bool
	// Background reports that the segment runs asynchronously: it, or a list or group around
	// it, ends with `&`, or it is a coproc.
	Background bool
	// Appended reports that the program receives further arguments at run time that are not in
	// the text: set by Unwrap on the command inside `xargs`.
	Appended bool

	// code is the first construct in the segment's own words, assignments and redirections
	// that makes bash evaluate code (see EvaluatesCode); recorded while the words are scanned.
	code Evaluation
	// ambiguous marks a segment of a script whose text bash could read differently (see
	// Script.Ambiguous): no rule may match it, since its words may not be the ones that run.
	ambiguous bool
}

// Word is one shell word.
type Word struct {
	// Raw is the source text of the word.
	Raw string
	// Lit is the word's value after quote removal. It is meaningful only when Static, or when
	// Tilde is the word's only expansion (then it holds the text with the ~ still in it).
	Lit string
	// Static reports that the word undergoes no expansion at all: no parameter, no command or
	// process substitution, no arithmetic, no unquoted glob character (* ? [), no brace
	// expansion, no unquoted ~ at its start or after an unquoted = or :, no $"…" translation.
	Static bool
	// Quoted reports quotes or backslash escapes anywhere in the word.
	Quoted bool
	// Tilde reports a word that begins with an unquoted ~ (home-directory expansion).
	Tilde bool

	// OptionSafe reports that the word can neither expand to something that starts with "-"
	// nor be split into several words: its first character is a literal other than "-" (and not
	// a glob, brace or tilde character) and it has no unquoted parameter, command or arithmetic
	// expansion, which would undergo field splitting. ./"$f" and src/* are option-safe; "$f",
	// ./$f and * are not. A static word is option-safe when it does not start with "-".
	OptionSafe bool
}

// Redirect is one redirection.
type Redirect struct {
	// Op is the operator as written, with its fd prefix: ">", ">>", "<", "2>", "&>", "&>>",
	// ">|", "<<", "<<-", "<<<", "<>", ">&", "2>&", "<&", "{fd}>", ….
	Op string
	// FD is the explicit file descriptor (or {name}) written before the operator, if any.
	FD string
	// Target is the word after the operator: a path, an fd number, "-", a here-document
	// delimiter or a here-string.
	Target Word
	// Writes reports that the redirection may write a file: >, >>, >|, &>, &>>, <>, and >& to
	// anything but a literal fd number or "-".
	Writes bool
}

// redirOps maps an operator's spelling to the parser's token.
var redirOps = func() map[string]syntax.RedirOperator {
	m := map[string]syntax.RedirOperator{}
	for op := syntax.RdrOut; op <= syntax.AppAllClob; op++ {
		m[op.String()] = op
	}
	return m
}()

// kind returns the operator without its fd prefix, as the parser's token (0 when unknown).
func (r Redirect) kind() syntax.RedirOperator {
	return redirOps[strings.TrimPrefix(r.Op, r.FD)]
}

// Name returns the command word's literal value when it is a plain unquoted literal, and ""
// otherwise (a quoted, escaped or expanded command word, or a segment with no words).
func (s Segment) Name() string {
	if len(s.Words) == 0 {
		return ""
	}
	if w := s.Words[0]; w.Static && !w.Quoted {
		return w.Lit
	}
	return ""
}

// noteKind classifies one entry of Script.notes.
type noteKind uint8

const (
	noteSegment          noteKind = iota // a simple command: index into Segments
	noteGroup                            // ( … ) or { … }: judged by its contents
	noteControl                          // any other construct that is not a simple command
	noteCmdSubst                         // $(…) or `…`
	noteProcSubst                        // <(…) or >(…)
	noteArith                            // arithmetic that evaluates variables
	noteParam                            // a parameter expansion that evaluates variables
	noteEval                             // another construct that evaluates hidden code: text is the reason
	noteCompoundRedirect                 // index into CompoundRedirects
)

type note struct {
	kind  noteKind
	index int
	text  string
}

// The parser keeps comments so that ambiguity can see where they are.
var parserPool = sync.Pool{New: func() any {
	return syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true))
}}

// Parse parses a bash command line into its simple commands. Text that is not valid bash is a
// *sema.Error with code CodeParse ("shell.parse").
func Parse(cmd string) (*Script, error) {
	p := parserPool.Get().(*syntax.Parser)
	f, err := p.Parse(strings.NewReader(cmd), "")
	parserPool.Put(p)
	if err != nil {
		return nil, &sema.Error{
			Code:    CodeParse,
			Message: "the command is not valid bash (" + err.Error() + "); fix its quoting or syntax",
			Err:     err,
		}
	}
	b := builder{src: cmd, s: &Script{Source: cmd}, cur: -1}
	b.list(f.Stmts)
	if why := ambiguity(cmd, f); why != "" {
		b.s.ambiguous = why
		for i := range b.s.Segments {
			b.s.Segments[i].ambiguous = true
		}
	}
	return b.s, nil
}

// Ambiguous reports why bash could read the script's text differently from the parser — a
// carriage return, a control character, a line continuation anywhere but between two words,
// … — and "" when the two readings agree. Every analysis fails closed on an ambiguous script:
// ReadOnly refuses it, PrefixMatch and ExactMatch match none of its segments, WriteTargets and
// ReadTargets report their lists incomplete, and AcceptsFileCommand refuses it. A caller that
// matches restrictive rules (deny, ask) must treat such a script as one it cannot analyze:
// the words it holds may not be the ones bash runs.
func (s *Script) Ambiguous() string {
	if s == nil {
		return ""
	}
	return s.ambiguous
}

// builder walks the syntax tree once, in source order, recording segments and notes.
type builder struct {
	src     string
	s       *Script
	pending string // the joiner the next segment takes
	subst   int    // depth of command/process substitution
	bg      int    // depth of asynchronous statements
	cur     int    // the segment whose words are being scanned, -1 outside one
}

func (b *builder) raw(from, to syntax.Pos) string {
	i, j := int(from.Offset()), int(to.Offset())
	i = min(max(i, 0), len(b.src))
	j = min(max(j, i), len(b.src))
	return b.src[i:j]
}

func (b *builder) note(kind noteKind, index int, text string) {
	n := note{kind: kind, index: index, text: text}
	b.s.notes = append(b.s.notes, n)
	// A construct found in a segment's own words belongs to that segment too, so that the
	// segment can answer EvaluatesCode on its own.
	if b.cur >= 0 && b.s.Segments[b.cur].code.Reason == "" {
		if ev, ok := b.s.evaluation(n); ok {
			b.s.Segments[b.cur].code = ev
		}
	}
}

// owning scans the words of segment idx with their constructs attributed to it.
func (b *builder) owning(idx int, scan func()) {
	saved := b.cur
	b.cur = idx
	scan()
	b.cur = saved
}

func (b *builder) list(stmts []*syntax.Stmt) {
	for i, st := range stmts {
		if i > 0 {
			b.pending = terminator(stmts[i-1])
		}
		b.stmt(st)
	}
}

// terminator names what separates a statement from the next one in a list.
func terminator(st *syntax.Stmt) string {
	switch {
	case st.Background || st.Coprocess || st.Disown:
		return "&"
	case st.Semicolon.IsValid():
		return ";"
	default:
		return "newline"
	}
}

func (b *builder) stmt(st *syntax.Stmt) {
	if st == nil {
		return
	}
	if st.Background || st.Coprocess || st.Disown {
		b.s.HasBackground = true
		b.bg++
		defer func() { b.bg-- }()
	}
	switch c := st.Cmd.(type) {
	case nil:
		b.simple(nil, nil, st.Redirs, nil)
	case *syntax.CallExpr:
		b.simple(nil, c.Assigns, st.Redirs, c.Args)
	case *syntax.BinaryCmd:
		b.compoundRedirects(st.Redirs)
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			b.s.HasPipe = true
		}
		b.stmt(c.X)
		b.pending = c.Op.String()
		b.stmt(c.Y)
	case *syntax.DeclClause:
		lead := []Word{literalWord(c.Variant.Value)}
		for _, a := range c.Args {
			lead = append(lead, b.declArg(a))
		}
		idx := b.emit(Segment{Words: lead, Redirects: b.redirects(st.Redirs)})
		b.owning(idx, func() {
			for _, a := range c.Args {
				b.scan(a)
			}
			b.scanRedirects(st.Redirs)
		})
	case *syntax.LetClause:
		words := []Word{literalWord("let")}
		for _, e := range c.Exprs {
			words = append(words, Word{Raw: b.raw(e.Pos(), e.End())})
		}
		idx := b.emit(Segment{Words: words, Redirects: b.redirects(st.Redirs)})
		b.owning(idx, func() {
			for _, e := range c.Exprs {
				b.scanArith(e)
			}
			b.scanRedirects(st.Redirs)
		})
	case *syntax.TimeClause:
		b.timeClause(st, c)
	default:
		b.compound(st)
	}
}

// simple emits one simple command. lead holds words synthesized in front of the written ones
// (the `time` keyword).
func (b *builder) simple(lead []Word, assigns []*syntax.Assign, redirs []*syntax.Redirect, args []*syntax.Word) {
	seg := Segment{Words: make([]Word, 0, len(lead)+len(args))}
	seg.Words = append(seg.Words, lead...)
	for _, a := range assigns {
		seg.Assignments = append(seg.Assignments, b.raw(a.Pos(), a.End()))
	}
	for _, w := range args {
		seg.Words = append(seg.Words, b.word(w))
	}
	seg.Redirects = b.redirects(redirs)
	idx := b.emit(seg)
	b.owning(idx, func() {
		for _, a := range assigns {
			b.scan(a)
		}
		for _, w := range args {
			b.scanWord(w)
		}
		b.scanRedirects(redirs)
	})
}

// scanWord scans a word unless it is made only of literal and single-quoted parts, which hold
// nothing to find.
func (b *builder) scanWord(w *syntax.Word) {
	for _, part := range w.Parts {
		switch part.(type) {
		case *syntax.Lit, *syntax.SglQuoted:
		default:
			b.scan(w)
			return
		}
	}
}

func (b *builder) emit(seg Segment) int {
	seg.Joiner = b.pending
	b.pending = ""
	seg.InSubstitution = b.subst > 0
	seg.Background = b.bg > 0
	idx := len(b.s.Segments)
	b.s.Segments = append(b.s.Segments, seg)
	b.note(noteSegment, idx, "")
	return idx
}

// timeClause keeps `time cmd args` a single segment whose first word is "time", so that the
// keyword is seen as the wrapper it is; `time` in front of a pipeline or compound command is a
// control construct.
func (b *builder) timeClause(st *syntax.Stmt, c *syntax.TimeClause) {
	lead := []Word{literalWord("time")}
	if c.PosixFormat {
		lead = append(lead, literalWord("-p"))
	}
	inner := c.Stmt
	if inner == nil {
		b.simple(lead, nil, st.Redirs, nil)
		return
	}
	call, ok := inner.Cmd.(*syntax.CallExpr)
	if (!ok && inner.Cmd != nil) || inner.Background || inner.Coprocess || inner.Disown || inner.Negated {
		b.s.HasControl = true
		b.compoundRedirects(st.Redirs)
		b.note(noteControl, 0, "time")
		b.stmt(inner)
		return
	}
	redirs := append(append([]*syntax.Redirect(nil), inner.Redirs...), st.Redirs...)
	if call == nil {
		b.simple(lead, nil, redirs, nil)
		return
	}
	b.simple(lead, call.Assigns, redirs, call.Args)
}

func (b *builder) compound(st *syntax.Stmt) {
	b.s.HasControl = true
	b.compoundRedirects(st.Redirs)
	switch c := st.Cmd.(type) {
	case *syntax.Subshell:
		b.note(noteGroup, 0, "( … )")
		b.list(c.Stmts)
	case *syntax.Block:
		b.note(noteGroup, 0, "{ … }")
		b.list(c.Stmts)
	case *syntax.IfClause:
		b.pending = ""
		b.note(noteControl, 0, "if")
		for ic := c; ic != nil; ic = ic.Else {
			b.list(ic.Cond)
			b.list(ic.Then)
		}
	case *syntax.WhileClause:
		b.pending = ""
		b.note(noteControl, 0, pick(c.Until, "until", "while"))
		b.list(c.Cond)
		b.list(c.Do)
	case *syntax.ForClause:
		b.pending = ""
		b.note(noteControl, 0, pick(c.Select, "select", "for"))
		switch l := c.Loop.(type) {
		case *syntax.WordIter:
			if l.Name != nil && promptVars[l.Name.Value] {
				b.note(noteEval, 0, "the loop assigns "+l.Name.Value+", whose value bash expands as a prompt or runs as a script, which can run commands")
			}
			for _, w := range l.Items {
				b.scan(w)
			}
		case *syntax.CStyleLoop:
			b.scanArith(l.Init)
			b.scanArith(l.Cond)
			b.scanArith(l.Post)
		}
		b.list(c.Do)
	case *syntax.CaseClause:
		b.pending = ""
		b.note(noteControl, 0, "case")
		b.scan(c.Word)
		for _, item := range c.Items {
			for _, p := range item.Patterns {
				b.scan(p)
			}
			b.list(item.Stmts)
		}
	case *syntax.FuncDecl:
		b.pending = ""
		b.note(noteControl, 0, "function")
		b.stmt(c.Body)
	case *syntax.ArithmCmd:
		b.note(noteControl, 0, "((")
		b.scanArith(c.X)
	case *syntax.TestClause:
		b.note(noteControl, 0, "[[")
		if c.X != nil {
			if why := testEvaluates(c.X); why != "" {
				b.note(noteEval, 0, "`[[ … ]]` "+why)
			}
			b.scan(c.X)
		}
	case *syntax.CoprocClause:
		b.note(noteControl, 0, "coproc")
		b.s.HasBackground = true
		b.bg++
		if c.Name != nil {
			b.scan(c.Name)
		}
		b.stmt(c.Stmt)
		b.bg--
	default:
		// A construct of another dialect or a future parser version: refuse it by name and
		// still find every statement inside it.
		b.note(noteControl, 0, "unsupported construct")
		syntax.Walk(st.Cmd, func(n syntax.Node) bool {
			if inner, ok := n.(*syntax.Stmt); ok {
				b.stmt(inner)
				return false
			}
			return b.visit(n)
		})
	}
	b.scanRedirects(st.Redirs)
}

func (b *builder) compoundRedirects(redirs []*syntax.Redirect) {
	for _, r := range redirs {
		b.note(noteCompoundRedirect, len(b.s.CompoundRedirects), "")
		b.s.CompoundRedirects = append(b.s.CompoundRedirects, b.redirect(r))
	}
}

func (b *builder) redirects(redirs []*syntax.Redirect) []Redirect {
	if len(redirs) == 0 {
		return nil
	}
	out := make([]Redirect, 0, len(redirs))
	for _, r := range redirs {
		out = append(out, b.redirect(r))
	}
	return out
}

func (b *builder) redirect(r *syntax.Redirect) Redirect {
	rd := Redirect{Op: r.Op.String()}
	if r.N != nil {
		rd.FD = r.N.Value
		rd.Op = r.N.Value + rd.Op
	}
	if r.Word != nil {
		rd.Target = b.word(r.Word)
	}
	rd.Writes = redirectWrites(r.Op, rd.Target)
	return rd
}

func redirectWrites(op syntax.RedirOperator, target Word) bool {
	switch op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll,
		syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob, syntax.RdrInOut:
		return true
	case syntax.DplOut:
		return !isFDTarget(target)
	default:
		return false
	}
}

// isFDTarget reports a dup target that names a file descriptor (or closes one) rather than a
// file.
func isFDTarget(w Word) bool {
	if !w.Static || w.Quoted {
		return false
	}
	return w.Lit == "-" || isDigits(w.Lit)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func (b *builder) scanRedirects(redirs []*syntax.Redirect) {
	for _, r := range redirs {
		if r.Word != nil {
			b.scanWord(r.Word)
		}
		if r.Hdoc != nil {
			b.scanWord(r.Hdoc)
		}
	}
}

// declArg renders one argument of declare/export/local/readonly/typeset as a word: a bare
// name or option is a literal, anything with a value is kept as written and not static.
func (b *builder) declArg(a *syntax.Assign) Word {
	switch {
	case a.Naked && a.Name == nil && a.Value != nil:
		return b.word(a.Value)
	case a.Naked && a.Name != nil && a.Index == nil:
		return literalWord(a.Name.Value)
	default:
		return Word{Raw: b.raw(a.Pos(), a.End())}
	}
}

func literalWord(s string) Word {
	return Word{Raw: s, Lit: s, Static: true, OptionSafe: !strings.HasPrefix(s, "-")}
}

// scan walks a word-level node for substitutions and for expansions that evaluate variable
// contents.
func (b *builder) scan(n syntax.Node) {
	syntax.Walk(n, b.visit)
}

func (b *builder) scanArith(e syntax.ArithmExpr) {
	if e == nil {
		return
	}
	if !literalArith(e) {
		b.note(noteArith, 0, b.raw(e.Pos(), e.End()))
	}
	b.scan(e)
}

func (b *builder) visit(n syntax.Node) bool {
	switch x := n.(type) {
	case *syntax.CmdSubst:
		b.s.HasSubstitution = true
		b.note(noteCmdSubst, 0, b.raw(x.Pos(), x.End()))
		b.nested(x.Stmts)
		return false
	case *syntax.ProcSubst:
		b.s.HasSubstitution = true
		b.note(noteProcSubst, 0, b.raw(x.Pos(), x.End()))
		b.nested(x.Stmts)
		return false
	case *syntax.ArithmExp:
		if !literalArith(x.X) {
			b.note(noteArith, 0, b.raw(x.Pos(), x.End()))
		}
	case *syntax.ParamExp:
		if riskyParam(x) {
			b.note(noteParam, 0, b.raw(x.Pos(), x.End()))
		}
	case *syntax.Assign:
		// a[i]=v evaluates the subscript as arithmetic (for an indexed array).
		if x.Index != nil && !literalArith(x.Index) {
			b.note(noteArith, 0, b.raw(x.Index.Pos(), x.Index.End()))
		}
	case *syntax.ArrayElem:
		if x.Index != nil && !literalArith(x.Index) {
			b.note(noteArith, 0, b.raw(x.Index.Pos(), x.Index.End()))
		}
	case *syntax.Stmt:
		b.stmt(x)
		return false
	}
	return true
}

func (b *builder) nested(stmts []*syntax.Stmt) {
	saved, savedCur := b.pending, b.cur
	b.pending, b.cur = "", -1
	b.subst++
	b.list(stmts)
	b.subst--
	b.pending, b.cur = saved, savedCur
}

// literalArith reports arithmetic made only of number literals and operators. Anything else
// names a variable, and bash evaluates a variable's value as arithmetic again — where an array
// subscript such as a[$(cmd)] runs a command.
func literalArith(e syntax.ArithmExpr) bool {
	if e == nil {
		return true
	}
	ok := true
	syntax.Walk(e, func(n syntax.Node) bool {
		if w, isWord := n.(*syntax.Word); isWord {
			if lit := w.Lit(); !isNumber(lit) {
				ok = false
			}
			return false
		}
		return ok
	})
	return ok
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == 'x' || c == 'X' || c == '#') {
			return false
		}
	}
	return s[0] >= '0' && s[0] <= '9'
}

// riskyParam reports a parameter expansion that evaluates a variable's contents as code:
// indirection (${!x}), array subscripts and slices that are not number literals (arithmetic),
// and the @ operators (${x@P} performs prompt expansion, which runs substitutions).
func riskyParam(p *syntax.ParamExp) bool {
	switch {
	case p.Excl, p.Names != 0:
		return true
	case p.Index != nil && !literalIndex(p.Index):
		return true
	case p.Slice != nil && (!literalArith(p.Slice.Offset) || !literalArith(p.Slice.Length)):
		return true
	case p.Exp != nil && p.Exp.Op == syntax.OtherParamOps:
		return true
	}
	return false
}

func literalIndex(e syntax.ArithmExpr) bool {
	if w, ok := e.(*syntax.Word); ok {
		if l := w.Lit(); l == "@" || l == "*" {
			return true
		}
	}
	return literalArith(e)
}

func pick(cond bool, yes, no string) string {
	if cond {
		return yes
	}
	return no
}
