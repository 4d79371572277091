package gate

import (
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/permission"
)

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
func ModePolicyOf(mode permission.Mode) ModePolicy {
	switch mode {
	case permission.ModeAcceptEdits:
		return ModePolicy{WriteGate: WriteGateAcceptRoot, FileCommands: append([]string(nil), AcceptEditsFileCommands...), Unstated: UnstatedAsk}
	case permission.ModePlan:
		return ModePolicy{EnablePlanMode: true, WriteGate: WriteGatePlan, Unstated: UnstatedAsk}
	case permission.ModeBypassPermissions:
		return ModePolicy{WriteGate: WriteGateNone, WriteFace: fence.FaceOpen, Unstated: UnstatedNone}
	default: // default, auto, dontAsk
		return ModePolicy{WriteGate: WriteGateAsk, Unstated: UnstatedAsk}
	}
}

// rank orders the modes by permissiveness for the ceiling clamp. acceptEdits and auto
// share a rank and are incomparable (see clamp).
func rank(m permission.Mode) int {
	switch m {
	case permission.ModePlan:
		return 0
	case permission.ModeDontAsk:
		return 1
	case permission.ModeDefault:
		return 2
	case permission.ModeAcceptEdits, permission.ModeAuto:
		return 3
	case permission.ModeBypassPermissions:
		return 4
	}
	return 2
}

// Clamp returns the mode a leg requesting requested runs as under the ceiling ceiling,
// and whether the ceiling changed it. Order: plan < dontAsk < default < acceptEdits, auto
// < bypassPermissions. acceptEdits and auto are incomparable: a child asking for the
// other one gets the parent's word. Under a plan ceiling every child is plan. An empty
// requested word inherits the ceiling (not a fold); an empty ceiling bounds nothing.
func Clamp(requested, ceiling permission.Mode) (permission.Mode, bool) {
	switch {
	case ceiling == "" && requested == "":
		return permission.ModeDefault, false
	case ceiling == "":
		return requested, false
	case requested == "":
		return ceiling, false
	case requested == ceiling:
		return requested, false
	case ceiling == permission.ModePlan:
		return permission.ModePlan, true
	}
	rr, rc := rank(requested), rank(ceiling)
	if rr < rc {
		return requested, false
	}
	// Above the ceiling, or the incomparable pair at the same rank.
	return ceiling, true
}
