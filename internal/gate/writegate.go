package gate

import (
	"fmt"
	"slices"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/internal/rulematch"
	"github.com/sema-agent/sema/permission"
)

// ModeWriteGate is the mode's write gate as one live policy: the caller passes the mode
// it read live for this call, and the gate the mode table names for it answers. It
// judges covered writes only (Write, Edit, MultiEdit, NotebookEdit, by name); for any
// other call it returns false.
//
//   - none (bypassPermissions): allow.
//   - every target inside an exempt directory (the scratchpad, an admitted advertised
//     directory; see ScreenExemptDirs): allow, under every other gate too.
//   - accept_root (acceptEdits): allow when every target is inside the write roots,
//     else ask.
//   - ask (default, auto, dontAsk): ask.
//   - plan: ask with the plan sentence, Reason mode, person-only.
//
// A call with no resolved target is never inside anything.
func ModeWriteGate(mode permission.Mode, c *permission.Call) (permission.Decision, bool) {
	if !rulematch.IsEditTool(c.Tool) {
		return permission.Decision{}, false
	}
	gate := ModePolicyOf(mode).WriteGate
	if gate == WriteGateNone {
		return permission.Decision{Behavior: permission.Allow, DecidedBy: permission.LayerMode, Reason: "bypassPermissions mode installs no write gate."}, true
	}
	if allPaths(c, func(p string) bool { return inExempt(&c.Scope, p) }) {
		return permission.Decision{Behavior: permission.Allow, DecidedBy: permission.LayerMode, Reason: "The write is inside an exempt directory (the scratchpad or an advertised writable directory)."}, true
	}
	switch gate {
	case WriteGateAcceptRoot:
		if allPaths(c, func(p string) bool { return inAny(c.WriteRoots, p) }) {
			return permission.Decision{Behavior: permission.Allow, DecidedBy: permission.LayerMode, Reason: "acceptEdits mode allows writes inside the write roots."}, true
		}
		return permission.Decision{Behavior: permission.Ask, DecidedBy: permission.LayerMode,
			Reason: fmt.Sprintf("%s is outside the write roots that acceptEdits mode allows; approve it to write there.", describe(c))}, true
	case WriteGatePlan:
		return permission.Decision{Behavior: permission.Ask, DecidedBy: permission.LayerMode, PersonOnly: true,
			Reason: fmt.Sprintf("Plan mode is on: %s would change files before the plan is approved; only a person may allow it.", describe(c))}, true
	}
	return permission.Decision{Behavior: permission.Ask, DecidedBy: permission.LayerMode, Reason: fmt.Sprintf("Allow %s?", describe(c))}, true
}

// allPaths reports whether the call has targets and every one resolved and satisfies in.
func allPaths(c *permission.Call, in func(string) bool) bool {
	if len(c.Paths) == 0 {
		return false
	}
	for _, t := range c.Paths {
		if t.Canonical == "" || !in(t.Canonical) {
			return false
		}
	}
	return true
}

// inAny reports whether the canonical path p lies in one of dirs, by components.
func inAny(dirs []string, p string) bool {
	for _, d := range dirs {
		if fence.Contains(d, p) {
			return true
		}
	}
	return false
}

// inExempt reports whether p lies in an exempt directory that swallows no root.
func inExempt(s *permission.Scope, p string) bool {
	for _, e := range s.ExemptDirs {
		if fence.Contains(e, p) && swallowedRoot(e, s) == "" {
			return true
		}
	}
	return false
}

// swallowedRoot returns the fence root the exempt directory e equals or contains, or "".
// The fence roots are the task root and every write or read root that is not itself an
// exempt directory (an admitted advertised directory is a write root and an exempt
// directory at once; it does not swallow itself).
func swallowedRoot(e string, s *permission.Scope) string {
	if r := scopeRoot(s); fence.Contains(e, r) {
		return r
	}
	for _, list := range [2][]string{s.WriteRoots, s.ReadRoots} {
		for _, r := range list {
			if slices.Contains(s.ExemptDirs, r) {
				continue
			}
			if _, ok := fence.Swallows(e, []string{r}); ok {
				return r
			}
		}
	}
	return ""
}

// ScreenExemptDirs applies the swallowed-root rule to the scope's exempt directories
// once, at wiring time: an exempt directory that equals or contains a fence root would
// turn the whole root into the exempt domain, so it is dropped and announced. The gate
// applies the same rule on every call, so a scope the caller did not screen is still
// judged correctly; screening only makes the drop visible.
func ScreenExemptDirs(s permission.Scope) (permission.Scope, []sema.Notice) {
	var kept []string
	var notices []sema.Notice
	for _, e := range s.ExemptDirs {
		if r := swallowedRoot(e, &s); r != "" {
			notices = append(notices, sema.Notice{
				Code:    permission.CodeExemptDirSwallowsRoot,
				Message: fmt.Sprintf("the exempt directory %s equals or contains the root %s, so writes there are asked about as anywhere else", e, r),
				Detail:  map[string]any{"dir": e, "root": r},
			})
			continue
		}
		kept = append(kept, e)
	}
	s.ExemptDirs = kept
	return s, notices
}
