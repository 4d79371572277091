package resumestate

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/sema-agent/sema/internal/compact"
	"github.com/sema-agent/sema/internal/transcript"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/tools/files"
)

// parked is the test's parked payload: the fields replay reads, as the runner's shape
// names them.
type parked struct {
	Pending    int                         `json:"pending"`
	ReadState  map[string]files.ReadRecord `json:"read_state,omitempty"`
	ForgetRead []string                    `json:"forget_read,omitempty"`
}

type run struct {
	entries []session.Entry
	todos   []string
}

func (r *run) add(t *testing.T, kind string, payload any) {
	t.Helper()
	data, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	r.entries = append(r.entries, session.Entry{ID: kind + string(rune('a'+len(r.entries))), Kind: kind, Payload: data})
}

func (r *run) replay() (State, error) {
	return Replay(Input{
		Entries: r.entries,
		AppendUser: func(msgs []model.Message, m model.Message) []model.Message {
			if n := len(msgs); n > 0 && msgs[n-1].Role == model.RoleUser {
				msgs[n-1].Content = append(msgs[n-1].Content, m.Content...)
				return msgs
			}
			return append(msgs, m)
		},
		Parked: func(i int, payload json.RawMessage) (Park, error) {
			var p parked
			err := json.Unmarshal(payload, &p)
			return Park{Pending: p.Pending, Reads: p.ReadState, Forget: p.ForgetRead}, err
		},
		Todos: func(payload json.RawMessage) error {
			var t struct {
				Todos []string `json:"todos"`
			}
			err := json.Unmarshal(payload, &t)
			r.todos = t.Todos
			return err
		},
	})
}

func user(text string) model.Message {
	return model.Message{Role: model.RoleUser, Content: []model.Block{{Kind: model.KindText, Text: text}}}
}

func callsMsg(ids ...string) model.Message {
	m := model.Message{Role: model.RoleAssistant}
	for _, id := range ids {
		m.Content = append(m.Content, model.Block{Kind: model.KindToolUse, ID: id, Name: "Write"})
	}
	return m
}

func ptr(n int) *int { return &n }

func TestConversationTurnsAndBoundaries(t *testing.T) {
	var r run
	r.add(t, transcript.KindUser, user("go"))
	r.add(t, transcript.KindAssistant, transcript.Assistant{Turn: 1, Message: callsMsg("c1"), Boundaries: ptr(0)})
	r.add(t, transcript.KindToolResults, user("result"))
	r.add(t, transcript.KindUser, user("more")) // merged into the results' message
	r.add(t, transcript.KindAssistant, transcript.Assistant{Turn: 2, Message: callsMsg(), Intents: true})
	r.add(t, transcript.KindRewind, transcript.Rewind{ToTurn: 1})
	r.add(t, transcript.KindTodos, map[string][]string{"todos": {"x"}})
	r.add(t, transcript.KindTodos, map[string][]string{"todos": {"y", "z"}})
	st, err := r.replay()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Messages) != 4 || len(st.Messages[2].Content) != 2 {
		t.Fatalf("messages %+v, want 4 with the results and the prompt merged", st.Messages)
	}
	if st.Turns != 2 || !st.Intents || st.ParkedAt != -1 {
		t.Errorf("turns %d intents %v parked at %d", st.Turns, st.Intents, st.ParkedAt)
	}
	if len(st.Boundaries) != 1 || st.Boundaries[1] != 0 {
		t.Errorf("boundaries %v, want turn 1 at 0 only", st.Boundaries)
	}
	if len(r.todos) != 2 {
		t.Errorf("todos %v, want the latest list", r.todos)
	}
}

func TestReadStateReplaysInOrder(t *testing.T) {
	var r run
	r.add(t, transcript.KindReadState, transcript.ReadState{Records: map[string]files.ReadRecord{"a": {}, "b": {}}})
	r.add(t, transcript.KindReadState, transcript.ReadState{Forget: []string{"a"}})
	r.add(t, transcript.KindParked, parked{ReadState: map[string]files.ReadRecord{"c": {}}, ForgetRead: []string{"b"}})
	st, err := r.replay()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Reads["c"]; !ok || len(st.Reads) != 1 {
		t.Errorf("reads %v, want only c", st.Reads)
	}
}

// A chain stopped at a question ends at the parked entry (bookkeeping after it aside);
// the pending call counts as started only when an intent was stored after the entry.
func TestParkedAndStarted(t *testing.T) {
	var r run
	r.add(t, transcript.KindUser, user("go"))
	r.add(t, transcript.KindAssistant, transcript.Assistant{Turn: 1, Message: callsMsg("c1", "c2"), Intents: true})
	r.add(t, transcript.KindCallStarted, transcript.CallStarted{ID: "c1", Tool: "Write"})
	r.add(t, transcript.KindCallStarted, transcript.CallStarted{ID: "c2", Tool: "Write"})
	r.add(t, transcript.KindParked, parked{Pending: 1})
	r.add(t, transcript.KindReadState, transcript.ReadState{})
	st, err := r.replay()
	if err != nil {
		t.Fatal(err)
	}
	if st.ParkedAt != 4 {
		t.Errorf("parked at %d, want 4", st.ParkedAt)
	}
	if !st.Started["c1"] || st.Started["c2"] {
		t.Errorf("started %v: c2 stopped at its question", st.Started)
	}
	r.add(t, transcript.KindCallStarted, transcript.CallStarted{ID: "c2", Tool: "Write"})
	if st, _ = r.replay(); st.ParkedAt != 4 || !st.Started["c2"] {
		t.Errorf("after the approved call's intent: parked at %d, started %v", st.ParkedAt, st.Started)
	}
	r.add(t, transcript.KindToolResults, user("answered"))
	if st, _ = r.replay(); st.ParkedAt != -1 {
		t.Errorf("an answered question still parks the chain at %d", st.ParkedAt)
	}
}

func TestCompactionApplies(t *testing.T) {
	var r run
	for turn := 1; turn <= 5; turn++ {
		r.add(t, transcript.KindUser, user("p"))
		r.add(t, transcript.KindAssistant, transcript.Assistant{Turn: turn, Message: callsMsg()})
	}
	r.add(t, transcript.KindCompaction, compact.Entry{Kind: compact.Summary, Keep: 1, Summary: "earlier"})
	st, err := r.replay()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Messages) >= 10 {
		t.Errorf("the summary left %d messages", len(st.Messages))
	}
}

func TestCorruptEntryStops(t *testing.T) {
	var r run
	r.add(t, transcript.KindUser, user("go"))
	r.entries = append(r.entries, session.Entry{ID: "bad", Kind: transcript.KindAssistant, Payload: json.RawMessage(`{"turn":"x"}`)})
	r.add(t, transcript.KindUser, user("later"))
	st, err := r.replay()
	var c *Corrupt
	if !errors.As(err, &c) || c.Entry.ID != "bad" || c.Err == nil {
		t.Fatalf("err %v, want the corrupt entry named", err)
	}
	if len(st.Messages) != 1 {
		t.Errorf("replay went past the corrupt entry: %d messages", len(st.Messages))
	}
	r.entries[1] = session.Entry{ID: "badtodos", Kind: transcript.KindTodos, Payload: json.RawMessage(`{`)}
	if _, err := r.replay(); !errors.As(err, &c) || c.Entry.ID != "badtodos" {
		t.Errorf("a todos entry the runner cannot read: err %v", err)
	}
}
