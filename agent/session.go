package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"math"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/internal/boundary"
	"github.com/sema-agent/sema/internal/later"
	"github.com/sema-agent/sema/internal/recorder"
	"github.com/sema-agent/sema/internal/resumestate"
	"github.com/sema-agent/sema/internal/rewindpoint"
	"github.com/sema-agent/sema/internal/transcript"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/tools/files"
)

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
	// Budget is set when the question is the run's budget (gate budget): no call waits
	// (Pending is -1), and the resumed leg goes on with the request it was about to make.
	Budget bool `json:"budget,omitempty"`
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
	// boundaries holds, by turn, the chain's transcript.Assistant.Boundaries that were recorded.
	boundaries map[int]int
	// budget is the limits the chain's last allowed budget question left in force.
	budget *BudgetRaise
}

// replayChain rebuilds the conversation from a transcript chain (see internal/resumestate); the
// runner reads the payloads whose shape is its API: a parked turn and a todo list.
func replayChain(entries []session.Entry) (resumeState, error) {
	parked := map[int]*parkedEntry{}
	var todos []Todo
	st, err := resumestate.Replay(resumestate.Input{
		Entries:    entries,
		AppendUser: appendUser,
		Parked: func(i int, payload json.RawMessage) (resumestate.Park, error) {
			var p parkedEntry
			if err := json.Unmarshal(payload, &p); err != nil {
				return resumestate.Park{}, err
			}
			parked[i] = &p
			pending := p.Pending
			if p.Budget {
				pending = math.MaxInt // no call of the last turn waits at a budget question
			}
			return resumestate.Park{Pending: pending, Reads: p.ReadState, Forget: p.ForgetRead}, nil
		},
		Todos: func(payload json.RawMessage) error {
			var t todosEntry
			if err := json.Unmarshal(payload, &t); err != nil {
				return err
			}
			todos = t.Todos
			return nil
		},
	})
	if c := (*resumestate.Corrupt)(nil); errors.As(err, &c) {
		return resumeState{}, corrupt(c.Entry, c.Err)
	} else if err != nil {
		return resumeState{}, err
	}
	return resumeState{
		messages: st.Messages, turns: st.Turns, parked: parked[st.ParkedAt], intents: st.Intents, started: st.Started,
		reads: st.Reads, todos: todos, boundaries: st.Boundaries, budget: lastBudgetRaise(entries),
	}, nil
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
	c := transcript.ReadChange(l.storedReads, now)
	l.storedReads = now
	return c.Records, c.Forget
}

// storeReadState appends the read state's changes since they were last stored, if any.
// It follows a turn's tool results, never precedes them: a read whose result the
// transcript lost must not count as read.
func (l *leg) storeReadState(ctx context.Context) {
	set, forget := l.readDelta()
	if len(set) == 0 && len(forget) == 0 {
		return
	}
	l.recordLater(ctx, transcript.KindReadState, transcript.ReadState{Records: set, Forget: forget})
}

// forgetRestored stores, at the head of the claimed session, that the files a rewind
// restored or deleted must be read again. A later leg replays it with the rest of the
// chain.
func forgetRestored(ctx context.Context, store session.Store, claim *session.Claim, ledger *history.Ledger) error {
	if ledger == nil || !ledger.Applied {
		return nil
	}
	changed := ledger.Changed()
	if len(changed) == 0 {
		return nil
	}
	payload, err := json.Marshal(transcript.ReadState{Forget: changed})
	if err != nil {
		return err
	}
	if _, err := store.Append(context.WithoutCancel(ctx), session.Entry{SessionID: claim.SessionID, Kind: transcript.KindReadState, Payload: payload, Claim: claim}); err != nil {
		return sema.Errorf(CodeSessionRecordFailed, "the files were restored, but the session could not record that they must be read again: %v", err)
	}
	return nil
}

