package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/commands"
	"github.com/sema-agent/sema/settings"
)

// codeCommandShadowed is the notice that a workspace's command, in a workspace not
// trusted, hides the user's own command of the same name.
const codeCommandShadowed = "config.command_shadowed"

// expandCommand reads a typed prompt "/name arguments" as a custom command (package
// commands) and returns the prompt it expands to, with the model the command names.
// Any other prompt comes back unchanged. The command's allowed-tools are added to the
// run's allow rules. A workspace's command is the repository's choice: its body
// expands (the person typed its name) but its allowed-tools and model apply only in a
// trusted workspace, and are dropped with a notice otherwise.
func expandCommand(prompt string, s *permissionSetup, root string, trusted bool, stderr io.Writer) (string, string, error) {
	if _, _, ok := commands.Split(prompt); !ok {
		return prompt, "", nil
	}
	set := commands.Load(commands.Options{Root: root, Home: s.home, ClaudeCompat: s.compat})
	inv, err := set.Resolve(prompt)
	if err != nil {
		return "", "", usageErr(err)
	}
	if inv == nil {
		return prompt, "", nil
	}
	c := inv.Command
	model, allowed := c.Model, c.AllowedTools
	if c.Scope == commands.ScopeProject && !trusted {
		if model != "" || len(allowed) > 0 {
			notice(stderr, agent.CodeProjectSettingsUntrusted, fmt.Sprintf(
				"/%s is the workspace's command (%s): its allowed-tools and model apply only in a trusted workspace and were dropped; trust the workspace with sema trust, or run with --trust-project",
				c.Name, c.Path))
		}
		model, allowed = "", nil
		for _, sh := range c.Shadows {
			if sh.Scope == commands.ScopeUser {
				notice(stderr, codeCommandShadowed, fmt.Sprintf("/%s is the workspace's command (%s), not your own %s", c.Name, c.Path, sh.Path))
				break
			}
		}
	}
	s.allowed = slices.Concat(s.allowed, allowed)
	ref, err := commandModel(c, model)
	if err != nil {
		return "", "", usageErr(err)
	}
	return inv.Prompt, ref, nil
}

// commandModel turns a command's model into a PROVIDER/MODEL reference. A bare name
// (Claude Code's files name models so) goes to the provider whose key is set, as a
// settings file's model does.
func commandModel(c *commands.Command, name string) (string, error) {
	if name == "" || strings.Contains(name, "/") {
		return name, nil
	}
	switch {
	case os.Getenv("ANTHROPIC_API_KEY") != "":
		return "anthropic/" + name, nil
	case os.Getenv("OPENAI_API_KEY") != "":
		return "openai/" + name, nil
	}
	return "", sema.Errorf(commands.CodeInvalid, "the command file %s names the model %q without a provider, and neither ANTHROPIC_API_KEY nor OPENAI_API_KEY is set; write it as PROVIDER/MODEL", c.Path, name).With("path", c.Path)
}

// notice prints a notice of the command line the way a run's notices are printed.
func notice(w io.Writer, code, msg string) {
	fmt.Fprintf(w, "sema: notice: %s (%s)\n", terminalText(msg), code)
}

// runArgs is the argument check of `sema run`: one prompt, or a command invocation
// written as several arguments (sema run /review src/a.go "two words"), which
// runPrompt puts back together.
func runArgs(one cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > 1 {
			if name, found := strings.CutPrefix(args[0], "/"); found && commands.CommandShaped(name) {
				return nil
			}
		}
		return one(cmd, args)
	}
}

// runPrompt is the prompt `sema run`'s arguments make: the one argument, or an
// invocation's name and its arguments quoted so that they split back as given.
func runPrompt(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	return args[0] + " " + commands.JoinArgs(args[1:])
}

