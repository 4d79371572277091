package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/statedir"
)

// openState opens the state directory home (as stateDir resolved it) with its stores.
// The empty home (no --home, no $SEMA_HOME, no user home) is refused here, with the
// flags that name one.
func openState(ctx context.Context, home string) (*statedir.Dir, error) {
	if home == "" {
		return nil, sema.Errorf(statedir.CodeDirInvalid, "no state directory: pass --home DIR or set SEMA_HOME")
	}
	return statedir.Open(ctx, home)
}

// openHome opens the state directory named by --home (or its defaults).
func openHome(ctx context.Context, homeFlag string) (*statedir.Dir, error) {
	dir, err := stateDir(homeFlag)
	if err != nil {
		return nil, err
	}
	return openState(ctx, dir)
}

func newSessionsCmd(stdout io.Writer) *cobra.Command {
	var home string
	cmd := &cobra.Command{Use: "sessions", Short: "List, show and prune stored sessions"}
	cmd.PersistentFlags().StringVar(&home, "home", "", "state directory (default $SEMA_HOME, else ~/.sema)")
	cmd.AddCommand(newSessionsListCmd(&home, stdout), newSessionsShowCmd(&home, stdout), newSessionsPruneCmd(&home, stdout))
	return cmd
}

func newSessionsListCmd(home *string, stdout io.Writer) *cobra.Command {
	var cwd string
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the sessions of this root (--all: of every root), newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openHome(cmd.Context(), *home)
			if err != nil {
				return usageErr(err)
			}
			defer st.Close()
			f := session.Filter{RootsOnly: true}
			if !all {
				root, err := canonicalRoot(cmd.Context(), cwd)
				if err != nil {
					return usageErr(err)
				}
				f.Root = root
			}
			ss, err := st.Sessions().List(cmd.Context(), f)
			if err != nil {
				return &exitErr{code: exitError, err: err}
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tUPDATED\tMODE\tTITLE")
			for _, s := range ss {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.ID, s.UpdatedAt.Local().Format("2006-01-02 15:04"), modeOf(s), s.Title)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "list the sessions of every root")
	cmd.Flags().StringVar(&cwd, "cwd", ".", "the root whose sessions to list")
	return cmd
}

func newSessionsShowCmd(home *string, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Print a session's transcript with its turn numbers",
		Args:  exactlyOne("session id", "sema sessions show SESSION (sema sessions list shows the ids)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openHome(cmd.Context(), *home)
			if err != nil {
				return usageErr(err)
			}
			defer st.Close()
			return showSession(cmd.Context(), st, args[0], stdout)
		},
	}
}

func newSessionsPruneCmd(home *string, stdout io.Writer) *cobra.Command {
	var olderThan string
	cmd := &cobra.Command{
		Use:   "prune --older-than 30d",
		Short: "Delete sessions (and their file history) not updated for a while",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := parseAge(olderThan)
			if err != nil {
				return usageErr(err)
			}
			st, err := openHome(cmd.Context(), *home)
			if err != nil {
				return usageErr(err)
			}
			defer st.Close()
			ids, err := st.Sessions().Prune(cmd.Context(), time.Now().Add(-d))
			if err != nil {
				return &exitErr{code: exitError, err: err}
			}
			for _, id := range ids {
				if err := st.History().Forget(cmd.Context(), id); err != nil {
					return &exitErr{code: exitError, err: err}
				}
			}
			fmt.Fprintf(stdout, "pruned %d sessions\n", len(ids))
			return nil
		},
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "", "age such as 30d, 12h or 90m (required)")
	return cmd
}

