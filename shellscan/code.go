package shellscan

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Evaluation names one construct that makes bash evaluate text as code. It is the one
// judgement of "this evaluates code" in sema: ReadOnly, AcceptsFileCommand, the permission
// gate's allow-rule matching and its reading of what a command runs all consult it.
type Evaluation struct {
	// Reason describes the construct in words the caller can act on.
	Reason string
	// Hidden reports code that is a string bash evaluates at run time — arithmetic over
	// variables or quoted text (an array subscript there runs command substitutions), an
	// indirect or prompt expansion, a builtin that evaluates a subscript or a callback — so
	// the commands it may run are not among the script's Segments. A command or process
	// substitution is not hidden: its commands are segments of their own.
	Hidden bool
}

// promptVars are the variables bash expands as a prompt (PS0–PS4, with command substitution)
// or runs (PROMPT_COMMAND, and BASH_ENV and ENV in a shell it starts): assigning one is
// handing bash code.
var promptVars = setOf("PS0", "PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND", "BASH_ENV", "ENV")

// EvaluatesCode reports the first construct of the segment that makes bash evaluate code:
// a command or process substitution in its words, assignments or redirections; arithmetic
// over anything but number literals ($((x)), $[x], an array subscript a[i]); a parameter
// expansion that is indirect (${!x}), subscripted or sliced by anything but a number, or
// applies an @ operator (${x@P} expands a prompt); and a builtin that evaluates its operands
// (see builtinEvaluates), also behind a wrapper such as `command` or `builtin`.
func (s Segment) EvaluatesCode() (Evaluation, bool) {
	if s.code.Reason != "" {
		return s.code, true
	}
	if why := builtinEvaluates(s); why != "" {
		return Evaluation{Reason: why, Hidden: true}, true
	}
	return Evaluation{}, false
}

// EvaluatesCode reports the first construct anywhere in the script that makes bash evaluate
// code: what Segment.EvaluatesCode finds in any segment, and the constructs no segment owns —
// `(( … ))` and `for (( … ))` over anything but number literals, a `[[ … ]]` whose arithmetic
// comparison or -v/-R test can evaluate a subscript, expansions in for lists and case words,
// and a for loop that assigns a prompt variable.
func (s *Script) EvaluatesCode() (Evaluation, bool) {
	if s == nil {
		return Evaluation{}, false
	}
	for _, n := range s.notes {
		if ev, ok := s.evaluation(n); ok {
			return ev, true
		}
	}
	return Evaluation{}, false
}

// HidesCode is EvaluatesCode limited to hidden code (Evaluation.Hidden): the first construct
// that can run commands the script's Segments do not show.
func (s *Script) HidesCode() (Evaluation, bool) {
	if s == nil {
		return Evaluation{}, false
	}
	for _, n := range s.notes {
		if ev, ok := s.evaluation(n); ok && ev.Hidden {
			return ev, true
		}
	}
	return Evaluation{}, false
}

// evaluation judges one note. A segment note is judged by its command alone: the constructs
// in its words are notes of their own.
func (s *Script) evaluation(n note) (Evaluation, bool) {
	switch n.kind {
	case noteSegment:
		if why := builtinEvaluates(s.Segments[n.index]); why != "" {
			return Evaluation{Reason: why, Hidden: true}, true
		}
	case noteCmdSubst:
		return Evaluation{Reason: "command substitution `" + n.text + "` runs another command; run that command on its own first"}, true
	case noteProcSubst:
		return Evaluation{Reason: "process substitution `" + n.text + "` runs another command; run that command on its own first"}, true
	case noteArith:
		return Evaluation{Reason: "arithmetic `" + n.text + "` evaluates variable contents, which can run commands; use literal numbers", Hidden: true}, true
	case noteParam:
		return Evaluation{Reason: "parameter expansion `" + n.text + "` evaluates variable contents, which can run commands; use a plain $name", Hidden: true}, true
	case noteEval:
		return Evaluation{Reason: n.text, Hidden: true}, true
	}
	return Evaluation{}, false
}

// builtinEvaluates names the way a segment's builtin evaluates an operand as code, looking
// through wrappers (`command printf -v …`, `builtin read …`); "" when it does not. Bash
// evaluates an array subscript in a variable name as arithmetic, where $(…) runs, wherever a
// builtin assigns or tests a name:
//   - let: every argument is arithmetic;
//   - declare, typeset, local, export, readonly: any argument other than a plain name or
//     option (an assignment can be arithmetic under -i, or name a subscript);
//   - printf -v NAME, read NAME, unset NAME, getopts … NAME, wait -p NAME, mapfile/readarray
//     (also -C, a callback it runs): a name that is expanded, has a subscript or is a
//     prompt variable;
//   - test and [: -v and -R (they evaluate the subscript of the name tested), an arithmetic
//     comparison with an operand that is not an integer literal, and an expanded word that
//     could turn into one of these operators.
func builtinEvaluates(s Segment) string {
	if why := builtinReason(s); why != "" {
		return why
	}
	if inner, wrappers, _ := s.Unwrap(); len(wrappers) > 0 {
		return builtinReason(inner)
	}
	return ""
}

