package permission

import (
	"strings"

	"github.com/sema-agent/sema"
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

// String returns the mode's word, as ParseMode reads it.
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
