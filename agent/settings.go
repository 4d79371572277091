package agent

import (
	"cmp"
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/settings"
)

// SettingsOptions say which settings files a run reads besides the deployment's own
// (see package settings for the hierarchy and its format).
type SettingsOptions struct {
	// Files are the settings files the deployment read itself — the user's
	// (settings.User) and the command line's (settings.Flag) — parsed with
	// settings.Load. They take their place in the hierarchy by their Layer; a file of a
	// workspace or managed layer here is refused (config.settings_invalid): the runner
	// reads the workspace's own files, and the managed policy is Deps.ManagedSettings.
	Files []settings.File
	// Sources are the workspace layers read from the task root (settings.Project:
	// .sema/settings.json, settings.Local: .sema/settings.local.json). Nil (the default):
	// both; empty: none.
	Sources []settings.Layer
	// ClaudeCompat also reads Claude Code's files, so that a Claude Code setup works
	// unchanged: each settings layer from .claude/ (below sema's file of the same
	// layer), the user's ~/.claude/CLAUDE.md and ~/.claude/agents, and "@~/.claude/…"
	// imports. A settings file's claudeCompat key turns it on too. Default false for a
	// library deployment; the sema command line turns it on unless told otherwise
	// (settings.ClaudeFiles).
	ClaudeCompat bool
}

// settingsOptions returns the group by value.
func (d *Deps) settingsOptions() SettingsOptions {
	if d.Settings == nil {
		return SettingsOptions{}
	}
	return *d.Settings
}

// rank orders the layers, lowest precedence first.
var rank = map[settings.Layer]int{settings.User: 0, settings.Project: 1, settings.Local: 2, settings.Flag: 3, settings.Managed: 4}

// readSettings reads the workspace's settings files through the env and folds every
// layer — the deployment's files, the workspace's, the managed policy — into
// l.layered. A child leg takes its parent's.
func (l *leg) readSettings(ctx context.Context) error {
	if l.link != nil {
		l.layered = l.link.parent.layered
		return nil
	}
	opts := l.deps.settingsOptions()
	var files []settings.File
	for _, f := range opts.Files {
		if f.Layer != settings.User && f.Layer != settings.Flag {
			return configError(settings.CodeSettingsInvalid, "Deps.Settings.Files holds %s as a %s layer; give the user's and the command line's files there (the runner reads the workspace's, and the managed policy is Deps.ManagedSettings)", cmp.Or(f.Path, "a file"), f.Layer)
		}
		files = append(files, f)
	}
	if m := l.deps.ManagedSettings; m != nil {
		mf := *m
		mf.Layer = settings.Managed
		files = append(files, mf)
	}
	for _, tf := range l.deps.TenantSettings {
		tf.Layer = settings.Managed
		files = append(files, tf)
	}
	compat := opts.ClaudeCompat || slices.ContainsFunc(files, func(f settings.File) bool { return settings.IsOn(f.ClaudeCompat) })
	trust := l.deps.policy().TrustProjectSettings
	work, err := l.readWorkspaceSettings(ctx, opts.Sources, compat)
	if err != nil {
		return err
	}
	if !compat && trust && slices.ContainsFunc(work, func(f settings.File) bool { return settings.IsOn(f.ClaudeCompat) }) {
		// A trusted workspace's own file asked for Claude Code's files too.
		if work, err = l.readWorkspaceSettings(ctx, opts.Sources, true); err != nil {
			return err
		}
	}
	files = append(files, work...)
	slices.SortStableFunc(files, func(a, b settings.File) int { return rank[a.Layer] - rank[b.Layer] })
	l.layered = settings.Merge(files, settings.MergeOptions{Root: l.spec.Root, Home: l.home(), TrustWorkspace: trust})
	// The user's Claude Code files (CLAUDE.md, agents) follow the same switch.
	l.layered.ClaudeCompat = l.layered.ClaudeCompat || compat
	l.settingsFiles = files
	for _, a := range l.layered.Applied {
		if len(a.Dropped) > 0 {
			l.notice(sema.Notice{Code: CodeProjectSettingsUntrusted, Message: a.Path + " is the workspace's own and the workspace is not trusted, so " +
				strings.Join(a.Dropped, ", ") + " did not apply; its deny and ask rules did (trust it with --trust-project, `sema trust`, or Deps.Policy.TrustProjectSettings)",
				Detail: map[string]any{"path": a.Path, "dropped": a.Dropped}})
		}
		if len(a.Ignored) > 0 {
			l.notice(sema.Notice{Code: settings.CodeKeyIgnored, Message: a.Path + " holds Claude Code keys sema does not apply: " + strings.Join(a.Ignored, ", "),
				Detail: map[string]any{"path": a.Path, "keys": a.Ignored}})
		}
	}
	return nil
}

// readWorkspaceSettings reads the task root's settings files of the sources' layers.
func (l *leg) readWorkspaceSettings(ctx context.Context, sources []settings.Layer, compat bool) ([]settings.File, error) {
	var out []settings.File
	for _, src := range settings.WorkspaceSources(l.spec.Root, sources, compat) {
		data, err := l.deps.Env.ReadFile(ctx, src.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			if hf := sema.HostFault(err, "read "+src.Path); hf != nil {
				return nil, hf
			}
			return nil, configError(CodeSettingsUnreadable, "cannot read %s: %v", src.Path, err)
		}
		f, err := settings.Parse(data, src.Path, src.Layer)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}
