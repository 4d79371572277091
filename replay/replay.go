// Package replay replays a recorded session offline, as a regression test of the
// prompts, permissions and hooks around it: the model's turns come from the session's
// transcript (no provider, no key, no network), and every tool call runs again for real
// — through today's permission gate, hooks and sandbox — in a scratch copy of the
// workspace, and its result is compared with the one recorded.
//
// The scratch copy is the session's root as it is now, with every file the session
// changed put back as the session first found it (its earliest file-history record).
// The workspace itself is never written: the copy is made first, the recorded calls'
// inputs name the copy instead of the workspace, and the run's roots are the copy's.
// The replay's own session and file history live in memory and are dropped.
//
// What is compared, and what is not:
//   - Each recorded call's result text and error flag, after a Normaliser (the scratch
//     path, times, durations, UUIDs, temporary names) on both sides.
//   - A call now refused, or now asked (nobody answers a question in a replay: it is
//     denied) is a divergence that says so, with the refusal's reason.
//   - A leg that ends early (a hook blocks the prompt, an error), or asks the model for a
//     turn the session did not record (a Stop hook that now sends it back), is a
//     divergence of the run.
//   - The model's text is not compared: it is the record's.
//   - A subagent (the Task tool) is replayed from its own session's transcript, as a
//     thread of the script told apart by its prompt; its calls are compared too. A
//     subagent that delegated again is refused (CodeSubagents).
//   - Nothing but the record answers as the model: auto mode's classifier is not wired
//     (auto replays as default), and WebFetch is off and its calls are not compared.
package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/internal/transcript"
	"github.com/sema-agent/sema/model"
	modelreplay "github.com/sema-agent/sema/model/replay"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
)

// Codes of a replay's refusals and its verdict.
const (
	// CodeDiverged is the verdict of a replay whose results differ from the record.
	CodeDiverged = "replay.diverged"
	// CodeNoTurns refuses a session in which the model never answered.
	CodeNoTurns = "replay.no_turns"
	// CodeAtInvalid refuses an At that is no turn of the session.
	CodeAtInvalid = "replay.at_invalid"
	// CodeScratchInvalid refuses a scratch directory that is not empty, or overlaps the
	// workspace.
	CodeScratchInvalid = "replay.scratch_invalid"
	// CodeWorkspaceTooLarge refuses a workspace over the copy's bounds.
	CodeWorkspaceTooLarge = "replay.workspace_too_large"
	// CodeRootMissing refuses a session whose workspace is gone.
	CodeRootMissing = "replay.root_missing"
	// CodeSubagents refuses a session whose subagents a replay cannot serve: nested
	// delegation, or a subagent's prompt inside the session's own.
	CodeSubagents = "replay.subagents_unsupported"
	// CodeTranscriptUnreadable refuses a transcript entry that does not decode.
	CodeTranscriptUnreadable = "replay.transcript_unreadable"
)

// The kinds of a divergence.
const (
	KindResult  = "result"  // the call ran and answered otherwise
	KindRefused = "refused" // the call is now refused
	KindAsked   = "asked"   // the call now asks a person (and a replay answers no)
	KindNotRun  = "not_run" // the replay ended before the call
	KindRun     = "run"     // the leg itself went otherwise (no call of its own)
)

// Options say what to replay and with what the run is made.
type Options struct {
	// Sessions holds the recorded session; it is only read.
	Sessions session.Store
	// History holds the session's file history; it is only read. Nil: the files are
	// copied as they are now, none put back.
	History history.Store
	// SessionID is the session to replay.
	SessionID string
	// At replays the turns up to and including this one; 0: every turn.
	At int
	// Scratch is the directory the replay copies the workspace into and runs in: it
	// must be empty or missing, and is kept afterwards. Empty: a temporary directory,
	// removed afterwards.
	Scratch string
	// MaxBytes bounds the workspace's copy; 0: DefaultMaxBytes.
	MaxBytes int64
	// Deps are the runner's seats as the command line would fill them for a run in the
	// session's root: settings, hooks, policy, shell. Provider, Store, History and
	// Approver are the replay's own.
	Deps agent.Deps
	// Spec is the task as the command line would make it: permission mode and rules,
	// sandbox, limits. Root, Prompt, Resume and OnAsk are the replay's own; an empty
	// PermissionMode is the mode the session recorded.
	Spec agent.TaskSpec
}

