package history_test

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/history"
)

// The rewind state machine: random sequences of agent writes, a person's edits, rewinds
// (forced or not, partial or not), undos and crashed writes, over a real directory and
// each store, checked after every step against what the sequence itself says a person
// wrote. The properties:
//
//   - A rewind or undo that is not forced never changes a file holding bytes a person
//     wrote (and no agent write took over since): it reports a conflict there, and its
//     dry run says the same.
//   - It reports no conflict on a file holding bytes no person ever wrote (the agent's,
//     including those of a write whose outcome was never confirmed).
//   - A dry run reports exactly what the real run then does, and changes nothing.
//   - A refused rewind changes nothing.
//   - An undo returns every file the undone rewind changed to its bytes before that
//     rewind — so whatever a forced rewind overwrote, the undo after it brings back.
//
// SEMA_SOAK=1 runs many more sequences; SEMA_SEQ_SEED=n replays the run whose base seed
// was n (every failure prints its seed and its steps).

// seqStep is one step of a sequence. A step's bytes are derived from its index, so a
// sequence printed by a failure replays as it ran.
type seqStep struct {
	Op      string // one of the seq* constants
	File    int    // index into seqFiles
	Turn    int    // seqWrite: the turn minted before the write (0: the current turn); seqRewind: the turn rewound to
	Force   bool   // seqRewind, seqUndo
	Partial bool   // seqRewind, seqUndo: AcceptPartialRestore
}

const (
	seqWrite      = "write"       // the agent writes the file: Track, Intend, write, Wrote
	seqRemove     = "remove"      // the agent removes the file (as a Bash change): Track, remove, after absent
	seqCrashWrite = "crash-write" // the agent's write lands, and the run dies before Wrote
	seqCrashEarly = "crash-early" // the run dies after Intend, before the write lands
	seqEdit       = "edit"        // a person writes new bytes into the file
	seqDelete     = "delete"      // a person deletes the file
	seqRewind     = "rewind"
	seqUndo       = "undo"
)

var seqFiles = []string{"a.txt", "b.txt", "src/c.txt"}

func (s seqStep) String() string {
	return fmt.Sprintf("{Op: %q, File: %d, Turn: %d, Force: %v, Partial: %v}", s.Op, s.File, s.Turn, s.Force, s.Partial)
}

// seqMachine runs steps and keeps what the properties need.
type seqMachine struct {
	t     *testing.T
	name  string // says how to replay, in a failure
	scope string
	s     history.Store
	f     *history.Files
	e     env.ExecutionEnv
	root  string
	turns []int // the turns minted, in mint order
	// person holds, per file, the bytes a person wrote there that no agent write took
	// over since; ever, every bytes a person wrote there.
	person, ever map[string]map[string]bool
	saved        map[int64]seqRewound // each rewind boundary: the rewind that minted it
	last         int64                // the newest rewind boundary
	// newTurn is set when the next write must begin a turn: a rewind minted a
	// boundary since the newest turn's (a rewind runs between legs, never inside a
	// turn), or the run died (a crashed write; a new run begins a new turn).
	newTurn bool
	steps   []seqStep
}

// seqRewound is the tree before a rewind that changed files, and the files it changed.
type seqRewound struct {
	before  map[string]string
	changed []string
}

func newSeqMachine(t *testing.T, name, scope string, s history.Store) *seqMachine {
	root := t.TempDir()
	check(t, os.MkdirAll(filepath.Join(root, "src"), 0o755))
	e := env.NewHost()
	return &seqMachine{t: t, name: name, scope: scope, s: s, f: history.NewFiles(s, e), e: e, root: root,
		person: map[string]map[string]bool{}, ever: map[string]map[string]bool{}, saved: map[int64]seqRewound{}}
}

func (m *seqMachine) fail(format string, args ...any) {
	m.t.Helper()
	var b strings.Builder
	for _, s := range m.steps {
		b.WriteString("\t" + s.String() + ",\n")
	}
	m.t.Fatalf("%s, step %d: %s\nthe steps:\n%s", m.name, len(m.steps), fmt.Sprintf(format, args...), b.String())
}

func (m *seqMachine) ok(err error) {
	m.t.Helper()
	if err != nil {
		m.fail("%v", err)
	}
}

func (m *seqMachine) path(i int) string { return filepath.Join(m.root, seqFiles[i]) }

// tree reads every file of the sequence: its bytes, absent when it is not there.
func (m *seqMachine) tree() map[string]string {
	m.t.Helper()
	out := map[string]string{}
	for i := range seqFiles {
		data, err := os.ReadFile(m.path(i))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		m.ok(err)
		out[m.path(i)] = string(data)
	}
	return out
}

