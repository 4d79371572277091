package session

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/session/storecode"
)

// Store keeps sessions, their legs, transcripts and checkpoints: what the runner
// (package agent) and a server running its tasks call, and all a store made only to
// serve runs implements. Listing, finding and pruning sessions are Admin's. Every method
// is safe for concurrent use; a method that fails changes nothing. A method given the id
// of a session the store does not hold fails with CodeNotFound; the other codes below
// say which call refuses what.
type Store interface {
	// Create stores a new session. An empty ID is minted; CreatedAt zero means now.
	Create(ctx context.Context, s Session) (Session, error)
	// Get returns the session with the given id; CodeNotFound when there is none.
	Get(ctx context.Context, id string) (Session, error)
	// Update changes the mutable fields (Model, Mode, EffectiveMode, PrePlanMode, Title) in one
	// transaction: fn sees the stored session and edits it in place. fn must not call
	// the store.
	Update(ctx context.Context, id string, fn func(*Session) error) (Session, error)
	// Fork copies the chain ending at atEntry ("" = the head) into a new session.
	Fork(ctx context.Context, id, atEntry string) (Session, error)

	// StartLeg opens the session's next leg (numbered from 1), running.
	StartLeg(ctx context.Context, sessionID string) (Leg, error)
	// EndLeg closes a running leg with its final status: any non-empty word but
	// sema.StatusRunning (the runner writes the other sema.Status constants).
	EndLeg(ctx context.Context, legID string, status sema.Status) (Leg, error)
	// Legs lists the session's legs in number order, running and ended alike.
	Legs(ctx context.Context, sessionID string) ([]Leg, error)

	// Append commits one entry and returns its id (see Entry for the fields it reads).
	// An entry with a Claim whose lease is not live fails with CodeLeaseLost.
	Append(ctx context.Context, e Entry) (string, error)
	// Transcript returns the chain from the root to head ("" = the session's head).
	Transcript(ctx context.Context, sessionID, head string) ([]Entry, error)

	// Park stores a pending tool call and returns it with its id, canonical
	// arguments and their sha256. A checkpoint with a Claim whose lease is not live fails
	// with CodeLeaseLost.
	Park(ctx context.Context, c Checkpoint) (Checkpoint, error)
	// Checkpoint returns the checkpoint with the given id, claimed or not;
	// CodeCheckpointNotFound when there is none.
	Checkpoint(ctx context.Context, id string) (Checkpoint, error)
	// ClaimCheckpoint records the decision once, atomically, and returns the claimed
	// checkpoint; a second claim fails with CodeAlreadyClaimed.
	ClaimCheckpoint(ctx context.Context, id string, d Decision) (Checkpoint, error)

	// AcquireLease makes holder the session's one writer until ttl from now, atomically:
	// it succeeds when the session has no lease, when holder already holds it (the expiry
	// moves on), or when the lease has expired (a holder that died is taken over).
	// Otherwise it fails with CodeBusy and changes nothing.
	AcquireLease(ctx context.Context, sessionID, holder string, ttl time.Duration) (Lease, error)
	// RenewLease moves holder's lease to ttl from now. It fails with CodeLeaseLost when
	// holder does not hold the lease any more (it was released, or it expired and
	// another holder took it); an expired lease nobody took is renewed.
	RenewLease(ctx context.Context, sessionID, holder string, ttl time.Duration) (Lease, error)
	// ReleaseLease frees the session when holder holds its lease. Releasing a lease
	// holder does not hold (any more) changes nothing and is not an error, so a late
	// release never frees a session another holder took over.
	ReleaseLease(ctx context.Context, sessionID, holder string) error

	// Close releases the store; no call may follow it. A Memory store refuses later
	// calls with CodeClosed; a SQLiteStore closes its database when it opened it itself
	// (OpenSQLite, OpenSQLiteWith). The runner never closes the store it is given: its
	// owner (the host that opened it) does.
	Close() error
}

