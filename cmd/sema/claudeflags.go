package main

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/worktree"
)

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
	// worktree is set when -w/--worktree was given, with its name ("" to generate one).
	worktree *string
	// tree is the worktree the task runs in, once apply made (or reused) it.
	tree *worktree.Worktree
}

// addClaudeFlags adds Claude Code's spellings of what sema does. Its -c, -r,
// --allowedTools and --disallowedTools are the shorthands and aliases of sema's own
// flags (addRunFlags, addSDKFlags).
func addClaudeFlags(cmd *cobra.Command, o *runOptions) {
	f := cmd.Flags()
	f.BoolVar(&o.claude.skipPermissions, "dangerously-skip-permissions", false, "the same as --permission-mode bypassPermissions (Claude Code's spelling)")
	f.StringVar(&o.claude.appendSystemFile, "append-system-prompt-file", "", "--append-system-prompt, read from a file")
	f.StringVar(&o.claude.systemFile, "system-prompt-file", "", "--system-prompt, read from a file")
	f.FuncP("worktree", "w", "run in a git worktree of the repository of its own — .sema/worktrees/NAME on the branch sema/NAME, made from HEAD (or reused); -w alone picks a name; sema worktree list|remove", func(v string) error {
		if v == worktreeUnnamed {
			v = ""
		}
		o.claude.worktree = &v
		return nil
	})
	f.Lookup("worktree").NoOptDefVal = worktreeUnnamed
}

// worktreeUnnamed is -w given without a name: no name a person can type (a space).
const worktreeUnnamed = " "

// apply sets the sema options Claude Code's flags stand for, refusing a pair that says
// two things (--dangerously-skip-permissions with another --permission-mode; a prompt
// given both inline and as a file) and what is not built.
func (c *claudeOptions) apply(o *runOptions) error {
	if c.worktree != nil && c.tree == nil {
		if err := c.openWorktree(o); err != nil {
			return err
		}
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

// openWorktree makes (or reuses) the worktree -w names in the repository of the task
// root, and makes it the task root. The repository's git directory, which a commit in
// the worktree writes to, is added as a write root: its protected places (hooks,
// config) stay as protected as in any checkout.
func (c *claudeOptions) openWorktree(o *runOptions) error {
	dir := o.cwd
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return usageErr(sema.Errorf(codeRootInvalid, "the current directory cannot be read: %v; give --cwd", err))
		}
		dir = wd
	}
	wt, err := worktree.Open(context.Background(), dir, *c.worktree)
	if err != nil {
		return usageErr(err)
	}
	c.tree = wt
	o.cwd = wt.Path
	o.addDirs = append(o.addDirs, wt.GitDir)
	return nil
}

// worktreeRef is the manifest's word on the worktree, nil without one.
func (c *claudeOptions) worktreeRef() *agent.WorktreeRef {
	if c.tree == nil {
		return nil
	}
	return &agent.WorktreeRef{Name: c.tree.Name, Branch: c.tree.Branch, Repo: c.tree.Repo}
}

// worktreeName reads "-w NAME" as Claude Code does, where NAME is the flag's value and
// not a prompt (the flag parser takes a value given without "=" as a positional
// argument, since -w alone is allowed too): the word after -w or --worktree that has no
// space and no leading dash becomes the flag's value, so that one that is no name
// (feature/login) is refused as a name, by worktree.CheckName. A prompt of one word
// right after -w is read as the name: put the prompt first, or give the name with
// -w=NAME.
func worktreeName(args []string) []string {
	for i := 0; i < len(args)-1; i++ {
		switch a := args[i]; {
		case a == "--":
			return args
		case (a == "-w" || a == "--worktree") && args[i+1] != "" && !strings.HasPrefix(args[i+1], "-") && !strings.ContainsAny(args[i+1], " \t\n"):
			out := append(append(append([]string(nil), args[:i]...), "--worktree="+args[i+1]), args[i+2:]...)
			return out
		}
	}
	return args
}
