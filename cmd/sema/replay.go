package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/replay"
	"github.com/sema-agent/sema/session"
)

// replayRefusals are the codes of a replay refused before it ran: what the command line
// named is not there or cannot be used. They exit 2, as every refused request does.
var replayRefusals = []string{
	session.CodeNotFound,
	replay.CodeNoTurns,
	replay.CodeAtInvalid,
	replay.CodeScratchInvalid,
	replay.CodeWorkspaceTooLarge,
	replay.CodeRootMissing,
	replay.CodeSubagents,
}

// newReplayCmd is `sema replay SESSION`: the session's recorded turns replayed offline
// in a scratch copy of its workspace, every tool call run again through today's gate,
// hooks and sandbox, and compared with the record.
func newReplayCmd(stdout, stderr io.Writer) *cobra.Command {
	var o runOptions
	var at int
	var in, format string
	cmd := &cobra.Command{
		Use:   "replay SESSION [--at TURN] [--in DIR] [--output-format text|json]",
		Short: "Replay a recorded session offline and compare every tool result with the record (a regression test of prompts, permissions and hooks)",
		Long: `Replay a recorded session offline: the model's turns come from the session's transcript
(no API key, no network), and every tool call runs again for real — through today's settings,
permission rules, hooks and sandbox — in a scratch copy of the workspace as the session found
it (the files the agent changed come back from file history; the rest are as they are now).
Each result is compared with the recorded one after normalising what the moment decides
(the scratch path, times, durations, temporary names). The workspace itself is never written.

Exit 0 when every call answered as recorded; 1 (replay.diverged) listing every divergence — a
different result, a call now refused or asked (nobody answers in a replay), a hook that now
blocks; 2 when the replay is refused (no such session, no turns, --at out of range).`,
		Args: exactlyOne("session id", "sema replay SESSION (sema sessions list shows the ids)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := textOrJSON(format); err != nil {
				return err
			}
			if cmd.Flags().Changed("at") && at < 1 {
				return usageErr(sema.Errorf(replay.CodeAtInvalid, "--at %d is not a turn; turns are numbered from 1 (see `sema sessions show %s`)", at, args[0]))
			}
			o.onAsk = "deny" // nobody answers a replay: a question is a divergence
			return runReplay(cmd.Context(), &o, args[0], at, in, format, stdout, stderr)
		},
	}
	f := cmd.Flags()
	f.IntVar(&at, "at", 0, "replay the turns up to and including TURN (default: every turn)")
	f.StringVar(&in, "in", "", "the scratch directory to copy the workspace into and replay in: empty or missing, kept afterwards (default: a temporary directory, removed)")
	f.StringVar(&format, "output-format", "text", "text|json")
	f.StringVar(&o.home, "home", "", "state directory (default $SEMA_HOME, else ~/.sema)")
	f.StringVar(&o.permissionMode, "permission-mode", "", "the mode to replay in (default: the mode the session recorded)")
	f.StringArrayVar(&o.allowedTools, "allowed-tools", nil, "rules that allow tool calls without asking, as for sema run; repeatable")
	f.StringArrayVar(&o.disallowed, "disallowed-tools", nil, "rules that deny tool calls, as for sema run; repeatable")
	f.StringVar(&o.settings, "settings", "", "a settings file, or a JSON document, as for sema run")
	f.StringVar(&o.sandbox, "sandbox", "", "auto|on|off, as for sema run")
	f.BoolVar(&o.trustProject, "trust-project", false, "apply the workspace's own settings in full (default: as sema trust recorded it for the session's root)")
	return cmd
}

func runReplay(ctx context.Context, o *runOptions, id string, at int, in, format string, stdout, stderr io.Writer) error {
	perms, err := resolvePermissions(o, "replay", strings.NewReader(""), stderr)
	if err != nil {
		return err
	}
	home, err := stateDir(o.home)
	if err != nil {
		return usageErr(err)
	}
	st, err := openState(ctx, home)
	if err != nil {
		return failed(err)
	}
	defer st.Close()
	rec, err := replay.Load(ctx, st.Sessions(), id, at)
	if err != nil {
		return replayFailed(err)
	}
	// The workspace's trust is its root's: the scratch copy stands in for it.
	trusted, err := workspaceTrusted(o, home, rec.Session.Root)
	if err != nil {
		return usageErr(err)
	}
	run := &preparedRun{o: o, perms: perms, root: rec.Session.Root, home: home, trusted: trusted}
	if err := run.load(); err != nil {
		return err
	}
	deps, spec, err := run.task(nil, "replay")
	if err != nil {
		return err
	}
	deps.StateDir = home // no replayed call reads or writes the state directory
	rep, err := rec.Replay(ctx, replay.Options{History: st.History(), Scratch: in, Deps: deps, Spec: spec})
	if err != nil {
		return replayFailed(err)
	}
	if format == "json" {
		if err := printJSON(stdout, rep); err != nil {
			return failed(err)
		}
	} else {
		printReplay(stdout, rep)
	}
	if err := rep.Err(); err != nil {
		return &exitErr{code: exitError, err: err}
	}
	return nil
}

// replayFailed is a replay that could not be made: a refusal of what the command line
// named exits 2, anything else (the state directory, the machine) 1.
func replayFailed(err error) error {
	for _, c := range replayRefusals {
		if sema.IsCode(err, c) {
			return &exitErr{code: exitUsage, err: err, refusal: true}
		}
	}
	return failed(err)
}

// printReplay writes the report for a person: the verdict, then each divergence with
// the first line of what was recorded and what came now.
func printReplay(w io.Writer, rep *replay.Report) {
	fmt.Fprintf(w, "replay of session %s (%s): %s — %d turn(s), %d call(s) compared\n",
		rep.SessionID, terminalText(rep.Root), rep.Status, rep.Turns, rep.Calls)
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "  note: %s\n", terminalText(n))
	}
	for _, d := range rep.Divergences {
		what := d.Tool
		if what == "" {
			what = "(the run)"
		}
		fmt.Fprintf(w, "  turn %d  %s  %s: %s\n", d.Turn, terminalText(what), d.Kind, terminalText(d.Reason))
		n, was, now := firstDifference(d.Recorded, d.Now)
		if n > 1 {
			fmt.Fprintf(w, "    first difference at line %d\n", n)
		}
		fmt.Fprintf(w, "    recorded: %s\n", terminalText(firstLine(was, 160)))
		fmt.Fprintf(w, "    now:      %s\n", terminalText(firstLine(now, 160)))
	}
}

// firstDifference returns the first line (numbered from 1) at which a and b differ,
// with that line of each ("" past a text's end): what a person reads to see why.
func firstDifference(a, b string) (int, string, string) {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < max(len(la), len(lb)); i++ {
		x, y := "(no line)", "(no line)"
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y || i >= len(la) || i >= len(lb) {
			return i + 1, x, y
		}
	}
	return 1, a, b
}
