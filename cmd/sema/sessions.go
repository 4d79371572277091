package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/internal/later"
	"github.com/sema-agent/sema/internal/shellchange"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/session/sqlitedb"
	"github.com/sema-agent/sema/statedir"
)

// storeOptions are the SQLite settings the command line opens its state directory with:
// the defaults (a lock held by another process is waited for up to 10 s). Tests shorten
// the wait.
var storeOptions sqlitedb.Options

// openState opens the state directory home (as stateDir resolved it) with its stores.
// The empty home (no --home, no $SEMA_HOME, no user home) is refused here, with the
// flags that name one. A directory sema cannot use is refused with a sentence that
// names the way out (see wayOut).
func openState(ctx context.Context, home string) (*statedir.Dir, error) {
	if home == "" {
		return nil, noHome()
	}
	st, err := statedir.OpenWith(ctx, home, storeOptions)
	if err != nil {
		return nil, wayOut(err, filepath.Join(home, statedir.DatabaseName))
	}
	return st, nil
}

// noHome refuses a run with no state directory (no --home, no $SEMA_HOME, no user home).
func noHome() error {
	return sema.Errorf(statedir.CodeDirInvalid, "no state directory: pass --home DIR or set SEMA_HOME")
}

// stateOpening is a state directory being opened on its own goroutine, beside the leg's
// preparation, which does not need it (see deferredSeats).
type stateOpening struct {
	home    string
	opening *later.Value[*statedir.Dir]
}

// openStateBeside starts opening home (openState).
func openStateBeside(ctx context.Context, home string) *stateOpening {
	return &stateOpening{home: home, opening: later.Start(func() (*statedir.Dir, error) { return openState(ctx, home) })}
}

// wait waits for the directory. The run that started the opening closes it (close).
func (o *stateOpening) wait() (*statedir.Dir, error) { return o.opening.Wait() }

// close waits for the opening and closes the directory it opened.
func (o *stateOpening) close() {
	if st, _ := o.wait(); st != nil {
		st.Close()
	}
}

// deferredSeats fills the deployment's three state-directory seats for a run that starts
// a new session without waiting for the directory: its stores wait for the opening on
// their first call (session.Deferred, history.Deferred), which a new session makes only
// beside the leg's first request. A --home that names no usable directory is refused
// here, before the run does anything; a database that cannot be opened fails the leg
// with its code (store.locked, store.corrupt, …) where the leg first stores its session.
func (o *stateOpening) deferredSeats(deps agent.Deps) (agent.Deps, error) {
	if o.home == "" {
		return deps, noHome()
	}
	abs, err := statedir.Make(o.home)
	if err != nil {
		return deps, wayOut(err, "")
	}
	deps.Store = session.Deferred(func() (session.Store, error) {
		st, err := o.wait()
		if err != nil {
			return nil, err
		}
		return st.Sessions(), nil
	})
	deps.History = history.Deferred(func() (history.Store, error) {
		st, err := o.wait()
		if err != nil {
			return nil, err
		}
		return st.History(), nil
	})
	deps.StateDir = abs
	return deps, nil
}

// openHome opens the state directory named by --home (or its defaults).
func openHome(ctx context.Context, homeFlag string) (*statedir.Dir, error) {
	dir, err := stateDir(homeFlag)
	if err != nil {
		return nil, err
	}
	return openState(ctx, dir)
}

// anotherHome is the way out every fault of the state directory shares.
const anotherHome = "or choose another state directory with --home DIR or SEMA_HOME=DIR"

