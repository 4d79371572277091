// Package resumestate rebuilds what a leg continues from out of a session's stored transcript
// chain: the conversation to send the model, how many turns it holds, the parked turn the
// chain stops at, which calls of the last turn started, what the model has read, and the
// file-history boundary counts its turns recorded. It is a pure function of the entries:
// the same chain always rebuilds the same state.
package resumestate

import (
	"encoding/json"

	"github.com/sema-agent/sema/internal/compact"
	"github.com/sema-agent/sema/internal/transcript"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/tools/files"
)

// Input is a chain to replay and the runner's part in reading it: the payloads whose
// shape is the runner's API (a parked turn, a todo list) and how a user message joins the
// conversation.
type Input struct {
	Entries []session.Entry
	// AppendUser adds a user message (a prompt, tool results) to msgs as the leg does,
	// so the rebuilt conversation is the one the leg continued with.
	AppendUser func(msgs []model.Message, m model.Message) []model.Message
	// Parked decodes the parked entry Entries[i] and returns what replay needs of it.
	Parked func(i int, payload json.RawMessage) (Park, error)
	// Todos decodes a todos entry; the runner keeps the latest.
	Todos func(payload json.RawMessage) error
}

// Park is what replay reads of a parked turn.
type Park struct {
	// Pending is the index, among the turn's calls, of the call stopped at a question.
	Pending int
	// Reads and Forget are the read-state changes the parked entry carries.
	Reads  map[string]files.ReadRecord
	Forget []string
}

// State is what a leg continues from.
type State struct {
	Messages []model.Message
	// Turns is the number of model turns in the chain.
	Turns int
	// ParkedAt is the index of the parked entry the chain ends at (call_started entries
	// of its approved call, read state and todos after it included), else -1.
	ParkedAt int
	// Intents and Started describe the last assistant turn: whether its leg recorded
	// call_started entries, and the ids of the calls that started.
	Intents bool
	Started map[string]bool
	// Reads is what the model had read at the chain's end.
	Reads map[string]files.ReadRecord
	// Boundaries holds, by turn, the assistant entries' boundary counts that were
	// recorded.
	Boundaries map[int]int
}

// Corrupt is an entry whose payload cannot be read.
type Corrupt struct {
	Entry session.Entry
	Err   error
}

func (c *Corrupt) Error() string { return c.Entry.ID + " (" + c.Entry.Kind + "): " + c.Err.Error() }

func (c *Corrupt) Unwrap() error { return c.Err }

// Replay rebuilds the state at the end of in.Entries. An entry that cannot be read
// stops it with a *Corrupt, and the state rebuilt so far.
func Replay(in Input) (State, error) {
	st := State{ParkedAt: -1, Reads: map[string]files.ReadRecord{}}
	for i, e := range in.Entries {
		if err := st.apply(in, i, e); err != nil {
			return st, &Corrupt{Entry: e, Err: err}
		}
	}
	return st, nil
}

// apply replays the entry Entries[i], e, onto st.
func (st *State) apply(in Input, i int, e session.Entry) error {
	switch e.Kind {
	case transcript.KindUser, transcript.KindToolResults:
		var m model.Message
		if err := json.Unmarshal(e.Payload, &m); err != nil {
			return err
		}
		st.Messages = in.AppendUser(st.Messages, m)
	case transcript.KindAssistant:
		var a transcript.Assistant
		if err := json.Unmarshal(e.Payload, &a); err != nil {
			return err
		}
		st.Messages = append(st.Messages, a.Message)
		st.Turns = a.Turn
		if a.Boundaries != nil {
			if st.Boundaries == nil {
				st.Boundaries = map[int]int{}
			}
			st.Boundaries[a.Turn] = *a.Boundaries
		}
		st.Intents, st.Started = a.Intents, map[string]bool{}
	case transcript.KindParked:
		p, err := in.Parked(i, e.Payload)
		if err != nil {
			return err
		}
		applyReads(st.Reads, p.Reads, p.Forget)
		// A write tool asks its permission question inside its run, after its intent
		// was stored: the parked entry says that call stopped at the question. Only an
		// intent stored after it (the approved call starting) means it may have run.
		if calls := lastCalls(st.Messages); p.Pending < len(calls) {
			delete(st.Started, calls[p.Pending].ID)
		}
		if onlyBookkeepingAfter(in.Entries[i+1:]) {
			st.ParkedAt = i
		} // else answered: the tool_results entry after it holds the results
	case transcript.KindReadState:
		var r transcript.ReadState
		if err := json.Unmarshal(e.Payload, &r); err != nil {
			return err
		}
		applyReads(st.Reads, r.Records, r.Forget)
	case transcript.KindCompaction:
		var c compact.Entry
		if err := json.Unmarshal(e.Payload, &c); err != nil {
			return err
		}
		st.Messages = compact.Apply(st.Messages, c)
	case transcript.KindTodos:
		return in.Todos(e.Payload)
	case transcript.KindRewind:
		// A marker only: the chain already ends where the rewind pointed.
	case transcript.KindCallStarted:
		var c transcript.CallStarted
		if err := json.Unmarshal(e.Payload, &c); err != nil {
			return err
		}
		if st.Started != nil {
			st.Started[c.ID] = true
		}
	}
	return nil
}

// onlyBookkeepingAfter reports whether nothing but bookkeeping follows a parked entry:
// read-state changes (a leg that ended or was refused after parking may have stored its
// read state after it), the intent of the approved call starting, and the todo list an
// approved TodoWrite stored as it ran. The question is then still where the chain
// stopped.
func onlyBookkeepingAfter(rest []session.Entry) bool {
	for _, e := range rest {
		if e.Kind != transcript.KindReadState && e.Kind != transcript.KindCallStarted && e.Kind != transcript.KindTodos {
			return false
		}
	}
	return true
}

func applyReads(into, set map[string]files.ReadRecord, forget []string) {
	for _, p := range forget {
		delete(into, p)
	}
	for p, rec := range set {
		into[p] = rec
	}
}

// lastCalls returns the tool calls of the conversation's last assistant message.
func lastCalls(msgs []model.Message) []model.Block {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.RoleAssistant {
			return (&model.Response{Content: msgs[i].Content}).ToolCalls()
		}
	}
	return nil
}
