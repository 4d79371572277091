package instructions_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/sema-agent/sema/instructions"
)

// With Claude Code's files on, the user's ~/.claude/CLAUDE.md loads before the user's
// own file, and a project file's "@~/.claude/…" import of a Markdown file loads though
// it is outside the read roots; Claude Code's state directories stay out of reach.
// Without the switch neither loads (calibration: the same tree).
func TestClaudeUserFileAndImports(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		home + "/.claude/CLAUDE.md":      "claude user rules",
		home + "/.sema/AGENTS.md":        "sema user rules",
		home + "/.claude/proj-notes.md":  "my notes for this project",
		home + "/.claude/plans/other.md": "another project's plan",
		home + "/.claude/settings.json":  `{"not": "markdown"}`,
		root + "/CLAUDE.md":              "project @~/.claude/proj-notes.md @~/.claude/plans/other.md @~/.claude/settings.json",
	}
	texts := func(claude bool) ([]string, []string) {
		cfg := config(tree(t, files, nil))
		cfg.Claude = claude
		set := instructions.New(cfg).Start(context.Background())
		var out []string
		for _, f := range set.Files {
			out = append(out, f.Text)
		}
		return out, codes(set.Notices)
	}

	got, notices := texts(true)
	want := []string{"claude user rules", "sema user rules", files[root+"/CLAUDE.md"], "my notes for this project"}
	if !slices.Equal(got, want) {
		t.Fatalf("loaded %q, want %q", got, want)
	}
	if n := strings.Count(strings.Join(notices, " "), instructions.CodeImportOutside); n != 2 {
		t.Errorf("the plan and the settings file must each be refused as outside the roots: %v", notices)
	}

	got, _ = texts(false)
	if slices.Contains(got, "claude user rules") || slices.Contains(got, "my notes for this project") {
		t.Errorf("without the switch Claude Code's user files loaded: %q", got)
	}
}
