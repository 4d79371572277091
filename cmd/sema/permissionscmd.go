package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/permission"
)

// codeCheckInvalid refuses a `sema permissions check` argument that names no call.
const codeCheckInvalid = "config.permission_check_invalid"

// newPermissionsCmd is `sema permissions` and `sema permissions check CALL`: the rules
// in force for a directory, where each came from, and the decision the gate would make
// for a call — all without running anything.
func newPermissionsCmd(stdout io.Writer) *cobra.Command {
	var o runOptions
	var asJSON bool
	var checkInput string
	cmd := &cobra.Command{
		Use:   "permissions",
		Short: "List the permission rules in force here, the file or flag each came from, and whether it applied",
		Long: `sema permissions lists the permission rules a run in this directory would apply — from
~/.sema/settings.json, ~/.claude/settings.json, the workspace's .sema/ and .claude/
settings files, --settings, the managed policy and the rule flags — with the file (or
flag) each came from and whether it applied: an untrusted workspace's allow rules are
read and left out (trust it with --trust-project, or sema trust).

sema permissions check 'Bash(git push origin main)' prints the decision the permission
gate would make for that call in the mode given (--permission-mode), and the chain of
reasons. It runs nothing: no hook, no command, no MCP server, no model.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, root, err := permissionReport(cmd.Context(), &o, nil)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(stdout, rep)
			}
			printRules(stdout, rep, root)
			return nil
		},
	}
	check := &cobra.Command{
		Use:   "check CALL",
		Short: "Print the decision the permission gate would make for a call, and why, without running it",
		Long: `CALL is written as a rule names it: 'Bash(git push origin main)', 'Edit(src/a.go)',
'Read(~/.ssh/id_rsa)', 'WebFetch(https://example.com/)', 'mcp__github__create_issue'.
--input gives the call's JSON input instead, for a tool whose input a rule cannot spell.`,
		Args: exactlyOne("call", "sema permissions check 'Bash(git push origin main)'"),
		RunE: func(cmd *cobra.Command, args []string) error {
			call, err := parseCheckedCall(args[0], checkInput)
			if err != nil {
				return usageErr(err)
			}
			rep, root, err := permissionReport(cmd.Context(), &o, call)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(stdout, rep)
			}
			printCheck(stdout, args[0], rep, root)
			return nil
		},
	}
	check.Flags().StringVar(&checkInput, "input", "", `the call's JSON input, e.g. '{"command": "git push"}' (default: read from CALL)`)
	f := cmd.PersistentFlags()
	f.StringVar(&o.cwd, "cwd", ".", "the directory a run would work in")
	f.StringVar(&o.permissionMode, "permission-mode", "", "the mode to judge in: default|acceptEdits|plan|auto|dontAsk|bypassPermissions (default: the settings files' defaultMode, else default)")
	f.StringArrayVar(&o.allowedTools, "allowed-tools", nil, "allow rules, as a run's --allowed-tools")
	f.StringArrayVar(&o.disallowed, "disallowed-tools", nil, "deny rules, as a run's --disallowed-tools")
	f.StringArrayVar(&o.addDirs, "add-dir", nil, "an additional writable root, as a run's --add-dir")
	f.StringVar(&o.settings, "settings", "", "a settings file or JSON document, as a run's --settings")
	f.Func("setting-sources", "the settings layers to read, as a run's --setting-sources", func(v string) error {
		o.settingSources = &v
		return nil
	})
	f.BoolVar(&o.trustProject, "trust-project", false, "judge as if the workspace were trusted (as a run's --trust-project)")
	f.StringVar(&o.home, "home", "", "state directory (default $SEMA_HOME, else ~/.sema): where the trust record is")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	addClaudeFilesFlags(f, &o)
	cmd.AddCommand(check)
	markTaskRoot(cmd, check) // the rules judged are a run's in this directory: it must exist
	return cmd
}