func corrupt(e session.Entry, err error) error {
	return sema.Errorf(CodeTranscriptCorrupt, "transcript entry %s (%s) cannot be read: %v", e.ID, e.Kind, err)
}

// record appends one transcript entry, with the entries recordLater queued before it, and
// reports whether it was stored: when it returns true, the entry and everything before
// it are committed. The transcript fails closed: when an entry cannot be stored (or the
// leg lost its session's lease), the leg records nothing more and stops with
// session.record_failed, rather than go on with work the session would not remember.
// What was stored stays a prefix of the conversation that the next leg completes (see
// replay and abandonedInterrupted).
func (l *leg) record(ctx context.Context, kind string, payload any) (string, bool) {
	return l.rec.Record(ctx, kind, payload)
}

// recordLater queues one transcript entry to be committed with the next entry that
// must be durable before the leg goes on — a call's intent (record), a parked turn —
// or when the leg ends (flushRecords), so a turn costs the store one commit, not one
// per entry. Only entries whose loss in a crash the next leg copes with are queued:
// the prompt and a Stop hook's message (the next leg asks the model without them), a
// response (none of its calls ran: each call's intent commits it first), tool results
// and read state (replay answers the calls whose intents were stored as calls that may
// have run, and a read whose result was lost does not count as read). A failure to
// store them stops the leg at the next commit, before any other call starts.
func (l *leg) recordLater(_ context.Context, kind string, payload any) {
	l.rec.Later(kind, payload)
}

// flushRecords commits the queued entries and reports whether everything recorded so
// far is stored.
func (l *leg) flushRecords(ctx context.Context) bool {
	return l.rec.Flush(ctx)
}

// flushBeforeRequest stores what the leg queued before a turn's request goes out. Only
// the prompt waits there (tool results and a Stop hook's message are committed before
// the next request is built): it is committed concurrently with the leg's first request,
// and the answer is dropped if it could not be. Anything else queued is committed first.
// It returns nil when the entries could not be stored, else a func that reports, once
// the request is back, whether they were.
func (l *leg) flushBeforeRequest(ctx context.Context) func() bool {
	return l.rec.FlushBeforeRequest(ctx)
}

// leaseLostError is the error that stops a leg whose session another run took over.
func leaseLostError(cause error) *sema.Error {
	return recorder.LeaseLost(cause)
}

// leaseGone reports whether the leg lost its session to another run: its context ended
// with that cause, or the store refused its entries for it.
func (l *leg) leaseGone(cause error) bool {
	if sema.IsCode(cause, session.CodeLeaseLost) {
		return true
	}
	err := l.rec.Err()
	return err != nil && err.Code == session.CodeLeaseLost
}

// recordFailed reports the failed transcript write that stops the leg, if there was one.
func (l *leg) recordFailed() *sema.Error {
	return l.rec.Err()
}

// boundaryScope is the leg's scope for its boundaries, and its part in minting them. A
// turn mints its boundary lazily (internal/boundary), just before its first change of a
// file, and its assistant entry records how many boundaries the scope held when it
// started (transcript.Assistant.Boundaries). A delegated child recording into its
// root's scope asks its root leg to mint (historyOwner).
func (l *leg) boundaryScope() boundary.Scope {
	return boundary.Scope{
		History:    l.deps.History,
		Scope:      l.historyScope,
		Unsynced:   l.bashChanges.unsynced,
		BeforeMint: l.bashChanges.atBoundary,
		Failed: func(turn int, err error) {
			l.notice(sema.Notice{Code: CodeBoundaryFailed, Message: "the file-history boundary of turn could not be stored: " + err.Error(), Detail: map[string]any{"turn": turn}})
		},
	}
}

// ownsBoundaries reports whether the leg mints boundaries: it records file history into
// its own scope. A child recording into its root's scope mints none: its edits belong to
// the parent's turn that delegated, and a rewind of that turn undoes them.
func (l *leg) ownsBoundaries() bool {
	return l.files != nil && (l.link == nil || l.historyScope == l.sessionID)
}