// Divergence is one way the replay went otherwise than the record.
type Divergence struct {
	// Turn is the session-wide number of the turn.
	Turn int `json:"turn"`
	// Tool is the called tool; empty for a divergence of the run (KindRun).
	Tool string `json:"tool"`
	// ToolUseID is the model's id of the call.
	ToolUseID string `json:"tool_use_id,omitempty"`
	// Subagent is the id of the Task call whose subagent made the call; empty for the
	// session's own calls.
	Subagent string `json:"subagent,omitempty"`
	// Kind is one of KindResult, KindRefused, KindAsked, KindNotRun, KindRun.
	Kind string `json:"kind"`
	// Recorded is the recorded result, normalised (for the run: its recorded turns).
	Recorded string `json:"recorded"`
	// Now is the replayed result, normalised (for the run: how the leg ended).
	Now string `json:"now"`
	// Reason says what differs, in a sentence.
	Reason string `json:"reason"`
}

// Report is a replay's outcome.
type Report struct {
	// Status is "identical" or "diverged".
	Status string `json:"status"`
	// SessionID names the session replayed.
	SessionID string `json:"session_id"`
	// Root is the workspace the session recorded.
	Root string `json:"root"`
	// Turns is the number of the last turn replayed.
	Turns int `json:"turns"`
	// Calls is the number of recorded calls compared.
	Calls int `json:"calls"`
	// Scratch is the directory the replay ran in (removed afterwards unless given).
	Scratch string `json:"scratch"`
	// Restored are the files put back as the session found them, relative to Root.
	Restored []string `json:"restored"`
	// Notes say what the replay could not reproduce (a file outside the workspace, a
	// pre-image not kept).
	Notes []string `json:"notes"`
	// Divergences are every divergence, in turn order.
	Divergences []Divergence `json:"divergences"`
}

// Err is the report's verdict as an error: nil when identical, else CodeDiverged
// naming the first divergence and the count.
func (r *Report) Err() error {
	if len(r.Divergences) == 0 {
		return nil
	}
	d := r.Divergences[0]
	what := "the run"
	if d.Tool != "" {
		what = d.Tool
	}
	return sema.Errorf(CodeDiverged, "the replay of session %s diverged %d time(s), first at turn %d (%s): %s", r.SessionID, len(r.Divergences), d.Turn, what, d.Reason).
		With("divergences", len(r.Divergences))
}

// Run replays the session opts names and reports how it compared. An error means the
// replay could not be made (a refusal by code, or a failure of the machine); a
// divergence is in the report, not an error.
func Run(ctx context.Context, opts Options) (*Report, error) {
	rec, err := Load(ctx, opts.Sessions, opts.SessionID, opts.At)
	if err != nil {
		return nil, err
	}
	return rec.Replay(ctx, opts)
}

