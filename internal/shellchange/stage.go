package shellchange

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/history/treestate"
)

// The pre-images of what a Bash command may change are durable before it runs: the
// leg's snapshot keeps them in the state directory (Deps.StateDir), fsynced, with the
// stat index that names them and a mark that a command is in flight (treestate's
// journal). A process killed mid-command (kill -9, a closed terminal, a power cut)
// leaves the mark; the next leg of the session, or a rewind of it, finds it and records
// what the command changed — with the pre-images the stage kept — before anything else,
// so a rewind restores what the command removed or edited. A pre-image the stage lost
// is recorded as lost (history.Record.Lost), and a rewind names that file as one it
// cannot restore. Without a state directory the stage stays in the shell's scratch
// directory and lives for the process only.

// stageRoot is the directory, under the state directory, that holds every scope's stages.
const stageRoot = "stage"

// Stores are where Recover finds a scope's stages and records what they hold.
type Stores struct {
	Env      env.ExecutionEnv
	History  history.Store
	StateDir string
}

// stageMeta is what a leg stores with its in-flight mark.
type stageMeta struct {
	SessionID string `json:"session_id"`
	Scope     string `json:"scope"`
	Turn      int    `json:"turn"`
}

// plainWord reports whether s can name a directory as it is (the minted session and leg
// ids can): 1 to 128 letters, digits, '.', '_' and '-', the first a letter or a digit.
// Checked by hand: the regular expression that says the same expands its bounded repeat
// into 128 states, and compiling it was most of a new leg's first look at its stage.
func plainWord(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

func scopeDir(stateDir, scope string) string {
	return filepath.Join(stateDir, stageRoot, scopeDirName(scope))
}

// Staged reports whether scope has a stage in stateDir: a command's snapshot, of a live
// leg or of a dead process's (Recover tells them apart, under the session's lease).
func Staged(stateDir, scope string) bool {
	if stateDir == "" || scope == "" {
		return false
	}
	ents, err := os.ReadDir(scopeDir(stateDir, scope))
	return err == nil && slices.ContainsFunc(ents, fs.DirEntry.IsDir)
}

// scopeDirName is how a scope names its directory: itself when it is a plain word, else
// a hash of it.
func scopeDirName(scope string) string {
	if plainWord(scope) {
		return scope
	}
	s := sha256.Sum256([]byte(scope))
	return "h-" + hex.EncodeToString(s[:16])
}

// durableStage is where the leg's Bash snapshot keeps its pre-images when they can
// outlive the process: one directory per leg (a delegated child's shell snapshots the
// same scope with a Tree of its own), under the scope's. Empty: no state directory, or
// a recorder that records nothing.
func (c *Recorder) durableStage() string {
	l := c.cfg.Leg
	if !c.cfg.Record || c.cfg.StateDir == "" || l.Scope() == "" {
		return ""
	}
	leg := l.LegID()
	if !plainWord(leg) {
		leg = randomName()
	}
	return filepath.Join(scopeDir(c.cfg.StateDir, l.Scope()), leg)
}

// armLocked marks a command in flight in the durable stage: every pre-image it may
// need is on disk first. Without a durable stage it does nothing.
func (c *Recorder) armLocked() error {
	if c.tree == nil || c.stage == "" {
		return nil
	}
	meta, _ := json.Marshal(stageMeta{SessionID: c.cfg.Leg.SessionID(), Scope: c.cfg.Leg.Scope(), Turn: int(c.turn.Load())})
	return c.tree.Arm(meta)
}

// settleLocked arms the stage while a background task may still change files, and
// disarms it once nothing runs: what ran is recorded.
func (c *Recorder) settleLocked() {
	if c.tree == nil || c.stage == "" {
		return
	}
	var err error
	if c.running() {
		err = c.armLocked()
	} else {
		err = c.tree.Disarm()
	}
	if err != nil {
		c.cfg.Leg.Notice(sema.Notice{Code: CodeUnrecorded, Message: "the snapshot of Bash changes could not be kept on disk; a crash now would lose what the running commands change: " + err.Error()})
	}
}

// CloseStage ends the leg's snapshot: background tasks were stopped, so what they
// changed since the last walk is recorded, and the stage goes — unless that record
// failed, or tasks are kept running (Deps.Shell.KeepBackgroundTasks): then it stays
// armed, for the next leg to recover.
func (c *Recorder) CloseStage(ctx context.Context, kept bool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tree == nil {
		return
	}
	if !kept && (c.background || c.bgUnapproved) {
		if _, err := c.syncLocked(ctx, true, c.backgroundGuard(true)); err != nil {
			c.cfg.Leg.Notice(sema.Notice{Code: CodeUnrecorded, Message: "what background tasks changed before the run ended could not be recorded for rewind: " + err.Error()})
			return
		}
		c.background, c.bgUnapproved = false, false
		if c.stage != "" {
			if err := c.tree.Disarm(); err != nil {
				return
			}
		}
	}
	if kept {
		return
	}
	_ = c.tree.Close()
	if c.stage != "" {
		// The scope's directory goes with its last stage.
		_ = os.Remove(filepath.Dir(c.stage))
	}
}

// Recovery is what Recover found.
type Recovery struct {
	// Recorded are the files a dead process's command changed, now recorded.
	Recorded []string
	// Lost are those of them whose pre-image was not kept: recorded as lost.
	Lost []string
	// Turns are the turns the interrupted commands ran in.
	Turns []int
}

// Recover records what the commands that dead processes of scope left in flight
// changed, from their durable stages, at the scope's newest boundary, and removes the
// stages. The caller holds the session's lease, so no live leg of the scope owns any of
// them. A stage whose record could not be completed stays, and the error says why.
func Recover(ctx context.Context, deps Stores, scope string) (Recovery, error) {
	var out Recovery
	if deps.StateDir == "" || deps.History == nil || scope == "" {
		return out, nil
	}
	if _, ok := deps.Env.(*env.Host); !ok {
		return out, nil // the stage lives on this machine; another env's files are not its
	}
	dir := scopeDir(deps.StateDir, scope)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, recoveryFailed(scope, err)
	}
	var errs []error
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		stage := filepath.Join(dir, e.Name())
		if err := recoverStage(ctx, deps, scope, stage, &out); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", stage, err))
			continue
		}
		if err := os.RemoveAll(stage); err != nil {
			errs = append(errs, err)
		}
	}
	_ = os.Remove(dir)
	sort.Strings(out.Recorded)
	sort.Strings(out.Lost)
	if len(errs) > 0 {
		return out, recoveryFailed(scope, errors.Join(errs...))
	}
	return out, nil
}

