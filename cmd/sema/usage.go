package main

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/sandbox"
)

// codeRootInvalid refuses a --cwd that is not a directory.
const codeRootInvalid = "config.root_invalid"

// onePrompt is the argument check of `sema run` and `sema -p`: at most one prompt (none
// reads it from stdin). Several words that are not a custom command's invocation are a
// prompt the shell split; the refusal shows it quoted.
func onePrompt(cmd *cobra.Command, args []string) error {
	if len(args) <= 1 {
		return nil
	}
	return sema.Errorf(codeUsage, "%s takes the prompt as one argument, got %d; quote the prompt: %s",
		promptCommand(cmd), len(args), promptCommand(cmd)+" "+doubleQuote(strings.Join(args, " "))).With("args", len(args))
}

// promptCommand is how a person writes the command that runs cmd's prompt: `sema run`,
// or `sema -p` at the top level.
func promptCommand(cmd *cobra.Command) string {
	if cmd.Parent() == nil {
		return "sema -p"
	}
	return cmd.CommandPath()
}

// rootArgs is the argument check of `sema` itself: with -p it takes a prompt as `sema run`
// does. Without, at a terminal, one argument that is not a command is the interactive
// session's first prompt (`sema "fix the build"`, as with -i); elsewhere — piped, in a
// script — it is most likely a headless prompt, and the refusal says how to run one. A
// word close to a command's name is refused either way, naming the command it resembles:
// `sema sesions` at a terminal should not become a conversation about "sesions".
func rootArgs(print, interactive *bool, atTerminal func() bool) cobra.PositionalArgs {
	withPrint := runArgs(onePrompt)
	return func(cmd *cobra.Command, args []string) error {
		if *print {
			return withPrint(cmd, args)
		}
		if *interactive && len(args) > 1 {
			return sema.Errorf(codeUsage, "sema -i takes one first prompt, got %d arguments; quote it: sema -i %s", len(args), doubleQuote(strings.Join(args, " ")))
		}
		if *interactive {
			return nil
		}
		if len(args) == 0 {
			return nil
		}
		if s := commandLike(cmd, args[:1]); s != "" {
			return sema.Errorf(codeUsage, "%q is not a sema command; did you mean `sema %s`? (sema --help lists the commands)", args[0], s).With("command", args[0])
		}
		q := doubleQuote(strings.Join(args, " "))
		if atTerminal() {
			if len(args) > 1 {
				return sema.Errorf(codeUsage, "sema takes one first prompt, got %d arguments; quote it: sema %s", len(args), q).With("args", len(args))
			}
			return nil
		}
		return sema.Errorf(codeUsage, "%q is not a sema command; did you mean `sema run %s` or `sema -p %s`? (sema --help lists the commands)", args[0], q, q).With("command", args[0])
	}
}

// commandLike is the command a lone word is a typo of (sema sesions), "" when it is none:
// several words, or one not close to a command, are a prompt. help and completion are
// never offered (sema hello is a greeting, not a typo of help).
func commandLike(root *cobra.Command, args []string) string {
	if len(args) != 1 {
		return ""
	}
	for _, s := range suggestions(root, args[0]) {
		if s != "help" && s != "completion" {
			return s
		}
	}
	return ""
}

// suggestions are the subcommands of c that word is a typo of (two edits or fewer, or a
// prefix), as cobra finds them for its own unknown-command error.
func suggestions(c *cobra.Command, word string) []string {
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2
	}
	return c.SuggestionsFor(word)
}

