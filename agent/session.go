package agent

import (
	"context"
	"encoding/json"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/tools/files"
)

// Transcript entry kinds. A session's transcript is the chain of these entries; the
// runner rebuilds the conversation from it on every leg and trusts nothing else of it
// (the system prompt and the tool specs are rebuilt, never read back).
const (
	entryUser        = "user"         // payload: model.Message (the prompt)
	entryAssistant   = "assistant"    // payload: assistantEntry
	entryToolResults = "tool_results" // payload: model.Message (tool_result blocks)
	entryParked      = "parked"       // payload: parkedEntry
	entryRewind      = "rewind"       // payload: rewindEntry; moves the head back
)

type assistantEntry struct {
	Turn    int           `json:"turn"`
	Message model.Message `json:"message"`
}

// parkedEntry records a turn stopped at a question: the results of the calls before
// the pending one, the pending call's index among the turn's calls, and its checkpoint.
type parkedEntry struct {
	Turn       int           `json:"turn"`
	Results    []model.Block `json:"results"`
	Pending    int           `json:"pending"`
	Checkpoint string        `json:"checkpoint"`
	// ReadState is what the leg had read of the parked write's target, so the resumed
	// leg judges read-before-edit against the same record.
	ReadState map[string]files.ReadRecord `json:"read_state,omitempty"`
}

type rewindEntry struct {
	ToTurn int `json:"to_turn"`
}

// resumeState is what a leg continues from.
type resumeState struct {
	messages []model.Message
	// turns is the number of model turns already in the chain.
	turns int
	// parked is set when the chain ends at a parked turn.
	parked *parkedEntry
}

// replay rebuilds the conversation from a transcript chain.
func replay(entries []session.Entry) (resumeState, error) {
	var st resumeState
	for i, e := range entries {
		switch e.Kind {
		case entryUser, entryToolResults:
			var m model.Message
			if err := json.Unmarshal(e.Payload, &m); err != nil {
				return st, corrupt(e, err)
			}
			st.messages = appendUser(st.messages, m)
		case entryAssistant:
			var a assistantEntry
			if err := json.Unmarshal(e.Payload, &a); err != nil {
				return st, corrupt(e, err)
			}
			st.messages = append(st.messages, a.Message)
			st.turns = a.Turn
		case entryParked:
			if i != len(entries)-1 {
				continue // answered: the tool_results entry after it holds the results
			}
			var p parkedEntry
			if err := json.Unmarshal(e.Payload, &p); err != nil {
				return st, corrupt(e, err)
			}
			st.parked = &p
		case entryRewind:
			// A marker only: the chain already ends where the rewind pointed.
		}
	}
	return st, nil
}

func corrupt(e session.Entry, err error) error {
	return sema.Errorf(CodeTranscriptCorrupt, "transcript entry %s (%s) cannot be read: %v", e.ID, e.Kind, err)
}

// record appends one transcript entry. A store failure is a notice, not the end of the
// run: the work the model is doing is not lost because a bookkeeping write failed, but
// the caller learns that the session can no longer be resumed exactly.
func (l *leg) record(ctx context.Context, kind string, payload any) string {
	if l.store == nil {
		return ""
	}
	data, err := json.Marshal(payload)
	if err == nil {
		var id string
		id, err = l.store.Append(context.WithoutCancel(ctx), session.Entry{SessionID: l.sessionID, LegID: l.legID, ParentID: l.branchFrom, Kind: kind, Payload: data})
		if err == nil {
			l.branchFrom = "" // only the first entry of a branch names its parent
			return id
		}
	}
	l.notice(sema.Notice{Code: CodeSessionRecordFailed, Message: "a transcript entry could not be stored: " + err.Error(), Detail: map[string]any{"kind": kind}})
	return ""
}

// mintBoundary marks the start of a turn for file history.
func (l *leg) mintBoundary(ctx context.Context, turn int) {
	if l.files == nil {
		return
	}
	if _, err := l.deps.History.MintBoundary(context.WithoutCancel(ctx), l.historyScope, turn); err != nil {
		l.notice(sema.Notice{Code: CodeBoundaryFailed, Message: "the file-history boundary of turn could not be stored: " + err.Error(), Detail: map[string]any{"turn": turn}})
	}
}

// trackFileEdit is the runner's first-touch history seat: before the first change of a
// file after a boundary, its pre-image is recorded. When it cannot be recorded durably
// the edit is refused, unless the deployment chose to proceed unprotected.
func (l *leg) trackFileEdit(ctx context.Context, req files.TrackEditRequest) (files.TrackEditResult, error) {
	rec, minted, err := l.files.Track(ctx, l.historyScope, req.Key)
	// The write that follows leaves its bytes in this record's After; one with no record
	// leaves none, so a rewind counts the file as someone else's.
	l.afters.track(req.Key, rec, err == nil)
	if err != nil {
		// The cause's code stays in the notice's detail; the sentences carry only its
		// message, so no code is nested inside another.
		why := sema.MessageOf(err)
		if l.deps.policy().FileHistoryPolicy == ProceedUnprotected {
			l.notice(sema.Notice{Code: files.CodeHistoryUnprotected, Message: "an edit of " + req.Path + " proceeds without a file-history record: " + why,
				Detail: map[string]any{"path": req.Key, "cause": sema.CodeOf(err)}})
			return files.TrackEditResult{OK: true}, nil
		}
		return files.TrackEditResult{Refusal: "The edit of " + req.Path + " was refused: its previous contents could not be saved for rewind (" + why + "), and an edit that cannot be undone is not made. Nothing was written."}, nil
	}
	res := files.TrackEditResult{OK: true}
	if minted {
		res.Annul = func(ctx context.Context, proof files.Proof) {
			if _, err := l.files.Annul(ctx, rec, history.Proof(proof)); err != nil {
				l.notice(sema.Notice{Code: CodeAnnulFailed, Message: "a history record of a failed write could not be retracted: " + err.Error(), Detail: map[string]any{"path": req.Key}})
			}
		}
	}
	return res, nil
}

