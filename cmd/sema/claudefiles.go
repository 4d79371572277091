package main

import "github.com/spf13/pflag"

// addClaudeFilesFlags adds the switch of Claude Code's files. They are read by default, so
// --claude-compat only says so explicitly (it wins over a settings file's claudeCompat
// false); --no-claude-compat turns them off.
func addClaudeFilesFlags(f *pflag.FlagSet, o *runOptions) {
	f.BoolVar(&o.claudeCompat, "claude-compat", false, "read Claude Code's files beside sema's (the default; wins over claudeCompat: false in a settings file)")
	f.BoolVar(&o.noClaudeCompat, "no-claude-compat", false, "do not read Claude Code's files: .claude/settings.json, .claude/settings.local.json, .claude/commands, ~/.claude/settings.json, ~/.claude/CLAUDE.md, ~/.claude/agents, ~/.claude/commands")
}
