// Package shellchange records what shell commands (and MCP tools, walked like them)
// change in a leg's write roots: a snapshot of the roots before each command and a walk
// after it give every file created, changed or deleted its first-touch record in file
// history, what the command did to protected paths without a person's approval is put
// back, the pre-images are staged durably while a command runs, and what a killed
// process's command changed is recovered from that stage by the next leg or rewind.
package shellchange

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/history/treestate"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/tools/shell"
)

// Recorder records what Bash commands change in the write roots into the leg's file
// history: a stat-cache snapshot (treestate) before a command, a walk after it, and a
// first-touch record for every file created, changed or deleted, at the current turn's
// boundary — so a rewind restores them like write-tool edits.
//
// The snapshot lives for the leg: its stat cache in memory, the staged pre-image bytes in
// the shell's scratch directory (removed with it). A new leg primes its own on its first
// Bash call; the records themselves are in the history store and outlive both.
//
// The same walk guards the protected paths (protect.go): it finds the
// protected entries at every depth before a command, for the sandbox to keep read-only,
// and puts back after it what the command created or changed in them without a person's
// approval of that call.
type Recorder struct {
	cfg Config

	mu   sync.Mutex
	tree *treestate.Tree
	// background: a background task ran since the last snapshot, so what changed since is
	// its doing and is recorded at the next snapshot. Without one, a change found before a
	// command is someone else's (a write tool's, already recorded; the person's own) and
	// is only absorbed.
	background bool
	// bgUnapproved: a background task no person approved may have run since the last
	// snapshot, so what it did to protected paths is put back there.
	bgUnapproved bool
	named        map[string]bool // uncovered files a notice already named
	// walked is what the latest walk found for the sandbox (Confinement).
	walked walkedPlaces
	// linkedNamed are the multi-link files a note already named.
	linkedNamed map[string]bool
	// stage is the durable stage's directory (stage.go); empty when the stage is the
	// scratch directory's, which lives for the process only.
	stage string
	// turn is the turn the next command runs in, for the stage's in-flight mark.
	turn atomic.Int64
	// held are the notes of a walk between calls (at a turn's boundary) that no answer
	// carried: what a background task did to protected paths, put back there. The next
	// command's answer carries them.
	held []string
}

// Leg is what a Recorder reads of the leg it serves when it needs it: the shell is
// mounted after the recorder is made, and the leg's ids are known once it started.
type Leg interface {
	// Shell is the leg's shell tool set; nil until it is mounted.
	Shell() *shell.Set
	// Notice reports a notice of the leg.
	Notice(sema.Notice)
	// Deny records, as a permission denial of the Bash call toolUseID (input its input),
	// that what it did to protected paths was put back; reason says what.
	Deny(toolUseID string, input json.RawMessage, reason string)
	// Edited are the paths the leg's write tools wrote.
	Edited() []string
	// Call is the input of the call ctx runs; ok is false outside a call (a background
	// task's walk).
	Call(ctx context.Context) (input json.RawMessage, ok bool)
	// CallID is the tool-use id of the call ctx runs, "" outside one.
	CallID(ctx context.Context) string
	// SessionID, LegID and Scope name the leg's session, its leg, and its file-history
	// scope.
	SessionID() string
	LegID() string
	Scope() string
}

// Config is what a Recorder needs that is fixed for the leg.
type Config struct {
	Env   env.ExecutionEnv
	Fence *fence.Fence
	// History is the file-history store; with Record, the changes go into it. Without
	// Record (file history off) the walk serves the protection alone and keeps the bytes
	// of protected files only.
	History history.Store
	Record  bool
	// StateDir is the state directory the stage is kept in ("" for the shell's scratch
	// directory, which lives for the process only).
	StateDir string
	// ProceedUnprotected runs a command whose snapshot failed, with a notice, instead of
	// refusing it (Policy.FileHistoryPolicy).
	ProceedUnprotected bool
	// Sandboxed says the leg's commands run in the kernel sandbox, which hides the
	// multi-link files.
	Sandboxed bool
	Leg       Leg
}

// New returns a recorder for the leg cfg.Leg.
func New(cfg Config) *Recorder {
	return &Recorder{cfg: cfg, named: map[string]bool{}, linkedNamed: map[string]bool{}}
}

// SetTurn sets the turn the next command runs in, for the stage's in-flight mark.
func (c *Recorder) SetTurn(turn int) { c.turn.Store(int64(turn)) }