func builtinReason(s Segment) string {
	if len(s.Words) == 0 {
		return ""
	}
	name := wrapperName(s.Words[0])
	args := s.Words[1:]
	switch name {
	case "let":
		return "`let` evaluates its arguments as arithmetic, where an array subscript can run commands"
	case "declare", "typeset", "local", "export", "readonly", "nameref":
		for _, w := range args {
			if !w.Static || strings.ContainsAny(w.Lit, "[=") || promptVars[w.Lit] {
				return "`" + name + " " + w.Raw + "` assigns a value bash can evaluate as arithmetic or a subscript, which can run commands"
			}
		}
	case "printf":
		if len(args) == 0 {
			return ""
		}
		w := args[0]
		if !w.Static && !w.OptionSafe {
			return "`printf " + w.Raw + "` could become -v, which assigns to a name whose subscript bash evaluates"
		}
		if w.Static && strings.HasPrefix(w.Lit, "-") && w.Lit != "--" && strings.Contains(w.Lit, "v") {
			return "`printf -v` assigns to a name whose subscript bash evaluates, which can run commands"
		}
	case "read", "unset", "getopts", "wait", "mapfile", "readarray":
		for _, w := range args {
			switch {
			case !w.Static:
				return "`" + name + " " + w.Raw + "` names a variable the text does not show; bash evaluates its subscript, which can run commands"
			case strings.Contains(w.Lit, "["):
				return "`" + name + " " + w.Raw + "` names an array element; bash evaluates its subscript, which can run commands"
			case promptVars[w.Lit]:
				return "`" + name + " " + w.Raw + "` assigns a variable bash expands as a prompt or runs"
			case (name == "mapfile" || name == "readarray") && strings.HasPrefix(w.Lit, "-") && strings.Contains(w.Lit, "C"):
				return "`" + name + " -C` runs a callback command"
			}
		}
	case "test", "[":
		return testArgsEvaluate(name, args)
	}
	return ""
}

var arithTestOps = setOf("-eq", "-ne", "-lt", "-le", "-gt", "-ge")

func testArgsEvaluate(name string, args []Word) string {
	for i, w := range args {
		if !w.Static {
			if !w.OptionSafe {
				return "`" + name + " … " + w.Raw + "` is expanded and could become -v, which evaluates a subscript"
			}
			continue
		}
		switch {
		case w.Lit == "-v" || w.Lit == "-R":
			return "`" + name + " " + w.Lit + "` evaluates the subscript of the name it tests, which can run commands"
		case arithTestOps[w.Lit]:
			if i == 0 || i+1 >= len(args) || !isInteger(args[i-1]) || !isInteger(args[i+1]) {
				return "`" + name + " … " + w.Lit + " …` compares operands that are not integer literals, which a shell may evaluate as arithmetic"
			}
		}
	}
	return ""
}

// isInteger reports a static word that is a decimal integer, optionally signed.
func isInteger(w Word) bool {
	if !w.Static {
		return false
	}
	s := strings.TrimLeft(w.Lit, " \t")
	s = strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	return isDigits(s)
}

// testEvaluates names what in a [[ … ]] expression bash evaluates as arithmetic: an
// arithmetic comparison with an operand that is not a number literal (a quoted string or a
// variable is evaluated, subscripts included), and -v or -R, which evaluate the subscript of
// the name tested. "" when there is none.
func testEvaluates(x syntax.TestExpr) string {
	why := ""
	syntax.Walk(x, func(n syntax.Node) bool {
		if why != "" {
			return false
		}
		switch t := n.(type) {
		case *syntax.BinaryTest:
			switch t.Op {
			case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
				if !numberOperand(t.X) || !numberOperand(t.Y) {
					why = "compares with " + t.Op.String() + " operands that are not number literals; bash evaluates them as arithmetic, which can run commands"
				}
			}
		case *syntax.UnaryTest:
			if t.Op == syntax.TsVarSet || t.Op == syntax.TsRefVar {
				why = "tests " + t.Op.String() + ", which evaluates the subscript of the name tested and can run commands"
			}
		}
		return why == ""
	})
	return why
}

func numberOperand(x syntax.TestExpr) bool {
	w, ok := x.(*syntax.Word)
	if !ok {
		return false
	}
	lit := w.Lit()
	return isDigits(strings.TrimPrefix(lit, "-"))
}