// takeOver records that what path holds now is the agent's to restore: the pre-image
// of a turn's first touch (held in history as that turn's start), or bytes a write of
// the agent overwrote.
func (m *seqMachine) takeOver(path string) {
	if data, err := os.ReadFile(path); err == nil {
		delete(m.person[path], string(data))
	}
}

func (m *seqMachine) step(s seqStep) {
	m.t.Helper()
	m.steps = append(m.steps, s)
	ctx := m.t.Context()
	i := len(m.steps)
	path := m.path(s.File)
	switch s.Op {
	case seqWrite, seqCrashWrite, seqCrashEarly, seqRemove:
		if s.Turn > 0 || len(m.turns) == 0 || m.newTurn {
			turn := s.Turn
			if turn == 0 {
				turn = slices.Max(append([]int{0}, m.turns...)) + 1
			}
			m.newTurn = false
			_, err := m.s.MintBoundary(ctx, m.scope, turn)
			m.ok(err)
			m.turns = append(m.turns, turn)
		}
		rec, minted, err := m.f.Track(ctx, m.scope, path)
		m.ok(err)
		if minted {
			m.takeOver(path)
		}
		if s.Op == seqRemove {
			m.takeOver(path)
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				m.fail("%v", err)
			}
			m.ok(m.s.SetAfter(ctx, rec.ID, history.AfterAbsent))
			return
		}
		data := []byte(fmt.Sprintf("agent step %d\n", i))
		m.ok(m.f.Intend(ctx, rec, data))
		m.newTurn = s.Op != seqWrite
		if s.Op == seqCrashEarly {
			return
		}
		m.takeOver(path)
		m.ok(m.e.WriteFile(ctx, path, data, 0o644))
		if s.Op == seqWrite {
			m.ok(m.f.Wrote(ctx, rec, data))
		}
	case seqEdit:
		data := fmt.Sprintf("a person's bytes, step %d\n", i)
		m.ok(os.WriteFile(path, []byte(data), 0o644))
		for _, set := range []map[string]map[string]bool{m.person, m.ever} {
			if set[path] == nil {
				set[path] = map[string]bool{}
			}
			set[path][data] = true
		}
	case seqDelete:
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			m.fail("%v", err)
		}
	case seqRewind, seqUndo:
		m.rewind(s)
	default:
		m.fail("unknown step %q", s.Op)
	}
}

