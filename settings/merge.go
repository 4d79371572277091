package settings

import (
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/sema-agent/sema/hooks"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/sandbox"
)

// Merged is what a run applies of its settings files.
type Merged struct {
	// Rules are every applied layer's rules together (a deny at any layer wins, and an
	// ask beats every allow: see package permission).
	Rules permission.RuleSet
	// DefaultMode is the highest layer's defaultMode; "" when none names one.
	DefaultMode permission.Mode
	// AdditionalDirectories are the layers' directories, absolute.
	AdditionalDirectories []string
	// DenyBypassPermissions: a layer forbids the bypassPermissions mode.
	DenyBypassPermissions bool
	// Sandbox is the highest layer's mode, network and sharedCaches words, and every
	// layer's paths.
	// ManagedSandbox is the managed policy's alone, which no task may loosen.
	Sandbox, ManagedSandbox Sandbox
	// Env is the environment for tool processes, NAME=value sorted by name; a higher
	// layer's value wins.
	Env []string
	// EnvPassthrough is every applied layer's envPassthrough together: the variables of
	// sema's environment tool processes inherit although the rule holds them back. An
	// untrusted workspace's file may not add to it.
	EnvPassthrough []string
	// Model is the highest layer's model; "" when none names one.
	Model string
	// Hooks are the hooks that apply, lowest layer first.
	Hooks []hooks.Hook
	// ClaudeCompat: an applied layer asked for Claude Code's files too (the runner also
	// sets it when its caller did).
	ClaudeCompat bool
	// Applied says, for the manifest, which files were read and what of each applied.
	Applied []Applied
}

// Applied is one settings file's fact in the manifest.
type Applied struct {
	// Path is where the file was read; empty for an inline document.
	Path string `json:"path"`
	// Layer is the file's layer.
	Layer Layer `json:"layer"`
	// Trusted is false for a workspace file the operator does not trust.
	Trusted bool `json:"trusted"`
	// Dropped names what of the file was not applied.
	Dropped []string `json:"dropped,omitempty"`
	// Why says why Dropped was not applied.
	Why string `json:"why,omitempty"`
	// Ignored are Claude Code's keys sema does not apply.
	Ignored []string `json:"ignored,omitempty"`
	// Rules are the file's permission rules, each with whether it applied: an
	// untrusted workspace file's allow rules are listed and did not.
	Rules []RuleFact `json:"rules,omitempty"`
}

// RuleFact is one permission rule of a settings file, for the manifest and for `sema
// permissions`.
type RuleFact struct {
	// Rule is the rule as written, "Read(./secrets/**)".
	Rule string `json:"rule"`
	// Behavior is the list the rule is in: allow, deny or ask.
	Behavior permission.Behavior `json:"behavior"`
	// Applied is false for a rule that was read and left out (an untrusted workspace's
	// allow rule).
	Applied bool `json:"applied"`
}

// ruleFacts lists f's rules, each applied unless its list is in dropped.
func ruleFacts(f File, trusted bool) []RuleFact {
	var out []RuleFact
	for _, l := range []struct {
		b     permission.Behavior
		rules []permission.Rule
	}{{permission.Deny, f.Rules.Deny}, {permission.Ask, f.Rules.Ask}, {permission.Allow, f.Rules.Allow}} {
		for _, r := range l.rules {
			// Only what tightens applies from an untrusted workspace: deny and ask.
			out = append(out, RuleFact{Rule: r.String(), Behavior: l.b, Applied: trusted || l.b != permission.Allow})
		}
	}
	return out
}

// MergeOptions are the facts Merge needs besides the files.
type MergeOptions struct {
	// Root is the task root, for a workspace file's relative directories.
	Root string
	// Home is the home directory, for "~/" directories.
	Home string
	// TrustWorkspace applies the workspace's layers in full.
	TrustWorkspace bool
}

// untrustedWhy is the manifest's sentence for an untrusted workspace file.
const untrustedWhy = "the workspace is not trusted: only its deny and ask rules and what tightens the sandbox apply (trust it with --trust-project or `sema trust`)"

