package replay

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/internal/transcript"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/tools"
)

// Recording is what a replay takes from a stored session: its legs, in order, each
// with its prompt and the model's turns, and the result every tool call got.
type Recording struct {
	// Session is the recorded session.
	Session session.Session
	// Legs are the legs that ran turns, in order; a leg that continued without a prompt
	// (an answered question, a restarted run) is folded into the leg before it.
	Legs []Leg
	// Turns is the number of the last turn replayed: the session's newest, or At.
	Turns int
	// Results are the recorded tool results by tool_use id.
	Results map[string]Result
}

// Leg is one leg of a recording: its prompt and the turns the model answered in it.
type Leg struct {
	// Prompt is the leg's prompt as the person gave it (hook context left out).
	Prompt string
	// Turns are the model's responses, in order, as a script serves them.
	Turns []scripted.Turn
	// Numbers are the session-wide numbers of Turns.
	Numbers []int
	// Calls are the tool calls of Turns, in order.
	Calls []Call
	// Cut says the leg's last turn made tool calls the record has no answer to (the
	// leg parked, stopped at its turn limit, was cancelled, or At cut it): the replay
	// ends the leg with a final turn of its own after them, which is not compared.
	Cut bool
	// Children are the subagents the leg's Task calls delegated to, served as threads
	// of the leg's script.
	Children []Child
}

// Child is a subagent's recording: the child session a Task call delegated to.
type Child struct {
	// TaskID is the id of the parent's Task call.
	TaskID string
	// Turn is the session-wide number of the turn that made the Task call.
	Turn int
	// Prompt is the child's prompt: the script's thread answers the conversation whose
	// first message holds it.
	Prompt string
	// Turns are the child model's responses, in order.
	Turns []scripted.Turn
	// Calls are the child's tool calls; their Turn is the parent's (TaskID's).
	Calls []Call
}

// Call is one recorded tool call.
type Call struct {
	// Turn is the session-wide number of the turn that made the call.
	Turn int
	// ID is the model's id of the call (tool_use id).
	ID string
	// Tool is the called tool's name.
	Tool string
	// Input is the call's JSON input as recorded.
	Input json.RawMessage
}

// Result is one recorded (or replayed) tool result: its text, as the model saw it, and
// whether it reported a failure.
type Result struct {
	// Text is the result's text content, concatenated.
	Text string
	// IsError marks a result that reported a failure to the model.
	IsError bool
}

// Load reads session id from store and returns its recording up to turn at (0: every
// turn). It refuses a session the store does not hold (session.not_found), one with no
// turns (CodeNoTurns), an at beyond its turns (CodeAtInvalid), and a session whose
// subagents a replay cannot serve (CodeSubagents: one delegated again, or its prompt is
// part of the session's own).
func Load(ctx context.Context, store session.Store, id string, at int) (*Recording, error) {
	s, err := store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if at < 0 {
		return nil, sema.Errorf(CodeAtInvalid, "--at %d is not a turn; turns are numbered from 1 (see `sema sessions show %s`)", at, id).With("at", at)
	}
	chain, err := store.Transcript(ctx, id, "")
	if err != nil {
		return nil, err
	}
	rec := &Recording{Session: s, Results: map[string]Result{}}
	last := 0
	for _, e := range chain {
		if e.Kind == transcript.KindAssistant {
			var a transcript.Assistant
			if json.Unmarshal(e.Payload, &a) == nil && a.Turn > last {
				last = a.Turn
			}
		}
	}
	if last == 0 {
		return nil, sema.Errorf(CodeNoTurns, "session %s has no recorded turns: the model never answered in it, so there is nothing to replay", id).With("session_id", id)
	}
	if at > last {
		return nil, sema.Errorf(CodeAtInvalid, "--at %d is past the session's last turn, %d; give a turn from 1 to %d", at, last, last).With("at", at).With("turns", last)
	}
	if at == 0 {
		at = last
	}
	rec.Turns = at
	var cur *Leg
	curLeg := ""
	tasks := map[string]taskAt{}
	for _, e := range chain {
		if cur == nil || e.LegID != "" && e.LegID != curLeg {
			curLeg = e.LegID
			rec.Legs = append(rec.Legs, Leg{})
			cur = &rec.Legs[len(rec.Legs)-1]
		}
		switch e.Kind {
		case transcript.KindUser:
			var m model.Message
			if json.Unmarshal(e.Payload, &m) == nil && cur.Prompt == "" && len(cur.Turns) == 0 {
				cur.Prompt = firstText(m)
			}
		case transcript.KindAssistant:
			var a transcript.Assistant
			if err := json.Unmarshal(e.Payload, &a); err != nil {
				return nil, sema.Errorf(CodeTranscriptUnreadable, "session %s: entry %d is not an assistant turn: %v", id, e.Seq, err)
			}
			if a.Turn > at {
				continue
			}
			turn := scripted.Turn{}
			var text []string
			for _, b := range a.Message.Content {
				switch b.Kind {
				case model.KindText:
					text = append(text, b.Text)
				case model.KindToolUse:
					if b.Name == "Task" {
						tasks[b.ID] = taskAt{leg: len(rec.Legs) - 1, turn: a.Turn}
					}
					turn.ToolCalls = append(turn.ToolCalls, scripted.ToolCall{ID: b.ID, Name: b.Name, Input: b.Input})
					cur.Calls = append(cur.Calls, Call{Turn: a.Turn, ID: b.ID, Tool: b.Name, Input: b.Input})
				}
			}
			turn.Text = strings.Join(text, "")
			cur.Turns = append(cur.Turns, turn)
			cur.Numbers = append(cur.Numbers, a.Turn)
		case transcript.KindToolResults:
			var m model.Message
			if err := json.Unmarshal(e.Payload, &m); err != nil {
				return nil, sema.Errorf(CodeTranscriptUnreadable, "session %s: entry %d is not a tool result: %v", id, e.Seq, err)
			}
			for id, r := range resultsOf(m) {
				rec.Results[id] = r
			}
		}
	}
	if len(tasks) > 0 {
		if err := loadChildren(ctx, store, rec, tasks); err != nil {
			return nil, err
		}
	}
	// A leg without a prompt continued the one before it; a leg without turns gave the
	// model nothing to replay.
	var legs []Leg
	for _, l := range rec.Legs {
		switch {
		case len(l.Turns) == 0:
		case l.Prompt == "" && len(legs) > 0:
			p := &legs[len(legs)-1]
			p.Turns = append(p.Turns, l.Turns...)
			p.Numbers = append(p.Numbers, l.Numbers...)
			p.Calls = append(p.Calls, l.Calls...)
			p.Children = append(p.Children, l.Children...)
		default:
			legs = append(legs, l)
		}
	}
	for i := range legs {
		l := &legs[i]
		if n := len(l.Turns); len(l.Turns[n-1].ToolCalls) > 0 {
			l.Cut = true
		}
	}
	rec.Legs = legs
	return rec, nil
}

