package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model/scripted"
)

// A temporary file an interrupted atomic write left in the root is removed during the next
// run over that root, and said so; a file that merely looks alike is left alone.
func TestRunRemovesStaleTempsOfInterruptedWrites(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	old := time.Now().Add(-time.Hour)
	stale := filepath.Join(root, "sub", ".main.go.sema-"+strconv.FormatInt(old.UnixNano(), 36)+"-1.tmp")
	alike := filepath.Join(root, ".main.go.sema-notatime.tmp.keep")
	for _, p := range []string{stale, alike} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	model := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "nothing to do"}}})
	res, err := agent.New(agent.Deps{Provider: model}).Run(context.Background(), agent.TaskSpec{Prompt: "hi", Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale temp file is still there: %v", err)
	}
	if _, err := os.Stat(alike); err != nil {
		t.Errorf("a file that only looks like a temp file was removed: %v", err)
	}
	found := false
	for _, n := range res.Notices {
		found = found || n.Code == agent.CodeStaleTempsRemoved
	}
	if !found {
		t.Errorf("no %s notice in %+v", agent.CodeStaleTempsRemoved, res.Notices)
	}
}