// parseAge reads "30d" as well as time.ParseDuration's forms.
func parseAge(s string) (time.Duration, error) {
	if s == "" {
		return 0, sema.Errorf(codeUsage, "give an age with --older-than, such as 30d")
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err == nil && days >= 0 {
			return time.Duration(days) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, sema.Errorf(codeUsage, "cannot read the age %q; use a form like 30d, 12h or 90m", s)
	}
	return d, nil
}

func canonicalRoot(ctx context.Context, dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	c, ok, err := fence.Canonicalize(ctx, env.NewHost(), abs)
	if err != nil || !ok {
		return "", sema.Errorf("config.root_invalid", "the directory %s does not resolve", dir)
	}
	return c, nil
}

// showSession prints a transcript for people: each turn with its number, the text, the
// tool calls and a line of each result.
func showSession(ctx context.Context, st *statedir.Dir, id string, w io.Writer) error {
	s, err := st.Sessions().Get(ctx, id)
	if err != nil {
		return &exitErr{code: exitError, err: err}
	}
	chain, err := st.Sessions().Transcript(ctx, id, "")
	if err != nil {
		return &exitErr{code: exitError, err: err}
	}
	fmt.Fprintf(w, "session %s\nroot    %s\nmode    %s\n", s.ID, s.Root, modeOf(s))
	if s.ForkOf != "" {
		fmt.Fprintf(w, "fork of %s\n", s.ForkOf)
	}
	if s.ParentID != "" {
		fmt.Fprintf(w, "agent of %s (a Task call's child; continue it through that session)\n", s.ParentID)
	}
	if all, err := st.Sessions().List(ctx, session.Filter{Root: s.Root}); err == nil {
		for _, c := range all {
			if c.ParentID == s.ID {
				fmt.Fprintf(w, "agent   %s  %s\n", c.ID, sanitize(c.Title))
			}
		}
	}
	for _, e := range chain {
		switch e.Kind {
		case "user":
			var m model.Message
			json.Unmarshal(e.Payload, &m)
			fmt.Fprintf(w, "\n> %s\n", firstLine(textOf(m.Content), 200))
		case "assistant":
			var a struct {
				Turn    int           `json:"turn"`
				Message model.Message `json:"message"`
			}
			json.Unmarshal(e.Payload, &a)
			fmt.Fprintf(w, "\n[turn %d]\n", a.Turn)
			for _, b := range a.Message.Content {
				switch b.Kind {
				case model.KindText:
					fmt.Fprintln(w, b.Text)
				case model.KindToolUse:
					fmt.Fprintf(w, "  ▸ %s %s\n", b.Name, firstLine(rawJSON(b.Input), 160))
				}
			}
		case "tool_results":
			var m model.Message
			json.Unmarshal(e.Payload, &m)
			for _, b := range m.Content {
				if b.Kind != model.KindToolResult {
					continue
				}
				text := textOf(b.Content)
				mark := "✓"
				if b.IsError {
					mark = "✗"
				} else if exit := failedExit(text); exit != "" {
					mark = "✗ (" + exit + ")"
				}
				fmt.Fprintf(w, "    %s %s\n", mark, firstLine(text, 160))
			}
		case "parked":
			var p struct {
				Checkpoint string `json:"checkpoint"`
			}
			json.Unmarshal(e.Payload, &p)
			fmt.Fprintf(w, "    ⏸ waiting for approval: checkpoint %s\n", p.Checkpoint)
		case "rewind":
			fmt.Fprintf(w, "\n(rewound)\n")
		}
	}
	return nil
}

// modeOf is the permission mode the session runs in: its recorded word, or default when
// no mode was ever asked for (the word is recorded only when one was).
// modeOf is the mode a session's newest leg ran in; where a deployment's policy ran it in
// another mode than it asked for, the word asked for follows ("default (asked auto)").
func modeOf(s session.Session) string {
	asked := s.Mode
	if asked == "" {
		asked = "default"
	}
	if s.EffectiveMode == "" || s.EffectiveMode == asked {
		return asked
	}
	return s.EffectiveMode + " (asked " + asked + ")"
}

// rawJSON shows a stored JSON value as the model wrote it: the store keeps it with
// HTML-safe escapes (\u003c for <, \u003e for >, \u0026 for &), which a person should
// not have to read. Only those three escapes are undone, in place, so the keys keep
// their order and every other escape stays as it was.
func rawJSON(b json.RawMessage) string {
	var out strings.Builder
	s := string(b)
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			out.WriteByte(s[i])
			continue
		}
		if s[i+1] == 'u' && i+6 <= len(s) {
			switch strings.ToLower(s[i+2 : i+6]) {
			case "003c":
				out.WriteByte('<')
				i += 5
				continue
			case "003e":
				out.WriteByte('>')
				i += 5
				continue
			case "0026":
				out.WriteByte('&')
				i += 5
				continue
			}
		}
		out.WriteString(s[i : i+2]) // any other escape, kept whole
		i++
	}
	return out.String()
}

