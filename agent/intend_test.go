package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
)

// unconfirmed is a history store that never confirms a write (SetAfter fails): what a
// run killed between a write and its SetAfter leaves in the store.
type unconfirmed struct{ history.Store }

func (unconfirmed) SetAfter(context.Context, int64, string) error { return syscall.EIO }

// A write whose outcome was never confirmed — the bytes landed, the run ended before
// SetAfter — is still the agent's: the file holds exactly what the write intended, so a
// rewind restores it without force. A person's edit over it is still a conflict, a
// forced rewind overwrites it, and the undo brings it back. Runs on the SQLite stores
// sema keeps, over a real directory.
func TestRewindAfterAnUnconfirmedWrite(t *testing.T) {
	t.Parallel()
	for _, edit := range []bool{false, true} {
		name := "the agent's bytes"
		if edit {
			name = "a person's edit after them"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
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
			root := t.TempDir()
			a := filepath.Join(root, "a.txt")
			if err := os.WriteFile(a, []byte("the original\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			p := scripted.New(scripted.Script{Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{{Name: "Read", Input: json.RawMessage(`{"file_path":"a.txt"}`)}}},
				{ToolCalls: []scripted.ToolCall{write("a.txt", "the agent's bytes\n")}},
				{Text: "done"},
			}})
			res, err := agent.New(agent.Deps{Provider: p, Store: ss, History: unconfirmed{hs}}).Run(ctx,
				agent.TaskSpec{Prompt: "write", Root: root, PermissionMode: permission.ModeAcceptEdits})
			if err != nil || res.Status != sema.StatusCompleted {
				t.Fatalf("%v %+v", err, res)
			}
			if noticeOf(res, agent.CodeAfterFailed) == nil {
				t.Fatalf("no %s notice for the unconfirmed write: %+v", agent.CodeAfterFailed, res.Notices)
			}
			recs, err := hs.Records(ctx, res.SessionID, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 1 || recs[0].After != "" || recs[0].Pending != history.SumOf([]byte("the agent's bytes\n")) {
				t.Fatalf("records %+v: want one, unconfirmed, its intended bytes pending", recs)
			}

			r := agent.New(agent.Deps{Provider: p, Store: ss, History: hs})
			want := "the original\n"
			if edit {
				if err := os.WriteFile(a, []byte("a person's line\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				out, err := r.Rewind(ctx, agent.RewindSpec{SessionID: res.SessionID, ToTurn: 2, Files: true})
				if !sema.IsCode(err, history.CodePartialRestore) || out == nil || out.Ledger.Entries[0].Status != history.StatusConflict {
					t.Fatalf("a rewind over a person's edit: %v %+v", err, out)
				}
				if got, _ := os.ReadFile(a); string(got) != "a person's line\n" {
					t.Fatalf("a refused rewind left a.txt = %q", got)
				}
				if _, err := r.Rewind(ctx, agent.RewindSpec{SessionID: res.SessionID, ToTurn: 2, Files: true, Force: true}); err != nil {
					t.Fatal(err)
				}
			} else {
				out, err := r.Rewind(ctx, agent.RewindSpec{SessionID: res.SessionID, ToTurn: 2, Files: true, DryRun: true})
				if err != nil || out.Ledger.Entries[0].Status != history.StatusRestored {
					t.Fatalf("the dry run: %v %+v", err, out)
				}
				if _, err := r.Rewind(ctx, agent.RewindSpec{SessionID: res.SessionID, ToTurn: 2, Files: true}); err != nil {
					t.Fatalf("a rewind of the agent's unconfirmed write asks for force: %v", err)
				}
			}
			if got, _ := os.ReadFile(a); string(got) != want {
				t.Fatalf("after the rewind a.txt = %q, want %q", got, want)
			}
			if _, err := r.Rewind(ctx, agent.RewindSpec{SessionID: res.SessionID, Undo: true}); err != nil {
				t.Fatal(err)
			}
			want = "the agent's bytes\n"
			if edit {
				want = "a person's line\n"
			}
			if got, _ := os.ReadFile(a); string(got) != want {
				t.Fatalf("after the undo a.txt = %q, want %q", got, want)
			}
		})
	}
}