// Admin is what administering sessions needs beyond Store: listing and finding them
// (sema sessions list and show, sema --continue), reading a session's checkpoints as a
// list, and pruning (sema sessions prune). The runner calls none of it, so a store made
// only to serve runs may leave it out; one that offers it is an AdminStore. Its methods
// keep Store's promises (safe for concurrent use, nothing changed by a failure,
// CodeNotFound for an unknown session).
type Admin interface {
	// List returns sessions, most recently updated first.
	List(ctx context.Context, f Filter) ([]Session, error)
	// Newest is the most recently updated root session (no ParentID) at root.
	Newest(ctx context.Context, root string) (Session, error)
	// Checkpoints lists a session's checkpoints, oldest first, claimed ones included.
	Checkpoints(ctx context.Context, sessionID string) ([]Checkpoint, error)
	// Prune deletes every session last updated before olderThan, with all it owns,
	// and returns their ids (whose file-history scopes the caller may now forget).
	Prune(ctx context.Context, olderThan time.Time) ([]string, error)
}

// AdminStore is a Store that offers Admin too: every store in this module (Memory,
// SQLiteStore, pgstore.Sessions) is one. Code that administers sessions takes an
// AdminStore; code given only a Store gets one through AsAdmin.
type AdminStore interface {
	Store
	Admin
}

var (
	_ AdminStore = (*Memory)(nil)
	_ AdminStore = (*SQLiteStore)(nil)
)

// AsAdmin returns s as an AdminStore, or, when s does not offer Admin, an error with
// CodeAdminUnsupported. It is the one place a caller holding only a Store (an embedder's
// agent.Deps.Store) asks for administration, so the refusal reads the same everywhere.
// A wrapper around a store passes Admin on by embedding an AdminStore rather than a
// Store.
func AsAdmin(s Store) (AdminStore, error) {
	if a, ok := s.(AdminStore); ok {
		return a, nil
	}
	if s == nil {
		return nil, sema.Errorf(CodeAdminUnsupported, "no session store was given; open one (statedir.Open, session.OpenSQLite) to list or prune sessions")
	}
	return nil, sema.Errorf(CodeAdminUnsupported, "the session store %T serves runs only: it cannot list, find or prune sessions; use a store that implements session.Admin (the SQLite, memory and PostgreSQL stores do)", s).
		With("store", fmt.Sprintf("%T", s))
}

// Opener is a Store that stores a new session, its holder's lease and its first leg in
// one transaction: what a runner's new leg does first (Create, AcquireLease and StartLeg,
// a commit each otherwise). A runner that finds it on its store uses it; a store (or a
// wrapper around one) without it gets the three calls, in that order.
type Opener interface {
	// CreateLeased stores s as Create does, held by holder for ttl as AcquireLease holds
	// it, with its first leg running as StartLeg starts it: all or none. An ID a session
	// already has fails with CodeExists and changes nothing; invalid arguments are refused
	// as Create and AcquireLease refuse them.
	CreateLeased(ctx context.Context, s Session, holder string, ttl time.Duration) (Session, Leg, error)
}

// BatchAppender is a Store that can commit several transcript entries at once. A runner
// that finds it on its store groups the entries of a turn into one write; a store (or a
// wrapper around one) without it gets them one Append at a time, in the same order.
type BatchAppender interface {
	// AppendBatch commits es in order, all or none, as one transaction, and returns their
	// ids. Each entry is checked as Append checks it; an entry with an empty ParentID
	// follows the one before it (the first, the session's head). It refuses entries of
	// more than one session, or with different claims, with CodeEntryInvalid. An empty es
	// commits nothing.
	AppendBatch(ctx context.Context, es []Entry) ([]string, error)
}

// Codes of the errors a Store (and AsAdmin) returns.
const (
	CodeNotFound           = "session.not_found"           // no session with that id
	CodeExists             = "session.exists"              // Create with an id already taken
	CodeInvalid            = "session.invalid"             // a field Create, Update or EndLeg refuses
	CodeLegNotFound        = "session.leg_not_found"       // no such leg in that session
	CodeLegEnded           = "session.leg_ended"           // EndLeg on a leg that already ended
	CodeEntryNotFound      = "session.entry_not_found"     // a head, parent or fork point not in the session
	CodeEntryInvalid       = "session.entry_invalid"       // an entry without a kind, or a payload that is not JSON
	CodeCheckpointNotFound = "checkpoint.not_found"        // no checkpoint with that id
	CodeAlreadyClaimed     = "checkpoint.already_claimed"  // a second claim of one checkpoint
	CodeCheckpointInvalid  = "checkpoint.invalid"          // Park refuses the checkpoint
	CodeDecisionInvalid    = "checkpoint.decision_invalid" // ClaimCheckpoint refuses the decision
	CodeClosed             = storecode.Closed              // a call on a closed Memory store
	CodeBusy               = "session.busy"                // AcquireLease while another holder's lease runs
	CodeLeaseLost          = "session.lease_lost"          // RenewLease by a holder whose lease is gone, or a write whose Claim is not live
	CodeLeaseInvalid       = "session.lease_invalid"       // a lease call without a holder or with a ttl ≤ 0
	CodeAdminUnsupported   = "session.admin_unsupported"   // AsAdmin of a store without the Admin methods
	CodeDeferUnsupported   = "session.defer_unsupported"   // Deferred opened a store without AppendBatch or CreateLeased
)

