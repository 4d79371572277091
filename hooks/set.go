package hooks

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
)

// Codes of the hooks package.
const (
	// CodeConfigInvalid refuses a hooks configuration that is not Claude Code's shape:
	// an unknown event, a matcher that is not a regular expression, a hook type other
	// than command, a command that is empty, a timeout that is not a positive number.
	CodeConfigInvalid = "config.hooks_invalid"
	// CodeFailed is the notice of a hook that failed without blocking: a non-zero exit
	// other than 2, a timeout, a crash, output that is not the protocol's.
	CodeFailed = "hooks.failed"
	// CodeMessage is the notice of a hook's systemMessage, or of its stdout shown to the
	// person.
	CodeMessage = "hooks.message"
)

// Set is a compiled list of hooks, ready to match and run. It is safe for concurrent
// use.
type Set struct {
	byEvent map[Event][]entry
}

// entry is one hook with its compiled matcher.
type entry struct {
	hook Hook
	m    matcher
}

// matcher is a compiled Matcher. As Claude Code reads one: empty or "*" matches every
// target; a matcher made only of letters, digits, _ and | is a list of exact names;
// anything else is a regular expression that must match somewhere in the target
// ("Edit|Write", "mcp__github__.*", "Notebook").
type matcher struct {
	any   bool
	names []string
	re    *regexp.Regexp
}

func compileMatcher(s string) (matcher, error) {
	if s == "" || s == "*" {
		return matcher{any: true}, nil
	}
	if plainMatcher(s) {
		return matcher{names: strings.Split(s, "|")}, nil
	}
	re, err := regexp.Compile(s)
	if err != nil {
		return matcher{}, err
	}
	return matcher{re: re}, nil
}

func plainMatcher(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '|') {
			return false
		}
	}
	return true
}

func (m *matcher) match(target string) bool {
	switch {
	case m.any:
		return true
	case m.re != nil:
		return m.re.MatchString(target)
	}
	for _, n := range m.names {
		if n == target {
			return true
		}
	}
	return false
}

// targetless reports the events whose hooks run whatever their matcher says: Claude
// Code gives these events no target to match.
func targetless(e Event) bool {
	return e == UserPromptSubmit || e == Stop || e == SubagentStop
}

// NewSet compiles hooks: every Event known, every Matcher a matcher, every hook a
// Command or a Func (exactly one), no timeout below zero. Otherwise config.hooks_invalid
// naming the hook's Source.
func NewSet(hooks []Hook) (*Set, error) {
	s := &Set{byEvent: make(map[Event][]entry)}
	for i, h := range hooks {
		bad := func(format string, args ...any) error {
			src := h.Source
			if src == "" {
				src = "Deps.Hooks.Events"
			}
			return sema.Errorf(CodeConfigInvalid, "%s: hook %d (%s): %s", src, i, h.Event, fmt.Sprintf(format, args...)).With("path", src)
		}
		if !h.Event.known() {
			return nil, bad("%q is not an event; the events are %s", h.Event, eventList())
		}
		if (h.Command == "") == (h.Func == nil) {
			return nil, bad("a hook is a Command or a Func, exactly one")
		}
		if h.Func == nil && strings.TrimSpace(h.Command) == "" {
			return nil, bad("the command is blank")
		}
		if h.Timeout < 0 {
			return nil, bad("the timeout %v is negative", h.Timeout)
		}
		m, err := compileMatcher(h.Matcher)
		if err != nil {
			return nil, bad("the matcher %q is not a regular expression: %v", h.Matcher, err)
		}
		s.byEvent[h.Event] = append(s.byEvent[h.Event], entry{hook: h, m: m})
	}
	return s, nil
}

// Has reports whether any hook is registered for event (whatever its matcher): the
// caller's fast path that builds no Input for an event nobody listens to.
func (s *Set) Has(event Event) bool {
	return s != nil && len(s.byEvent[event]) > 0
}

// Matching returns the hooks of event whose matcher matches target, in declaration
// order, identical commands once. It allocates nothing when none matches.
func (s *Set) Matching(event Event, target string) []Hook {
	if s == nil {
		return nil
	}
	var out []Hook
	all := targetless(event)
next:
	for i := range s.byEvent[event] {
		e := &s.byEvent[event][i]
		if !all && !e.m.match(target) {
			continue
		}
		if e.hook.Command != "" {
			for _, h := range out {
				if h.Command == e.hook.Command {
					continue next
				}
			}
		}
		out = append(out, e.hook)
	}
	return out
}

// Runner is where command hooks run.
type Runner struct {
	// Exec starts the commands. Nil: command hooks fail (a Func still runs).
	Exec env.Executor
	// Wrap confines a command (the leg's sandbox policy); nil runs it as it is.
	Wrap func(env.ExecRequest) (env.ExecRequest, error)
	// ProjectDir is the task root: the commands' working directory, and
	// $CLAUDE_PROJECT_DIR and $SEMA_PROJECT_DIR in their environment.
	ProjectDir string
	// Env holds NAME=value entries added to the commands' environment (the settings'
	// env); they are set on purpose, so the environment rule does not judge them.
	Env []string
	// EnvPassthrough names variables of sema's environment the commands inherit even
	// though the rule holds them back (see env.ExecRequest.Passthrough). Nil: none.
	EnvPassthrough []string
	// OutputCap bounds what is kept of each command's stdout and of its stderr. Zero:
	// DefaultOutputCap.
	OutputCap int
}

// DefaultOutputCap is what is kept of a hook's stdout, and of its stderr, by default.
const DefaultOutputCap = 64 << 10

// Result is the merged answer of the hooks of one event.
type Result struct {
	// Ran is how many hooks ran.
	Ran int
	// Block reports a hook that blocked: exit code 2, or decision "block".
	Block bool
	// BlockReason is the blocking hooks' stderr (exit 2) or reason, joined by newlines.
	BlockReason string
	// Stop reports a hook that answered continue: false.
	Stop bool
	// StopReason is the stopping hooks' stopReason.
	StopReason string
	// Permission (PreToolUse) is the strictest permission answer: deny over ask over
	// allow, "" when none gave one. The old decision words count: "approve" is allow,
	// "block" is deny, and so does exit code 2 (deny).
	Permission string
	// PermissionReason is the reasons of the hooks whose answer decided Permission.
	PermissionReason string
	// UpdatedInput (PreToolUse) is the hooks' rewrite of the input, a JSON object.
	UpdatedInput json.RawMessage
	// Conflict reports hooks that rewrote the input differently.
	Conflict bool
	// Context is what the hooks add for the model: additionalContext, and the plain
	// stdout of exit-0 UserPromptSubmit and SessionStart hooks, in declaration order.
	Context []string
	// Messages are what is shown to the person: systemMessage, and the plain stdout of
	// other events' hooks unless suppressOutput.
	Messages []string
	// Failures are the hooks that failed: timed out, crashed (killed by a signal,
	// could not start), exited with a code other than 0 and 2, or printed stdout that
	// begins with "{" and is not the protocol's JSON. For PreToolUse the caller fails
	// closed on any of them; for the other events they are notices.
	Failures []Failure
}

// Failure is one hook's failure.
type Failure struct {
	// Hook is the hook that failed.
	Hook Hook
	// Why is one sentence: "timed out after 60s", "exited with status 1: <stderr>", ….
	Why string
	// TimedOut reports a hook killed at its timeout.
	TimedOut bool
}