// Merge folds files, lowest precedence first, into what a run applies.
func Merge(files []File, o MergeOptions) Merged {
	var m Merged
	env := map[string]string{}
	hooksOff := -1 // the highest non-managed layer index that disabled hooks
	managedOnly := false
	for i := range files {
		f := files[i]
		a := Applied{Path: f.Path, Layer: f.Layer, Trusted: true, Ignored: f.Ignored}
		a.Rules = ruleFacts(f, !f.Layer.Workspace() || o.TrustWorkspace)
		if f.Layer.Workspace() && !o.TrustWorkspace {
			f, a.Dropped = untrusted(f)
			a.Trusted = false
			if len(a.Dropped) > 0 {
				a.Why = untrustedWhy
			}
		}
		m.Applied = append(m.Applied, a)
		m.Rules = m.Rules.Merge(f.Rules)
		if f.DefaultMode != "" {
			m.DefaultMode = f.DefaultMode
		}
		for _, d := range f.AdditionalDirectories {
			m.AdditionalDirectories = append(m.AdditionalDirectories, resolveDir(d, f.Layer, o))
		}
		m.DenyBypassPermissions = m.DenyBypassPermissions || f.DisableBypassPermissions
		mergeSandbox(&m.Sandbox, f.Sandbox)
		if f.Layer == Managed {
			mergeSandbox(&m.ManagedSandbox, f.Sandbox)
			managedOnly = managedOnly || f.AllowManagedHooksOnly
		}
		for k, v := range f.Env {
			env[k] = v
		}
		for _, n := range f.EnvPassthrough {
			if !slices.Contains(m.EnvPassthrough, n) {
				m.EnvPassthrough = append(m.EnvPassthrough, n)
			}
		}
		if f.Model != "" {
			m.Model = f.Model
		}
		if f.DisableAllHooks && f.Layer != Managed {
			hooksOff = i
		}
		m.ClaudeCompat = m.ClaudeCompat || IsOn(f.ClaudeCompat)
	}
	managedOff := false
	for _, f := range files {
		if f.Layer == Managed && f.DisableAllHooks {
			managedOff = true
		}
	}
	for i, f := range files {
		switch {
		case managedOff:
		case f.Layer == Managed:
			m.Hooks = append(m.Hooks, f.Hooks...)
		case managedOnly, i <= hooksOff, f.Layer.Workspace() && !o.TrustWorkspace:
		default:
			m.Hooks = append(m.Hooks, f.Hooks...)
		}
	}
	for k, v := range env {
		m.Env = append(m.Env, k+"="+v)
	}
	sort.Strings(m.Env)
	return m
}

// untrusted is what an untrusted workspace file may say: what tightens. It returns the
// file so reduced and the names of what was dropped.
func untrusted(f File) (File, []string) {
	var dropped []string
	drop := func(cond bool, name string) {
		if cond {
			dropped = append(dropped, name)
		}
	}
	drop(len(f.Rules.Allow) > 0, "permissions.allow")
	drop(f.DefaultMode != "", "permissions.defaultMode")
	drop(len(f.AdditionalDirectories) > 0, "permissions.additionalDirectories")
	drop(len(f.Hooks) > 0, "hooks")
	drop(f.DisableAllHooks, "disableAllHooks")
	drop(len(f.Env) > 0, "env")
	drop(len(f.EnvPassthrough) > 0, "envPassthrough")
	drop(f.Model != "", "model")
	drop(f.ClaudeCompat != nil, "claudeCompat")
	sb := Sandbox{Hidden: f.Sandbox.Hidden}
	if f.Sandbox.Mode == sandbox.ModeOn {
		sb.Mode = sandbox.ModeOn
	}
	if f.Sandbox.Network == "off" {
		sb.Network = "off"
	}
	drop(f.Sandbox.Mode != sb.Mode, "sandbox.mode")
	drop(f.Sandbox.Network != sb.Network, "sandbox.network")
	drop(len(f.Sandbox.Writable)+len(f.Sandbox.Readable) > 0, "sandbox.writable/readable")
	// A socket is a way out of the sandbox, and shared caches outlive it: both widen.
	drop(len(f.Sandbox.Sockets) > 0, "sandbox.sockets")
	drop(f.Sandbox.SharedCaches != nil && *f.Sandbox.SharedCaches, "sandbox.sharedCaches")
	if f.Sandbox.SharedCaches != nil && !*f.Sandbox.SharedCaches {
		sb.SharedCaches = f.Sandbox.SharedCaches
	}
	out := File{Path: f.Path, Layer: f.Layer, Sandbox: sb, MCPServers: f.MCPServers, Ignored: f.Ignored,
		DisableBypassPermissions: f.DisableBypassPermissions}
	out.Rules.Deny, out.Rules.Ask = f.Rules.Deny, f.Rules.Ask
	return out, dropped
}

// mergeSandbox lays f's words (mode, network, sharedCaches) over dst's and adds its
// paths.
func mergeSandbox(dst *Sandbox, f Sandbox) {
	if f.Mode != "" {
		dst.Mode = f.Mode
	}
	if f.Network != "" {
		dst.Network = f.Network
	}
	dst.Writable = append(dst.Writable, f.Writable...)
	dst.Readable = append(dst.Readable, f.Readable...)
	dst.Hidden = append(dst.Hidden, f.Hidden...)
	dst.Sockets = append(dst.Sockets, f.Sockets...)
	if f.SharedCaches != nil {
		dst.SharedCaches = f.SharedCaches
	}
}

// resolveDir makes a layer's directory absolute: "~/" under the home directory, and a
// relative one against the task root (a workspace's files name their own directories
// so; the fence refuses what is not a directory).
func resolveDir(d string, l Layer, o MergeOptions) string {
	switch {
	case d == "~":
		return o.Home
	case strings.HasPrefix(d, "~/") && o.Home != "":
		return filepath.Join(o.Home, d[2:])
	case filepath.IsAbs(d) || o.Root == "":
		return d
	default:
		return filepath.Join(o.Root, d)
	}
}

// HasHooks reports whether any of files declares hooks: a caller that reads no hook
// builds no hook runner.
func HasHooks(files []File) bool {
	return slices.ContainsFunc(files, func(f File) bool { return len(f.Hooks) > 0 })
}