// treeLocked builds the snapshot on first use: the shell's scratch directory exists only
// once the shell does.
func (c *Recorder) treeLocked() *treestate.Tree {
	if c.tree == nil {
		sh := c.cfg.Leg.Shell()
		scratch := sh.ScratchDir()
		stage := sh.StageDir()
		if d := c.durableStage(); d != "" {
			stage, c.stage = d, d
		}
		c.tree = treestate.New(treestate.Config{
			Env:      c.cfg.Env,
			Roots:    c.cfg.Fence.WriteRoots(),
			StageDir: stage,
			Durable:  c.stage != "",
			Skip: func(p string) bool {
				// A credential store is denied to the file tools, yet one that is also
				// protected (~/.ssh under a home write root) is still guarded.
				if fence.Contains(scratch, p) {
					return true
				}
				if !c.cfg.Fence.Denied(p) {
					return false
				}
				prot, _ := c.cfg.Fence.IsProtected(p)
				return !prot || c.cfg.Fence.InDenySet(p)
			},
			Protected:     c.protectedEntry,
			Spots:         fence.ProtectedSpots(),
			ProtectedOnly: !c.cfg.Record,
		})
	}
	return c.tree
}

// Before implements shell.ChangeRecorder.
func (c *Recorder) Before(ctx context.Context, background bool) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ran := c.running()
	bg := c.background || ran
	notes, err := c.syncLocked(ctx, bg, c.backgroundGuard(bg))
	if err == nil || c.cfg.ProceedUnprotected {
		// This command's answer carries what earlier walks held (a refused command's
		// does not: they wait for the next).
		notes, c.held = append(c.held, notes...), nil
	}
	if err != nil {
		if c.cfg.ProceedUnprotected {
			c.walked = walkedPlaces{}
			c.cfg.Leg.Notice(sema.Notice{Code: CodeUnrecorded, Message: "a Bash command runs without a file-history snapshot: " + err.Error()})
			return append(notes, "The workspace could not be snapshotted for file history, so what this command changes cannot be rewound, and protected paths below the top of the workspace are not guarded."), nil
		}
		return nil, err
	}
	c.settleBackground(background, sandbox.Approved(ctx), ran)
	// The command may change files from here on: every pre-image it could need is on
	// disk, and the stage says a command is in flight, before it starts.
	if err := c.armLocked(); err != nil {
		if c.cfg.ProceedUnprotected {
			c.cfg.Leg.Notice(sema.Notice{Code: CodeUnrecorded, Message: "a Bash command runs without a durable file-history snapshot; if the process dies before it ends, what it changes cannot be rewound: " + err.Error()})
			return notes, nil
		}
		return nil, err
	}
	return notes, nil
}

// After implements shell.ChangeRecorder.
func (c *Recorder) After(ctx context.Context) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ran := c.running()
	notes, err := c.syncLocked(ctx, true, c.callGuard(ctx))
	if err != nil {
		c.cfg.Leg.Notice(sema.Notice{Code: CodeUnrecorded, Message: "what a Bash command changed could not be recorded for rewind, nor its protected paths checked: " + err.Error()})
		// The next walk takes what this command changed as a background task's: it is
		// recorded then, and — unless a person approved the call — guarded, so a
		// protected write this walk missed is still put back rather than absorbed.
		c.background = true
		if !sandbox.Approved(ctx) {
			c.bgUnapproved = true
		}
		return []string{"What this command changed could not be recorded for rewind, nor checked for protected paths yet (" + err.Error() + "); the next walk will."}
	}
	// A command moved to the background at its timeout runs on as a task of this call.
	// Which running task is this call's is not known here, so any task running after a
	// call no person approved may be it: guarding an approved task's protected writes
	// too is the side to err on.
	c.settleBackground(c.running(), sandbox.Approved(ctx), ran)
	c.settleLocked()
	return notes
}

// AtBoundary attributes to the turn that ends what background tasks changed since the
// last snapshot, before the next turn's boundary is minted.
func (c *Recorder) AtBoundary(ctx context.Context) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tree == nil || !(c.background || c.running()) {
		return
	}
	ran := c.running()
	notes, err := c.syncLocked(ctx, true, c.backgroundGuard(true))
	c.held = append(c.held, notes...)
	if err != nil {
		c.cfg.Leg.Notice(sema.Notice{Code: CodeUnrecorded, Message: "what background tasks changed could not be recorded for rewind: " + err.Error()})
		return
	}
	c.settleBackground(false, true, ran)
	c.settleLocked()
}

// Unsynced reports whether background Bash tasks may have changed files since the last
// snapshot (see AtBoundary).
func (c *Recorder) Unsynced() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tree != nil && (c.background || c.running())
}

func (c *Recorder) running() bool {
	sh := c.cfg.Leg.Shell()
	return sh != nil && len(sh.Running()) > 0
}

