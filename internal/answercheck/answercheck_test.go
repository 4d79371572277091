package answercheck

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/session"
)

func checkpoint(args string) session.Checkpoint {
	return session.Checkpoint{ID: "cp1", SessionID: "s1", LegID: "leg1", Tool: "Bash", Args: json.RawMessage(args), ArgsSHA256: session.SHA256Hex(json.RawMessage(args))}
}

func TestVerifyRefusesTamperedArguments(t *testing.T) {
	cp := checkpoint(`{"command":"ls"}`)
	if err := Verify(cp); err != nil {
		t.Fatalf("untouched checkpoint refused: %v", err)
	}
	cp.Args = json.RawMessage(`{"command":"rm -rf /"}`)
	if err := Verify(cp); sema.CodeOf(err) != CodeTampered {
		t.Fatalf("tampered arguments: got %v, want %s", err, CodeTampered)
	}
}

func TestMatchTurn(t *testing.T) {
	cp := checkpoint(`{}`)
	calls := []model.Block{{Name: "Read", ID: "a"}, {Name: "Bash", ID: "b"}, {Name: "Task", ID: "c"}}
	for _, c := range []struct {
		pending int
		child   string
		ok      bool
	}{
		{1, "", true},
		{0, "", false}, // another tool
		{3, "", false}, // past the turn
		{2, "c", true}, // the child's Task call
		{2, "x", false},
		{1, "b", false}, // a child's question needs the Task call
	} {
		err := MatchTurn(cp, calls, c.pending, c.child)
		if (err == nil) != c.ok || err != nil && sema.CodeOf(err) != CodeStale {
			t.Errorf("pending %d child %q: got %v, want ok=%v", c.pending, c.child, err, c.ok)
		}
	}
}

func TestDecide(t *testing.T) {
	cp := checkpoint(`{"command":"ls"}`)
	never := func(json.RawMessage) (string, bool, error) { t.Fatal("recheck without an edit"); return "", false, nil }
	d, in, err := Decide(cp, Answer{Allow: false, Reason: "no"}, never)
	if err != nil || d.Verdict != session.VerdictDeny || d.Reason != "no" || string(in) != `{"command":"ls"}` {
		t.Fatalf("deny: %+v %s %v", d, in, err)
	}
	d, in, err = Decide(cp, Answer{Allow: true}, never)
	if err != nil || d.Verdict != session.VerdictAllow || d.Args != nil || string(in) != `{"command":"ls"}` {
		t.Fatalf("allow: %+v %s %v", d, in, err)
	}
	ok := func(json.RawMessage) (string, bool, error) { return "", false, nil }
	edit := json.RawMessage(`{"command":"ls -l"}`)
	d, in, err = Decide(cp, Answer{Allow: true, UpdatedInput: edit}, ok)
	if err != nil || string(d.Args) != string(edit) || string(in) != string(edit) {
		t.Fatalf("edit: %+v %s %v", d, in, err)
	}
	if _, _, err = Decide(cp, Answer{Allow: true, UpdatedInput: json.RawMessage(`{`)}, never); sema.CodeOf(err) != CodeAnswerInvalid {
		t.Fatalf("invalid JSON edit: %v", err)
	}
	deny := func(json.RawMessage) (string, bool, error) { return "Bash(rm:*) is denied", true, nil }
	if _, _, err = Decide(cp, Answer{Allow: true, UpdatedInput: edit}, deny); sema.CodeOf(err) != CodeEditDenied || !strings.Contains(err.Error(), "Bash(rm:*)") {
		t.Fatalf("denied edit: %v", err)
	}
	gone := errors.New("gone")
	if _, _, err = Decide(cp, Answer{Allow: true, UpdatedInput: edit}, func(json.RawMessage) (string, bool, error) { return "", false, gone }); !errors.Is(err, gone) {
		t.Fatalf("recheck error: %v", err)
	}
	// A denial ignores the edit.
	if _, in, err = Decide(cp, Answer{UpdatedInput: edit}, never); err != nil || string(in) != `{"command":"ls"}` {
		t.Fatalf("denied with edit: %s %v", in, err)
	}
}

func TestClaimed(t *testing.T) {
	in := json.RawMessage(`{"a":1}`)
	if got := Claimed(session.Checkpoint{}, in); string(got) != `{"a":1}` {
		t.Fatalf("no decision: %s", got)
	}
	cp := session.Checkpoint{Decision: &session.Decision{Verdict: session.VerdictAllow, Args: json.RawMessage(`{"a":2}`)}}
	if got := Claimed(cp, in); string(got) != `{"a":2}` {
		t.Fatalf("claimed edit: %s", got)
	}
}

func TestAnsweringLegAndAlreadyAnswered(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cp := checkpoint(`{}`)
	cp.ClaimedAt = at
	cp.Decision = &session.Decision{Verdict: session.VerdictDeny}
	legs := []session.Leg{
		{ID: "leg1", StartedAt: at.Add(-time.Hour)},                                 // parked it
		{ID: "leg2", StartedAt: at.Add(-time.Minute), Status: sema.StatusCompleted}, // answered it
		{ID: "self", StartedAt: at.Add(-time.Second)},
		{ID: "leg4", StartedAt: at.Add(time.Minute)}, // after the claim
	}
	g, ok := AnsweringLeg(legs, "self", cp)
	if !ok || g.ID != "leg2" {
		t.Fatalf("answering leg: %+v %v", g, ok)
	}
	e := AlreadyAnswered(cp, &g, &session.Checkpoint{ID: "cp2", Tool: "Edit"})
	if e.Code != session.CodeAlreadyClaimed || e.Detail["open_checkpoint"] != "cp2" || e.Detail["answered_leg_status"] != string(sema.StatusCompleted) {
		t.Fatalf("error: %+v", e)
	}
	for _, want := range []string{"(denied) at 2026-01-02T03:04:05Z", "finished (completed)", "waits at checkpoint cp2 (Edit)"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("message %q lacks %q", e.Message, want)
		}
	}
	e = AlreadyAnswered(cp, nil, nil)
	if _, ok := e.Detail["answered_leg_status"]; ok || !strings.Contains(e.Message, "a plain resume") {
		t.Fatalf("without leg or open question: %+v", e)
	}
}
