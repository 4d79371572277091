// Command sema runs one agent task against a workspace: `sema run PROMPT` (or
// `sema -p PROMPT`) with a real model, or `sema demo` with the built-in scripted one.
//
// Exit codes: 0 completed, 1 error, 2 bad usage or refused spec, 3 awaiting approval,
// 4 max turns, 5 session busy (another run is continuing the session; --wait waits),
// 6 budget exceeded (--max-budget-usd, --max-tokens-total).
package main

import (
	"runtime"

	"github.com/sema-agent/sema/sandbox"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sema-agent/sema"
)

// Exit codes of the command-line contract.
const (
	exitOK        = 0
	exitError     = 1
	exitUsage     = 2
	exitAwaiting  = 3
	exitMaxTurns  = 4
	exitBusy      = 5 // session.busy: another run holds the session's lease
	exitBudget    = 6 // budget_exceeded: the run stopped before passing its budget
	codeUsage     = "cli.usage"
	versionString = "0.1.0-dev"
)

// exitError carries an exit code out of a cobra command.
type exitErr struct {
	code int
	err  error
	// hint is a line printed after the error: what to run next.
	hint string
	// refusal marks an error the command printed nothing on stdout for: a program that
	// asked for JSON gets the refusal object, as it does for every exit 2.
	refusal bool
}

func (e *exitErr) Error() string { return e.err.Error() }
func (e *exitErr) Unwrap() error { return e.err }

func main() {
	// A hangup (the terminal closed, the ssh connection dropped) ends a command as
	// SIGTERM does: the run stops, its result is printed and its session's lease freed,
	// instead of the process dying where it stands.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line and returns the process exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-v") {
		// Answered before the command tree is built, which is most of the work left
		// once the process has started: scripts and installers run this at every step.
		// The line is the one cobra's version flag prints.
		fmt.Fprintf(stdout, "sema version %s\n", versionString)
		return exitOK
	}
	root := commandTree(stdin, stdout, stderr, args)
	root.SetArgs(bareResume(root, worktreeName(args)))
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitErr
	if errors.As(err, &ee) {
		ee.err = cliError(hostCoded(ee.err))
		if ee.code == exitUsage && sema.HostFault(ee.err, "") != nil {
			// The machine's limit, met while the command line was being read: exit 1,
			// with the result object a refusal has.
			ee.code, ee.refusal = exitError, true
		}
		if ee.err != nil && ee.code != exitOK && ee.code != exitAwaiting && ee.code != exitMaxTurns && ee.code != exitBudget {
			printErr(stderr, ee.err)
		}
		if ee.hint != "" {
			fmt.Fprintf(stderr, "  %s\n", ee.hint)
		}
		if ee.code == exitUsage || ee.refusal {
			refused := ee.err
			if ee.code != exitUsage && ee.err != nil && sema.CodeOf(ee.err) == "" {
				// Not a refused command line (those exit 2): a failure nobody gave a
				// code, which the result must not call cli.usage.
				refused = &sema.Error{Code: codeUnexpected, Message: ee.err.Error(), Err: ee.err}
			}
			printRefusal(stdout, args, refused)
		}
		return ee.code
	}
	// Errors from cobra itself (an argument count) are usage errors; they get the code
	// and the pointer to the help every refusal has.
	var se *sema.Error
	if !errors.As(err, &se) {
		err = sema.Errorf(codeUsage, "%v; see `%s --help`", err, commandPath(root, args))
	}
	err = cliError(err)
	printErr(stderr, err)
	printRefusal(stdout, args, err)
	return exitUsage
}

// commandPath is the command args name ("sema sessions list"), "sema" when none.
func commandPath(root *cobra.Command, args []string) string {
	c, _, err := root.Find(args)
	if err != nil || c == nil {
		return root.Name()
	}
	return c.CommandPath()
}

