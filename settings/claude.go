package settings

// Claude Code's files are read beside sema's by default: a person's existing
// .claude/settings.json, with its deny rules, must not need a flag to apply. The switch
// that turns them off is the command line's or the deployment's, never the workspace's:
// a cloned repository's .sema/settings.json must not be able to make the deny rules of
// its .claude/settings.json (or a person's .claude/settings.local.json) vanish.

// IsOn reports whether a claudeCompat word is present and true.
func IsOn(word *bool) bool { return word != nil && *word }

// ClaudeFiles decides whether Claude Code's files are read beside sema's. flag is the
// command line's word (--claude-compat: true, --no-claude-compat: false; nil when
// neither was given) and wins. Otherwise the highest of the deployment's files (the
// user's, --settings, the managed policy) that names claudeCompat decides; a workspace's
// file is not consulted. With no word anywhere they are read.
func ClaudeFiles(flag *bool, files ...*File) bool {
	if flag != nil {
		return *flag
	}
	on, best := true, -1
	for _, f := range files {
		if f == nil || f.ClaudeCompat == nil || f.Layer.Workspace() {
			continue
		}
		if r := layerRank[f.Layer]; r >= best {
			on, best = *f.ClaudeCompat, r
		}
	}
	return on
}

// layerRank orders the layers, lowest precedence first.
var layerRank = map[Layer]int{User: 0, Project: 1, Local: 2, Flag: 3, Managed: 4}