// historyOwner is the leg that mints the boundaries of l's scope: l itself, or for a
// child recording into its root's scope, the root leg.
func (l *leg) historyOwner() *leg {
	o := l
	for !o.ownsBoundaries() && o.link != nil {
		o = o.link.parent
	}
	return o
}

// beginTurn starts turn for file history and returns what its assistant entry records
// of the scope (nil when the leg mints no boundaries). The boundary itself waits for the
// turn's first change of a file — unless background Bash tasks run: what they change
// during the turn belongs to it, so the boundary is minted at once, after their changes
// so far were recorded for the turn that ends (bashChanges.atBoundary).
func (l *leg) beginTurn(ctx context.Context, turn int) *int {
	if !l.ownsBoundaries() {
		return nil
	}
	return l.bound.Begin(ctx, l.boundaryScope(), turn)
}

// resumeParkedTurn lets the changes of a parked turn's calls, which a resumed leg runs,
// land at that turn's boundary: the one it minted before it parked, or one minted now at
// the first change if it had none.
func (l *leg) resumeParkedTurn(ctx context.Context, turn int) {
	if !l.ownsBoundaries() {
		return
	}
	at, counted := l.resume.boundaries[turn]
	l.bound.ResumeParked(ctx, l.boundaryScope(), turn, at, counted)
}

// boundTurn is the turn the leg's file-history records land in now.
func (l *leg) boundTurn() int {
	return l.historyOwner().bound.Turn()
}

// ensureBoundary mints the current turn's boundary of l's scope if the turn has none yet.
// It runs before every first-touch record (a write tool's, a Bash command's, a delegated
// child's), so the record lands at the turn's boundary; its error, when the turn still
// has none, refuses the change the record was for (boundary.Minter.Ensure).
func (l *leg) ensureBoundary(ctx context.Context) error {
	o := l.historyOwner()
	if !o.ownsBoundaries() {
		return nil
	}
	return o.bound.Ensure(ctx, o.boundaryScope())
}

// unsynced reports whether background Bash tasks may have changed files since the last
// snapshot (see atBoundary).
func (c *bashChanges) unsynced() bool {
	return c != nil && c.Unsynced()
}

// rewindFrom rewinds the scope's files to the start of turn (with end, to the end of the
// turn before it, whose count at is), from the boundaries after at (see boundaryFrom).
func rewindFrom(ctx context.Context, store history.Store, files *history.Files, scope string, turn, at int, end bool, opts history.RewindOptions) (history.Ledger, error) {
	bs, err := store.Boundaries(ctx, scope)
	if err != nil {
		return history.Ledger{Scope: scope, Turn: turn}, err
	}
	from, ok := boundaryFrom(bs, at, turn-1, end)
	if !ok {
		from = history.FromNowhere
	}
	return files.RewindFrom(ctx, scope, turn, from, opts)
}

// boundaryFrom is rewindpoint.BoundaryFrom: the first boundary a rewind to turn
// restores from.
func boundaryFrom(bs []history.Boundary, at, turn int, end bool) (int64, bool) {
	return rewindpoint.BoundaryFrom(bs, at, turn, end)
}

// trackFileEdit is the runner's first-touch history seat: before the first change of a
// file after a boundary, its pre-image is recorded. When it cannot be recorded durably
// the edit is refused, unless the deployment chose to proceed unprotected.
func (l *leg) trackFileEdit(ctx context.Context, req files.TrackEditRequest) (files.TrackEditResult, error) {
	var rec history.Record
	var minted bool
	// Without the turn's boundary the record would land at an earlier turn's, and a
	// rewind to this turn would miss the edit: refused as a record that cannot be made.
	err := l.ensureBoundary(ctx)
	if err == nil {
		rec, minted, err = l.files.Track(ctx, l.historyScope, req.Key)
	}
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
		chain = transcript.CutAt(chain, rs.At) // the fork is cut at At; replay only that prefix
	}
	return &s, chain, nil
}