// wayOut words a fault of the state directory for the command line: what is wrong with
// which file, that sema left it as it was, and what the person can do — move it aside,
// make it writable, wait for the other process, or use another directory. The code,
// the detail and the cause stay as they were; any other error is returned unchanged.
// path is the database file, for a fault that does not name it.
func wayOut(err error, path string) error {
	se, ok := err.(*sema.Error)
	if !ok {
		return err
	}
	if p, ok := se.Detail["path"].(string); ok && p != "" {
		path = p
	}
	var msg string
	switch se.Code {
	case sqlitedb.CodeCorrupt:
		what, aside := "it is not a sema state database", ".bak"
		switch se.Detail["reason"] {
		case sqlitedb.ReasonNotSQLite:
			what = "it is not a SQLite file"
		case sqlitedb.ReasonForeign:
			what = "it is another program's SQLite database"
		case sqlitedb.ReasonDamaged:
			// The damaged file is evidence, and what it still holds may be recovered
			// (sqlite3's .recover): moved aside, never deleted; the next command then
			// starts a new, empty store.
			what, aside = "it is damaged", ".damaged"
			if d, ok := se.Detail["damage"].(string); ok && d != "" {
				what += " (" + d + ")"
			}
		case sqlitedb.ReasonEmpty:
			what, aside = "it is empty (0 bytes), and a database sema made never is: it lost its contents", ".damaged"
		}
		msg = fmt.Sprintf("the state database %s is not usable: %s; sema has not changed it and writes nothing to it. Move it aside to start a new store (mv %s %s), %s",
			path, what, shellQuote(path), shellQuote(path+aside), anotherHome)
	case sqlitedb.CodeReadOnly:
		msg = fmt.Sprintf("sema cannot write its state at %s (%s); make it writable, %s", path, causeOf(se), anotherHome)
	case sqlitedb.CodeLocked:
		waited, _ := se.Detail["waited"].(string)
		msg = fmt.Sprintf("another sema process holds the state database %s (it stayed locked for %s); try again when that process is done, %s",
			path, orWord(waited, "the busy timeout"), anotherHome)
	case sqlitedb.CodeSchemaTooNew:
		msg = fmt.Sprintf("the state database %s was written by a newer sema (%s); run that version, %s", path, se.Message, anotherHome)
	default:
		return err
	}
	c := *se
	c.Message = msg
	if path == "" {
		return &c
	}
	return c.With("path", path)
}

// causeOf is the text of the error under se ("permission denied"), or se's own message.
func causeOf(se *sema.Error) string {
	if se.Err == nil {
		return se.Message
	}
	var pe *iofs.PathError
	if errors.As(se.Err, &pe) {
		return pe.Err.Error()
	}
	return sema.MessageOf(se.Err)
}

func newSessionsCmd(stdout io.Writer) *cobra.Command {
	var home string
	cmd := &cobra.Command{Use: "sessions", Short: "List, show and prune stored sessions"}
	cmd.PersistentFlags().StringVar(&home, "home", "", "state directory (default $SEMA_HOME, else ~/.sema)")
	cmd.AddCommand(newSessionsListCmd(&home, stdout), newSessionsShowCmd(&home, stdout), newSessionsPruneCmd(&home, stdout))
	return cmd
}

// textOrJSON refuses an --output-format other than text and json.
func textOrJSON(format string) error {
	if format != "text" && format != "json" {
		return usageErr(sema.Errorf("config.output_format_invalid", "unknown output format %q; use text or json", format))
	}
	return nil
}

