// Package transcript is the shape of a session's transcript: the kinds of its entries,
// the payloads whose shape needs nothing of the runner's API (and the read-state change
// between two snapshots), and where in a chain of entries a turn starts or a fork is cut. A session's transcript is the chain of these
// entries; the runner rebuilds the conversation from it on every leg and trusts nothing
// else of it (the system prompt and the tool specs are rebuilt, never read back).
package transcript

import (
	"encoding/json"
	"slices"

	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/tools/files"
)

// The kinds of transcript entries. The payloads of parked and todos entries carry the
// runner's API types, so their shapes stay with the runner.
const (
	KindUser        = "user"         // payload: model.Message (the prompt)
	KindAssistant   = "assistant"    // payload: Assistant
	KindToolResults = "tool_results" // payload: model.Message (tool_result blocks, then maybe a reminder of instruction files)
	KindParked      = "parked"       // payload: the runner's parked turn
	KindRewind      = "rewind"       // payload: Rewind; moves the head back
	// KindCallStarted is written right before a tool runs, after its permission was
	// settled, so that a leg resuming after a crash can tell a call that may have run
	// from one that never started. A call to one of the engine's tools that only read
	// has none: it changes nothing, whether it ran or not. payload: CallStarted.
	KindCallStarted = "call_started"
	KindReadState   = "read_state" // payload: ReadState; what the model has read
	// KindDelegation opens a delegated child's transcript. payload: the runner's
	// delegation entry.
	KindDelegation = "delegation"
	// KindCompaction marks a compaction; replay applies it to the conversation rebuilt
	// so far. payload: compact.Entry.
	KindCompaction = "compaction"
	// KindTodos records a TodoWrite call's list; replay keeps the latest, which is the
	// session's todo list at the chain's head. payload: the runner's todo list.
	KindTodos = "todos"
)

// Assistant is a model turn's response.
type Assistant struct {
	Turn    int           `json:"turn"`
	Message model.Message `json:"message"`
	// Intents says that the leg records call_started before each of this turn's calls;
	// without it (a transcript written before intents were recorded) a call without a
	// result may have run or not.
	Intents bool `json:"intents,omitempty"`
	// Boundaries is how many file-history boundaries the session's scope held when the
	// turn started: the turn's own boundary, if it changed a file, is the next one. A
	// rewind to the turn restores what was recorded at the boundaries after these. Nil
	// when the leg recorded no history into its own scope, and in transcripts written
	// when every turn minted a boundary at its start (a rewind then finds the turn's
	// boundary by its number).
	Boundaries *int `json:"boundaries,omitempty"`
}

// CallStarted is a tool call about to run.
type CallStarted struct {
	ID   string `json:"id"`
	Tool string `json:"tool"`
}

// ReadState is a change of the session's read state: records to set (a Read, or the
// content a write left) and paths to forget (files a rewind restored). Replaying the
// chain's entries in order gives what the model has read at its head, so a branch or a
// conversation rewind carries exactly the reads of the conversation it keeps.
type ReadState struct {
	Records map[string]files.ReadRecord `json:"records,omitempty"`
	Forget  []string                    `json:"forget,omitempty"`
}

// ReadChange is the change from the read state stored to the one now: the records
// that are new or differ, and the paths (sorted) no longer read. Replaying it (set, then
// forget) on stored gives now.
func ReadChange(stored, now map[string]files.ReadRecord) ReadState {
	var c ReadState
	for p, rec := range now {
		if old, ok := stored[p]; !ok || !old.Equal(rec) {
			if c.Records == nil {
				c.Records = map[string]files.ReadRecord{}
			}
			c.Records[p] = rec
		}
	}
	for p := range stored {
		if _, ok := now[p]; !ok {
			c.Forget = append(c.Forget, p)
		}
	}
	slices.Sort(c.Forget)
	return c
}

// Rewind marks a conversation rewind to the start of a turn.
type Rewind struct {
	ToTurn int `json:"to_turn"`
}

// TurnStart finds where the conversation returns to for a rewind to the start of turn:
// head, the entry before turn's response, and at, the boundaries the scope held when the
// turn started, when its assistant entry recorded them. found is false when the chain
// has no such turn; turn 0 is the chain's beginning.
func TurnStart(chain []session.Entry, turn int) (head string, at *int, found bool) {
	found = turn == 0
	if turn == 0 {
		at = new(int)
	}
	for _, e := range chain {
		if e.Kind == KindAssistant {
			var a Assistant
			if json.Unmarshal(e.Payload, &a) == nil && a.Turn >= turn && turn > 0 {
				found = true
				if a.Turn == turn {
					at = a.Boundaries
				}
				break
			}
		}
		head = e.ID
	}
	return head, at, found
}

// CutAt returns the chain up to and including the entry id, which a fork at id
// continues from; a chain without it is returned whole.
func CutAt(chain []session.Entry, id string) []session.Entry {
	for i, e := range chain {
		if e.ID == id {
			return chain[:i+1]
		}
	}
	return chain
}
