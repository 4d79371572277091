// Package settingsload reads a leg's settings files and folds them into what it applies:
// the deployment's own files, the workspace's (read from the task root), and the managed
// policy, each in its place in the hierarchy (see package settings).
package settingsload

import (
	"cmp"
	"context"
	"errors"
	"io/fs"
	"slices"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/settings"
)

// Input is what a leg's settings come from.
type Input struct {
	// Files are the files the deployment read itself: the user's and the command line's.
	// A file of another layer is refused.
	Files []settings.File
	// Managed is the deployment's managed policy (nil: none) and Tenant the tenant's
	// files; all take the managed layer.
	Managed *settings.File
	Tenant  []settings.File
	// Sources are the workspace layers read from Root (nil: both, empty: none).
	Sources []settings.Layer
	// ClaudeCompat also reads Claude Code's files; a deployment's file, or a trusted
	// workspace's own, that asks for it turns it on too.
	ClaudeCompat bool
	// Trust applies the workspace's files whole; untrusted, they keep only their deny and
	// ask rules (settings.MergeOptions.TrustWorkspace).
	Trust      bool
	Root, Home string
	// Read reads a workspace file. A file it reports as fs.ErrNotExist is absent; any
	// other error is returned as it is, so Read says what the reader should change.
	Read func(ctx context.Context, path string) ([]byte, error)
}

// rank orders the layers, lowest precedence first.
var rank = map[settings.Layer]int{settings.User: 0, settings.Project: 1, settings.Local: 2, settings.Flag: 3, settings.Managed: 4}

// Load reads the workspace's files and folds every layer. It returns what applies and
// the files themselves, lowest layer first.
func Load(ctx context.Context, in Input) (settings.Merged, []settings.File, error) {
	var files []settings.File
	for _, f := range in.Files {
		if f.Layer != settings.User && f.Layer != settings.Flag {
			return settings.Merged{}, nil, sema.Errorf(settings.CodeSettingsInvalid, "Deps.Settings.Files holds %s as a %s layer; give the user's and the command line's files there (the runner reads the workspace's, and the managed policy is Deps.Settings.Managed)", cmp.Or(f.Path, "a file"), f.Layer)
		}
		files = append(files, f)
	}
	if m := in.Managed; m != nil {
		mf := *m
		mf.Layer = settings.Managed
		files = append(files, mf)
	}
	for _, tf := range in.Tenant {
		tf.Layer = settings.Managed
		files = append(files, tf)
	}
	compat := in.ClaudeCompat || slices.ContainsFunc(files, func(f settings.File) bool { return settings.IsOn(f.ClaudeCompat) })
	work, err := readWorkspace(ctx, in, compat)
	if err != nil {
		return settings.Merged{}, nil, err
	}
	if !compat && in.Trust && slices.ContainsFunc(work, func(f settings.File) bool { return settings.IsOn(f.ClaudeCompat) }) {
		// A trusted workspace's own file asked for Claude Code's files too.
		if work, err = readWorkspace(ctx, in, true); err != nil {
			return settings.Merged{}, nil, err
		}
	}
	files = append(files, work...)
	slices.SortStableFunc(files, func(a, b settings.File) int { return rank[a.Layer] - rank[b.Layer] })
	merged := settings.Merge(files, settings.MergeOptions{Root: in.Root, Home: in.Home, TrustWorkspace: in.Trust})
	// The user's Claude Code files (CLAUDE.md, agents) follow the same switch.
	merged.ClaudeCompat = merged.ClaudeCompat || compat
	return merged, files, nil
}

// readWorkspace reads the task root's settings files of the sources' layers.
func readWorkspace(ctx context.Context, in Input, compat bool) ([]settings.File, error) {
	var out []settings.File
	for _, src := range settings.WorkspaceSources(in.Root, in.Sources, compat) {
		data, err := in.Read(ctx, src.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		f, err := settings.Parse(data, src.Path, src.Layer)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}