// openSession creates the run's session, or continues (or forks) the loaded one, and
// starts its leg. It runs last in prepare, so a refused spec leaves no leg behind.
func (l *leg) openSession(ctx context.Context, loaded *session.Session, chain []session.Entry) error {
	if l.store == nil {
		l.sessionID = cmp.Or(l.spec.SessionID, newSessionID())
		return nil
	}
	root := l.fence.Root()
	var s session.Session
	var err error
	branchFrom := ""         // the entry the leg's first entry follows (Resume.At)
	var started *session.Leg // the leg createLeased started with the session
	switch {
	case loaded == nil && l.link != nil:
		s, err = l.childSession(ctx)
	case loaded == nil && l.spec.SessionID == "":
		st, err := replayChain(nil)
		if err != nil {
			return err
		}
		l.resume, l.todoList = st, st.todos
		l.openBeside(ctx, l.newSession(session.Session{
			ID: newSessionID(), Root: root, FSID: history.FilesystemIdentity(l.deps.Env), Model: l.spec.Model,
			Title: title(l.spec.titleText()),
		}))
		return nil
	case loaded == nil:
		var leg session.Leg
		s, leg, err = l.createLeased(ctx, l.newSession(session.Session{
			ID: l.spec.SessionID, Root: root, FSID: history.FilesystemIdentity(l.deps.Env), Model: l.spec.Model,
			Title: title(l.spec.titleText()),
		}))
		started = &leg
	case loaded.Root != root:
		return sema.Errorf(CodeRootMismatch, "session %s works in %s, not in %s; resume it from its own root", loaded.ID, loaded.Root, root)
	case l.spec.resume().Fork:
		l.recoverForkSource(ctx, loaded)
		s, err = l.store.Fork(ctx, loaded.ID, l.spec.resume().At)
		if err == nil && l.deps.History != nil {
			if _, cerr := l.deps.History.CarryFork(ctx, loaded.HistoryScope(), s.HistoryScope()); cerr != nil {
				l.notice(sema.Notice{Code: CodeCarryFailed, Message: "the fork could not carry its parent's file history: " + cerr.Error()})
			}
		}
	default:
		s = *loaded
		branchFrom = l.spec.resume().At
	}
	if err != nil {
		return err
	}
	l.storedModes = modesOf(s)
	if l.lease == nil && started == nil {
		// A fork: nobody else knows it yet, but a --continue elsewhere may find it, so it
		// is claimed like any other.
		if err := l.takeLease(ctx, s.ID); err != nil {
			return err
		}
	}
	l.sessionID = s.ID
	l.historyScope = s.HistoryScope()
	st, err := replayChain(chain)
	if err != nil {
		return err
	}
	l.resume = st
	l.todoList = st.todos
	if started == nil {
		leg, err := l.store.StartLeg(ctx, s.ID)
		if err != nil {
			return err
		}
		started = &leg
	}
	l.legID = started.ID
	l.rec.Open(recorder.Leg{Store: l.store, SessionID: s.ID, LegID: started.ID, BranchFrom: branchFrom, Claim: l.writeClaim, Reclaim: l.reclaim})
	return nil
}

// openBeside starts storing a new session that sema named — the session, its lease and
// its leg — beside the rest of the leg's preparation and its first request, which need
// none of them: the id is minted here, and nothing reads the session before the leg's
// first transcript commit, which waits for it (recorder.Leg.Opened), as does everything
// else that uses the leg or its lease (opened). A session that could not be stored stops
// the leg at that commit, before any tool runs; the first response is dropped like that
// of a prompt that could not be stored. A session the caller named (TaskSpec.SessionID)
// is stored first: it may already exist, and the refusal comes before any request.
func (l *leg) openBeside(ctx context.Context, s session.Session) {
	l.sessionID, l.historyScope = s.ID, s.HistoryScope()
	l.bound.Fresh()                  // a scope named now holds no boundaries
	ctx = context.WithoutCancel(ctx) // a cancelled leg still ends its stored leg
	l.opening = later.Start(func() (struct{}, error) { return struct{}{}, l.storeNew(ctx, s) })
	l.rec.Open(recorder.Leg{Store: l.store, SessionID: s.ID, Claim: l.writeClaim, Reclaim: l.reclaim,
		Opened: func() (string, error) {
			err := l.opened() // before legID is read: storeNew sets it
			return l.legID, err
		}})
}

