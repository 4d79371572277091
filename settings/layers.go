// Package settings reads sema's settings files — Claude Code's format, so that a team's
// existing files work unchanged — and folds their hierarchy into what a run applies:
// permission rules, a default mode, hooks, an environment for tool processes, a model,
// more directories, the sandbox's words.
//
// The layers, lowest precedence first: the user's (~/.sema/settings.json), the
// project's (.sema/settings.json), the project's local file (.sema/settings.local.json,
// meant to be git-ignored), the command line's (--settings) and the deployment's managed
// policy, which nothing below may loosen. With the compatibility switch each of the
// first three is also read from .claude/ (below sema's own file of the same layer).
//
// A workspace's own layers (project and local) are what a cloned repository chose: they
// apply in full only when the operator trusts the workspace (Trust). Untrusted, only
// what tightens applies — deny and ask rules, a sandbox turned on or off the network,
// hidden paths — and Merged.Applied says what was left out.
package settings

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/sema-agent/sema"
)

// Layer is a settings file's place in the hierarchy.
type Layer string

// The layers, lowest precedence first.
const (
	// User is the user's own file, under the home directory.
	User Layer = "user"
	// Project is the workspace's shared file, .sema/settings.json.
	Project Layer = "project"
	// Local is the workspace's file of one person, .sema/settings.local.json.
	Local Layer = "local"
	// Flag is the command line's --settings (or a deployment's own document).
	Flag Layer = "flag"
	// Managed is the machine's managed policy.
	Managed Layer = "managed"
)

// Workspace reports whether l is written by the workspace itself (project, local).
func (l Layer) Workspace() bool { return l == Project || l == Local }

// CodeSourcesInvalid refuses a --setting-sources list with a word other than user,
// project and local.
const CodeSourcesInvalid = "config.setting_sources_invalid"

// ParseSources reads a --setting-sources list: comma-separated user, project, local. An
// empty list loads none of them.
func ParseSources(s string) ([]Layer, error) {
	var out []Layer
	for _, w := range strings.Split(s, ",") {
		w = strings.TrimSpace(w)
		switch Layer(w) {
		case User, Project, Local:
			if !slices.Contains(out, Layer(w)) {
				out = append(out, Layer(w))
			}
		case "":
		default:
			return nil, sema.Errorf(CodeSourcesInvalid, "unknown setting source %q; use a comma-separated list of user, project and local", w).With("source", w)
		}
	}
	return out, nil
}

// Source is one settings file to read: where, and as which layer.
type Source struct {
	// Path is the file's absolute path.
	Path string
	// Layer is the layer the file is read as.
	Layer Layer
}

// The files' places.
const (
	// UserFile is the user's settings file, under the home directory.
	UserFile = ".sema/settings.json"
	// ProjectFile is the workspace's shared file, under the task root.
	ProjectFile = ".sema/settings.json"
	// LocalFile is the workspace's file of one person, under the task root; it is
	// meant to be git-ignored.
	LocalFile = ".sema/settings.local.json"
	// ManagedFile is where a machine keeps its managed policy.
	ManagedFile = "/etc/sema/managed-settings.json"
	// ClaudeManagedFile is Claude Code's managed policy on Linux, read with the
	// compatibility switch.
	ClaudeManagedFile = "/etc/claude-code/managed-settings.json"
)

// compat maps a file of sema's to Claude Code's file of the same layer.
func compat(rel string) string { return ".claude/" + strings.TrimPrefix(rel, ".sema/") }

// UserSources are the user's files under home, lowest precedence first: with the
// compatibility switch ~/.claude/settings.json, then ~/.sema/settings.json.
func UserSources(home string, claude bool) []Source {
	if home == "" {
		return nil
	}
	var out []Source
	if claude {
		out = append(out, Source{filepath.Join(home, compat(UserFile)), User})
	}
	return append(out, Source{filepath.Join(home, UserFile), User})
}

// WorkspaceSources are the workspace's files under root for the layers sources names
// (nil: project and local), lowest precedence first; with the compatibility switch each
// layer's .claude/ file comes just below sema's.
func WorkspaceSources(root string, sources []Layer, claude bool) []Source {
	var out []Source
	for _, f := range []Source{{ProjectFile, Project}, {LocalFile, Local}} {
		if sources != nil && !slices.Contains(sources, f.Layer) {
			continue
		}
		if claude {
			out = append(out, Source{filepath.Join(root, compat(f.Path)), f.Layer})
		}
		out = append(out, Source{filepath.Join(root, f.Path), f.Layer})
	}
	return out
}
