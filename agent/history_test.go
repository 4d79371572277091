package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/tools/files"
)

// brokenHistory is a file-history store that cannot record a pre-image.
type brokenHistory struct{ history.Store }

func (brokenHistory) Insert(context.Context, history.Record, []byte) (history.Record, bool, error) {
	return history.Record{}, false, sema.Errorf("test.store_down", "the store is down")
}

// nestedCode finds a dotted code followed by a colon ("history.record_failed:"), the
// shape of an *Error's Error() inside a sentence.
var nestedCode = regexp.MustCompile(`\b(config|fs|permission|history|checkpoint|session|tool|sandbox|fence|model|run|shell|test)\.[a-z_]+: `)

// unprotected is the wire value of files.CodeHistoryUnprotected, pinned.
const unprotected = "history.unprotected"

func TestAnUnprotectedEditIsRefusedWithOneCode(t *testing.T) {
	t.Parallel()
	if files.CodeHistoryUnprotected != unprotected {
		t.Fatalf("files.CodeHistoryUnprotected = %q", files.CodeHistoryUnprotected)
	}
	// A nil Deps.Policy is the default policy: refuse.
	for _, deployed := range []*agent.Policy{nil, {FileHistoryPolicy: agent.RefuseUnprotected}, {FileHistoryPolicy: agent.ProceedUnprotected}} {
		policy := agent.RefuseUnprotected
		if deployed != nil {
			policy = deployed.FileHistoryPolicy
		}
		root := t.TempDir()
		store, hist := session.NewMemory(), history.NewMemory()
		t.Cleanup(func() { store.Close(); hist.Close() })
		p := scripted.New(scripted.Script{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{write("a.txt", "new bytes")}},
			{Text: "done"},
		}})
		r := agent.New(agent.Deps{Provider: p, Store: store, History: brokenHistory{hist}, Policy: deployed})
		var results []*agent.ToolResult
		var notices []*sema.Notice
		var final *agent.TaskResult
		for ev, err := range r.Events(context.Background(), agent.TaskSpec{Prompt: "write", Root: root, PermissionMode: permission.ModeAcceptEdits}) {
			if err != nil {
				t.Fatal(err)
			}
			switch ev.Type {
			case agent.EventToolResult:
				results = append(results, ev.ToolResult)
			case agent.EventNotice:
				notices = append(notices, ev.Notice)
			case agent.EventResult:
				final = ev.Result
			}
		}
		// History is on either way: the policy says what an edit it cannot protect does.
		if final.Manifest.FileHistory != "on" {
			t.Fatalf("policy %d: manifest file_history %q", policy, final.Manifest.FileHistory)
		}
		if landed := len(final.EditedFiles) == 1; landed != (policy == agent.ProceedUnprotected) {
			t.Fatalf("policy %d: edited files %v", policy, final.EditedFiles)
		}
		if len(results) != 1 {
			t.Fatalf("policy %d: %d tool results", policy, len(results))
		}
		res := results[0]
		_, statErr := os.Stat(filepath.Join(root, "a.txt"))
		switch policy {
		case agent.RefuseUnprotected:
			if !res.IsError || res.Code != unprotected {
				t.Fatalf("refused edit: is_error %v code %q", res.IsError, res.Code)
			}
			if !os.IsNotExist(statErr) {
				t.Fatal("the refused edit wrote the file")
			}
			if m := nestedCode.FindString(res.Text); m != "" {
				t.Fatalf("the model reads a code (%q) inside the sentence: %q", m, res.Text)
			}
			if !strings.Contains(res.Text, "the store is down") {
				t.Fatalf("the sentence lost its cause: %q", res.Text)
			}
		case agent.ProceedUnprotected:
			if res.IsError || statErr != nil {
				t.Fatalf("the edit did not proceed: %q (%v)", res.Text, statErr)
			}
			var found bool
			for _, n := range notices {
				if n.Code == unprotected {
					found = true
					if m := nestedCode.FindString(n.Message); m != "" {
						t.Fatalf("a code (%q) inside the notice's message: %q", m, n.Message)
					}
				}
			}
			if !found {
				t.Fatalf("no %s notice among %d", unprotected, len(notices))
			}
		}
	}
}