// Replay runs rec as opts say (opts' Sessions, SessionID and At are not read again).
func (rec *Recording) Replay(ctx context.Context, opts Options) (*Report, error) {
	root := rec.Session.Root
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return nil, sema.Errorf(CodeRootMissing, "the session's workspace %s is gone; a replay copies it, so restore it first", root).With("root", root)
	}
	scratch := opts.Scratch
	if scratch == "" {
		dir, err := os.MkdirTemp("", "sema-replay-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		scratch = dir
	} else if err := scratchDir(scratch, root); err != nil {
		return nil, err
	}
	scratch, err := filepath.Abs(scratch)
	if err != nil {
		return nil, err
	}
	maxBytes := opts.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	setDirTimes, err := copyTree(ctx, root, scratch, opts.Deps.StateDir, maxBytes)
	if err != nil {
		return nil, err
	}
	rep := &Report{SessionID: rec.Session.ID, Root: root, Turns: rec.Turns, Scratch: scratch, Restored: []string{}, Notes: []string{}, Divergences: []Divergence{}}
	if opts.History != nil {
		restored, notes, err := restoreBefore(ctx, opts.History, rec.Session.HistoryScope(), root, scratch)
		if err != nil {
			return nil, err
		}
		rep.Restored, rep.Notes = append(rep.Restored, restored...), append(rep.Notes, notes...)
	}
	setDirTimes()
	norm := NewNormaliser(root, scratch)
	deps := opts.Deps
	deps.Store, deps.History, deps.Approver = session.NewMemory(), history.NewMemory(), nil
	// Nothing but the record answers as the model: auto mode's classifier (a model
	// request) is not wired, so auto replays as default; WebFetch, which would reach the
	// network and ask the model about the page, is off, and its calls are not compared.
	deps.Classifier = permission.NoClassifier
	webFetch := agent.WebFetchOptions{}
	if deps.WebFetch != nil {
		webFetch = *deps.WebFetch
	}
	webFetch.Off = true
	deps.WebFetch = &webFetch
	sid := ""
	for i, leg := range rec.Legs {
		spec := opts.Spec
		spec.Root, spec.Prompt, spec.OnAsk, spec.Model, spec.Resume = scratch, leg.Prompt, agent.OnAskDeny, "replay", nil
		if i == 0 && spec.PermissionMode == "" && rec.Session.Mode != "" {
			spec.PermissionMode = permission.Mode(rec.Session.Mode)
		}
		if sid != "" {
			spec.Resume = &agent.Resume{SessionID: sid}
			if opts.Spec.PermissionMode == "" {
				spec.PermissionMode = "" // the mode the replay's session carries on
			}
		}
		if spec.Prompt == "" {
			spec.Prompt = "(the session's first leg had no prompt)"
		}
		got, err := runLeg(ctx, deps, spec, leg, root, scratch)
		if err != nil {
			return nil, err
		}
		sid = got.sessionID
		rep.Calls += compare(rep, leg, rec.Results, got, norm)
	}
	rep.Status = "identical"
	if len(rep.Divergences) > 0 {
		rep.Status = "diverged"
	}
	return rep, nil
}

// legRun is what one replayed leg did.
type legRun struct {
	sessionID string
	results   map[string]Result
	denials   map[string]agent.PermissionDenial
	asked     map[string]string // tool_use id → the question's sentence
	status    sema.Status
	err       *sema.Error
	remaining int // recorded turns the leg never asked for
	exhausted bool
}