func (m *seqMachine) rewind(s seqStep) {
	m.t.Helper()
	ctx := m.t.Context()
	run := func(dry bool) (history.Ledger, error) {
		opts := history.RewindOptions{DryRun: dry, Force: s.Force, AcceptPartialRestore: s.Partial}
		if s.Op == seqUndo {
			return m.f.Undo(ctx, m.scope, opts)
		}
		return m.f.Rewind(ctx, m.scope, s.Turn, opts)
	}
	before := m.tree()
	dry, derr := run(true)
	if d := diffTrees(before, m.tree()); d != "" {
		m.fail("the dry run changed the tree: %s", d)
	}
	led, err := run(false)
	after := m.tree()

	if s.Op == seqUndo && (m.last == 0) != sema.IsCode(derr, history.CodeNothingToUndo) {
		m.fail("undo with the newest rewind boundary %d: the dry run says %v", m.last, derr)
	}
	if derr != nil {
		if sema.CodeOf(err) != sema.CodeOf(derr) {
			m.fail("the dry run failed with %v, the real run with %v", derr, err)
		}
		if d := diffTrees(before, after); d != "" {
			m.fail("a refused %s changed the tree: %s", s.Op, d)
		}
		return
	}
	if err != nil && !sema.IsCode(err, history.CodePartialRestore) {
		m.fail("%v", err)
	}
	if got, want := seqStatuses(led), seqStatuses(dry); got != want {
		m.fail("the dry run said\n%s\nthe real run did\n%s", want, got)
	}
	if err != nil {
		if led.Applied || led.Saved != 0 {
			m.fail("a refused %s says it applied: %+v", s.Op, led)
		}
		if d := diffTrees(before, after); d != "" {
			m.fail("a refused %s changed the tree: %s", s.Op, d)
		}
	}
	if s.Force && err != nil {
		m.fail("a forced %s was refused: %v", s.Op, err)
	}

	for _, e := range led.Entries {
		cur, present := before[e.Path]
		if !s.Force && present && m.person[e.Path][cur] && e.Status != history.StatusConflict && e.Status != history.StatusUnchanged {
			m.fail("%s holds a person's bytes %q, and the %s without force says %s", e.Path, cur, s.Op, e.Status)
		}
		if e.Status == history.StatusConflict && !(present && m.ever[e.Path][cur]) {
			m.fail("%s holds no bytes a person wrote (%q, present %v), yet the %s says conflict: %s", e.Path, cur, present, s.Op, e.Reason)
		}
		now, there := after[e.Path]
		switch {
		case err != nil:
			continue // refused: what the entries say was not done, and the tree is as it was
		}
		switch e.Status {
		case history.StatusDeleted:
			if there {
				m.fail("%s is deleted by the ledger and still there", e.Path)
			}
		case history.StatusRestored:
			if !there {
				m.fail("%s is restored by the ledger and not there", e.Path)
			}
		case history.StatusConflict, history.StatusUnchanged:
			if now != cur || there != present {
				m.fail("%s is %s by the ledger and changed from %q to %q", e.Path, e.Status, cur, now)
			}
		default:
			m.fail("%s: %s (%s)", e.Path, e.Status, e.Reason)
		}
	}
	// A person's bytes outlive any rewind that was not forced.
	if !s.Force {
		for p, cur := range before {
			if m.person[p][cur] && after[p] != cur {
				m.fail("%s held a person's bytes %q; the %s without force left %q", p, cur, s.Op, after[p])
			}
		}
	}
	if s.Op == seqUndo && led.Applied {
		// Every file the undone rewind changed is back as it was before that rewind.
		undone := m.saved[m.last]
		for _, p := range undone.changed {
			if e, ok := entryIn(led, p); !ok || e.Status == history.StatusConflict {
				if !ok {
					m.fail("the undo has no entry for %s, which the rewind it undoes changed", p)
				}
				continue
			}
			want, was := undone.before[p]
			if now, there := after[p]; now != want || there != was {
				m.fail("the undo left %s as %q (present %v); before the rewind it undoes it was %q (present %v)", p, now, there, want, was)
			}
		}
	}
	if led.Saved != 0 {
		var changed []string
		for _, e := range led.Entries {
			if e.Status == history.StatusRestored || e.Status == history.StatusDeleted {
				changed = append(changed, e.Path)
			}
		}
		m.saved[led.Saved] = seqRewound{before: before, changed: changed}
		m.last, m.newTurn = led.Saved, true
	}
}

func entryIn(l history.Ledger, path string) (history.LedgerEntry, bool) {
	for _, e := range l.Entries {
		if e.Path == path {
			return e, true
		}
	}
	return history.LedgerEntry{}, false
}

func seqStatuses(l history.Ledger) string {
	var b strings.Builder
	for _, e := range l.Entries {
		fmt.Fprintf(&b, "\t%s %s forced=%v %s\n", e.Path, e.Status, e.Forced, e.Reason)
	}
	return b.String()
}