// printJSON writes v as the command's one JSON object.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// sessionJSON is a session as `sema sessions list|show --output-format json` print it.
// Every field is always present, so a reader needs no defaults of its own.
type sessionJSON struct {
	ID    string `json:"id"`
	Root  string `json:"root"`
	Title string `json:"title"`
	// Mode is the permission mode the session asked for ("default" when none was);
	// EffectiveMode the one its newest leg ran in (a deployment's policy may have
	// folded it).
	Mode          string    `json:"mode"`
	EffectiveMode string    `json:"effective_mode"`
	Model         string    `json:"model"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
	ParentID      string    `json:"parent_id"`
	ForkOf        string    `json:"fork_of"`
}

func toSessionJSON(s session.Session) sessionJSON {
	mode := orWord(s.Mode, "default")
	return sessionJSON{ID: s.ID, Root: s.Root, Title: s.Title, Mode: mode, EffectiveMode: orWord(s.EffectiveMode, mode), Model: s.Model,
		CreatedAt: s.CreatedAt.UTC(), UpdatedAt: s.UpdatedAt.UTC(), ParentID: s.ParentID, ForkOf: s.ForkOf}
}

func newSessionsListCmd(home *string, stdout io.Writer) *cobra.Command {
	var cwd, format string
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the sessions of this root (--all: of every root), newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := textOrJSON(format); err != nil {
				return err
			}
			st, err := openHome(cmd.Context(), *home)
			if err != nil {
				return failed(err)
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
				return failed(wayOut(err, ""))
			}
			if format == "json" {
				doc := struct {
					Sessions []sessionJSON `json:"sessions"`
				}{Sessions: []sessionJSON{}}
				for _, s := range ss {
					doc.Sessions = append(doc.Sessions, toSessionJSON(s))
				}
				return printJSON(stdout, doc)
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tUPDATED\tMODE\tTITLE")
			for _, s := range ss {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.ID, s.UpdatedAt.Local().Format("2006-01-02 15:04"), modeOf(s), sanitize(s.Title))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "list the sessions of every root")
	cmd.Flags().StringVar(&cwd, "cwd", ".", "the root whose sessions to list")
	cmd.Flags().StringVar(&format, "output-format", "text", "text|json")
	return cmd
}

func newSessionsShowCmd(home *string, stdout io.Writer) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Print a session's transcript with its turn numbers",
		Args:  exactlyOne("session id", "sema sessions show SESSION (sema sessions list shows the ids)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := textOrJSON(format); err != nil {
				return err
			}
			st, err := openHome(cmd.Context(), *home)
			if err != nil {
				return failed(err)
			}
			defer st.Close()
			return showSession(cmd.Context(), st, args[0], format, stdout)
		},
	}
	cmd.Flags().StringVar(&format, "output-format", "text", "text|json")
	return cmd
}

// stdinIsTerminal says whether a person can answer a question on stdin (tests stand in
// for the terminal).
var stdinIsTerminal = isTerminal

// pruneJSON is `sema sessions prune --output-format json`: the sessions removed (with
// --dry-run: those that would be), each as list prints it.
type pruneJSON struct {
	DryRun   bool          `json:"dry_run"`
	Sessions []sessionJSON `json:"sessions"`
}

func newSessionsPruneCmd(home *string, stdout io.Writer) *cobra.Command {
	var olderThan, format string
	var dryRun, yes bool
	cmd := &cobra.Command{
		Use:   "prune --older-than 30d [--dry-run] [--yes]",
		Short: "Delete sessions (and their file history) not updated for a while",
		Long: `Delete the sessions (of every root) not updated for a while, with their file history.

--dry-run lists what would be removed and removes nothing. At a terminal, prune asks
"Remove N sessions? [y/N]" on stderr first; --yes skips the question. When stdin is not a
terminal (a script, cron, CI) nobody can answer, so prune removes what --older-than selects
without asking, as the command has always done.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := textOrJSON(format); err != nil {
				return err
			}
			d, err := parseAge(olderThan)
			if err != nil {
				return usageErr(err)
			}
			st, err := openHome(cmd.Context(), *home)
			if err != nil {
				return failed(err)
			}
			defer st.Close()
			// Prune removes the sessions whose last activity is before the cutoff; that
			// activity only moves forward, so Prune at the same cutoff removes at most
			// the sessions listed here.
			cutoff := time.Now().Add(-d)
			all, err := st.Sessions().List(cmd.Context(), session.Filter{})
			if err != nil {
				return failed(wayOut(err, ""))
			}
			var old []session.Session
			for _, s := range all {
				if s.UpdatedAt.Before(cutoff) {
					old = append(old, s)
				}
			}
			doc := pruneJSON{DryRun: dryRun, Sessions: []sessionJSON{}}
			if dryRun && format == "json" {
				for _, s := range old {
					doc.Sessions = append(doc.Sessions, toSessionJSON(s))
				}
				return printJSON(stdout, doc)
			}
			if dryRun {
				tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tUPDATED\tROOT\tTITLE")
				for _, s := range old {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.ID, s.UpdatedAt.Local().Format("2006-01-02 15:04"), sanitize(s.Root), sanitize(s.Title))
				}
				tw.Flush()
				fmt.Fprintf(stdout, "would prune %s (--dry-run: nothing was removed)\n", count(len(old), "session"))
				return nil
			}
			if len(old) > 0 && !yes && stdinIsTerminal(cmd.InOrStdin()) {
				fmt.Fprintf(cmd.ErrOrStderr(), "Remove %s? [y/N] ", count(len(old), "session"))
				answer, _ := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
				if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
					fmt.Fprintln(cmd.ErrOrStderr(), "nothing was removed")
					if format == "json" {
						return printJSON(stdout, doc)
					}
					return nil
				}
			}
			ids, err := st.Sessions().Prune(cmd.Context(), cutoff)
			if err != nil {
				return failed(wayOut(err, ""))
			}
			for _, id := range ids {
				if err := st.History().Forget(cmd.Context(), id); err != nil {
					return failed(wayOut(err, ""))
				}
				if err := shellchange.ForgetStages(st.Path(), id); err != nil {
					return failed(wayOut(err, ""))
				}
			}
			if format == "json" {
				for _, s := range old {
					if slices.Contains(ids, s.ID) {
						doc.Sessions = append(doc.Sessions, toSessionJSON(s))
					}
				}
				return printJSON(stdout, doc)
			}
			fmt.Fprintf(stdout, "pruned %d sessions\n", len(ids))
			return nil
		},
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "", "age such as 30d, 12h or 90m (required)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list the sessions that would be removed, and remove nothing")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "remove without asking, also at a terminal")
	cmd.Flags().StringVar(&format, "output-format", "text", "text|json")
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