// firstText is a prompt's text: its first text block. Hook context follows in blocks
// of its own, which the replay's hooks add again.
func firstText(m model.Message) string {
	for _, b := range m.Content {
		if b.Kind == model.KindText {
			return b.Text
		}
	}
	return ""
}

// resultsOf returns the tool_result blocks of a tool results message by id.
func resultsOf(m model.Message) map[string]Result {
	out := map[string]Result{}
	for _, b := range m.Content {
		if b.Kind == model.KindToolResult {
			out[b.ID] = Result{Text: tools.Result{Content: b.Content}.TextOf(), IsError: b.IsError}
		}
	}
	return out
}

// taskAt is where a Task call was made: the index of its leg (before legs are folded)
// and its turn.
type taskAt struct {
	leg, turn int
}

// delegation is the part of a child transcript's first entry a replay reads.
type delegation struct {
	ToolUseID string `json:"tool_use_id"`
}

// loadChildren finds the child sessions of rec's Task calls (tasks) and adds each to
// the leg that delegated to it. A child that delegated again, one whose prompt another
// conversation's first message holds (the script could not tell them apart), or a store
// that cannot list sessions is refused with CodeSubagents.
func loadChildren(ctx context.Context, store session.Store, rec *Recording, tasks map[string]taskAt) error {
	id := rec.Session.ID
	admin, err := session.AsAdmin(store)
	if err != nil {
		return sema.Errorf(CodeSubagents, "session %s delegated to subagents, and its store cannot list their sessions: %v", id, err)
	}
	all, err := admin.List(ctx, session.Filter{})
	if err != nil {
		return err
	}
	slices.SortFunc(all, func(a, b session.Session) int { return a.CreatedAt.Compare(b.CreatedAt) })
	for _, s := range all {
		if s.ParentID != id {
			continue
		}
		chain, err := store.Transcript(ctx, s.ID, "")
		if err != nil {
			return err
		}
		var c Child
		for _, e := range chain {
			switch e.Kind {
			case transcript.KindDelegation:
				var d delegation
				if json.Unmarshal(e.Payload, &d) == nil {
					c.TaskID = d.ToolUseID
				}
			case transcript.KindUser:
				var m model.Message
				if json.Unmarshal(e.Payload, &m) == nil && c.Prompt == "" {
					c.Prompt = firstText(m)
				}
			case transcript.KindAssistant:
				var a transcript.Assistant
				if err := json.Unmarshal(e.Payload, &a); err != nil {
					return sema.Errorf(CodeTranscriptUnreadable, "session %s: entry %d is not an assistant turn: %v", s.ID, e.Seq, err)
				}
				turn := scripted.Turn{}
				var text []string
				for _, b := range a.Message.Content {
					switch b.Kind {
					case model.KindText:
						text = append(text, b.Text)
					case model.KindToolUse:
						if b.Name == "Task" {
							return sema.Errorf(CodeSubagents, "session %s: its subagent %s delegated again; nested subagents are not replayed yet", id, s.ID)
						}
						turn.ToolCalls = append(turn.ToolCalls, scripted.ToolCall{ID: b.ID, Name: b.Name, Input: b.Input})
						c.Calls = append(c.Calls, Call{ID: b.ID, Tool: b.Name, Input: b.Input})
					}
				}
				turn.Text = strings.Join(text, "")
				c.Turns = append(c.Turns, turn)
			case transcript.KindToolResults:
				var m model.Message
				if json.Unmarshal(e.Payload, &m) == nil {
					for id, r := range resultsOf(m) {
						rec.Results[id] = r
					}
				}
			}
		}
		at, ok := tasks[c.TaskID]
		if !ok || c.Prompt == "" || len(c.Turns) == 0 {
			continue // past At, or a child that never asked its model
		}
		c.Turn = at.turn
		for i := range c.Calls {
			c.Calls[i].Turn = at.turn
		}
		leg := &rec.Legs[at.leg]
		leg.Children = append(leg.Children, c)
	}
	for _, l := range rec.Legs {
		for _, c := range l.Children {
			for _, other := range rec.Legs {
				if other.Prompt != "" && strings.Contains(other.Prompt, c.Prompt) {
					return sema.Errorf(CodeSubagents, "session %s: the prompt of the subagent of turn %d is part of the session's own prompt, so a replay cannot tell their conversations apart", id, c.Turn)
				}
			}
		}
	}
	return nil
}
