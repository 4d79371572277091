package pgstore

// The refusals of packages session and history, word for word: the suites check their
// codes, and a caller that shows a message must read the same sentence whichever store a
// deployment chose. Those packages keep their checks unexported, so the store outside them
// repeats them here; a change there is a change here.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/session"
)

func notFound(id string) error {
	return sema.Errorf(session.CodeNotFound, "no session %q in the store; list sessions to find its id", id).With("session_id", id)
}

func noSessionAt(root string) error {
	return sema.Errorf(session.CodeNotFound, "no session was started in %s; start a new one", root).With("root", root)
}

func legNotFound(sessionID, legID string) error {
	return sema.Errorf(session.CodeLegNotFound, "leg %q is not a leg of session %q; start a leg with StartLeg first", legID, sessionID).
		With("session_id", sessionID).With("leg_id", legID)
}

func entryNotFound(sessionID, entryID string) error {
	return sema.Errorf(session.CodeEntryNotFound, "entry %q is not in the transcript of session %q; pick an entry id from Transcript", entryID, sessionID).
		With("session_id", sessionID).With("entry_id", entryID)
}

func checkpointNotFound(id string) error {
	return sema.Errorf(session.CodeCheckpointNotFound, "no checkpoint %q in the store; it may have been pruned", id).With("checkpoint_id", id)
}

func alreadyClaimed(c session.Checkpoint) error {
	return sema.Errorf(session.CodeAlreadyClaimed, "checkpoint %q was already answered at %s; a parked call runs at most once",
		c.ID, c.ClaimedAt.UTC().Format(time.RFC3339)).With("checkpoint_id", c.ID)
}

func sessionExists(id string) error {
	return sema.Errorf(session.CodeExists, "session %q already exists; leave ID empty to mint a new one", id).With("session_id", id)
}

// checkEntry validates e and returns the payload to store.
func checkEntry(e session.Entry) ([]byte, error) {
	if e.Kind == "" {
		return nil, sema.Errorf(session.CodeEntryInvalid, "an entry needs a kind (user, assistant, tool_result, …)")
	}
	if e.Payload == nil {
		return []byte("null"), nil
	}
	if !json.Valid(e.Payload) {
		return nil, sema.Errorf(session.CodeEntryInvalid, "the payload of a %q entry is not valid JSON", e.Kind)
	}
	return bytes.Clone(e.Payload), nil
}

