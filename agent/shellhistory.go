package agent

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/history/treestate"
	"github.com/sema-agent/sema/tools/shell"
)

// bashChanges records what Bash commands change in the write roots into the leg's file
// history: a stat-cache snapshot (treestate) before a command, a walk after it, and a
// first-touch record for every file created, changed or deleted, at the current turn's
// boundary — so a rewind restores them like write-tool edits.
//
// The snapshot lives for the leg: its stat cache in memory, the staged pre-image bytes in
// the shell's scratch directory (removed with it). A new leg primes its own on its first
// Bash call; the records themselves are in the history store and outlive both.
type bashChanges struct {
	l *leg

	mu   sync.Mutex
	tree *treestate.Tree
	// background: a background task ran since the last snapshot, so what changed since is
	// its doing and is recorded at the next snapshot. Without one, a change found before a
	// command is someone else's (a write tool's, already recorded; the person's own) and
	// is only absorbed.
	background bool
	named      map[string]bool // uncovered files a notice already named
}

// bashRecorder is the shell's change recorder: on when file history is (the runner's own
// seat) and the leg may write.
func (l *leg) bashRecorder() *bashChanges {
	if l.files == nil || l.spec.ReadOnly {
		return nil
	}
	return &bashChanges{l: l, named: map[string]bool{}}
}

// treeLocked builds the snapshot on first use: the shell's scratch directory exists only
// once the shell does.
func (c *bashChanges) treeLocked() *treestate.Tree {
	if c.tree == nil {
		l := c.l
		scratch := l.shell.ScratchDir()
		c.tree = treestate.New(treestate.Config{
			Env:      l.deps.Env,
			Roots:    l.fence.WriteRoots(),
			StageDir: scratch + "/history-stage",
			Skip: func(p string) bool {
				return l.fence.Denied(p) || fence.Contains(scratch, p)
			},
		})
	}
	return c.tree
}

// Before implements shell.ChangeRecorder.
func (c *bashChanges) Before(ctx context.Context, background bool) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	notes, err := c.syncLocked(ctx, c.background || c.running())
	if err != nil {
		if c.l.deps.policy().FileHistoryPolicy == ProceedUnprotected {
			c.l.notice(sema.Notice{Code: CodeBashUnrecorded, Message: "a Bash command runs without a file-history snapshot: " + err.Error()})
			return []string{"The workspace could not be snapshotted for file history, so what this command changes cannot be rewound."}, nil
		}
		return nil, err
	}
	c.background = background || c.running()
	return notes, nil
}

// After implements shell.ChangeRecorder.
func (c *bashChanges) After(ctx context.Context) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	notes, err := c.syncLocked(ctx, true)
	if err != nil {
		c.l.notice(sema.Notice{Code: CodeBashUnrecorded, Message: "what a Bash command changed could not be recorded for rewind: " + err.Error()})
		return []string{"What this command changed could not be recorded for rewind (" + err.Error() + ")."}
	}
	c.background = c.running()
	return notes
}

// atBoundary attributes to the turn that ends what background tasks changed since the
// last snapshot, before the next turn's boundary is minted.
func (c *bashChanges) atBoundary(ctx context.Context) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tree == nil || !(c.background || c.running()) {
		return
	}
	if _, err := c.syncLocked(ctx, true); err != nil {
		c.l.notice(sema.Notice{Code: CodeBashUnrecorded, Message: "what background tasks changed could not be recorded for rewind: " + err.Error()})
		return
	}
	c.background = c.running()
}

func (c *bashChanges) running() bool { return c.l.shell != nil && len(c.l.shell.Running()) > 0 }

// syncLocked walks the roots; with record, every change since the last snapshot gets its
// first-touch record. It returns the notes for the call's answer.
func (c *bashChanges) syncLocked(ctx context.Context, record bool) ([]string, error) {
	l := c.l
	var unrecoverable []string
	var rec treestate.RecordFunc
	if record {
		rec = func(ctx context.Context, ch treestate.Change, pre []byte) error {
			if ch.Unrecoverable {
				unrecoverable = append(unrecoverable, ch.Path)
				return nil
			}
			r := history.Record{Scope: l.historyScope, Key: ch.Path, Existed: ch.Existed, Mode: ch.Mode, Size: ch.Size}
			stored, _, err := l.deps.History.Insert(context.WithoutCancel(ctx), r, pre)
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
				if err := l.deps.History.SetAfter(context.WithoutCancel(ctx), stored.ID, after); err != nil {
					l.notice(sema.Notice{Code: CodeAfterFailed, Message: "what a Bash command left in " + ch.Path + " could not be recorded; rewinding it will ask for --force: " + err.Error()})
				}
			}
			return nil
		}
	}
	d, err := c.treeLocked().Sync(ctx, rec)
	if err != nil {
		return nil, err
	}
	var notes []string
	if len(unrecoverable) > 0 {
		msg := "these files were changed by a Bash command but their earlier contents were not kept, so a rewind cannot restore them: " + strings.Join(unrecoverable, ", ")
		if d.RecordErr != nil {
			msg += " (" + d.RecordErr.Error() + ")"
		}
		l.notice(sema.Notice{Code: CodeBashUnrecorded, Message: msg, Detail: map[string]any{"paths": unrecoverable}})
		notes = append(notes, fmt.Sprintf("%d file(s) this command changed cannot be rewound (over the %d MiB history cap, unreadable, or not recorded): %s.",
			len(unrecoverable), treestate.DefaultMaxFileSize>>20, brief(unrecoverable)))
	}
	var fresh []string
	for _, p := range append(append(append([]string(nil), d.Oversize...), d.Unreadable...), d.Beyond...) {
		if !c.named[p] {
			c.named[p] = true
			fresh = append(fresh, p)
		}
	}
	if len(fresh) > 0 {
		l.notice(sema.Notice{Code: CodeBashUncovered, Message: fmt.Sprintf("file history cannot cover %d file(s) of the write roots (over the %d MiB size cap, unreadable, or past the %d-file walk cap): a Bash change to them cannot be rewound",
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

var _ shell.ChangeRecorder = (*bashChanges)(nil)