// shownEntry is one transcript entry as `sema sessions show` presents it, decoded once
// for both formats. Kinds the show leaves out (read state, notes for the runner) have
// none.
type shownEntry struct {
	// Type is "user", "assistant", "tool_result", "parked" or "rewind".
	Type       string
	Turn       int
	Text       string        // user: the prompt; tool_result: the result's text
	Images     []model.Block // user: the images attached to the prompt
	Blocks     []model.Block // assistant: the response
	ToolUseID  string        // tool_result: the call it answers
	IsError    bool          // tool_result
	Checkpoint string        // parked: the question's checkpoint
}

// shownEntries decodes a transcript chain; each entry carries the turn of the newest
// assistant entry at or before it.
func shownEntries(chain []session.Entry) []shownEntry {
	var out []shownEntry
	turn := 0
	for _, e := range chain {
		switch e.Kind {
		case "user":
			var m model.Message
			json.Unmarshal(e.Payload, &m)
			var images []model.Block
			for _, b := range m.Content {
				if b.Kind == model.KindImage {
					images = append(images, b)
				}
			}
			out = append(out, shownEntry{Type: "user", Turn: turn, Text: textOf(m.Content), Images: images})
		case "assistant":
			var a struct {
				Turn    int           `json:"turn"`
				Message model.Message `json:"message"`
			}
			json.Unmarshal(e.Payload, &a)
			turn = a.Turn
			out = append(out, shownEntry{Type: "assistant", Turn: turn, Blocks: a.Message.Content})
		case "tool_results":
			var m model.Message
			json.Unmarshal(e.Payload, &m)
			for _, b := range m.Content {
				if b.Kind == model.KindToolResult {
					out = append(out, shownEntry{Type: "tool_result", Turn: turn, Text: textOf(b.Content), ToolUseID: b.ID, IsError: b.IsError})
				}
			}
		case "parked":
			var p struct {
				Checkpoint string `json:"checkpoint"`
			}
			json.Unmarshal(e.Payload, &p)
			out = append(out, shownEntry{Type: "parked", Turn: turn, Checkpoint: p.Checkpoint})
		case "rewind":
			out = append(out, shownEntry{Type: "rewind", Turn: turn})
		}
	}
	return out
}

// showSession prints a session: for people (text) each turn with its number, the text,
// the tool calls and a line of each result; for programs (json) one object with the
// session, its agents and every entry in full.
func showSession(ctx context.Context, st *statedir.Dir, id, format string, w io.Writer) error {
	w = utf8Out(w, format)
	s, err := st.Sessions().Get(ctx, id)
	if err != nil {
		return failed(wayOut(err, ""))
	}
	chain, err := st.Sessions().Transcript(ctx, id, "")
	if err != nil {
		return failed(wayOut(err, ""))
	}
	var agents []session.Session
	if all, err := st.Sessions().List(ctx, session.Filter{Root: s.Root}); err == nil {
		for _, c := range all {
			if c.ParentID == s.ID {
				agents = append(agents, c)
			}
		}
	}
	entries := shownEntries(chain)
	if format == "json" {
		return printJSON(w, showJSON(s, agents, entries))
	}
	fmt.Fprintf(w, "session %s\nroot    %s\nmode    %s\n", s.ID, s.Root, modeOf(s))
	if s.ForkOf != "" {
		fmt.Fprintf(w, "fork of %s\n", s.ForkOf)
	}
	if s.ParentID != "" {
		fmt.Fprintf(w, "agent of %s (a Task call's child; continue it through that session)\n", s.ParentID)
	}
	for _, c := range agents {
		fmt.Fprintf(w, "agent   %s  %s\n", c.ID, sanitize(c.Title))
	}
	for _, e := range entries {
		switch e.Type {
		case "user":
			fmt.Fprintf(w, "\n> %s\n", firstLine(e.Text, 200))
			for _, img := range e.Images {
				fmt.Fprintf(w, "  [image: %s, %d bytes]\n", img.MediaType, len(img.Data))
			}
		case "assistant":
			fmt.Fprintf(w, "\n[turn %d]\n", e.Turn)
			for _, b := range e.Blocks {
				switch b.Kind {
				case model.KindText:
					fmt.Fprintln(w, b.Text)
				case model.KindToolUse:
					fmt.Fprintf(w, "  ▸ %s %s\n", b.Name, firstLine(rawJSON(b.Input), 160))
				}
			}
		case "tool_result":
			mark := "✓"
			if e.IsError {
				mark = "✗"
			} else if exit := failedExit(e.Text); exit != "" {
				mark = "✗ (" + exit + ")"
			}
			fmt.Fprintf(w, "    %s %s\n", mark, firstLine(e.Text, 160))
		case "parked":
			fmt.Fprintf(w, "    ⏸ waiting for approval: checkpoint %s\n", e.Checkpoint)
		case "rewind":
			fmt.Fprintf(w, "\n(rewound)\n")
		}
	}
	return nil
}

