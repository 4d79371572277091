package instructions

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/sema-agent/sema/fence"
)

// claudeStateDirs are the directories of HOME/.claude where Claude Code keeps its own
// state — other projects' transcripts, plans, to-do lists, shell snapshots — rather
// than what a person writes. An import never reaches into them: a cloned repository's
// CLAUDE.md must not be able to show the model another project's plan.
var claudeStateDirs = []string{"projects", "plans", "todos", "shell-snapshots", "file-history",
	"session-env", "statsig", "ide", "logs", "debug", "downloads", "local"}

// claudeImport reports whether canon, outside the read roots, may still be imported:
// with Config.Claude, a Markdown file a person keeps under HOME/.claude (Claude Code's
// "@~/.claude/my-project-instructions.md"), outside Claude Code's state directories.
// The deny set and Read rules still apply to it.
func (l *Loader) claudeImport(canon string) bool {
	if !l.cfg.Claude || l.home == "" || !strings.EqualFold(filepath.Ext(canon), ".md") {
		return false
	}
	dir := join(l.home, ".claude")
	if !fence.Contains(dir, canon) || canon == dir {
		return false
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(canon, dir+"/"), "/")
	return !slices.Contains(claudeStateDirs, first)
}