// storeNew stores the new session s, takes its lease and starts its leg. It runs on its
// own goroutine (openBeside); the leg's fields it sets are read only after opened.
func (l *leg) storeNew(ctx context.Context, s session.Session) error {
	created, leg, err := l.createLeased(ctx, s)
	if err != nil {
		return err
	}
	if created.ID != s.ID || created.HistoryScope() != s.HistoryScope() {
		return sema.Errorf(CodeSessionRecordFailed, "the session store created session %s (scope %s) when asked for %s", created.ID, created.HistoryScope(), s.ID)
	}
	l.legID, l.storedModes = leg.ID, modesOf(created)
	return nil
}

// opened waits until the leg's session, lease and leg are stored, when a new session is
// being stored beside the first request, and returns why they could not be. Everything
// that reads the leg's id or its lease calls it first.
func (l *leg) opened() error {
	if l.opening == nil {
		return nil
	}
	_, err := l.opening.Wait()
	return err
}

// closeSession ends the leg and records the mode word the session continues with.
func (l *leg) closeSession(ctx context.Context, status sema.Status) {
	if l.store == nil || l.opened() != nil || l.legID == "" {
		return
	}
	cause := context.Cause(ctx)
	ctx = context.WithoutCancel(ctx)
	// Reads not yet stored with a turn's results (a rewind's forgetting, when the leg ran
	// no turn) are stored before the leg ends.
	l.storeReadState(ctx)
	l.flushRecords(ctx)
	if _, err := l.store.EndLeg(ctx, l.legID, status); err != nil {
		l.notice(sema.Notice{Code: CodeSessionRecordFailed, Message: "the leg's end could not be stored: " + err.Error()})
	}
	if l.leaseGone(cause) {
		return // the session is another run's now; this leg's mode must not overwrite it
	}
	now := sessionModes{mode: string(l.modes.Requested()), effective: string(l.modes.Current()), prePlan: string(l.modes.PrePlanMode())}
	if now == l.storedModes {
		// The row holds them already: a session's modes are written only as it is
		// created or forked and as a leg ends, and the lease kept other legs out since
		// this one read them. Skipped, the close is one transaction fewer (four
		// statements on Postgres).
		return
	}
	_, err := l.store.Update(ctx, l.sessionID, func(s *session.Session) error {
		s.Mode, s.EffectiveMode, s.PrePlanMode = now.mode, now.effective, now.prePlan
		return nil
	})
	if err != nil {
		l.notice(sema.Notice{Code: CodeSessionRecordFailed, Message: "the session's mode could not be stored: " + err.Error()})
	}
}

// newSession is s, a session this leg creates, with the modes the leg starts in: the
// row says from its creation what the leg runs in, and a leg that ends in them stores
// nothing more at its close.
func (l *leg) newSession(s session.Session) session.Session {
	s.Mode, s.EffectiveMode, s.PrePlanMode = string(l.modes.Requested()), string(l.modes.Current()), string(l.modes.PrePlanMode())
	return s
}

// sessionModes are the mode words a session's row keeps for the leg after it.
type sessionModes struct{ mode, effective, prePlan string }

func modesOf(s session.Session) sessionModes {
	return sessionModes{mode: s.Mode, effective: s.EffectiveMode, prePlan: s.PrePlanMode}
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
	return session.Entry{SessionID: sessionID, ParentID: parent, Kind: transcript.KindRewind, Payload: payload}
}