// printRefusal gives a program that asked for JSON output the refusal as JSON too: one
// result object with status error and the error's code and message, the shape a run's
// failed result has (Claude Code's fields included), so a reader of stdout never finds
// it empty. Text output has the
// refusal on stderr only.
func printRefusal(stdout io.Writer, args []string, err error) {
	if !jsonOutput(args) {
		return
	}
	se := &sema.Error{Code: codeUsage, Message: "the command line was refused"}
	if err != nil {
		se.Message = err.Error()
		var e *sema.Error
		if errors.As(err, &e) {
			se = e
		}
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	enc.Encode(refusalResult(se))
}

// jsonOutput reports whether the command line asks for json or stream-json output. It
// reads the arguments itself: a refused command line may never have been parsed into
// flags. The last --output-format wins, as it does for the flag; "--" ends the flags.
func jsonOutput(args []string) bool {
	format := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--output-format="); ok {
			format = v
		} else if a == "--output-format" && i+1 < len(args) {
			format = args[i+1]
			i++
		}
	}
	return format == "json" || format == "stream-json"
}

func printErr(w io.Writer, err error) {
	var se *sema.Error
	if errors.As(err, &se) {
		fmt.Fprintf(w, "sema: %s (%s)\n", terminalText(se.Message), terminalText(se.Code))
		return
	}
	fmt.Fprintf(w, "sema: %s\n", terminalText(err.Error()))
}

// commandTree is the tree run executes args with: the whole of it, or for `sema run …` —
// the headless path scripts and CI take at every step — the root with run alone. Building
// the other commands and their flags was half a millisecond of every such start, and
// nothing of them is seen on that path: run's help, flags and refusals are the same.
func commandTree(stdin io.Reader, stdout, stderr io.Writer, args []string) *cobra.Command {
	if len(args) > 0 && args[0] == "run" {
		return newRootWith(stdin, stdout, stderr, false)
	}
	return newRootCmd(stdin, stdout, stderr)
}

// newRootCmd is the whole command tree.
func newRootCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	return newRootWith(stdin, stdout, stderr, true)
}