// Lease is a session's claim by its one writer: the leg continuing it. It expires, so
// a writer killed without releasing it blocks the session for at most one ttl.
type Lease struct {
	// SessionID is the leased session.
	SessionID string `json:"session_id"`
	// Holder names the writer; the store compares it and does not interpret it.
	Holder string `json:"holder"`
	// ExpiresAt is when the lease lapses unless it is renewed, in UTC.
	ExpiresAt time.Time `json:"expires_at"`
}

// Session is a session's metadata. ID, Root, FSID, Scope, ParentID, ForkOf and ForkAt
// are fixed at creation; Model, Mode, EffectiveMode, PrePlanMode and Title change through Update;
// Head and UpdatedAt are kept by the store.
type Session struct {
	// ID names the session: the id Create was given, else a v4 UUID it minted.
	ID string `json:"id"`
	// Root is the canonical task root the session works in.
	Root string `json:"root"`
	// FSID is the identity of the filesystem tree Root lies on
	// (history.FilesystemIdentity).
	FSID string `json:"fs_id"`
	// Scope is the file-history scope the session records into; empty means its own
	// ID (a same-tree delegated child records into its root session's scope).
	Scope string `json:"scope,omitempty"`
	// CreatedAt is the time Create was given, else the time it stored the session;
	// stores return it in UTC.
	CreatedAt time.Time `json:"created_at"`
	// UpdatedAt moves on every Update, Append, leg and checkpoint change.
	UpdatedAt time.Time `json:"updated_at"`
	// ParentID is the session of the leg that delegated this one (a subagent); empty
	// for a root session.
	ParentID string `json:"parent_id,omitempty"`
	// ForkOf is the session this one was forked from; empty when it is not a fork.
	ForkOf string `json:"fork_of,omitempty"`
	// ForkAt is the id, in ForkOf's transcript, of the last entry the fork copied;
	// empty when the original had no entries.
	ForkAt string `json:"fork_at,omitempty"`
	// Model is the model name the session was created with (the runner records
	// agent.TaskSpec.Model); the store does not interpret it.
	Model string `json:"model,omitempty"`
	// Mode is the permission mode word in force (the newest steer that took effect).
	Mode string `json:"mode,omitempty"`
	// EffectiveMode is the mode the newest leg ran in, after the deployment's folds and a
	// parent's ceiling (Mode is the word it asked for, which a resume asks for again).
	// Empty for a session no leg has ended yet.
	EffectiveMode string `json:"effective_mode,omitempty"`
	// PrePlanMode is the mode word to return to when plan mode is left (the runner
	// leaves it empty outside plan mode).
	PrePlanMode string `json:"pre_plan_mode,omitempty"`
	// Title names the session for people; the runner uses the first prompt.
	Title string `json:"title,omitempty"`
	// Head is the transcript entry appended last: where an Append without a parent
	// attaches. Empty while the transcript is empty.
	Head string `json:"head,omitempty"`
}

// HistoryScope returns the file-history scope of the session: Scope, else ID.
func (s Session) HistoryScope() string {
	if s.Scope != "" {
		return s.Scope
	}
	return s.ID
}

// Filter selects sessions for List. The zero value lists every session.
type Filter struct {
	// Root keeps only sessions whose Root is exactly this canonical path ("" = any).
	Root string
	// RootsOnly drops delegated child sessions (those with a ParentID).
	RootsOnly bool
	// Limit caps the number of sessions returned (0 = no cap).
	Limit int
}