// permissionReport resolves the settings as a run with o would and asks the runner.
func permissionReport(ctx context.Context, o *runOptions, call *agent.CheckedCall) (*agent.PermissionReport, string, error) {
	if o.permissionMode != "" {
		if _, err := permission.ParseMode(o.permissionMode); err != nil {
			return nil, "", usageErr(err)
		}
	}
	root, err := filepath.Abs(o.cwd)
	if err != nil {
		return nil, "", usageErr(sema.Errorf(codeRootInvalid, "cannot resolve --cwd %q: %v", o.cwd, err))
	}
	if root, err = canonicalRoot(ctx, root); err != nil {
		return nil, "", usageErr(err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = ""
	}
	perms, err := resolvePermissionsIn(o, "", strings.NewReader(""), io.Discard, home, false)
	if err != nil {
		return nil, "", err
	}
	state, err := stateDir(o.home)
	if err != nil {
		return nil, "", usageErr(err)
	}
	trusted, err := workspaceTrusted(o, state, root)
	if err != nil {
		return nil, "", usageErr(err)
	}
	deps := agent.Deps{StateDir: state}
	spec := agent.TaskSpec{Root: root, AdditionalDirectories: o.addDirs}
	perms.apply(&deps, &spec)
	trustDeps(&deps, trusted, false)
	rep, err := agent.New(deps).Permissions(ctx, spec, call)
	if err != nil {
		return nil, "", usageErr(err)
	}
	return rep, root, nil
}

// parseCheckedCall reads CALL as a rule spells it: Tool, or Tool(specifier).
func parseCheckedCall(s, input string) (*agent.CheckedCall, error) {
	s = strings.TrimSpace(s)
	tool, spec, hasSpec := strings.Cut(s, "(")
	if hasSpec {
		if !strings.HasSuffix(spec, ")") {
			return nil, sema.Errorf(codeCheckInvalid, "%q opens a parenthesis it does not close; write Tool(specifier), as 'Bash(git push origin main)'", s)
		}
		spec = strings.TrimSuffix(spec, ")")
	}
	if tool == "" || strings.ContainsAny(tool, " ()") {
		return nil, sema.Errorf(codeCheckInvalid, "%q names no tool; write Tool(specifier), as 'Bash(git push origin main)' or 'Edit(src/a.go)'", s)
	}
	call := &agent.CheckedCall{Tool: tool}
	if input != "" {
		if !json.Valid([]byte(input)) || !strings.HasPrefix(strings.TrimSpace(input), "{") {
			return nil, sema.Errorf(codeCheckInvalid, "--input is not a JSON object: %s", input)
		}
		call.Input = json.RawMessage(input)
		return call, nil
	}
	if !hasSpec {
		call.Input = json.RawMessage(`{}`)
		return call, nil
	}
	field, ok := checkFields[tool]
	if !ok {
		return nil, sema.Errorf(codeCheckInvalid, "sema cannot tell which input of %s %q names; give the input with --input '{...}'", tool, spec)
	}
	call.Input, _ = json.Marshal(map[string]string{field: spec})
	return call, nil
}

// checkFields are the input members a rule's specifier stands for, by tool.
var checkFields = map[string]string{
	"Bash": "command", "Read": "file_path", "Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path",
	"NotebookEdit": "notebook_path", "NotebookRead": "notebook_path", "Glob": "path", "Grep": "path", "LS": "path",
	"WebFetch": "url",
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// untrustedHint is how a person trusts the workspace.
const untrustedHint = "trust the workspace with `sema trust` or run with --trust-project"

// printRules prints the rules in force, one a line, and the settings files read.
func printRules(w io.Writer, rep *agent.PermissionReport, root string) {
	fmt.Fprintf(w, "Permission rules for %s (mode %s)\n\n", root, rep.Mode)
	if len(rep.Rules) == 0 {
		fmt.Fprintln(w, "No rules: every call is judged by the mode alone.")
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, r := range rep.Rules {
			line := fmt.Sprintf("%s\t%s\t%s", strings.ToUpper(string(r.Behavior)), terminalText(r.Rule), sourceText(r))
			if !r.Applied {
				line += "\tnot applied: the workspace is not trusted (" + untrustedHint + ")"
			}
			fmt.Fprintln(tw, line)
		}
		tw.Flush()
	}
	if len(rep.Settings) > 0 {
		fmt.Fprintln(w, "\nSettings files read, lowest layer first:")
		for _, a := range rep.Settings {
			state := "applied"
			if len(a.Dropped) > 0 {
				state = "not trusted: " + strings.Join(a.Dropped, ", ") + " did not apply (" + untrustedHint + ")"
			} else if !a.Trusted {
				state = "not trusted: its deny and ask rules applied, and it holds nothing else"
			}
			fmt.Fprintf(w, "  %s (%s): %s\n", terminalText(cmp.Or(a.Path, "--settings")), a.Layer, state)
		}
	}
	if rep.PreToolUseHooks > 0 {
		fmt.Fprintf(w, "\n%d PreToolUse hook(s) run before each call, after the deny rules; `sema permissions check` runs none of them.\n", rep.PreToolUseHooks)
	}
}

// printCheck prints the decision and the chain of reasons that led to it.
func printCheck(w io.Writer, call string, rep *agent.PermissionReport, root string) {
	c := rep.Check
	d := c.Decision
	fmt.Fprintf(w, "%s in %s, mode %s: %s\n\n", terminalText(call), root, rep.Mode, strings.ToUpper(string(d.Behavior)))
	step := 0
	say := func(format string, a ...any) {
		step++
		fmt.Fprintf(w, "  %d. %s\n", step, fmt.Sprintf(format, a...))
	}
	say("The mode is %s.", rep.Mode)
	for _, r := range c.Matching {
		say("The %s rule %s (%s) names the call.", r.Behavior, terminalText(r.Rule), sourceText(r))
	}
	if len(c.Matching) == 0 {
		say("No rule in force names the call.")
	}
	for _, r := range c.NotApplied {
		say("The %s rule %s (%s) would name the call, but the workspace is not trusted, so it did not apply (%s).", r.Behavior, terminalText(r.Rule), sourceText(r), untrustedHint)
	}
	say("Decided by %s: %s", deciderText(d), terminalText(d.Reason))
	if d.PersonOnly {
		say("Only a person can answer this question: no rule, mode or classifier may.")
	}
	for _, a := range c.Assumed {
		fmt.Fprintf(w, "  Note: %s.\n", a)
	}
}

// deciderText names the station that decided, in a person's words.
func deciderText(d permission.Decision) string {
	switch d.DecidedBy {
	case permission.LayerRule:
		return "the rule " + terminalText(d.Rule)
	case permission.LayerMode:
		return "the mode"
	case permission.LayerSafety:
		return "a safety check"
	case permission.LayerTool:
		return "the tool's own check"
	case permission.LayerHook:
		return "a hook"
	}
	return string(d.DecidedBy)
}

// sourceText names where a rule came from, in the command line's words.
func sourceText(r agent.RuleSource) string {
	switch r.Origin {
	case agent.OriginTaskAllowed:
		return "--allowed-tools"
	case agent.OriginTaskDisallowed:
		return "--disallowed-tools"
	case agent.OriginTaskAsk:
		return "the task's ask rules"
	case agent.OriginPolicy:
		return "the deployment's policy"
	}
	if r.Path == "" {
		return "--settings, " + string(r.Layer)
	}
	return r.Path + ", " + string(r.Layer)
}
