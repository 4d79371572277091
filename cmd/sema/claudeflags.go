package main

import (
	"errors"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/permission"
)

// codeWorktreeNotYet refuses -w/--worktree, which is not built yet.
const codeWorktreeNotYet = "config.worktree_not_supported"

// claudeOptions are Claude Code's flags that sema reads into its own: each sets what a
// sema flag sets, so a command line written for `claude -p` runs unchanged.
type claudeOptions struct {
	// skipPermissions is --dangerously-skip-permissions: --permission-mode bypassPermissions.
	skipPermissions bool
	// appendSystemFile and systemFile are --append-system-prompt-file and
	// --system-prompt-file: the text of --append-system-prompt and --system-prompt, read
	// from a file.
	appendSystemFile string
	systemFile       string
	// worktree is set when -w/--worktree was given; it is refused.
	worktree bool
}

// addClaudeFlags adds Claude Code's spellings of what sema does. Its -c, -r,
// --allowedTools and --disallowedTools are the shorthands and aliases of sema's own
// flags (addRunFlags, addSDKFlags).
func addClaudeFlags(cmd *cobra.Command, o *runOptions) {
	f := cmd.Flags()
	f.BoolVar(&o.claude.skipPermissions, "dangerously-skip-permissions", false, "the same as --permission-mode bypassPermissions (Claude Code's spelling)")
	f.StringVar(&o.claude.appendSystemFile, "append-system-prompt-file", "", "--append-system-prompt, read from a file")
	f.StringVar(&o.claude.systemFile, "system-prompt-file", "", "--system-prompt, read from a file")
	f.FuncP("worktree", "w", "not built yet: refused (run in a git worktree you made with git worktree add, with --cwd)", func(string) error {
		o.claude.worktree = true
		return nil
	})
	f.Lookup("worktree").NoOptDefVal = "true"
}

// apply sets the sema options Claude Code's flags stand for, refusing a pair that says
// two things (--dangerously-skip-permissions with another --permission-mode; a prompt
// given both inline and as a file) and what is not built.
func (c *claudeOptions) apply(o *runOptions) error {
	if c.worktree {
		return usageErr(sema.Errorf(codeWorktreeNotYet, "-w/--worktree is not built yet in sema; make the worktree yourself (git worktree add ../task-branch) and run sema there with --cwd ../task-branch"))
	}
	if c.skipPermissions {
		if o.permissionMode != "" && o.permissionMode != string(permission.ModeBypassPermissions) {
			return usageErr(sema.Errorf(codeUsage, "--dangerously-skip-permissions means --permission-mode bypassPermissions, and --permission-mode says %s; give one", o.permissionMode))
		}
		o.permissionMode = string(permission.ModeBypassPermissions)
	}
	for _, p := range []struct {
		file, flag, inline string
		text               *string
	}{
		{c.appendSystemFile, "--append-system-prompt-file", "--append-system-prompt", &o.appendSystem},
		{c.systemFile, "--system-prompt-file", "--system-prompt", &o.systemPrompt},
	} {
		if p.file == "" {
			continue
		}
		if *p.text != "" {
			return usageErr(sema.Errorf(codeUsage, "%s and %s both give the text; give one", p.flag, p.inline))
		}
		data, err := os.ReadFile(p.file)
		if err != nil {
			return usageErr(sema.Errorf("config.prompt_file_invalid", "%s %s cannot be read: %s", p.flag, p.file, causeText(err)).With("path", p.file))
		}
		*p.text = strings.TrimRight(string(data), "\n")
	}
	return nil
}

// causeText is why a file could not be read, without the path the message already
// names: "no such file or directory".
func causeText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