// Leg is one stretch of a session's work: what one call of the runner (a run, or a
// resume that answers a checkpoint) did, from StartLeg to EndLeg. Numbers count from 1
// per session; a fork keeps the numbers of the legs it copied and goes on from the
// highest.
type Leg struct {
	// ID names the leg: a v4 UUID that StartLeg (or Fork, for a copied leg) minted.
	ID string `json:"id"`
	// SessionID is the session the leg belongs to.
	SessionID string `json:"session_id"`
	// Number is the leg's place in its session, from 1.
	Number int `json:"number"`
	// StartedAt is when StartLeg opened the leg, in UTC.
	StartedAt time.Time `json:"started_at"`
	// EndedAt is zero while the leg runs.
	EndedAt time.Time `json:"ended_at,omitzero"`
	// Status is sema.StatusRunning until EndLeg records the leg's final status.
	Status sema.Status `json:"status"`
}

// Entry is one transcript entry. Append reads SessionID, LegID (optional; when set it
// must be a leg of the session), ParentID, Kind, Payload and Claim (optional), and mints
// ID, Seq and CreatedAt.
type Entry struct {
	// ID names the entry: a v4 UUID that Append (or Fork, for a copy) minted.
	ID string `json:"id"`
	// SessionID is the session whose transcript holds the entry.
	SessionID string `json:"session_id"`
	// LegID is the leg that appended the entry; empty when Append was given none.
	LegID string `json:"leg_id,omitempty"`
	// Seq is the entry's place in the session's append order: 1, 2, 3, … without gaps.
	Seq int64 `json:"seq"`
	// ParentID is the entry this one follows. On Append, empty means the session's
	// head; an earlier entry of the session starts a branch there.
	ParentID string `json:"parent_id,omitempty"`
	// Kind says what the payload is ("user", "assistant", "tool_result", …); the store
	// does not interpret it.
	Kind string `json:"kind"`
	// Payload is the entry's JSON document (nil is stored as null).
	Payload json.RawMessage `json:"payload"`
	// CreatedAt is when Append committed the entry, in UTC; a fork's copy keeps the
	// original's time.
	CreatedAt time.Time `json:"created_at"`
	// Claim, when set, makes the append conditional on a live lease (see Claim). It is
	// not stored.
	Claim *Claim `json:"-"`
}

// Claim makes a write conditional on its writer's lease: the store commits it only if,
// in the same transaction, Holder holds the lease of SessionID and it has not expired;
// otherwise it fails with CodeLeaseLost and stores nothing. A writer that stalled past
// its lease (stopped, asleep) while another run took the session over thus adds
// nothing to a transcript that is no longer its own, and a write it makes before a
// side effect (a tool call's intent) proves the lease was live when it committed.
type Claim struct {
	// SessionID is the leased session: the written session itself, or, for a delegated
	// child's session, the root session whose lease the delegating leg holds.
	SessionID string
	// Holder is the lease's holder, as AcquireLease was given it.
	Holder string
}

// Gate says which question a parked checkpoint waits on. Park refuses any other value
// (CodeCheckpointInvalid).
type Gate string

const (
	// GateToolPermission is the ordinary question about one tool call (the value of
	// permission.GateToolPermission).
	GateToolPermission Gate = "tool_permission"
	// GatePlanReview is ExitPlanMode's question: approve the plan and leave plan mode
	// (the value of permission.GatePlanReview).
	GatePlanReview Gate = "plan_review"
	// GateBudget is a parking run's question before a model request that would pass its
	// budget (the value of permission.GateBudget). Its Tool is "Budget" and its Args say
	// which limit, the limits and the spending; an allowing Decision's Args carry the
	// raised limits.
	GateBudget Gate = "budget"
)

