package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
)

// cutHistory is a history store whose SetAfter fails while cut is set: a leg run then
// leaves its writes unconfirmed, as a run killed after each write landed would.
type cutHistory struct {
	history.Store
	cut *atomic.Bool
}

func (c cutHistory) SetAfter(ctx context.Context, id int64, after string) error {
	if c.cut.Load() {
		return syscall.EIO
	}
	return c.Store.SetAfter(ctx, id, after)
}

// Random sequences of legs that write a file (some with their writes unconfirmed),
// a person's edits, rewinds of the files (forced or not, with the conversation or not)
// and undos, through the Runner on the SQLite stores over a real directory. After each
// step: a rewind or undo without force never changes a file holding a person's bytes
// (bytes no leg's first touch took as its turn's pre-image), and its dry run says what
// it then does; no conflict is reported on a file holding no bytes a person wrote; an
// undo returns what the rewind it undoes changed. SEMA_SOAK=1 runs more sequences;
// SEMA_SEQ_SEED=n replays a run.
func TestRunnerRewindSequences(t *testing.T) {
	t.Parallel()
	seqs, steps := 20, 16
	if os.Getenv("SEMA_SOAK") != "" {
		seqs, steps = 200, 30
	}
	base := time.Now().UnixNano()
	if v := os.Getenv("SEMA_SEQ_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		base = n
	}
	t.Logf("base seed %d (SEMA_SEQ_SEED=%d replays it): %d sequences of %d steps", base, base, seqs, steps)
	ctx := t.Context()
	ss, err := session.OpenSQLite(filepath.Join(t.TempDir(), "sema.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	hs, err := history.NewSQLite(ctx, ss.DB())
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"a.txt", "b.txt"}
	for i := range seqs {
		seed := base + int64(i)
		r := rand.New(rand.NewPCG(uint64(seed), 0))
		root := t.TempDir()
		var log []string
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d (SEMA_SEQ_SEED=%d, sequence %d), step %d: %s\nthe steps:\n\t%s", seed, base, i, len(log), fmt.Sprintf(format, args...), strings.Join(log, "\n\t"))
		}
		read := func() map[string]string {
			out := map[string]string{}
			for _, n := range names {
				b, err := os.ReadFile(filepath.Join(root, n))
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				if err != nil {
					fail("%v", err)
				}
				out[n] = string(b)
			}
			return out
		}
		person, ever := map[string]bool{}, map[string]bool{} // name + "\x00" + bytes
		var cut atomic.Bool
		run := agent.New(agent.Deps{Store: ss, History: cutHistory{hs, &cut}})
		sid, lastTurn := "", 0
		var undone map[string]string // the tree before the newest rewind that changed files
		var undoneChanged []string
		for step := range steps {
			switch k := r.IntN(10); {
			case k < 3 || sid == "":
				name := names[r.IntN(len(names))]
				data := fmt.Sprintf("the agent's bytes, step %d\n", step)
				cut.Store(r.IntN(3) == 0)
				log = append(log, fmt.Sprintf("leg writes %s (confirmed %v)", name, !cut.Load()))
				// Its first touch takes what is there as the turn's pre-image.
				if b, err := os.ReadFile(filepath.Join(root, name)); err == nil {
					delete(person, name+"\x00"+string(b))
				}
				in, _ := json.Marshal(map[string]string{"file_path": name})
				p := scripted.New(scripted.Script{Turns: []scripted.Turn{
					{ToolCalls: []scripted.ToolCall{{Name: "Read", Input: in}}},
					{ToolCalls: []scripted.ToolCall{write(name, data)}},
					{Text: "done"},
				}})
				spec := agent.TaskSpec{Prompt: "write", Root: root, PermissionMode: permission.ModeAcceptEdits}
				if sid != "" {
					spec.Resume = &agent.Resume{SessionID: sid}
				}
				res, err := agent.New(agent.Deps{Provider: p, Store: ss, History: cutHistory{hs, &cut}}).Run(ctx, spec)
				if err != nil || res.Status != sema.StatusCompleted {
					fail("the leg: %v %+v", err, res)
				}
				if got := read()[name]; got != data {
					fail("the leg left %s = %q", name, got)
				}
				sid, lastTurn = res.SessionID, res.LastTurn
			case k < 6:
				name := names[r.IntN(len(names))]
				data := fmt.Sprintf("a person's bytes, step %d\n", step)
				log = append(log, "edit "+name)
				if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o644); err != nil {
					fail("%v", err)
				}
				person[name+"\x00"+data], ever[name+"\x00"+data] = true, true
			default:
				spec := agent.RewindSpec{SessionID: sid, Force: r.IntN(3) == 0}
				if k < 8 {
					spec.Files, spec.ToTurn, spec.Conversation = true, 1+r.IntN(lastTurn), r.IntN(2) == 0
					log = append(log, fmt.Sprintf("rewind --to %d (force %v, conversation %v)", spec.ToTurn, spec.Force, spec.Conversation))
				} else {
					spec.Undo = true
					log = append(log, fmt.Sprintf("undo (force %v)", spec.Force))
				}
				before := read()
				dry := spec
				dry.DryRun = true
				dout, derr := run.Rewind(ctx, dry)
				out, err := run.Rewind(ctx, spec)
				after := read()
				if derr != nil {
					if sema.CodeOf(err) != sema.CodeOf(derr) {
						fail("the dry run failed with %v, the real run with %v", derr, err)
					}
					continue
				}
				if err != nil && !sema.IsCode(err, history.CodePartialRestore) {
					fail("%v", err)
				}
				statuses := func(o *agent.RewindResult) string {
					var b strings.Builder
					for _, e := range o.Ledger.Entries {
						fmt.Fprintf(&b, "%s %s %v; ", filepath.Base(e.Path), e.Status, e.Forced)
					}
					return b.String()
				}
				if statuses(dout) != statuses(out) {
					fail("the dry run said %s, the real run did %s", statuses(dout), statuses(out))
				}
				for n, cur := range before {
					if !spec.Force && person[n+"\x00"+cur] && after[n] != cur {
						fail("%s held a person's bytes %q; the rewind without force left %q", n, cur, after[n])
					}
				}
				for _, e := range out.Ledger.Entries {
					n := filepath.Base(e.Path)
					if cur, ok := before[n]; e.Status == history.StatusConflict && !(ok && ever[n+"\x00"+cur]) {
						fail("%s holds no bytes a person wrote (%q), yet the rewind says conflict: %s", n, cur, e.Reason)
					}
				}
				if err != nil {
					continue
				}
				if spec.Undo && undone != nil {
					for _, n := range undoneChanged {
						want, was := undone[n]
						if now, there := after[n]; now != want || there != was {
							fail("the undo left %s = %q; before the rewind it undoes it was %q", n, after[n], want)
						}
					}
				}
				if out.Ledger.Saved != 0 {
					undone, undoneChanged = before, nil
					for _, n := range out.Ledger.Changed() {
						undoneChanged = append(undoneChanged, filepath.Base(n))
					}
				}
				if spec.Conversation {
					lastTurn = spec.ToTurn - 1 // the next leg's first turn is ToTurn again
					if lastTurn < 1 {
						lastTurn = 1
					}
				}
			}
		}
	}
}