func diffTrees(a, b map[string]string) string {
	var out []string
	for p, x := range a {
		if y, ok := b[p]; !ok || x != y {
			out = append(out, fmt.Sprintf("%s: %q → %q (present %v)", p, x, y, ok))
		}
	}
	for p, y := range b {
		if _, ok := a[p]; !ok {
			out = append(out, fmt.Sprintf("%s: absent → %q", p, y))
		}
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// randomStep draws the next step of a sequence.
func (m *seqMachine) randomStep(r *rand.Rand) seqStep {
	s := seqStep{File: r.IntN(len(seqFiles))}
	maxTurn := 0
	for _, t := range m.turns {
		maxTurn = max(maxTurn, t)
	}
	switch n := r.IntN(100); {
	case n < 20:
		s.Op = seqWrite
	case n < 26:
		s.Op = seqCrashWrite
	case n < 29:
		s.Op = seqCrashEarly
	case n < 33:
		s.Op = seqRemove
	case n < 55:
		s.Op = seqEdit
	case n < 59:
		s.Op = seqDelete
	case n < 80:
		s.Op = seqRewind
	default:
		s.Op = seqUndo
	}
	switch s.Op {
	case seqWrite, seqCrashWrite, seqCrashEarly, seqRemove:
		// Mostly a new turn; sometimes the current one goes on, or a turn number comes
		// again (the conversation was rewound and the branch restarted there).
		switch n := r.IntN(10); {
		case n < 6 || len(m.turns) == 0:
			s.Turn = maxTurn + 1
		case n < 8:
			s.Turn = 0
		default:
			s.Turn = 1 + r.IntN(maxTurn)
		}
	case seqRewind, seqUndo:
		s.Force, s.Partial = r.IntN(3) == 0, r.IntN(5) == 0
		if s.Op == seqRewind {
			if r.IntN(len(m.turns)+1) > 0 {
				s.Turn = m.turns[r.IntN(len(m.turns))]
			}
		}
	}
	return s
}

// seqCount is how many sequences, of how many steps, each store runs.
func seqCount() (seqs, steps int) {
	if os.Getenv("SEMA_SOAK") != "" {
		return 2000, 60
	}
	return 150, 30
}

func TestRewindSequences(t *testing.T) {
	base := time.Now().UnixNano()
	if v := os.Getenv("SEMA_SEQ_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		check(t, err)
		base = n
	}
	seqs, steps := seqCount()
	t.Logf("base seed %d (SEMA_SEQ_SEED=%d replays it), %d sequences of %d steps per store", base, base, seqs, steps)
	// One store holds every sequence, each in a scope of its own, as a deployment's
	// holds many sessions.
	forEachStore(t, func(t *testing.T, sc storeCase, s history.Store) {
		start := time.Now()
		for i := range seqs {
			seed := base + int64(i)
			m := newSeqMachine(t, fmt.Sprintf("%s, seed %d (SEMA_SEQ_SEED=%d, sequence %d)", sc.name, seed, base, i), fmt.Sprintf("S%d", i), s)
			r := rand.New(rand.NewPCG(uint64(seed), 0))
			for range steps {
				m.step(m.randomStep(r))
			}
		}
		t.Logf("%s: %d sequences of %d steps in %v", sc.name, seqs, steps, time.Since(start).Round(time.Millisecond))
	})
}

// Sequences the state machine found, or that were reported, replayed as they ran.
func TestRewindSequenceRegressions(t *testing.T) {
	cases := map[string][]seqStep{
		// A forced rewind, its undo, then a plain rewind: the undo put the person's
		// bytes back, and the plain rewind (and its dry run) must see them as the
		// person's, not as what the undo left; more rewinds and undos must not lose them.
		"force, undo, rewind": {
			{Op: seqWrite, File: 0, Turn: 1},
			{Op: seqEdit, File: 0},
			{Op: seqRewind, Turn: 1, Force: true},
			{Op: seqUndo},
			{Op: seqRewind, Turn: 1},
			{Op: seqRewind, Turn: 1, Partial: true},
			{Op: seqUndo},
			{Op: seqUndo},
			{Op: seqRewind, Turn: 1},
		},
		// A forced rewind saves the person's bytes at a rewind boundary; a rewind to a
		// turn whose boundary comes before it puts them back from there, and they stay
		// the person's.
		"force, rewind to an earlier turn's boundary, rewind": {
			{Op: seqWrite, File: 2, Turn: 1},
			{Op: seqWrite, File: 0, Turn: 2},
			{Op: seqEdit, File: 2},
			{Op: seqRewind, Turn: 0, Force: true},
			{Op: seqRewind, Turn: 2},
			{Op: seqRewind, Turn: 0},
		},
		// An agent turn after the undo takes the person's bytes as its pre-image; the
		// rewind to that turn puts them back as history's, and the undo of that rewind
		// needs no force.
		"force, undo, new turn, rewind, undo": {
			{Op: seqWrite, File: 1, Turn: 1},
			{Op: seqEdit, File: 1},
			{Op: seqRewind, Turn: 1, Force: true},
			{Op: seqUndo},
			{Op: seqWrite, File: 1, Turn: 2},
			{Op: seqRewind, Turn: 2},
			{Op: seqUndo},
			{Op: seqRewind, Turn: 1},
		},
		// A write killed after it landed, before its outcome was recorded: the file holds
		// the agent's bytes, and a rewind restores it without force.
		"crashed write, rewind": {
			{Op: seqWrite, File: 0, Turn: 1},
			{Op: seqCrashWrite, File: 0, Turn: 2},
			{Op: seqRewind, Turn: 1},
		},
		// The same, after a person's edit: the edit is a conflict.
		"crashed write, edit, rewind": {
			{Op: seqWrite, File: 0, Turn: 1},
			{Op: seqCrashWrite, File: 0, Turn: 2},
			{Op: seqEdit, File: 0},
			{Op: seqRewind, Turn: 1},
			{Op: seqRewind, Turn: 2},
		},
	}
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, sc storeCase, s history.Store) {
				m := newSeqMachine(t, sc.name+", "+name, "S", s)
				for _, st := range steps {
					m.step(st)
				}
			})
		})
	}
}