// Checkpoint is a parked approval: the exact tool call a leg stopped at. Park reads
// SessionID, LegID (optional), Tool, Args, Gate, Mode, PrePlanMode and Claim (optional),
// and mints ID, canonical Args, ArgsSHA256 and CreatedAt.
type Checkpoint struct {
	// ID names the checkpoint: a v4 UUID that Park minted. agent.Answer.CheckpointID
	// quotes it.
	ID string `json:"id"`
	// SessionID is the session whose leg parked.
	SessionID string `json:"session_id"`
	// LegID is the leg that parked; empty when Park was given none.
	LegID string `json:"leg_id,omitempty"`
	// Tool is the name of the parked call's tool; Park refuses an empty one.
	Tool string `json:"tool"`
	// Args are the call's arguments in canonical JSON (see CanonicalJSON).
	Args json.RawMessage `json:"args"`
	// ArgsSHA256 is the lowercase hex sha256 of exactly the bytes of Args (SHA256Hex),
	// computed by Park.
	ArgsSHA256 string `json:"args_sha256"`
	// Gate is the question the call waits on.
	Gate Gate `json:"gate"`
	// Mode is the leg's requested mode word when it parked.
	Mode string `json:"mode,omitempty"`
	// PrePlanMode is the leg's mode word to return to from plan mode, when it parked
	// in plan mode.
	PrePlanMode string `json:"pre_plan_mode,omitempty"`
	// CreatedAt is when Park stored the checkpoint, in UTC.
	CreatedAt time.Time `json:"created_at"`
	// ClaimedAt is when ClaimCheckpoint recorded the decision; zero until then.
	ClaimedAt time.Time `json:"claimed_at,omitzero"`
	// Decision is the recorded answer; nil until the checkpoint is claimed.
	Decision *Decision `json:"decision,omitempty"`
	// Claim, when set, makes Park conditional on a live lease, as it does an Append
	// (see Claim). It is not stored.
	Claim *Claim `json:"-"`
}

// Verdict is a person's answer to a parked question. ClaimCheckpoint refuses any other
// value (CodeDecisionInvalid).
type Verdict string

const (
	// VerdictAllow runs the parked call, with Decision.Args when they are set.
	VerdictAllow Verdict = "allow"
	// VerdictDeny refuses the parked call; it carries no Args.
	VerdictDeny Verdict = "deny"
)

// Decision answers a checkpoint.
type Decision struct {
	// Verdict is VerdictAllow or VerdictDeny.
	Verdict Verdict `json:"verdict"`
	// Args, allowed only with VerdictAllow, are the approver's edited arguments; the
	// store keeps them in canonical JSON. Empty means the stored arguments run.
	Args json.RawMessage `json:"args,omitempty"`
	// Reason is the person's sentence, optional; the store keeps it as given (the runner
	// shows it to the model on a refusal).
	Reason string `json:"reason,omitempty"`
}

// CanonicalJSON returns the canonical form of one JSON value: object keys sorted, no
// insignificant whitespace, numbers as written, no HTML escaping. Two documents that
// decode to the same value have the same canonical bytes (a duplicated key keeps its
// last value, as every decoder sema uses does).
func CanonicalJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("not one JSON value: trailing data")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// SHA256Hex returns the lowercase hex sha256 of b, the form ArgsSHA256 uses.
func SHA256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// now is the stores' clock: UTC, without a monotonic reading, so a time read back
// from any store compares equal to the one that was written.
func now() time.Time { return time.Now().Round(0).UTC() }

// NewID returns a random RFC 4122 version 4 UUID, the form of every id the stores mint.
func NewID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// The validation and refusals every store shares, exported for the stores outside this
// package (pgstore): whichever store a deployment runs, the same input is refused with
// the same code and the same sentence, which the conformance suite (storetest) checks.

// NotFound is the refusal of a session id the store does not hold.
func NotFound(id string) error {
	return sema.Errorf(CodeNotFound, "no session %q in the store; list sessions to find its id", id).With("session_id", id)
}

// LegNotFound is the refusal of a leg id that is not a leg of the session.
func LegNotFound(sessionID, legID string) error {
	return sema.Errorf(CodeLegNotFound, "leg %q is not a leg of session %q; start a leg with StartLeg first", legID, sessionID).
		With("session_id", sessionID).With("leg_id", legID)
}

// EntryNotFound is the refusal of an entry id that is not in the session's transcript.
func EntryNotFound(sessionID, entryID string) error {
	return sema.Errorf(CodeEntryNotFound, "entry %q is not in the transcript of session %q; pick an entry id from Transcript", entryID, sessionID).
		With("session_id", sessionID).With("entry_id", entryID)
}

