package permission

import (
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/fence"
)

// Mode is a permission mode word. The set is closed: ParseMode refuses every other word.
type Mode string

// The permission modes.
const (
	// ModeDefault asks on every covered write and every shell command not proven
	// read-only.
	ModeDefault Mode = "default"
	// ModeAcceptEdits writes inside the write roots without asking and answers the
	// ordinary question of the plain file commands itself.
	ModeAcceptEdits Mode = "acceptEdits"
	// ModePlan keeps every tool mounted and asks, with the plan sentence, for every write.
	ModePlan Mode = "plan"
	// ModeAuto asks as default does; the auto classifier answers the questions.
	ModeAuto Mode = "auto"
	// ModeDontAsk asks as default does; every question is answered "no".
	ModeDontAsk Mode = "dontAsk"
	// ModeBypassPermissions installs no write gate and asks nothing it would release;
	// deny rules, hooks, ask rules and the delete guard still stand.
	ModeBypassPermissions Mode = "bypassPermissions"
)

// CodeModeInvalid refuses a word outside the closed set of modes.
const CodeModeInvalid = "config.permission_mode_invalid"

var allModes = []Mode{ModeDefault, ModeAcceptEdits, ModePlan, ModeAuto, ModeDontAsk, ModeBypassPermissions}

// Modes returns every mode, in the order the command line lists them.
func Modes() []Mode { return append([]Mode(nil), allModes...) }

// Valid reports whether m is one of the modes.
func (m Mode) Valid() bool {
	switch m {
	case ModeDefault, ModeAcceptEdits, ModePlan, ModeAuto, ModeDontAsk, ModeBypassPermissions:
		return true
	}
	return false
}

func (m Mode) String() string { return string(m) }

// ParseMode returns the mode the word s names. The comparison is exact (case-sensitive)
// and nothing is defaulted: the empty word and every word outside the set are refused
// with config.permission_mode_invalid, because a mode a caller believes it declared must
// not silently run as another. A caller for whom an absent word means "not declared"
// checks for "" before calling.
func ParseMode(s string) (Mode, error) {
	if m := Mode(s); m.Valid() {
		return m, nil
	}
	words := make([]string, len(allModes))
	for i, m := range allModes {
		words[i] = string(m)
	}
	return "", sema.Errorf(CodeModeInvalid, "unknown permission mode %q; use one of %s", s, strings.Join(words, ", ")).
		With("mode", s)
}

// WriteGate is the mode's own gate for covered writes.
type WriteGate string

const (
	// WriteGateNone installs no mode write gate (bypassPermissions).
	WriteGateNone WriteGate = "none"
	// WriteGateAsk asks on every covered write outside the exempt directories.
	WriteGateAsk WriteGate = "ask"
	// WriteGateAcceptRoot allows covered writes inside the write roots and asks outside.
	WriteGateAcceptRoot WriteGate = "accept_root"
	// WriteGatePlan makes every write the plan question names the mode's own question
	// (the plan sentence, Reason mode): only a person may answer it.
	WriteGatePlan WriteGate = "plan"
)

// Unstated is the mode's answer for a call to a tool that states no permission of its own
// (a passthrough tool) when no layer of the fold allowed it.
type Unstated string

const (
	// UnstatedAsk puts the ordinary question.
	UnstatedAsk Unstated = "ask"
	// UnstatedNone lets the call run.
	UnstatedNone Unstated = "none"
)

// ModePolicy is what a mode installs on a leg.
type ModePolicy struct {
	// EnablePlanMode reports that the plan pair is on.
	EnablePlanMode bool
	// WriteGate is the mode's write gate.
	WriteGate WriteGate
	// FileCommands are the shell commands whose ordinary question the mode answers itself;
	// empty for every mode but acceptEdits.
	FileCommands []string
	// WriteFace is the write face the mode states where no seat declared one: FaceOpen for
	// bypassPermissions, "" (nothing stated; the default fence stands) for the others.
	WriteFace fence.Face
	// Unstated is the answer for an unstated call nobody allowed.
	Unstated Unstated
}

// AcceptEditsFileCommands is the closed set of shell commands acceptEdits answers itself.
var AcceptEditsFileCommands = []string{"mkdir", "touch", "rm", "rmdir", "mv", "cp", "sed"}

// ModePolicyOf returns the seats mode installs. It is total over the modes; a word outside
// the set gets default's seats, the most common and never the most permissive answer
// (ParseMode is the door that refuses such a word).
func ModePolicyOf(mode Mode) ModePolicy {
	switch mode {
	case ModeAcceptEdits:
		return ModePolicy{WriteGate: WriteGateAcceptRoot, FileCommands: append([]string(nil), AcceptEditsFileCommands...), Unstated: UnstatedAsk}
	case ModePlan:
		return ModePolicy{EnablePlanMode: true, WriteGate: WriteGatePlan, Unstated: UnstatedAsk}
	case ModeBypassPermissions:
		return ModePolicy{WriteGate: WriteGateNone, WriteFace: fence.FaceOpen, Unstated: UnstatedNone}
	default: // default, auto, dontAsk
		return ModePolicy{WriteGate: WriteGateAsk, Unstated: UnstatedAsk}
	}
}

// rank orders the modes by permissiveness for the ceiling clamp. acceptEdits and auto
// share a rank and are incomparable (see clamp).
func rank(m Mode) int {
	switch m {
	case ModePlan:
		return 0
	case ModeDontAsk:
		return 1
	case ModeDefault:
		return 2
	case ModeAcceptEdits, ModeAuto:
		return 3
	case ModeBypassPermissions:
		return 4
	}
	return 2
}

// Clamp returns the mode a leg requesting requested runs as under the ceiling ceiling,
// and whether the ceiling changed it. Order: plan < dontAsk < default < acceptEdits, auto
// < bypassPermissions. acceptEdits and auto are incomparable: a child asking for the
// other one gets the parent's word. Under a plan ceiling every child is plan. An empty
// requested word inherits the ceiling (not a fold); an empty ceiling bounds nothing.
func Clamp(requested, ceiling Mode) (Mode, bool) {
	switch {
	case ceiling == "" && requested == "":
		return ModeDefault, false
	case ceiling == "":
		return requested, false
	case requested == "":
		return ceiling, false
	case requested == ceiling:
		return requested, false
	case ceiling == ModePlan:
		return ModePlan, true
	}
	rr, rc := rank(requested), rank(ceiling)
	if rr < rc {
		return requested, false
	}
	// Above the ceiling, or the incomparable pair at the same rank.
	return ceiling, true
}
