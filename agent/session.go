package agent

import (
	"context"
	"encoding/json"
	"slices"

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
	entryToolResults = "tool_results" // payload: model.Message (tool_result blocks, then maybe a reminder of instruction files)
	entryParked      = "parked"       // payload: parkedEntry
	entryRewind      = "rewind"       // payload: rewindEntry; moves the head back
	// entryCallStarted is written right before a tool runs, after its permission was
	// settled, so that a leg resuming after a crash can tell a call that may have run
	// from one that never started. payload: callStartedEntry.
	entryCallStarted = "call_started"
	entryReadState   = "read_state" // payload: readStateEntry; what the model has read
	// entryDelegation opens a delegated child's transcript. payload: delegationEntry.
	entryDelegation = "delegation"
	// entryCompaction marks a compaction; replay applies it to the conversation rebuilt
	// so far. payload: compactionEntry.
	entryCompaction = "compaction"
)

type assistantEntry struct {
	Turn    int           `json:"turn"`
	Message model.Message `json:"message"`
	// Intents says that the leg records call_started before each of this turn's calls;
	// without it (a transcript written before intents were recorded) a call without a
	// result may have run or not.
	Intents bool `json:"intents,omitempty"`
}

type callStartedEntry struct {
	ID   string `json:"id"`
	Tool string `json:"tool"`
}

// parkedEntry records a turn stopped at a question: the results of the calls before
// the pending one, the pending call's index among the turn's calls, and its checkpoint.
type parkedEntry struct {
	Turn       int           `json:"turn"`
	Results    []model.Block `json:"results"`
	Pending    int           `json:"pending"`
	Checkpoint string        `json:"checkpoint"`
	// ReadState holds the reads of the turn that parked (and any earlier ones not yet
	// stored), so the resumed leg judges read-before-edit against the same records. It
	// rides on the parked entry rather than an entry of its own because a parked turn's
	// entry must end the chain for the question to stay open.
	ReadState map[string]files.ReadRecord `json:"read_state,omitempty"`
	// ForgetRead names files whose read records were dropped since the last stored ones.
	ForgetRead []string `json:"forget_read,omitempty"`
	// Child is set when the pending question is a delegated child's: Checkpoint is then
	// stored in the child's session, and answering it resumes the child first.
	Child *childPark `json:"child,omitempty"`
	// Later holds the results of calls after the pending one that ran to their end in the
	// same concurrent batch (Task calls), by call index: a resume keeps them.
	Later map[int]model.Block `json:"later,omitempty"`
	// Waiting holds the calls after the pending one whose child legs also wait for a
	// person, by call index: a resume parks again at them, without running them again.
	Waiting map[int]*childPark `json:"waiting,omitempty"`
}

// readStateEntry is a change of the session's read state: records to set (a Read, or
// the content a write left) and paths to forget (files a rewind restored). Replaying
// the chain's entries in order gives what the model has read at its head, so a branch
// or a conversation rewind carries exactly the reads of the conversation it keeps.
type readStateEntry struct {
	Records map[string]files.ReadRecord `json:"records,omitempty"`
	Forget  []string                    `json:"forget,omitempty"`
}

type rewindEntry struct {
	ToTurn int `json:"to_turn"`
}

// resumeState is what a leg continues from.
type resumeState struct {
	messages []model.Message
	// turns is the number of model turns already in the chain.
	turns int
	// parked is set when the chain ends at a parked turn (call_started entries of its
	// approved call after it included).
	parked *parkedEntry
	// intents and started describe the last assistant turn: whether its leg recorded
	// call_started entries, and the ids of the calls that started.
	intents bool
	started map[string]bool
	// reads is what the model had read at the chain's end.
	reads map[string]files.ReadRecord
	// todos is the todo list of the chain's last TodoWrite.
	todos []Todo
}