// CheckpointNotFound is the refusal of a checkpoint id the store does not hold.
func CheckpointNotFound(id string) error {
	return sema.Errorf(CodeCheckpointNotFound, "no checkpoint %q in the store; it may have been pruned", id).With("checkpoint_id", id)
}

// AlreadyClaimed is the refusal of a second claim of checkpoint c.
func AlreadyClaimed(c Checkpoint) error {
	return sema.Errorf(CodeAlreadyClaimed, "checkpoint %q was already answered at %s; a parked call runs at most once",
		c.ID, c.ClaimedAt.UTC().Format(time.RFC3339)).With("checkpoint_id", c.ID)
}

// CheckEntry validates e and returns the payload to store.
func CheckEntry(e Entry) (json.RawMessage, error) {
	if err := CheckClaim(e.Claim); err != nil {
		return nil, err
	}
	if e.Kind == "" {
		return nil, sema.Errorf(CodeEntryInvalid, "an entry needs a kind (user, assistant, tool_result, …)")
	}
	if e.Payload == nil {
		return json.RawMessage("null"), nil
	}
	if !json.Valid(e.Payload) {
		return nil, sema.Errorf(CodeEntryInvalid, "the payload of a %q entry is not valid JSON", e.Kind)
	}
	return bytes.Clone(e.Payload), nil
}