// doubleQuote quotes s for a POSIX shell in double quotes, as a person would type it.
func doubleQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`")
	return `"` + r.Replace(s) + `"`
}

// strictGroups makes every command group below c refuse what it does not know: cobra
// shows the help of a group given an unknown subcommand and exits 0, so a typo in a
// script (sema sessions lsit) would pass unnoticed. A group without an action of its own
// shows its help when given nothing; a group that takes arguments itself (sema trust
// DIR) keeps them, with its argument errors coded.
func strictGroups(c *cobra.Command) {
	for _, sub := range c.Commands() {
		if sub.HasSubCommands() && sub.Name() != "help" {
			strictGroup(sub)
		}
		strictGroups(sub)
	}
}

// strictHelp makes `sema help TOPIC` refuse a topic that is no command, as a command
// group refuses an unknown subcommand, instead of printing the help and exiting 0.
func strictHelp(root *cobra.Command) {
	for _, h := range root.Commands() {
		if h.Name() != "help" || h.Run == nil {
			continue
		}
		show := h.Run
		h.Run = nil
		h.RunE = func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || cmd == nil {
				cmd, rest = c.Root(), args
			}
			if len(rest) > 0 {
				return usageErr(unknownSubcommand(cmd, rest[0]))
			}
			show(c, args)
			return nil
		}
	}
}

func strictGroup(g *cobra.Command) {
	orig := g.Args
	runnable := g.Runnable()
	takesArgs := runnable && (orig == nil || orig(g, []string{"x"}) == nil)
	if !runnable {
		g.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
	g.Args = func(cmd *cobra.Command, args []string) error {
		if !takesArgs {
			if len(args) == 0 {
				return nil
			}
			return unknownSubcommand(cmd, args[0])
		}
		if orig == nil {
			return nil
		}
		if err := orig(cmd, args); err != nil {
			var se *sema.Error
			if errors.As(err, &se) {
				return err
			}
			return sema.Errorf(codeUsage, "%s: %v; see `%s --help`", cmd.CommandPath(), err, cmd.CommandPath())
		}
		return nil
	}
}

// unknownSubcommand refuses a word that is not one of group's subcommands, listing them.
func unknownSubcommand(group *cobra.Command, word string) error {
	var names []string
	for _, c := range group.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	msg := fmt.Sprintf("%s has no subcommand %q; use one of: %s", group.CommandPath(), word, strings.Join(names, ", "))
	if s := suggestions(group, word); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean `%s %s`?)", group.CommandPath(), s[0])
	}
	return sema.Errorf(codeUsage, "%s", msg).With("subcommand", word).With("valid", names)
}

// flagError codes an error of the flag parser (an unknown flag, a value of the wrong
// kind) and points at the command's help.
func flagError(cmd *cobra.Command, err error) error {
	if name, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok {
		if instead, known := claudeOnlyFlags[name]; known {
			return usageErr(sema.Errorf(codeUsage, "--%s is a Claude Code flag sema does not have; %s", name, instead).With("flag", "--"+name))
		}
	}
	if m := invalidFlagValue.FindStringSubmatch(err.Error()); m != nil {
		if f := cmd.Flags().Lookup(m[2]); f != nil {
			if kind, ok := valueKinds[f.Value.Type()]; ok {
				// The parser's own words (strconv.ParseInt: parsing "abc": invalid
				// syntax) say what failed, not what to write.
				return usageErr(sema.Errorf(codeUsage, "--%s takes %s, not %q; see `%s --help`", m[2], kind, m[1], cmd.CommandPath()).With("flag", "--"+m[2]))
			}
		}
	}
	return usageErr(sema.Errorf(codeUsage, "%v; see `%s --help`", err, cmd.CommandPath()))
}

// invalidFlagValue is pflag's refusal of a value its flag's type cannot read.
var invalidFlagValue = regexp.MustCompile(`^invalid argument "(.*)" for "(?:-\w, )?--([\w-]+)" flag: `)

// valueKinds says, for a flag type pflag reads, what a value of it is written as.
var valueKinds = map[string]string{
	"int": "a whole number", "int64": "a whole number", "uint": "a whole number 0 or more",
	"float64": "a number", "bool": "true or false", "duration": "a duration such as 30s or 5m",
}

// claudeOnlyFlags are Claude Code's flags that sema has no flag for, with what to do
// instead: a command line copied from Claude Code is refused with the way to say it
// here, not with "unknown flag".
var claudeOnlyFlags = map[string]string{
	"agents":                 "define each agent as a file instead: .sema/agents/NAME.md (or .claude/agents/NAME.md) with name, description, tools and model in its front matter",
	"mcp-debug":              "sema mcp list and sema mcp get NAME show each server and why it did not start",
	"disable-slash-commands": "pipe the prompt in instead (sema -p - < prompt.txt): a prompt read from stdin is never a command",
	"replay-user-messages":   "it belongs to the Agent SDK protocol, which sema answers without it; run without it",
	"ide":                    "sema has no IDE integration; run without it",
	"chrome":                 "sema has no browser integration; run without it",
	"no-chrome":              "sema has no browser integration; run without it",
}

// taskRootAnnotation marks a command whose --cwd names the task root: a directory that
// must exist (sema sessions list --cwd names a root whose sessions may outlive it).
const taskRootAnnotation = "sema/task-root"

func markTaskRoot(cmds ...*cobra.Command) {
	for _, c := range cmds {
		if c == nil {
			continue
		}
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[taskRootAnnotation] = "cwd"
	}
}

// checkFlags is every command's first check, before anything is read: no word flag given
// empty, and a task root that exists.
func checkFlags(cmd *cobra.Command, args []string) error {
	if err := refuseEmptyWords(cmd); err != nil {
		return err
	}
	return checkTaskRoot(cmd, args)
}

// wordFlags are the flags whose value is a word of a fixed set or a name, with the code
// of their refusal and what to give instead. Their unset value is empty, so an empty
// value given on purpose would read as the flag left out: `--sandbox "$MODE"` with MODE
// unset would run with the settings' sandbox, `--resume "$ID"` with ID unset would start
// a new session. Given empty, they are refused.
var wordFlags = map[string]struct{ code, give string }{
	"permission-mode": {permission.CodeModeInvalid, "a mode: default, acceptEdits, plan, auto, dontAsk or bypassPermissions"},
	"sandbox":         {sandbox.CodeModeInvalid, "auto, on or off"},
	"sandbox-network": {sandbox.CodeNetworkInvalid, "on or off"},
	"file-history":    {agent.CodeFileHistoryInvalid, "on or off"},
	"on-ask":          {agent.CodeOnAskInvalid, "deny, park or prompt"},
	"input-format":    {codeInputFormatInvalid, "text or stream-json"},
	"model":           {codeModelInvalid, "an alias (sonnet, opus, haiku), a model id or PROVIDER/MODEL"},
	"resume":          {agent.CodeResumeInvalid, "the session's id (sema sessions list shows them)"},
}

// codeModelInvalid refuses a --model that names no model.
const codeModelInvalid = "config.model_invalid"

// refuseEmptyWords refuses a word flag (wordFlags) given with an empty value.
func refuseEmptyWords(cmd *cobra.Command) error {
	var err error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		w, ok := wordFlags[f.Name]
		if !ok || err != nil || f.Value.String() != "" {
			return
		}
		err = usageErr(sema.Errorf(w.code, "--%s was given an empty value; give %s, or leave the flag out for its default", f.Name, w.give).With("flag", "--"+f.Name))
	})
	return err
}

// checkTaskRoot refuses, before anything else is read, a --cwd that is not an existing
// directory: a missing directory or a file would otherwise surface later as a settings
// or store error about a path the person never typed.
func checkTaskRoot(cmd *cobra.Command, _ []string) error {
	if cmd.Annotations[taskRootAnnotation] == "" {
		return nil
	}
	f := cmd.Flags().Lookup("cwd")
	if f == nil || !f.Changed {
		return nil
	}
	return rootDir(f.Value.String())
}

// rootDir refuses dir unless it is an existing directory (a symbolic link to one is).
func rootDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		return usageErr(sema.Errorf(codeRootInvalid, "--cwd %s: no such directory; give the directory the task works in", dir).With("path", dir))
	case err != nil:
		return usageErr(sema.Errorf(codeRootInvalid, "--cwd %s cannot be used as the task root: %v", dir, err).With("path", dir))
	case !fi.IsDir():
		return usageErr(sema.Errorf(codeRootInvalid, "--cwd %s is a file, not a directory; give the directory the task works in (--cwd %s)", dir, filepath.Dir(dir)).With("path", dir))
	}
	return nil
}

// hideFlags hides flags a command shares with `sema run` that mean nothing for it; they
// are refused when given.
func hideFlags(cmd *cobra.Command, why string, names ...string) {
	for _, n := range names {
		cmd.Flags().MarkHidden(n)
	}
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		for _, n := range names {
			if c.Flags().Changed(n) {
				return usageErr(sema.Errorf(codeUsage, "%s does not take --%s: %s", c.CommandPath(), n, why))
			}
		}
		if prev != nil {
			return prev(c, args)
		}
		return nil
	}
}