// newCommandsCmd is `sema commands list`: the custom commands a run in the workspace
// can invoke, and which file each comes from.
func newCommandsCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "commands",
		Short: "Custom slash commands: the prompts of .sema/commands/*.md and ~/.sema/commands/*.md",
		Long: `A custom command is a Markdown file of a prompt, invoked as the prompt "/name arguments"
(sema run /review src/a.go, or sema -p "/review src/a.go"). The workspace's
.sema/commands/NAME.md wins over ~/.sema/commands/NAME.md; Claude Code's .claude/commands
and ~/.claude/commands are read too, each below sema's directory of the same scope
(--no-claude-compat, or claudeCompat: false in ~/.sema/settings.json, leaves them out). A subdirectory namespaces: frontend/component.md is /frontend:component.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var cwd string
	var compat, noCompat, asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the custom commands, where each comes from, and the files that cannot be used",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			root, err := filepath.Abs(cwd)
			if err != nil {
				return usageErr(sema.Errorf("config.root_invalid", "cannot resolve --cwd %q: %v", cwd, err))
			}
			home, err := os.UserHomeDir()
			if err != nil {
				home = ""
			}
			on, err := commandsClaudeSwitch(compat, noCompat, home)
			if err != nil {
				return usageErr(err)
			}
			compat = on
			set := commands.Load(commands.Options{Root: root, Home: home, ClaudeCompat: compat})
			return printCommands(stdout, stderr, set, asJSON)
		},
	}
	list.Flags().StringVar(&cwd, "cwd", ".", "the workspace whose commands to list")
	list.Flags().BoolVar(&compat, "claude-compat", false, "read Claude Code's .claude/commands and ~/.claude/commands (the default)")
	list.Flags().BoolVar(&noCompat, "no-claude-compat", false, "do not read Claude Code's .claude/commands and ~/.claude/commands")
	list.Flags().BoolVar(&asJSON, "json", false, "print one JSON object: {commands, problems}")
	cmd.AddCommand(list)
	return cmd
}

// printCommands prints the set as a table (or JSON), the files each command hides and
// what it asks for that sema does not do; the files that cannot be used go to stderr
// and make the exit code 2.
func printCommands(stdout, stderr io.Writer, set *commands.Set, asJSON bool) error {
	list, problems := set.Commands(), set.Problems()
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if list == nil {
			list = []*commands.Command{}
		}
		if problems == nil {
			problems = []*sema.Error{}
		}
		if err := enc.Encode(map[string]any{"commands": list, "problems": problems}); err != nil {
			return &exitErr{code: exitError, err: err}
		}
	} else if len(list) == 0 {
		fmt.Fprintln(stdout, "no custom commands: write one as .sema/commands/NAME.md in the workspace or ~/.sema/commands/NAME.md")
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "COMMAND\tDESCRIPTION\tARGUMENTS\tSOURCE")
		for _, c := range list {
			fmt.Fprintf(tw, "/%s\t%s\t%s\t%s %s\n", oneLine(c.Name), oneLine(c.Description), oneLine(c.ArgumentHint), c.Scope, oneLine(c.Path))
		}
		tw.Flush()
		for _, c := range list {
			for _, sh := range c.Shadows {
				fmt.Fprintf(stdout, "/%s hides the %s command %s\n", oneLine(c.Name), sh.Scope, oneLine(sh.Path))
			}
		}
		for _, c := range list {
			for _, w := range c.Warnings {
				fmt.Fprintf(stderr, "sema: warning: /%s: %s\n", oneLine(c.Name), terminalText(w))
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	if !asJSON {
		for _, p := range problems {
			printErr(stderr, p)
		}
	}
	return usageErr(sema.Errorf(commands.CodeInvalid, "command files or directories that cannot be used: %d; fix or remove them", len(problems)))
}

// oneLine is s for one cell of a table: escapes neutralized, line ends as blanks.
func oneLine(s string) string {
	return strings.Join(strings.Fields(terminalText(s)), " ")
}

// commandsClaudeSwitch decides, as a run does, whether `sema commands list` reads
// Claude Code's directories: the flags, else the user's settings file, else yes.
func commandsClaudeSwitch(on, off bool, home string) (bool, error) {
	word, err := claudeSwitch(&runOptions{claudeCompat: on, noClaudeCompat: off})
	if err != nil || word != nil || home == "" {
		return word == nil || *word, err
	}
	own, err := loadOptional(filepath.Join(home, settings.UserFile), settings.User)
	if err != nil {
		return false, err
	}
	return settings.ClaudeFiles(nil, own), nil
}