// runLeg runs one leg of the recording on its script and collects what each call
// answered and how the permission gate judged it.
func runLeg(ctx context.Context, deps agent.Deps, spec agent.TaskSpec, leg Leg, root, scratch string) (*legRun, error) {
	script := scripted.Script{Turns: retargetTurns(leg.Turns, root, scratch)}
	if leg.Cut {
		// The record has no answer after these calls; the leg ends here.
		script.Turns = append(script.Turns, scripted.Turn{Text: "(the replay ends here)"})
	}
	// Each subagent's turns are a thread of the script, told apart by its prompt; two
	// with the same prompt ran one after the other, and share one thread in that order.
	for _, c := range leg.Children {
		i := slices.IndexFunc(script.Threads, func(t scripted.Thread) bool { return t.Match == c.Prompt })
		if i < 0 {
			script.Threads = append(script.Threads, scripted.Thread{Match: c.Prompt})
			i = len(script.Threads) - 1
		}
		script.Threads[i].Turns = append(script.Threads[i].Turns, retargetTurns(c.Turns, root, scratch)...)
	}
	var remaining func() int
	if len(script.Threads) == 0 {
		p := modelreplay.New(script)
		deps.Provider, remaining = p, p.Remaining
	} else {
		// The scripted provider serves threads; the turns left of the leg's own
		// conversation are its turns less the requests no thread answered.
		p := scripted.New(script)
		deps.Provider = p
		remaining = func() int {
			n := len(script.Turns)
			for _, r := range p.Requests() {
				if !threadRequest(r, script.Threads) {
					n--
				}
			}
			return max(n, 0)
		}
	}
	out := &legRun{results: map[string]Result{}, denials: map[string]agent.PermissionDenial{}, asked: map[string]string{}}
	var lastQuestion *agent.PermissionQuestion
	var res *agent.TaskResult
	for ev, err := range agent.New(deps).Events(ctx, spec) {
		if err != nil {
			return nil, err
		}
		switch ev.Type {
		case agent.EventPermission:
			switch {
			case ev.Question != nil:
				lastQuestion = ev.Question
			case ev.Denial != nil:
				d := *ev.Denial
				out.denials[d.ToolUseID] = d
				if lastQuestion != nil && lastQuestion.Tool == d.Tool {
					out.asked[d.ToolUseID] = lastQuestion.Message
				}
				lastQuestion = nil
			}
		case agent.EventToolResult:
			lastQuestion = nil
		case agent.EventResult:
			if ev.ParentToolUseID == "" {
				res = ev.Result
			}
		}
	}
	if res == nil {
		return nil, fmt.Errorf("the replayed leg ended without a result")
	}
	out.sessionID, out.status, out.err = res.SessionID, res.Status, res.Error
	out.remaining = remaining()
	if leg.Cut && out.remaining > 0 {
		out.remaining-- // the replay's own last turn
	}
	out.exhausted = res.Error != nil && res.Error.Code == scripted.CodeExhausted
	if res.SessionID != "" {
		chain, err := deps.Store.Transcript(ctx, res.SessionID, "")
		if err != nil {
			return nil, err
		}
		out.results = resultsOfChain(chain)
		if len(leg.Children) > 0 {
			// The subagents' sessions are the replay session's children.
			if err := childResults(ctx, deps.Store, res.SessionID, out.results); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// retargetTurns copies turns with their calls' inputs naming scratch where they named
// root.
func retargetTurns(turns []scripted.Turn, root, scratch string) []scripted.Turn {
	out := make([]scripted.Turn, 0, len(turns)+1)
	for _, t := range turns {
		t.ToolCalls = slices.Clone(t.ToolCalls)
		for j := range t.ToolCalls {
			t.ToolCalls[j].Input = retarget(t.ToolCalls[j].Input, root, scratch)
		}
		out = append(out, t)
	}
	return out
}

// threadRequest reports whether a thread of the script answers r, as the scripted
// provider decides: its first user message holds the thread's Match.
func threadRequest(r *model.Request, threads []scripted.Thread) bool {
	for _, m := range r.Messages {
		if m.Role != model.RoleUser {
			continue
		}
		var b strings.Builder
		for _, bl := range m.Content {
			if bl.Kind == model.KindText {
				b.WriteString(bl.Text)
			}
		}
		first := b.String()
		return slices.ContainsFunc(threads, func(t scripted.Thread) bool { return strings.Contains(first, t.Match) })
	}
	return false
}

// childResults adds the tool results of the child sessions of session id in store to
// results.
func childResults(ctx context.Context, store session.Store, id string, results map[string]Result) error {
	admin, err := session.AsAdmin(store)
	if err != nil {
		return err
	}
	all, err := admin.List(ctx, session.Filter{})
	if err != nil {
		return err
	}
	for _, s := range all {
		if s.ParentID != id {
			continue
		}
		chain, err := store.Transcript(ctx, s.ID, "")
		if err != nil {
			return err
		}
		for k, v := range resultsOfChain(chain) {
			results[k] = v
		}
	}
	return nil
}

// compare adds the divergences of one leg to rep and returns the number of calls it
// compared.
func compare(rep *Report, leg Leg, recorded map[string]Result, got *legRun, norm *Normaliser) int {
	type subCall struct {
		Call
		task string
	}
	calls := make([]subCall, 0, len(leg.Calls))
	for _, c := range leg.Calls {
		calls = append(calls, subCall{Call: c})
	}
	for _, ch := range leg.Children {
		for _, c := range ch.Calls {
			calls = append(calls, subCall{Call: c, task: ch.TaskID})
		}
	}
	// A subagent's calls come after the Task call that made them.
	slices.SortStableFunc(calls, func(a, b subCall) int { return a.Turn - b.Turn })
	compared := 0
	for _, sc := range calls {
		c := sc.Call
		if c.Tool == webFetchTool {
			rep.Notes = append(rep.Notes, fmt.Sprintf("turn %d: WebFetch is not replayed (it would reach the network and ask the model); its call %s was not compared", c.Turn, c.ID))
			continue
		}
		compared++
		was, ok := recorded[c.ID]
		if !ok {
			was = Result{Text: "(no result was recorded)", IsError: true}
		}
		d := Divergence{Turn: c.Turn, Tool: c.Tool, ToolUseID: c.ID, Subagent: sc.task}
		now, ran := got.results[c.ID]
		if ran && now.IsError == was.IsError && norm.Same(now.Text, was.Text) {
			continue
		}
		d.Recorded = norm.Text(was.Text)
		if !ran {
			d.Kind, d.Reason = KindNotRun, "the replay ended before this call"
			rep.Divergences = append(rep.Divergences, d)
			continue
		}
		d.Now = norm.Text(now.Text)
		if d.Now == d.Recorded && now.IsError == was.IsError {
			continue
		}
		denial, denied := got.denials[c.ID]
		question, asked := got.asked[c.ID]
		switch {
		case asked:
			d.Kind, d.Reason = KindAsked, "the call now asks for permission, and nobody answers in a replay: "+oneLine(question)
		case denied:
			d.Kind, d.Reason = KindRefused, "the call is now refused: "+oneLine(denial.Reason)
		case now.IsError && !was.IsError:
			d.Kind, d.Reason = KindResult, "the call now fails"
		case !now.IsError && was.IsError:
			d.Kind, d.Reason = KindResult, "the call failed in the record and now succeeds"
		default:
			d.Kind, d.Reason = KindResult, "the result differs"
		}
		rep.Divergences = append(rep.Divergences, d)
	}
	if d, ok := legDivergence(leg, got); ok {
		rep.Divergences = append(rep.Divergences, d)
	}
	return compared
}

// webFetchTool is the tool a replay does not run.
const webFetchTool = "WebFetch"

// legDivergence is how a leg itself went otherwise: it ended before its recorded turns,
// or asked for one the session did not record, or ended in an error.
func legDivergence(leg Leg, got *legRun) (Divergence, bool) {
	last := leg.Numbers[len(leg.Numbers)-1]
	d := Divergence{Kind: KindRun, Recorded: fmt.Sprintf("%d turn(s), to turn %d", len(leg.Turns), last)}
	ended := string(got.status)
	if got.err != nil {
		ended += ": " + got.err.Message + " (" + got.err.Code + ")"
	}
	d.Now = ended
	switch {
	case got.exhausted:
		d.Turn = last + 1
		d.Reason = fmt.Sprintf("the run asked the model for a turn after turn %d that the session did not record (a hook now sends it back to work?)", last)
	case got.remaining > 0:
		d.Turn = leg.Numbers[len(leg.Numbers)-got.remaining]
		d.Reason = fmt.Sprintf("the leg ended (%s) before the model's recorded turn %d", oneLine(ended), d.Turn)
	case got.status != sema.StatusCompleted:
		d.Turn = last
		d.Reason = "the leg ended " + oneLine(ended)
	default:
		return Divergence{}, false
	}
	return d, true
}

// resultsOfChain collects the tool results of a transcript chain by id.
func resultsOfChain(chain []session.Entry) map[string]Result {
	out := map[string]Result{}
	for _, e := range chain {
		var m model.Message
		if e.Kind != transcript.KindToolResults || json.Unmarshal(e.Payload, &m) != nil {
			continue
		}
		for id, r := range resultsOf(m) {
			out[id] = r
		}
	}
	return out
}

// retarget rewrites a recorded call's input to name the scratch copy where it named
// the workspace: every string of the JSON document in which root appears as a whole
// path or a path's leading part. An input that does not name root is returned as it is.
func retarget(input json.RawMessage, root, scratch string) json.RawMessage {
	if len(input) == 0 || !strings.Contains(string(input), root) {
		return input
	}
	var v any
	if json.Unmarshal(input, &v) != nil {
		return input
	}
	out, err := json.Marshal(retargetValue(v, root, scratch))
	if err != nil {
		return input
	}
	return out
}

func retargetValue(v any, root, scratch string) any {
	switch x := v.(type) {
	case string:
		return replacePath(x, root, scratch)
	case []any:
		for i := range x {
			x[i] = retargetValue(x[i], root, scratch)
		}
	case map[string]any:
		for k := range x {
			x[k] = retargetValue(x[k], root, scratch)
		}
	}
	return v
}

// oneLine shortens s to its first line, for a reason sentence.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return s
}