// checkBatch validates the entries of one AppendBatch and returns the payloads to store.
func checkBatch(es []session.Entry) ([][]byte, error) {
	out := make([][]byte, len(es))
	for i, e := range es {
		if e.SessionID != es[0].SessionID {
			return nil, sema.Errorf(session.CodeEntryInvalid, "a batch appends to one session, not to %q and %q", es[0].SessionID, e.SessionID)
		}
		p, err := checkEntry(e)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

// checkPark validates c and fills the fields Park mints but the time, which the database
// stamps.
func checkPark(c session.Checkpoint) (session.Checkpoint, error) {
	if c.Tool == "" {
		return c, sema.Errorf(session.CodeCheckpointInvalid, "a checkpoint needs the name of the tool it parks")
	}
	if c.Gate != session.GateToolPermission && c.Gate != session.GatePlanReview {
		return c, sema.Errorf(session.CodeCheckpointInvalid, "checkpoint gate %q is not %q or %q", c.Gate, session.GateToolPermission, session.GatePlanReview).With("gate", string(c.Gate))
	}
	args, err := session.CanonicalJSON(c.Args)
	if err != nil {
		return c, sema.Errorf(session.CodeCheckpointInvalid, "the arguments of the parked %s call are not one JSON value: %v", c.Tool, err)
	}
	c.ID = session.NewID()
	c.Args = args
	c.ArgsSHA256 = session.SHA256Hex(args)
	c.ClaimedAt = time.Time{}
	c.Decision = nil
	return c, nil
}

// checkDecision validates d and returns it with canonical arguments.
func checkDecision(d session.Decision) (session.Decision, error) {
	switch d.Verdict {
	case session.VerdictAllow:
	case session.VerdictDeny:
		if len(d.Args) > 0 {
			return d, sema.Errorf(session.CodeDecisionInvalid, "a deny decision carries no edited arguments; drop them or allow")
		}
	default:
		return d, sema.Errorf(session.CodeDecisionInvalid, "decision verdict %q is not %q or %q", d.Verdict, session.VerdictAllow, session.VerdictDeny)
	}
	if len(d.Args) > 0 {
		args, err := session.CanonicalJSON(d.Args)
		if err != nil {
			return d, sema.Errorf(session.CodeDecisionInvalid, "the edited arguments are not one JSON value: %v", err)
		}
		d.Args = args
	}
	return d, nil
}

// checkLease refuses a lease call without a holder, or (needTTL) with a ttl that is not
// positive.
func checkLease(sessionID, holder string, ttl time.Duration, needTTL bool) error {
	if holder == "" {
		return sema.Errorf(session.CodeLeaseInvalid, "a lease on session %q needs a holder name", sessionID).With("session_id", sessionID)
	}
	if needTTL && ttl <= 0 {
		return sema.Errorf(session.CodeLeaseInvalid, "a lease on session %q needs a positive ttl, not %s", sessionID, ttl).With("session_id", sessionID)
	}
	return nil
}

func busy(sessionID, holder string, until time.Time) error {
	return sema.Errorf(session.CodeBusy, "session %q is being continued by another run (%s) until %s at the latest; wait for it to end or retry later",
		sessionID, holder, until.UTC().Format(time.RFC3339)).With("session_id", sessionID).With("holder", holder)
}

func leaseLost(sessionID, holder string) error {
	return sema.Errorf(session.CodeLeaseLost, "the lease of %s on session %q is gone: it was released, or it expired and another run took the session", holder, sessionID).
		With("session_id", sessionID).With("holder", holder)
}

// checkCreate validates a session for Create and fills the id it mints. A zero CreatedAt
// stays zero: the database stamps it.
func checkCreate(s session.Session) (session.Session, error) {
	if s.ID == "" {
		s.ID = session.NewID()
	}
	if s.Root == "" {
		return s, sema.Errorf(session.CodeInvalid, "a session needs its canonical task root")
	}
	s.Head = ""
	return s, nil
}

// applyUpdate runs fn on a copy of s and refuses a change to a field Update does not own.
func applyUpdate(s session.Session, fn func(*session.Session) error) (session.Session, error) {
	c := s
	if err := fn(&c); err != nil {
		return s, err
	}
	fixed := s
	fixed.Model, fixed.Mode, fixed.EffectiveMode, fixed.PrePlanMode, fixed.Title = c.Model, c.Mode, c.EffectiveMode, c.PrePlanMode, c.Title
	if fixed != c {
		return s, sema.Errorf(session.CodeInvalid, "Update may change only Model, Mode, EffectiveMode, PrePlanMode and Title of session %q", s.ID).With("session_id", s.ID)
	}
	return c, nil
}

func checkStatus(status sema.Status) error {
	if status == "" || status == sema.StatusRunning {
		return sema.Errorf(session.CodeInvalid, "a leg ends with a final status, not %q", status)
	}
	return nil
}

func legEnded(l session.Leg) error {
	return sema.Errorf(session.CodeLegEnded, "leg %d of session %q already ended (%s)", l.Number, l.SessionID, l.Status).
		With("leg_id", l.ID)
}

// The file-history refusals.

// modeBits are the mode bits a record keeps and a restore puts back.
const modeBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func checkScope(scope string) error {
	if scope == "" {
		return sema.Errorf(history.CodeScopeInvalid, "a history scope (the recording session's id) is required")
	}
	return nil
}

func checkKey(key string) error {
	if !filepath.IsAbs(key) || filepath.Clean(key) != key {
		return sema.Errorf(history.CodeKeyInvalid, "history keys are canonical absolute paths; canonicalize %q through the fence first", key).With("key", key)
	}
	return nil
}

func checkTurn(turn int) error {
	if turn < 1 {
		return sema.Errorf(history.CodeTurnInvalid, "turns are numbered from 1; cannot mint a boundary for turn %d", turn).With("turn", turn)
	}
	return nil
}

func checkAfter(after string) error {
	if after == history.AfterAbsent {
		return nil
	}
	if len(after) == sha256.Size*2 {
		if _, err := hex.DecodeString(after); err == nil && strings.ToLower(after) == after {
			return nil
		}
	}
	return sema.Errorf(history.CodeAfterInvalid, "an after-image is a lowercase hex sha256 or %q, not %q", history.AfterAbsent, after).With("after", after)
}

// prepareInsert validates rec and derives what Insert computes from content.
func prepareInsert(rec history.Record, content []byte) (history.Record, error) {
	if err := checkScope(rec.Scope); err != nil {
		return rec, err
	}
	if err := checkKey(rec.Key); err != nil {
		return rec, err
	}
	if rec.Existed {
		rec.Sum, rec.Size, rec.Mode = sum(content), int64(len(content)), rec.Mode&modeBits
	} else {
		rec.Sum, rec.Size, rec.Mode = "", 0, 0
	}
	rec.After = "" // only SetAfter, after a write succeeded, says what was left
	return rec, nil
}

// prepareSaved validates a rewind's saved states before anything is stored, and drops a
// key given twice (the first entry is the state the file had).
func prepareSaved(scope string, turn int, saved []history.Saved) ([]history.Saved, error) {
	if err := checkScope(scope); err != nil {
		return nil, err
	}
	if turn < 0 {
		return nil, checkTurn(turn)
	}
	out := make([]history.Saved, 0, len(saved))
	seen := map[string]bool{}
	for _, sv := range saved {
		sv.Record.Scope = scope
		rec, err := prepareInsert(sv.Record, sv.Content)
		if err != nil {
			return nil, err
		}
		if sv.Record.After != "" {
			if err := checkAfter(sv.Record.After); err != nil {
				return nil, err
			}
		}
		if seen[rec.Key] {
			continue
		}
		seen[rec.Key] = true
		rec.After = sv.Record.After
		if !rec.Existed {
			sv.Content = nil
		}
		out = append(out, history.Saved{Record: rec, Content: sv.Content})
	}
	return out, nil
}

func blobMissing(s string) error {
	return sema.Errorf(history.CodeBlobMissing, "the history store has no blob %s; the store was changed outside sema", s).With("sum", s)
}

func carryConflict(from, to string) error {
	return sema.Errorf(history.CodeCarryConflict, "scope %q already records history of its own; carry a fork's history before its first boundary", to).
		With("from", from).With("to", to)
}