// CheckBatch validates the entries of one AppendBatch and returns the payloads to store.
func CheckBatch(es []Entry) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(es))
	for i, e := range es {
		if e.SessionID != es[0].SessionID {
			return nil, sema.Errorf(CodeEntryInvalid, "a batch appends to one session, not to %q and %q", es[0].SessionID, e.SessionID)
		}
		if !sameClaim(e.Claim, es[0].Claim) {
			return nil, sema.Errorf(CodeEntryInvalid, "a batch is written under one claim; its entries name different ones")
		}
		p, err := CheckEntry(e)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

func sameClaim(a, b *Claim) bool {
	return a == b || (a != nil && b != nil && *a == *b)
}

// CheckClaim refuses a claim without a session or a holder (CodeLeaseInvalid); nil is
// no claim.
func CheckClaim(c *Claim) error {
	if c == nil {
		return nil
	}
	if c.SessionID == "" {
		return sema.Errorf(CodeLeaseInvalid, "a write's claim needs the leased session's id")
	}
	return CheckLease(c.SessionID, c.Holder, 0, false)
}

// ClaimLost is the refusal of a write whose claim's lease is not live: its holder does
// not hold it, or it expired.
func ClaimLost(c Claim) error {
	return sema.Errorf(CodeLeaseLost, "nothing was written: %s does not hold a live lease on session %q (it expired, or another run took the session over)",
		c.Holder, c.SessionID).With("session_id", c.SessionID).With("holder", c.Holder)
}

// CheckPark validates c and fills the fields Park mints, with now as its CreatedAt (a
// store whose database stamps the time passes the zero time).
func CheckPark(c Checkpoint, now time.Time) (Checkpoint, error) {
	if err := CheckClaim(c.Claim); err != nil {
		return c, err
	}
	if c.Tool == "" {
		return c, sema.Errorf(CodeCheckpointInvalid, "a checkpoint needs the name of the tool it parks")
	}
	if c.Gate != GateToolPermission && c.Gate != GatePlanReview && c.Gate != GateBudget {
		return c, sema.Errorf(CodeCheckpointInvalid, "checkpoint gate %q is not %q, %q or %q", c.Gate, GateToolPermission, GatePlanReview, GateBudget).With("gate", string(c.Gate))
	}
	args, err := CanonicalJSON(c.Args)
	if err != nil {
		return c, sema.Errorf(CodeCheckpointInvalid, "the arguments of the parked %s call are not one JSON value: %v", c.Tool, err)
	}
	c.ID = NewID()
	c.Args = args
	c.ArgsSHA256 = SHA256Hex(args)
	c.CreatedAt = now
	c.ClaimedAt = time.Time{}
	c.Decision = nil
	return c, nil
}

// CheckDecision validates d and returns it with canonical arguments.
func CheckDecision(d Decision) (Decision, error) {
	switch d.Verdict {
	case VerdictAllow:
	case VerdictDeny:
		if len(d.Args) > 0 {
			return d, sema.Errorf(CodeDecisionInvalid, "a deny decision carries no edited arguments; drop them or allow")
		}
	default:
		return d, sema.Errorf(CodeDecisionInvalid, "decision verdict %q is not %q or %q", d.Verdict, VerdictAllow, VerdictDeny)
	}
	if len(d.Args) > 0 {
		args, err := CanonicalJSON(d.Args)
		if err != nil {
			return d, sema.Errorf(CodeDecisionInvalid, "the edited arguments are not one JSON value: %v", err)
		}
		d.Args = args
	}
	return d, nil
}

// CheckLease refuses a lease call without a holder, or (ttl ≥ 0 asked for) with a
// ttl that is not positive.
func CheckLease(sessionID, holder string, ttl time.Duration, needTTL bool) error {
	if holder == "" {
		return sema.Errorf(CodeLeaseInvalid, "a lease on session %q needs a holder name", sessionID).With("session_id", sessionID)
	}
	if needTTL && ttl <= 0 {
		return sema.Errorf(CodeLeaseInvalid, "a lease on session %q needs a positive ttl, not %s", sessionID, ttl).With("session_id", sessionID)
	}
	return nil
}

// Busy is AcquireLease's refusal while holder's lease on the session runs until until.
func Busy(sessionID, holder string, until time.Time) error {
	return sema.Errorf(CodeBusy, "session %q is being continued by another run (%s) until %s at the latest; wait for it to end or retry later",
		sessionID, holder, until.UTC().Format(time.RFC3339)).With("session_id", sessionID).With("holder", holder)
}

// LeaseLost is the refusal of a renewal or release by holder of a lease that is gone.
func LeaseLost(sessionID, holder string) error {
	return sema.Errorf(CodeLeaseLost, "the lease of %s on session %q is gone: it was released, or it expired and another run took the session", holder, sessionID).
		With("session_id", sessionID).With("holder", holder)
}

// CheckCreate validates a session for Create and fills what Create mints; a zero
// CreatedAt becomes now (a store whose database stamps the time passes the zero time).
func CheckCreate(s Session, now time.Time) (Session, error) {
	if s.ID == "" {
		s.ID = NewID()
	}
	if s.Root == "" {
		return s, sema.Errorf(CodeInvalid, "a session needs its canonical task root")
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = now
	}
	s.CreatedAt = s.CreatedAt.Round(0).UTC()
	s.UpdatedAt = s.CreatedAt
	s.Head = ""
	return s, nil
}

// ApplyUpdate runs fn on a copy of s and refuses a change to a field Update does not own;
// the result is updated at now.
func ApplyUpdate(s Session, fn func(*Session) error, now time.Time) (Session, error) {
	c := s
	if err := fn(&c); err != nil {
		return s, err
	}
	fixed := s
	fixed.Model, fixed.Mode, fixed.EffectiveMode, fixed.PrePlanMode, fixed.Title = c.Model, c.Mode, c.EffectiveMode, c.PrePlanMode, c.Title
	if fixed != c {
		return s, sema.Errorf(CodeInvalid, "Update may change only Model, Mode, EffectiveMode, PrePlanMode and Title of session %q", s.ID).With("session_id", s.ID)
	}
	c.UpdatedAt = now
	return c, nil
}

func checkLegEnd(l Leg, status sema.Status) error {
	if err := CheckEndStatus(status); err != nil {
		return err
	}
	if !l.EndedAt.IsZero() {
		return LegEnded(l)
	}
	return nil
}

// CheckEndStatus refuses a status a leg cannot end with: none, or running.
func CheckEndStatus(status sema.Status) error {
	if status == "" || status == sema.StatusRunning {
		return sema.Errorf(CodeInvalid, "a leg ends with a final status, not %q", status)
	}
	return nil
}

// LegEnded is EndLeg's refusal of a leg that has already ended.
func LegEnded(l Leg) error {
	return sema.Errorf(CodeLegEnded, "leg %d of session %q already ended (%s)", l.Number, l.SessionID, l.Status).
		With("leg_id", l.ID)
}

// Exists is Create's refusal of an id a session already has.
func Exists(id string) error {
	return sema.Errorf(CodeExists, "session %q already exists; leave ID empty to mint a new one", id).With("session_id", id)
}