// replay rebuilds the conversation from a transcript chain.
func replay(entries []session.Entry) (resumeState, error) {
	st := resumeState{reads: map[string]files.ReadRecord{}}
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
			st.intents, st.started = a.Intents, map[string]bool{}
		case entryParked:
			var p parkedEntry
			if err := json.Unmarshal(e.Payload, &p); err != nil {
				return st, corrupt(e, err)
			}
			applyReads(st.reads, p.ReadState, p.ForgetRead)
			// A write tool asks its permission question inside its run, after its intent
			// was stored: the parked entry says that call stopped at the question. Only an
			// intent stored after it (the approved call starting) means it may have run.
			if calls := lastCalls(st.messages); p.Pending < len(calls) {
				delete(st.started, calls[p.Pending].ID)
			}
			if !onlyBookkeepingAfter(entries[i+1:]) {
				continue // answered: the tool_results entry after it holds the results
			}
			st.parked = &p
		case entryReadState:
			var r readStateEntry
			if err := json.Unmarshal(e.Payload, &r); err != nil {
				return st, corrupt(e, err)
			}
			applyReads(st.reads, r.Records, r.Forget)
		case entryCompaction:
			var c compactionEntry
			if err := json.Unmarshal(e.Payload, &c); err != nil {
				return st, corrupt(e, err)
			}
			st.messages = applyCompaction(st.messages, c)
		case entryTodos:
			var t todosEntry
			if err := json.Unmarshal(e.Payload, &t); err != nil {
				return st, corrupt(e, err)
			}
			st.todos = t.Todos
		case entryRewind:
			// A marker only: the chain already ends where the rewind pointed.
		case entryCallStarted:
			var c callStartedEntry
			if err := json.Unmarshal(e.Payload, &c); err != nil {
				return st, corrupt(e, err)
			}
			if st.started != nil {
				st.started[c.ID] = true
			}
		}
	}
	return st, nil
}