// syncLocked walks the roots; with record, every change since the last snapshot gets its
// first-touch record; with a guard, what changed in protected paths is put back instead
// (see guard). It returns the notes for the call's answer.
func (c *Recorder) syncLocked(ctx context.Context, record bool, g *guard) ([]string, error) {
	l := c.cfg.Leg
	hist := c.cfg.History
	var unrecoverable []string
	var rec treestate.RecordFunc
	if record && c.cfg.Record {
		rec = func(ctx context.Context, ch treestate.Change, pre []byte) error {
			if ch.Unrecoverable {
				unrecoverable = append(unrecoverable, ch.Path)
				// Recorded as lost, so a rewind names the file as one it cannot restore
				// instead of leaving it out.
				r := history.Record{Scope: l.Scope(), Key: ch.Path, Existed: true, Mode: ch.Mode, Size: ch.Size, Lost: true}
				if _, _, err := hist.Insert(context.WithoutCancel(ctx), r, nil); err != nil {
					return fmt.Errorf("%s: %w", ch.Path, err)
				}
				return nil
			}
			r := history.Record{Scope: l.Scope(), Key: ch.Path, Existed: ch.Existed, Mode: ch.Mode, Size: ch.Size}
			stored, _, err := hist.Insert(context.WithoutCancel(ctx), r, pre)
			if err != nil {
				unrecoverable = append(unrecoverable, ch.Path)
				return fmt.Errorf("%s: %w", ch.Path, err)
			}
			// What the command left is the file's after-image: a rewind restores it only
			// while it still holds exactly that (anything else is a person's edit).
			after := ch.After
			if ch.Gone {
				after = history.AfterAbsent
			}
			if after != "" {
				if err := hist.SetAfter(context.WithoutCancel(ctx), stored.ID, after); err != nil {
					l.Notice(sema.Notice{Code: CodeAfterFailed, Message: "what a Bash command left in " + ch.Path + " could not be recorded; rewinding it will ask for --force: " + err.Error()})
				}
			}
			return nil
		}
	}
	var d treestate.Diff
	var err error
	if g != nil {
		d, err = c.treeLocked().SyncGuarded(ctx, rec, g.keep)
	} else {
		d, err = c.treeLocked().Sync(ctx, rec)
	}
	if err != nil {
		return nil, err
	}
	notes := c.guarded(ctx, g, d)
	c.walked = c.placesOf(ctx, d)
	notes = append(notes, c.linkedNotes(d.Linked)...)
	if len(unrecoverable) > 0 {
		msg := "these files were changed by a Bash command but their earlier contents were not kept, so a rewind cannot restore them: " + strings.Join(unrecoverable, ", ")
		if d.RecordErr != nil {
			msg += " (" + d.RecordErr.Error() + ")"
		}
		l.Notice(sema.Notice{Code: CodeUnrecorded, Message: msg, Detail: map[string]any{"paths": unrecoverable}})
		notes = append(notes, fmt.Sprintf("%d file(s) this command changed cannot be rewound (over the %d MiB history cap, unreadable, a symbolic link it replaced with a file, or not recorded): %s.",
			len(unrecoverable), treestate.DefaultMaxFileSize>>20, brief(unrecoverable)))
	}
	var fresh []string
	for _, p := range append(append(append([]string(nil), d.Oversize...), d.Unreadable...), d.Beyond...) {
		if !c.cfg.Record {
			break // nothing is recorded: there is no coverage to speak of
		}
		if !c.named[p] {
			c.named[p] = true
			fresh = append(fresh, p)
		}
	}
	if len(fresh) > 0 {
		l.Notice(sema.Notice{Code: CodeUncovered, Message: fmt.Sprintf("file history cannot cover %d file(s) of the write roots (over the %d MiB size cap, unreadable, or past the %d-file walk cap): a Bash change to them cannot be rewound",
			len(fresh), treestate.DefaultMaxFileSize>>20, treestate.DefaultMaxFiles), Detail: map[string]any{"paths": fresh}})
		notes = append(notes, fmt.Sprintf("File history does not cover %d file(s) of the workspace (too large, unreadable, or past the walk cap), so Bash changes to them cannot be rewound: %s.", len(fresh), brief(fresh)))
	}
	return notes, nil
}

// brief names up to five paths, and counts the rest.
func brief(paths []string) string {
	if len(paths) <= 5 {
		return strings.Join(paths, ", ")
	}
	return strings.Join(paths[:5], ", ") + fmt.Sprintf(" and %d more", len(paths)-5)
}

var _ shell.ChangeRecorder = (*Recorder)(nil)