func recoverStage(ctx context.Context, deps Stores, scope, stage string, out *Recovery) error {
	var storeErrs []error
	record := func(ctx context.Context, ch treestate.Change, pre []byte) error {
		r := history.Record{Scope: scope, Key: ch.Path, Existed: ch.Existed, Mode: ch.Mode, Size: ch.Size, Lost: ch.Existed && ch.Unrecoverable}
		// No after-image: what the command left is not known (it may have been cut off,
		// and anything since is someone else's), so rewinding a file it changed that is
		// still there asks for --force; one it removed comes back without question.
		if _, _, err := deps.History.Insert(context.WithoutCancel(ctx), r, pre); err != nil {
			storeErrs = append(storeErrs, fmt.Errorf("%s: %w", ch.Path, err))
			return err
		}
		out.Recorded = append(out.Recorded, ch.Path)
		if r.Lost {
			out.Lost = append(out.Lost, ch.Path)
		}
		return nil
	}
	stateDir := deps.StateDir
	meta, _, armed, err := treestate.Recover(ctx, treestate.Config{
		Env:      deps.Env,
		StageDir: stage,
		// The state directory is never the workspace's, wherever it lies.
		Skip: func(p string) bool {
			return p == stateDir || len(p) > len(stateDir) && p[:len(stateDir)+1] == stateDir+"/"
		},
	}, record)
	if err != nil {
		return err
	}
	if !armed {
		return nil
	}
	var m stageMeta
	if json.Unmarshal(meta, &m) == nil && m.Turn > 0 {
		out.Turns = append(out.Turns, m.Turn)
	}
	return errors.Join(storeErrs...)
}

func recoveryFailed(scope string, err error) error {
	return sema.Errorf(CodeRecoveryFailed, "what an interrupted shell command changed in session %s could not be recorded for rewind (%w); its snapshot is kept, and the next run or rewind of the session tries again — to go on without it, move the snapshot's directory out of %s", scope, err, filepath.Join(stageRoot, scopeDirName(scope))).
		With("scope", scope)
}

// Notices are the leg's notices of a recovery: what was recorded, and what of it was
// lost; none when nothing was.
func (rec Recovery) Notices() []sema.Notice {
	if len(rec.Recorded) == 0 {
		return nil
	}
	out := []sema.Notice{{Code: CodeRecovered,
		Message: fmt.Sprintf("recorded for rewind %d file(s) that a shell command changed before its process was killed", len(rec.Recorded)),
		Detail:  map[string]any{"paths": rec.Recorded, "turns": rec.Turns}}}
	if len(rec.Lost) > 0 {
		out = append(out, sema.Notice{Code: CodeUnrecorded,
			Message: "these files were changed by a shell command whose process was killed, and their earlier contents were not kept, so a rewind cannot restore them: " + brief(rec.Lost),
			Detail:  map[string]any{"paths": rec.Lost}})
	}
	return out
}

// randomName is a fresh name for a leg's stage when the leg has no id to name it: a
// random RFC 4122 version 4 UUID, as the runner mints session ids.
func randomName() string {
	var b [16]byte
	rand.Read(b[:]) // crypto/rand.Read never fails (it panics instead)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// ForgetStages removes the durable shell snapshots a session's scope left in the state
// directory, as pruning a session forgets its file history: what they could still have
// recorded has no session to be rewound in.
func ForgetStages(stateDir, scope string) error {
	if stateDir == "" || scope == "" {
		return nil
	}
	return os.RemoveAll(scopeDir(stateDir, scope))
}