// onlyBookkeepingAfter reports whether nothing but bookkeeping follows a parked entry:
// read-state changes (a leg that ended or was refused after parking may have stored its
// read state after it), the intent of the approved call starting, and the todo list an
// approved TodoWrite stored as it ran. The question is then still where the chain
// stopped.
func onlyBookkeepingAfter(rest []session.Entry) bool {
	for _, e := range rest {
		if e.Kind != entryReadState && e.Kind != entryCallStarted && e.Kind != entryTodos {
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

// seedReadState starts the leg's read state from what the session's chain says the
// model has read, less the files a rewind before this leg restored: their content is no
// longer what was read, whatever its bytes, so the model must read them again. A record
// whose file changed since is kept: the write lane's station 3 compares it with the
// file and refuses with fs.changed_since_read, which tells the model what happened.
func (l *leg) seedReadState() {
	l.readState = files.NewReadState()
	l.storedReads = map[string]files.ReadRecord{}
	for p, rec := range l.resume.reads {
		l.readState.Record(p, rec)
		l.storedReads[p] = rec
	}
	for _, p := range (history.Ledger{Entries: l.rewindNotes}).Changed() {
		l.readState.Forget(p)
	}
}

// readDelta returns what changed in the leg's read state since it was last stored and
// counts it as stored from now on.
func (l *leg) readDelta() (set map[string]files.ReadRecord, forget []string) {
	if l.readState == nil {
		return nil, nil
	}
	now := l.readState.Snapshot()
	for p, rec := range now {
		if old, ok := l.storedReads[p]; !ok || !old.Equal(rec) {
			if set == nil {
				set = map[string]files.ReadRecord{}
			}
			set[p] = rec
		}
	}
	for p := range l.storedReads {
		if _, ok := now[p]; !ok {
			forget = append(forget, p)
		}
	}
	slices.Sort(forget)
	l.storedReads = now
	return set, forget
}

// storeReadState appends the read state's changes since they were last stored, if any.
// It follows a turn's tool results, never precedes them: a read whose result the
// transcript lost must not count as read.
func (l *leg) storeReadState(ctx context.Context) {
	set, forget := l.readDelta()
	if len(set) == 0 && len(forget) == 0 {
		return
	}
	l.record(ctx, entryReadState, readStateEntry{Records: set, Forget: forget})
}

// forgetRestored stores, at the session's head, that the files a rewind restored or
// deleted must be read again. A later leg replays it with the rest of the chain.
func forgetRestored(ctx context.Context, store session.Store, sessionID string, ledger *history.Ledger) error {
	if ledger == nil || !ledger.Applied {
		return nil
	}
	changed := ledger.Changed()
	if len(changed) == 0 {
		return nil
	}
	payload, err := json.Marshal(readStateEntry{Forget: changed})
	if err != nil {
		return err
	}
	if _, err := store.Append(context.WithoutCancel(ctx), session.Entry{SessionID: sessionID, Kind: entryReadState, Payload: payload}); err != nil {
		return sema.Errorf(CodeSessionRecordFailed, "the files were restored, but the session could not record that they must be read again: %v", err)
	}
	return nil
}

func corrupt(e session.Entry, err error) error {
	return sema.Errorf(CodeTranscriptCorrupt, "transcript entry %s (%s) cannot be read: %v", e.ID, e.Kind, err)
}

// record appends one transcript entry and reports whether it was stored. The transcript
// fails closed: when an entry cannot be stored (or the leg lost its session's lease),
// the leg records nothing more and stops with session.record_failed, rather than go on
// with work the session would not remember. What was stored stays a prefix of the
// conversation that the next leg completes (see replay and abandonedInterrupted).
func (l *leg) record(ctx context.Context, kind string, payload any) (string, bool) {
	if l.store == nil {
		return "", true
	}
	l.recMu.Lock()
	defer l.recMu.Unlock()
	if l.recErr != nil {
		return "", false
	}
	if cause := context.Cause(ctx); sema.IsCode(cause, session.CodeLeaseLost) {
		// Another run owns the session now; an entry from this leg would interleave
		// with its entries.
		l.recErr = &sema.Error{Code: CodeSessionRecordFailed, Message: "the run stopped: it lost its claim on the session to another run", Err: cause}
		return "", false
	}
	data, err := json.Marshal(payload)
	if err == nil {
		var id string
		id, err = l.store.Append(context.WithoutCancel(ctx), session.Entry{SessionID: l.sessionID, LegID: l.legID, ParentID: l.branchFrom, Kind: kind, Payload: data})
		if err == nil {
			l.branchFrom = "" // only the first entry of a branch names its parent
			return id, true
		}
	}
	l.recErr = (&sema.Error{Code: CodeSessionRecordFailed, Message: "the run stopped: a transcript entry (" + kind + ") could not be stored: " + sema.MessageOf(err), Err: err}).
		With("kind", kind)
	return "", false
}

// recordFailed reports the failed transcript write that stops the leg, if there was one.
func (l *leg) recordFailed() *sema.Error {
	l.recMu.Lock()
	defer l.recMu.Unlock()
	return l.recErr
}

// mintBoundary marks the start of a turn for file history.
func (l *leg) mintBoundary(ctx context.Context, turn int) {
	if l.files == nil || l.link != nil && l.historyScope != l.sessionID {
		// A child recording into its root's scope mints none: its edits belong to the
		// parent's turn that delegated, and a rewind of that turn undoes them.
		return
	}
	l.bashChanges.atBoundary(ctx)
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
	if !rs.Fork {
		// The lease comes before the session is read: a leg that waited for another one
		// continues from what that one left (its entries, its mode).
		if err := l.takeLease(ctx, rs.SessionID); err != nil {
			return nil, nil, err
		}
	}
	s, err := l.store.Get(ctx, rs.SessionID)
	if err != nil {
		return nil, nil, err
	}
	if s.ParentID != "" && l.link == nil {
		return nil, nil, sema.Errorf(CodeDelegatedSession, "session %s is a delegated child of session %s (an agent a Task call started); continue it through %s, whose Task call it answers",
			s.ID, s.ParentID, s.ParentID).With("parent_session", s.ParentID)
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
	case loaded == nil && l.link != nil:
		s, err = l.childSession(ctx)
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
	if l.lease == nil {
		// A new session or a fork: nobody else knows it yet, but a --continue elsewhere
		// may find it, so it is claimed like any other.
		if err := l.takeLease(ctx, s.ID); err != nil {
			return err
		}
	}
	l.sessionID = s.ID
	l.historyScope = s.HistoryScope()
	st, err := replay(chain)
	if err != nil {
		return err
	}
	l.resume = st
	l.todoList = st.todos
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
	lost := sema.IsCode(context.Cause(ctx), session.CodeLeaseLost)
	ctx = context.WithoutCancel(ctx)
	// Reads not yet stored with a turn's results (a rewind's forgetting, when the leg ran
	// no turn) are stored before the leg ends.
	l.storeReadState(ctx)
	if _, err := l.store.EndLeg(ctx, l.legID, status); err != nil {
		l.notice(sema.Notice{Code: CodeSessionRecordFailed, Message: "the leg's end could not be stored: " + err.Error()})
	}
	if lost {
		return // the session is another run's now; this leg's mode must not overwrite it
	}
	_, err := l.store.Update(ctx, l.sessionID, func(s *session.Session) error {
		s.Mode = string(l.modes.Requested())
		s.EffectiveMode = string(l.modes.Current())
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
