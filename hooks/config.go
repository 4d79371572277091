package hooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/sema-agent/sema"
)

// maxTimeout bounds a configured timeout: a day is already more than any hook should
// hold a run, and a larger number is a typo.
const maxTimeout = 24 * time.Hour

// ParseConfig reads the "hooks" member of a settings file, in Claude Code's shape:
//
//	{"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "…", "timeout": 30}]}]}
//
// timeout is in seconds. Every hook gets source as its Source. Anything else — an event
// that does not exist, a matcher that is not a regular expression, a hook type other
// than "command", an empty command, a timeout that is not a positive number of seconds,
// a member this shape does not have — is config.hooks_invalid naming source and the
// JSON path of the fault.
func ParseConfig(raw json.RawMessage, source string) ([]Hook, error) {
	bad := func(path, format string, args ...any) error {
		return sema.Errorf(CodeConfigInvalid, "%s: hooks%s %s", source, path, fmt.Sprintf(format, args...)).
			With("path", source).With("key", "hooks"+path)
	}
	var events map[string]json.RawMessage
	if err := json.Unmarshal(raw, &events); err != nil || events == nil {
		return nil, bad("", "must be an object whose members are event names (PreToolUse, PostToolUse, Stop, …)")
	}
	// Declaration order is the order Events lists; within an event, the file's.
	names := make([]string, 0, len(events))
	for name := range events {
		names = append(names, name)
	}
	slices.Sort(names)
	slices.SortStableFunc(names, func(a, b string) int { return eventRank(a) - eventRank(b) })
	var out []Hook
	for _, name := range names {
		ev := Event(name)
		if !ev.known() {
			return nil, bad("."+name, "is not an event; the events are %s", eventList())
		}
		var groups []json.RawMessage
		if err := json.Unmarshal(events[name], &groups); err != nil {
			return nil, bad("."+name, `must be an array of {"matcher": "…", "hooks": [...]} objects`)
		}
		for i, g := range groups {
			gpath := fmt.Sprintf(".%s[%d]", name, i)
			var group map[string]json.RawMessage
			if err := json.Unmarshal(g, &group); err != nil || group == nil {
				return nil, bad(gpath, `must be an object {"matcher": "…", "hooks": [...]}`)
			}
			var matcher string
			var list []json.RawMessage
			for _, k := range sortedKeys(group) {
				v := group[k]
				switch k {
				case "matcher":
					if err := json.Unmarshal(v, &matcher); err != nil {
						return nil, bad(gpath+".matcher", "must be a string: a tool name, names joined by |, a regular expression, or * for every tool")
					}
					if _, err := compileMatcher(matcher); err != nil {
						return nil, bad(gpath+".matcher", "is not a regular expression: %v", err)
					}
				case "hooks":
					if err := json.Unmarshal(v, &list); err != nil {
						return nil, bad(gpath+".hooks", `must be an array of {"type": "command", "command": "…"} objects`)
					}
				default:
					return nil, bad(gpath+"."+k, `is not a member of a hook group; a group has "matcher" and "hooks"`)
				}
			}
			if list == nil {
				return nil, bad(gpath, `has no "hooks" array; add the hooks this matcher runs`)
			}
			for j, h := range list {
				hook, err := parseHook(h, gpath+fmt.Sprintf(".hooks[%d]", j), bad)
				if err != nil {
					return nil, err
				}
				hook.Event, hook.Matcher, hook.Source = ev, matcher, source
				out = append(out, hook)
			}
		}
	}
	return out, nil
}

func parseHook(raw json.RawMessage, path string, bad func(path, format string, args ...any) error) (Hook, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return Hook{}, bad(path, `must be an object {"type": "command", "command": "…", "timeout": seconds}`)
	}
	var h Hook
	// The type first: a hook of another type has other members, and its type is what
	// to change.
	var typ string
	if v, ok := m["type"]; ok {
		if err := json.Unmarshal(v, &typ); err != nil {
			return Hook{}, bad(path+".type", `must be the string "command"`)
		}
	}
	switch typ {
	case "command":
	case "":
		return Hook{}, bad(path, `has no "type"; write "type": "command"`)
	default:
		return Hook{}, bad(path+".type", "is %s; only command hooks are supported (a prompt hook would ask a model to judge, which no rule can explain)", strconv.Quote(typ))
	}
	for _, k := range sortedKeys(m) {
		v := m[k]
		switch k {
		case "type":
		case "command":
			if err := json.Unmarshal(v, &h.Command); err != nil {
				return Hook{}, bad(path+".command", "must be a string: the shell command to run")
			}
		case "timeout":
			var secs float64
			if err := json.Unmarshal(v, &secs); err != nil || !(secs >= 0.001) || secs > maxTimeout.Seconds() {
				return Hook{}, bad(path+".timeout", "must be a number of seconds from 0.001 to %d; it is %s", int(maxTimeout/time.Second), bytes.TrimSpace(v))
			}
			h.Timeout = time.Duration(secs * float64(time.Second))
		default:
			return Hook{}, bad(path+"."+k, `is not a member of a hook; a hook has "type", "command" and "timeout"`)
		}
	}
	if len(bytes.TrimSpace([]byte(h.Command))) == 0 {
		return Hook{}, bad(path+".command", "is empty; give the shell command to run")
	}
	return h, nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (e Event) known() bool { return slices.Contains(Events, e) }

// eventRank orders event names as Events does, unknown names last.
func eventRank(name string) int {
	if i := slices.Index(Events, Event(name)); i >= 0 {
		return i
	}
	return len(Events)
}

func eventList() string {
	var b bytes.Buffer
	for i, e := range Events {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(e))
	}
	return b.String()
}