// loadSession reads the session a resume continues (spec.Resume) and its transcript
// chain, before anything else is prepared: its recorded mode is what the resumed leg
// requests when the spec names none.
func (l *leg) loadSession(ctx context.Context) (*session.Session, []session.Entry, error) {
	rs := l.spec.resume()
	if rs.SessionID == "" {
		return nil, nil, nil
	}
	if l.store == nil {
		return nil, nil, configError(CodeStoreMissing, "resuming session %s needs a session store; set Deps.Store", rs.SessionID)
	}
	s, err := l.store.Get(ctx, rs.SessionID)
	if err != nil {
		return nil, nil, err
	}
	head := ""
	if !rs.Fork {
		head = rs.At
	}
	chain, err := l.store.Transcript(ctx, s.ID, head)
	if err != nil {
		return nil, nil, err
	}
	if rs.Fork && rs.At != "" {
		// The fork is cut at At; replay only that prefix.
		for i, e := range chain {
			if e.ID == rs.At {
				chain = chain[:i+1]
				break
			}
		}
	}
	return &s, chain, nil
}

// openSession creates the run's session, or continues (or forks) the loaded one, and
// starts its leg. It runs last in prepare, so a refused spec leaves no leg behind.
func (l *leg) openSession(ctx context.Context, loaded *session.Session, chain []session.Entry) error {
	if l.store == nil {
		l.sessionID = newSessionID()
		return nil
	}
	root := l.fence.Root()
	var s session.Session
	var err error
	switch {
	case loaded == nil:
		s, err = l.store.Create(ctx, session.Session{
			Root: root, FSID: history.FilesystemIdentity(l.deps.Env), Model: l.spec.Model,
			Mode: string(l.modes.Requested()), Title: title(l.spec.Prompt),
		})
	case loaded.Root != root:
		return sema.Errorf(CodeRootMismatch, "session %s works in %s, not in %s; resume it from its own root", loaded.ID, loaded.Root, root)
	case l.spec.resume().Fork:
		s, err = l.store.Fork(ctx, loaded.ID, l.spec.resume().At)
		if err == nil && l.deps.History != nil {
			if _, cerr := l.deps.History.CarryFork(ctx, loaded.HistoryScope(), s.HistoryScope()); cerr != nil {
				l.notice(sema.Notice{Code: CodeCarryFailed, Message: "the fork could not carry its parent's file history: " + cerr.Error()})
			}
		}
	default:
		s = *loaded
		l.branchFrom = l.spec.resume().At
	}
	if err != nil {
		return err
	}
	l.sessionID = s.ID
	l.historyScope = s.HistoryScope()
	st, err := replay(chain)
	if err != nil {
		return err
	}
	l.resume = st
	leg, err := l.store.StartLeg(ctx, s.ID)
	if err != nil {
		return err
	}
	l.legID = leg.ID
	return nil
}

// closeSession ends the leg and records the mode word the session continues with.
func (l *leg) closeSession(ctx context.Context, status sema.Status) {
	if l.store == nil || l.legID == "" {
		return
	}
	ctx = context.WithoutCancel(ctx)
	if _, err := l.store.EndLeg(ctx, l.legID, status); err != nil {
		l.notice(sema.Notice{Code: CodeSessionRecordFailed, Message: "the leg's end could not be stored: " + err.Error()})
	}
	_, err := l.store.Update(ctx, l.sessionID, func(s *session.Session) error {
		s.Mode = string(l.modes.Requested())
		s.PrePlanMode = string(l.modes.PrePlanMode())
		return nil
	})
	if err != nil {
		l.notice(sema.Notice{Code: CodeSessionRecordFailed, Message: "the session's mode could not be stored: " + err.Error()})
	}
}

// title is the first line of the prompt, shortened, for session listings.
func title(prompt string) string {
	for i, r := range prompt {
		if r == '\n' {
			prompt = prompt[:i]
			break
		}
	}
	if len(prompt) > 80 {
		prompt = prompt[:77] + "..."
	}
	return prompt
}

// rewindMarker is the entry a conversation rewind appends on the earlier entry.
func rewindMarker(sessionID, parent string, payload json.RawMessage) session.Entry {
	return session.Entry{SessionID: sessionID, ParentID: parent, Kind: entryRewind, Payload: payload}
}