// showJSON is `sema sessions show --output-format json`: the session (as list prints
// it), its delegated agents, the number of its newest turn, and its entries in
// transcript order, named as stream-json names its lines:
//
//	{"type":"user","turn","text","images"?:[{"media_type","bytes"}]}
//	{"type":"assistant","turn","message":{"role":"assistant","content":[blocks]}}
//	{"type":"tool_result","turn","tool_use_id","is_error","content"}
//	{"type":"parked","turn","checkpoint"}
//	{"type":"rewind","turn"}
//
// turn is the number of the newest response at that point in the transcript: an
// assistant entry's own, its tool results', and for a prompt the turn before it (0
// before the first response).
func showJSON(s session.Session, agents []session.Session, entries []shownEntry) any {
	type agentJSON struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	doc := struct {
		Session sessionJSON      `json:"session"`
		Agents  []agentJSON      `json:"agents"`
		Turns   int              `json:"turns"`
		Entries []map[string]any `json:"entries"`
	}{Session: toSessionJSON(s), Agents: []agentJSON{}, Entries: []map[string]any{}}
	for _, a := range agents {
		doc.Agents = append(doc.Agents, agentJSON{ID: a.ID, Title: a.Title})
	}
	for _, e := range entries {
		obj := map[string]any{"type": e.Type, "turn": e.Turn}
		switch e.Type {
		case "user":
			obj["text"] = e.Text
			if len(e.Images) > 0 {
				var imgs []map[string]any
				for _, img := range e.Images {
					imgs = append(imgs, map[string]any{"media_type": img.MediaType, "bytes": len(img.Data)})
				}
				obj["images"] = imgs
			}
		case "assistant":
			obj["message"] = map[string]any{"role": "assistant", "content": wireBlocks(e.Blocks)}
			doc.Turns = max(doc.Turns, e.Turn)
		case "tool_result":
			obj["tool_use_id"], obj["is_error"], obj["content"] = e.ToolUseID, e.IsError, e.Text
		case "parked":
			obj["checkpoint"] = e.Checkpoint
		}
		doc.Entries = append(doc.Entries, obj)
	}
	return doc
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
		// Cut at the start of a character, never inside one.
		for max > 0 && !utf8.RuneStart(s[max]) {
			max--
		}
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
			if err := textOrJSON(format); err != nil {
				return err
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
			lease, err := sessionLease()
			if err != nil {
				return usageErr(err)
			}
			st, err := openHome(cmd.Context(), home)
			if err != nil {
				return failed(err)
			}
			defer st.Close()
			spec.SessionID = args[0]
			r := agent.New(agent.Deps{SessionLease: lease}.WithStateDir(st))
			out, err := r.Rewind(cmd.Context(), spec)
			if err == nil && !spec.DryRun && out != nil && out.Ledger != nil {
				// An accepted partial restore is still not a restore of everything: a file
				// whose earlier contents were never kept is named, and the exit says so.
				err = unrestored(out.Ledger)
			}
			code := exitCode(err, exitError)
			if code == exitUsage {
				// A refused request (no such session or turn): the refusal, in JSON too,
				// is the one every command prints.
				return failed(err)
			}
			if format == "json" {
				printLedgerJSON(stdout, out, spec.DryRun, err)
			} else if out != nil && out.Ledger != nil {
				if len(out.Recovered) > 0 {
					fmt.Fprintf(stdout, "recorded first: %d file(s) a shell command changed before its process was killed: %s\n", len(out.Recovered), strings.Join(out.Recovered, ", "))
				}
				printLedger(stdout, out.Ledger, spec, args[0])
			}
			if err != nil {
				return &exitErr{code: code, err: wayOut(err, "")}
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
	cmd.Flags().BoolVar(&spec.Wait, "wait", false, "if a run is continuing the session, wait for it to end instead of exiting 5 (session.busy)")
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
	case l.Applied && l.Count(history.StatusFailed) > 0:
		what = fmt.Sprintf("partly restored to the start of turn %d", l.Turn)
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
	if n := l.Count(history.StatusFailed); n > 0 {
		fmt.Fprintf(w, "\n%d file(s) could not be restored (see the reasons above); the others are as listed\n", n)
	}
	if conflicts > 0 && !spec.Force {
		fmt.Fprintf(w, "\n%d file(s) changed outside the agent are left alone; `sema rewind %s --force ...` overwrites them (their bytes are saved first, and `sema rewind %s --undo` brings them back)\n", conflicts, id, id)
	}
}

// unrestored refuses a ledger with files a rewind could not restore, naming them.
func unrestored(l *history.Ledger) error {
	var failed []string
	for _, e := range l.Entries {
		if e.Status == history.StatusFailed {
			failed = append(failed, e.Path)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return sema.Errorf(history.CodePartialRestore, "%d file(s) could not be restored: %s; the others were", len(failed), strings.Join(failed, ", ")).
		With("failed", failed).With("applied", l.Applied)
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
	// Recovered are the files a killed shell command had changed, recorded first.
	Recovered []string   `json:"recovered,omitempty"`
	Error     *errorJSON `json:"error,omitempty"`
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
		doc.Head, doc.Recovered = out.Head, out.Recovered
	}
	if err != nil {
		doc.Error = &errorJSON{Code: sema.CodeOf(err), Message: sema.MessageOf(err)}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(doc)
}

// sessionSeats opens the state directory for a run (open), fills the deployment's three
// state-directory seats from it (Store, History, StateDir) and then the session fields:
// every run records a session; --resume / --continue / --fork-session continue one;
// `sema approve` answers one.
func (o *runOptions) sessionSeats(ctx context.Context, open func() (*statedir.Dir, error), deps *agent.Deps, spec *agent.TaskSpec) (*statedir.Dir, error) {
	st, err := open()
	if err != nil {
		return nil, failed(err)
	}
	*deps = deps.WithStateDir(st)
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
		Use:   "approve SESSION --checkpoint ID --allow|--deny [--edit JSON] [--reason TEXT] [--permission-mode MODE] [--max-tokens-total N] [--max-budget-usd USD]",
		Short: "Answer a parked question and continue the run (any process, any time later)",
		Long: `Answer a parked question and continue the run (any process, any time later).

The continued run keeps the mode the parked run recorded. Approving a plan review (the
model's ExitPlanMode) leaves plan for the mode the run had before it (none: the settings
files' defaultMode, else default); --permission-mode MODE continues in MODE instead (plan
does not keep an approved plan open). A denied plan review stays in plan.

A budget question (a run under --on-ask park that would pass --max-tokens-total or
--max-budget-usd) is allowed with a higher limit: --allow --max-tokens-total N (or
--max-budget-usd USD) above what the run spent continues it under that limit; --deny
ends it as budget_exceeded.`,
		Args: exactlyOne("session id", "sema approve SESSION --checkpoint ID --allow (the parked run printed both)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if allow && deny {
				return usageErr(sema.Errorf(codeUsage, "--allow and --deny both answer the question; give one"))
			}
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
			if a.Budget = budgetRaise(cmd.Context(), cmd, &opts, checkpoint); a.Budget != nil && deny {
				return usageErr(sema.Errorf(codeUsage, "a new budget goes with --allow; --deny ends the run"))
			}
			opts.answer = a
			opts.resume = args[0]
			if !cmd.Flags().Changed("cwd") {
				// The run continues where the session works, wherever approve is run.
				root, err := sessionRoot(cmd.Context(), opts.home, args[0])
				if err != nil {
					return failed(err)
				}
				opts.cwd = root
			}
			return runTask(cmd.Context(), &opts, "", stdin, stdout, stderr)
		},
	}
	addRunFlags(cmd, &opts)
	// Two run flags mean something of their own here, where the session is the one named.
	cmd.Flags().Lookup("fork-session").Usage = "continue in a new session forked from this one; the question is answered once, in the fork"
	cmd.Flags().Lookup("wait").Usage = "if another run is continuing the session, wait for it to end instead of exiting 5 (session.busy)"
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