// failedExit reads the exit note the shell tools end a failed command's result with
// ("The command exited with code 2.", "… ended by signal 9 …"). Such a result is not an
// error result for the model — the command ran and its output is the answer — but a
// person reading the transcript should see that it failed.
func failedExit(text string) string {
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "The command ")
		if !ok {
			continue
		}
		if code, ok := strings.CutPrefix(rest, "exited with code "); ok {
			code = strings.TrimSuffix(code, ".")
			if code != "0" {
				return "exit " + code
			}
		}
		if strings.HasPrefix(rest, "ended by signal ") {
			return "signal"
		}
	}
	return ""
}

func textOf(bs []model.Block) string {
	var b strings.Builder
	for _, x := range bs {
		b.WriteString(x.Text)
	}
	return b.String()
}

func firstLine(s string, max int) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

func newRewindCmd(stdout io.Writer) *cobra.Command {
	var home, format string
	var stat, diff bool
	var spec agent.RewindSpec
	cmd := &cobra.Command{
		Use:   "rewind SESSION (--to TURN [--files] [--conversation] | --undo) [--dry-run] [--force]",
		Short: "Return a session's files and/or conversation to the start of a turn, or undo the last rewind",
		Long: `Return a session's files and/or conversation to the start of a turn.

A file whose bytes are no longer what the agent last left there (someone edited it since)
is a conflict: it is shown as a diff and left alone, and the rewind changes nothing unless
--force (overwrite it) or --accept-partial (restore the others). Before changing anything,
a rewind saves every file it will change, so --undo returns them to where they were just
before the most recent rewind (an undo is a rewind too: undoing again redoes).`,
		Args: exactlyOne("session id", "sema rewind SESSION --to N (sema sessions list shows the ids, sema sessions show SESSION the turns)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return usageErr(sema.Errorf(codeUsage, "--output-format is text or json, not %q", format))
			}
			if spec.Undo {
				if cmd.Flags().Changed("to") || spec.Conversation {
					return usageErr(sema.Errorf(codeUsage, "--undo returns the files to where they were before the last rewind; it takes no --to and no --conversation"))
				}
				spec.Files = true
			} else if !cmd.Flags().Changed("to") {
				return usageErr(sema.Errorf(codeUsage, "give the turn to return to with --to N (see `sema sessions show %s`), or undo the last rewind with --undo", args[0]))
			}
			if !spec.Files && !spec.Conversation {
				spec.Files, spec.Conversation = true, true
			}
			// Text shows diffs unless --stat; JSON carries them when --diff asks.
			spec.Diff = (format == "text" && !stat) || (format == "json" && diff)
			st, err := openHome(cmd.Context(), home)
			if err != nil {
				return usageErr(err)
			}
			defer st.Close()
			spec.SessionID = args[0]
			r := agent.New(st.Deps(agent.Deps{}))
			out, err := r.Rewind(cmd.Context(), spec)
			if format == "json" {
				printLedgerJSON(stdout, out, spec.DryRun, err)
			} else if out != nil && out.Ledger != nil {
				printLedger(stdout, out.Ledger, spec, args[0])
			}
			if sema.IsCode(err, session.CodeBusy) {
				return &exitErr{code: exitBusy, err: err}
			}
			if err != nil {
				return &exitErr{code: exitError, err: err}
			}
			if out.Head != "" && format == "text" {
				fmt.Fprintf(stdout, "conversation: the next `sema run --resume %s` continues from the start of turn %d\n", args[0], spec.ToTurn)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&home, "home", "", "state directory (default $SEMA_HOME, else ~/.sema)")
	cmd.Flags().IntVar(&spec.ToTurn, "to", 0, "the turn to return to")
	cmd.Flags().BoolVar(&spec.Files, "files", false, "restore the files (default: files and conversation)")
	cmd.Flags().BoolVar(&spec.Conversation, "conversation", false, "move the conversation back (default: files and conversation)")
	cmd.Flags().BoolVar(&spec.DryRun, "dry-run", false, "show what would change, as a diff per file, and change nothing")
	cmd.Flags().BoolVar(&spec.AcceptPartialRestore, "accept-partial", false, "restore what can be restored when some files conflict")
	cmd.Flags().BoolVar(&spec.Force, "force", false, "overwrite files changed outside the agent too (their bytes are saved first; --undo brings them back)")
	cmd.Flags().BoolVar(&spec.Undo, "undo", false, "return the files to where they were just before the most recent rewind")
	cmd.Flags().BoolVar(&stat, "stat", false, "show line counts per file, no diffs")
	cmd.Flags().BoolVar(&diff, "diff", false, "with --output-format json: include each file's diff")
	cmd.Flags().StringVar(&format, "output-format", "text", "text|json")
	return cmd
}

func printLedger(w io.Writer, l *history.Ledger, spec agent.RewindSpec, id string) {
	var what string
	switch {
	case l.Undo && spec.DryRun:
		what = "an undo of the last rewind would change"
	case l.Undo:
		what = "undo of the last rewind"
	case spec.DryRun:
		what = fmt.Sprintf("a rewind to the start of turn %d would change", l.Turn)
	case l.Applied:
		what = fmt.Sprintf("restored to the start of turn %d", l.Turn)
	default:
		what = fmt.Sprintf("nothing changed; a rewind to the start of turn %d", l.Turn)
	}
	fmt.Fprintf(w, "files (%s):\n", what)
	conflicts := 0
	for _, e := range l.Entries {
		line := fmt.Sprintf("  %-9s %s (+%d -%d)", e.Status, e.Path, e.Added, e.Removed)
		if e.Reason != "" {
			line += ": " + e.Reason
		}
		fmt.Fprintln(w, line)
		if e.Status == history.StatusConflict {
			conflicts++
		}
	}
	// The diffs follow the list: every change on a dry run, and on a real one the
	// conflicts, so the person sees what a --force would overwrite.
	for _, e := range l.Entries {
		if e.Diff != "" && (spec.DryRun || e.Status == history.StatusConflict) {
			fmt.Fprintf(w, "\n%s", e.Diff)
		}
	}
	if conflicts > 0 && !spec.Force {
		fmt.Fprintf(w, "\n%d file(s) changed outside the agent are left alone; `sema rewind %s --force ...` overwrites them (their bytes are saved first, and `sema rewind %s --undo` brings them back)\n", conflicts, id, id)
	}
}

// ledgerJSON is the ledger as `sema rewind --output-format json` prints it.
type ledgerJSON struct {
	Scope   string     `json:"scope,omitempty"`
	Turn    int        `json:"turn"`
	Undo    bool       `json:"undo"`
	DryRun  bool       `json:"dry_run"`
	Applied bool       `json:"applied"`
	Files   []fileJSON `json:"files"`
	Head    string     `json:"head,omitempty"`
	Error   *errorJSON `json:"error,omitempty"`
}

type fileJSON struct {
	Path    string `json:"path"`
	Action  string `json:"action"`
	Reason  string `json:"reason,omitempty"`
	Added   int    `json:"added"`
	Removed int    `json:"removed"`
	Forced  bool   `json:"forced,omitempty"`
	Diff    string `json:"diff,omitempty"`
}

type errorJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func printLedgerJSON(w io.Writer, out *agent.RewindResult, dry bool, err error) {
	doc := ledgerJSON{DryRun: dry, Files: []fileJSON{}}
	if out != nil && out.Ledger != nil {
		l := out.Ledger
		doc.Scope, doc.Turn, doc.Undo, doc.Applied = l.Scope, l.Turn, l.Undo, l.Applied
		for _, e := range l.Entries {
			doc.Files = append(doc.Files, fileJSON{Path: e.Path, Action: string(e.Status), Reason: e.Reason, Added: e.Added, Removed: e.Removed, Forced: e.Forced, Diff: e.Diff})
		}
	}
	if out != nil {
		doc.Head = out.Head
	}
	if err != nil {
		doc.Error = &errorJSON{Code: sema.CodeOf(err), Message: sema.MessageOf(err)}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(doc)
}

// sessionSeats opens the state directory for a run, fills the deployment's three
// state-directory seats from it (Store, History, StateDir) and then the session fields:
// every run records a session; --resume / --continue / --fork-session continue one;
// `sema approve` answers one.
func (o *runOptions) sessionSeats(ctx context.Context, home string, deps *agent.Deps, spec *agent.TaskSpec) (*statedir.Dir, error) {
	st, err := openState(ctx, home)
	if err != nil {
		return nil, usageErr(err)
	}
	*deps = st.Deps(*deps)
	id := o.resume
	if o.continueLast {
		root, err := canonicalRoot(ctx, spec.Root)
		if err != nil {
			st.Close()
			return nil, usageErr(err)
		}
		s, err := st.Sessions().Newest(ctx, root)
		if err != nil {
			st.Close()
			return nil, usageErr(sema.Errorf("session.not_found", "there is no session to continue in %s; start one with `sema run`", root))
		}
		id = s.ID
	}
	if id != "" {
		spec.Resume = &agent.Resume{SessionID: id, Fork: o.forkSession}
	}
	return st, nil
}

func newApproveCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	var opts runOptions
	var checkpoint, edit, reason string
	var allow, deny bool
	cmd := &cobra.Command{
		Use:   "approve SESSION --checkpoint ID --allow|--deny [--edit JSON] [--reason TEXT] [--permission-mode MODE]",
		Short: "Answer a parked question and continue the run (any process, any time later)",
		Long: `Answer a parked question and continue the run (any process, any time later).

The continued run keeps the mode the parked run recorded. Approving a plan review (the
model's ExitPlanMode) leaves plan for the mode the run had before it (none: the settings
files' defaultMode, else default); --permission-mode MODE continues in MODE instead (plan
does not keep an approved plan open). A denied plan review stays in plan.`,
		Args: exactlyOne("session id", "sema approve SESSION --checkpoint ID --allow (the parked run printed both)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if allow == deny {
				return usageErr(sema.Errorf(codeUsage, "say --allow or --deny"))
			}
			if checkpoint == "" {
				return usageErr(sema.Errorf(codeUsage, "name the question with --checkpoint ID (printed when the run parked)"))
			}
			a := &agent.Answer{CheckpointID: checkpoint, Allow: allow, Reason: reason}
			if edit != "" {
				if deny {
					return usageErr(sema.Errorf(codeUsage, "--edit goes with --allow"))
				}
				if !json.Valid([]byte(edit)) {
					return usageErr(sema.Errorf("checkpoint.answer_invalid", "--edit is not valid JSON"))
				}
				a.UpdatedInput = json.RawMessage(edit)
			}
			opts.answer = a
			opts.resume = args[0]
			if !cmd.Flags().Changed("cwd") {
				// The run continues where the session works, wherever approve is run.
				root, err := sessionRoot(cmd.Context(), opts.home, args[0])
				if err != nil {
					return usageErr(err)
				}
				opts.cwd = root
			}
			return runTask(cmd.Context(), &opts, "", stdin, stdout, stderr)
		},
	}
	addRunFlags(cmd, &opts)
	cmd.Flags().StringVar(&checkpoint, "checkpoint", "", "the parked question's checkpoint id")
	cmd.Flags().BoolVar(&allow, "allow", false, "run the parked call")
	cmd.Flags().BoolVar(&deny, "deny", false, "refuse the parked call")
	cmd.Flags().StringVar(&edit, "edit", "", "with --allow: run these JSON arguments instead (the deny rules judge them again)")
	cmd.Flags().StringVar(&reason, "reason", "", "a sentence the model sees")
	return cmd
}

func sessionRoot(ctx context.Context, homeFlag, id string) (string, error) {
	st, err := openHome(ctx, homeFlag)
	if err != nil {
		return "", err
	}
	defer st.Close()
	s, err := st.Sessions().Get(ctx, id)
	if err != nil {
		return "", err
	}
	return s.Root, nil
}
