package tui

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sema-agent/sema/agent"
)

// The reports of the slash commands that read the latest leg's events.

// todosText is /todos: the model's latest TodoWrite list.
func todosText(f facts) string {
	if !f.todosKnown {
		return "todos: the model has written no todo list in this session"
	}
	if len(f.todos) == 0 {
		return "todos: the list is empty"
	}
	lines := []string{"todos:"}
	for _, t := range f.todos {
		mark := "[ ]"
		switch t.Status {
		case agent.TodoCompleted:
			mark = "[x]"
		case agent.TodoInProgress:
			mark = "[~]"
		}
		lines = append(lines, "  "+mark+" "+t.Content)
	}
	return strings.Join(lines, "\n")
}

// sandboxText is /sandbox: whether the kernel confines the commands, how, and what it
// does not hold.
func sandboxText(mf *agent.Manifest) string {
	if mf == nil {
		return "sandbox: known once the first turn starts"
	}
	sh := mf.Shell
	if !sh.FullShell && !sh.ReadOnlyShell {
		return "sandbox: no shell is mounted, so no command runs"
	}
	sb := sh.Sandbox
	state := "off: commands run unconfined"
	switch {
	case sb.Enforced && sb.Reason == "":
		state = "on: the kernel confines every command"
	case sb.Enforced:
		state = "partial: the kernel confines every command"
	}
	lines := []string{fmt.Sprintf("sandbox %s (mode %s)", state, cmp.Or(string(sb.Mode), "auto"))}
	if sb.Reason != "" {
		lines = append(lines, "  why: "+sb.Reason)
	}
	if sb.Enforced {
		net := "no network"
		if sb.Network {
			net = "network allowed"
		}
		lines = append(lines, fmt.Sprintf("  Landlock ABI %d · %s", sb.Landlock, net))
	}
	if len(sb.Confines) > 0 {
		lines = append(lines, "  confines: "+strings.Join(sb.Confines, ", "))
	}
	if len(sb.Missing) > 0 {
		lines = append(lines, "  this kernel cannot: "+strings.Join(sb.Missing, "; "))
	}
	if len(sb.NotConfined) > 0 {
		lines = append(lines, "  not confined on any kernel: "+strings.Join(sb.NotConfined, "; "))
	}
	return strings.Join(lines, "\n")
}

// mcpText is /mcp: the MCP servers the latest leg mounted and their state.
func mcpText(mf *agent.Manifest) string {
	if mf == nil {
		return "mcp: known once the first turn starts"
	}
	if len(mf.MCPServers) == 0 {
		return "mcp: no MCP server is configured"
	}
	lines := []string{"MCP servers:"}
	for _, s := range mf.MCPServers {
		l := fmt.Sprintf("  %s (%s, %s): %s", s.Name, s.Type, s.Source, s.State)
		if s.Error != "" {
			l += " — " + s.Error
		} else {
			l += fmt.Sprintf(", %d tools", len(s.Tools))
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}

// permissionsText is /permissions: the rules in force, each with its seat, as `sema
// permissions` prints them.
func permissionsText(rep *agent.PermissionReport) string {
	lines := []string{"permission rules (mode " + string(rep.Mode) + "):"}
	if len(rep.Rules) == 0 {
		lines = append(lines, "  no rules: every call is judged by the mode alone")
	}
	for _, r := range rep.Rules {
		l := fmt.Sprintf("  %-5s %s — %s", strings.ToUpper(string(r.Behavior)), r.Rule, ruleSeat(r))
		if !r.Applied {
			l += " (not applied: the workspace is not trusted)"
		}
		lines = append(lines, l)
	}
	for _, a := range rep.Settings {
		state := "applied"
		if len(a.Dropped) > 0 {
			state = "not trusted: " + strings.Join(a.Dropped, ", ") + " did not apply"
		} else if !a.Trusted {
			state = "not trusted: only its deny and ask rules applied"
		}
		lines = append(lines, fmt.Sprintf("  settings %s (%s): %s", cmp.Or(a.Path, "--settings"), a.Layer, state))
	}
	if rep.PreToolUseHooks > 0 {
		lines = append(lines, fmt.Sprintf("  %d PreToolUse hook(s) run before each call", rep.PreToolUseHooks))
	}
	return strings.Join(lines, "\n")
}

// ruleSeat says where a rule came from.
func ruleSeat(r agent.RuleSource) string {
	switch r.Origin {
	case agent.OriginSettings:
		return fmt.Sprintf("%s settings %s", r.Layer, cmp.Or(r.Path, "--settings"))
	case agent.OriginTaskAllowed:
		return "--allowed-tools"
	case agent.OriginTaskDisallowed:
		return "--disallowed-tools"
	case agent.OriginTaskAsk:
		return "the task's ask rules"
	case agent.OriginPolicy:
		return "the deployment's policy"
	}
	return string(r.Origin)
}

// helpCommands are the slash commands /help lists after the keys: the session's own,
// then the back-end's custom commands.
func (m *Model) helpCommands() [][2]string {
	out := commandHelp
	if cl, ok := m.opts.Backend.(CommandLister); ok {
		for _, c := range cl.Commands() {
			out = append(out[:len(out):len(out)], [2]string{"/" + c.Name, cmp.Or(c.Description, "custom command ("+string(c.Scope)+")")})
		}
	}
	return out
}

// Always returns the rules the person allowed always in this session, sorted. They live
// in the process, not in a settings file, so /permissions lists them apart.
func (a *Approver) Always() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Sorted(maps.Keys(a.always))
}

// alwaysText is the part of /permissions the person's own answers make.
func alwaysText(rules []string) string {
	if len(rules) == 0 {
		return ""
	}
	return "\nallowed always in this session (your answers; not saved to a settings file):\n  " + strings.Join(rules, "\n  ")
}
