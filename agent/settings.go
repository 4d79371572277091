package agent

import (
	"context"
	"errors"
	"io/fs"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/internal/settingsload"
	"github.com/sema-agent/sema/settings"
)

// SettingsOptions say which settings files a run reads besides the deployment's own
// (see package settings for the hierarchy and its format).
type SettingsOptions struct {
	// Files are the settings files the deployment read itself — the user's
	// (settings.User) and the command line's (settings.Flag) — parsed with
	// settings.Load. They take their place in the hierarchy by their Layer; a file of a
	// workspace or managed layer here is refused (config.settings_invalid): the runner
	// reads the workspace's own files, and the managed policy is Managed.
	Files []settings.File
	// Managed is the deployment's managed policy (settings.Load with settings.Managed;
	// the command line reads /etc/sema/managed-settings.json): the highest layer, which
	// nothing below may loosen — its sandbox cannot be turned off nor its network on,
	// its hooks cannot be disabled, and allowManagedHooksOnly runs its hooks alone. Nil
	// (the default): none.
	Managed *settings.File
	// Tenant are more managed-policy files, each applied as Managed is and after it: a
	// service's policy for the tenant whose task this is, on top of the machine's. The
	// deny and ask rules of every one bind. Nil (the default): none.
	Tenant []settings.File
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

// readSettings reads the workspace's settings files through the env and folds every
// layer — the deployment's files, the workspace's, the managed policy — into l.layered
// (settingsload.Load). A child leg takes its parent's.
func (l *leg) readSettings(ctx context.Context) error {
	if l.link != nil {
		l.layered = l.link.parent.layered
		return nil
	}
	opts := l.deps.settingsOptions()
	merged, files, err := settingsload.Load(ctx, settingsload.Input{
		Files: opts.Files, Managed: opts.Managed, Tenant: opts.Tenant,
		Sources: opts.Sources, ClaudeCompat: opts.ClaudeCompat, Trust: l.deps.policy().TrustProjectSettings,
		Root: l.spec.Root, Home: l.home(), Read: l.readSettingsFile,
	})
	if err != nil {
		return err
	}
	l.layered, l.settingsFiles = merged, files
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

// readSettingsFile reads a workspace settings file through the env; a file that is there
// but cannot be read refuses the run by name.
func (l *leg) readSettingsFile(ctx context.Context, path string) ([]byte, error) {
	data, err := l.deps.Env.ReadFile(ctx, path)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return data, err
	}
	if hf := sema.HostFault(err, "read "+path); hf != nil {
		return nil, hf
	}
	return nil, configError(CodeSettingsUnreadable, "cannot read %s: %v", path, err)
}