// newRootWith builds the root command with run, and with every other command when all.
func newRootWith(stdin io.Reader, stdout, stderr io.Writer, all bool) *cobra.Command {
	var opts runOptions
	var print, interactive bool
	root := &cobra.Command{
		Use:   "sema [-p PROMPT]",
		Short: "sema runs one agent task — a prompt against a workspace — through a model and tools",
		Long: `sema runs one agent task — a prompt against a workspace — through a model-and-tools loop.

  sema                              at a terminal: an interactive session
  sema "explain this repo"          at a terminal: the session, with that first prompt (-i is the same)
  sema demo                         run the built-in scripted demo (no API key needed)
  sema run "explain this repo"      run a task with a real model (sema -p "…" is the same)
  git diff | sema -p "review this"  piped text follows the prompt; with no prompt it is the prompt
  echo "fix the build" | sema       piped text alone is the prompt, as with sema -p

The model comes from --model or SEMA_MODEL (anthropic/claude-sonnet-4-5, openai/gpt-4.1,
openai-compatible/llama3.1 with --base-url; an alias — sonnet, opus, haiku — is the newest of its
family); API keys from ANTHROPIC_API_KEY / OPENAI_API_KEY.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          rootArgs(&print, &interactive, func() bool { return interactiveTerminal(stdin, stdout) }),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && sdkMode(&opts, "") {
				// The Agent SDKs' launch line (with or without -p): the prompts come on
				// stdin as protocol lines.
				return runSDK(cmd.Context(), &opts, stdin, stdout, stderr)
			}
			if interactive {
				if print {
					return usageErr(sema.Errorf(codeUsage, "-i opens the interactive session and -p runs headless; give one"))
				}
				return runInteractive(cmd.Context(), &opts, strings.Join(args, " "), stdin, stdout, stderr)
			}
			if !print {
				// `echo "fix it" | sema` means what `sema -p` means: the piped text is the
				// prompt. Nothing to read at a terminal opens the interactive session (stdout
				// a terminal too); a pipe or file that gave nothing is refused, as `sema -p`
				// refuses it (`producer | sema` whose producer printed nothing must not pass
				// in a script); any other stdin with nothing in it (`</dev/null`), or output to
				// a file or pipe, shows the help.
				piped, ok := pipedPrompt(stdin)
				if !ok && interactiveTerminal(stdin, stdout) {
					// rootArgs let at most one argument through here: the first prompt.
					return runInteractive(cmd.Context(), &opts, strings.Join(args, " "), stdin, stdout, stderr)
				}
				if !ok && len(args) == 0 && stdinPiped(stdin) {
					return usageErr(sema.Errorf(codeUsage, "no prompt: stdin was empty; pipe the prompt in (echo \"fix the build\" | sema) or give it as an argument (sema -p \"…\")"))
				}
				if !ok {
					if err := refuseResumePick(&opts); err != nil {
						return err
					}
					return cmd.Help()
				}
				return runPromptTask(cmd, args, &opts, piped, stdout, stderr)
			}
			return runPromptTask(cmd, args, &opts, stdin, stdout, stderr)
		},
		Version: versionString,
	}
	addRunFlags(root, &opts)
	root.Flags().BoolVarP(&interactive, "interactive", "i", false, "open the interactive session (what a bare sema does at a terminal), with PROMPT as its first prompt when given")
	root.Flags().BoolVarP(&print, "print", "p", false, "run the prompt non-interactively and print the answer (same as sema run): sema -p PROMPT, or piped: git diff | sema -p")
	run := newRunCmd(stdin, stdout, stderr)
	root.AddCommand(run)
	// The command line's refusals, the same for every command: coded, and saying what to
	// write instead.
	root.SetFlagErrorFunc(flagError)
	root.PersistentPreRunE = checkFlags
	markTaskRoot(root, run)
	if !all {
		return root
	}
	approve := newApproveCmd(stdin, stdout, stderr)
	mcp, commands := newMCPCmd(stdout), newCommandsCmd(stdout, stderr)
	root.AddCommand(newDemoCmd(stdout, stderr), approve,
		newSessionsCmd(stdout), newRewindCmd(stdout), mcp, newTrustCmd(stdout), commands, newServeCmd(stdout, stderr), newACPCmd(stdin, stdout, stderr),
		newPermissionsCmd(stdout), newAttachCmd(stdin, stdout), newWorktreeCmd(stdout), newReplayCmd(stdout, stderr))
	markTaskRoot(approve)
	markTaskRoot(mcp.Commands()...)
	markTaskRoot(commands.Commands()...)
	// cobra adds these two as the command line runs; added now, they are refused like
	// every other command when given a word they do not know.
	root.InitDefaultCompletionCmd()
	root.InitDefaultHelpCmd()
	strictHelp(root)
	strictGroups(root)
	hideFlags(approve, "it continues the session it names", "resume", "continue")
	return root
}

func newRunCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	var opts runOptions
	cmd := &cobra.Command{
		Use:   "run [flags] PROMPT",
		Short: "Run one task (PROMPT '-' or none reads the prompt from piped stdin; /NAME ARGS… runs a custom command)",
		Long: "Run one task (PROMPT '-' or none reads the prompt from piped stdin; /NAME ARGS… runs a custom command).\n\n" +
			sandbox.Summary(runtime.GOOS),
		Args: runArgs(onePrompt),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPromptTask(cmd, args, &opts, stdin, stdout, stderr)
		},
	}
	addRunFlags(cmd, &opts)
	return cmd
}

// runPromptTask runs the task of `sema run ARGS` or `sema -p ARGS`: the prompt is the
// argument, stdin, or both (promptOf).
func runPromptTask(cmd *cobra.Command, args []string, o *runOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	prompt, use, err := promptOf(cmd, args, o, stdin)
	if err != nil {
		return err
	}
	o.stdinUse = use
	return runTask(cmd.Context(), o, prompt, stdin, stdout, stderr)
}

// exactlyOne is cobra.ExactArgs(1) with a refusal that says what the one argument is and
// how to write the command.
func exactlyOne(what, example string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 1 {
			return nil
		}
		return sema.Errorf(codeUsage, "%s takes one %s, got %d arguments; write it as: %s", cmd.CommandPath(), what, len(args), example)
	}
}
