package settings

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/hooks"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/sandbox"
)

// Codes of the settings files.
const (
	// CodeSpecUnknownKey refuses a settings key sema does not read: a key a caller
	// believes configures something must not be silently ignored.
	CodeSpecUnknownKey = "config.spec_unknown_key"
	// CodeSettingsInvalid refuses a settings file that cannot be read or is not the
	// documented JSON shape.
	CodeSettingsInvalid = "config.settings_invalid"
	// CodeKeyIgnored is the notice of a key of Claude Code's settings that sema knows
	// and does not apply (a status line, a login method): the file is used, the key is
	// named.
	CodeKeyIgnored = "settings.key_ignored"
)

// File is what sema reads of one settings file:
//
//	{"permissions": {"allow": [...], "deny": [...], "ask": [...], "defaultMode": "...",
//	                 "additionalDirectories": [...], "disableBypassPermissionsMode": "disable"},
//	 "hooks": {...}, "disableAllHooks": false, "env": {"NAME": "value"}, "model": "...",
//	 "envPassthrough": ["NAME", "PREFIX_*"],
//	 "mcpServers": {...}, "claudeCompat": false,
//	 "sandbox": {"mode": "auto|on|off", "network": "on|off",
//	             "writable": [...], "readable": [...], "hidden": [...],
//	             "sockets": [...], "sharedCaches": false}}
//
// Claude Code's other keys are known and ignored (Ignored names them); any other key is
// refused.
type File struct {
	// Path is where the file was read ("" for a document given inline).
	Path string
	// Layer is the file's place in the hierarchy.
	Layer Layer
	// Rules are the file's permission rules.
	Rules permission.RuleSet
	// DefaultMode is the mode the file asks for; "" when it names none.
	DefaultMode permission.Mode
	// AdditionalDirectories are more write (and read) roots: absolute, "~/" or, in a
	// workspace's file, relative to the task root.
	AdditionalDirectories []string
	// DisableBypassPermissions is permissions.disableBypassPermissionsMode "disable":
	// the bypassPermissions mode is forbidden.
	DisableBypassPermissions bool
	// Sandbox is the file's sandbox member.
	Sandbox Sandbox
	// MCPServers is the file's mcpServers member as written (Claude Code's format), for
	// the MCP client to read (mcp.ParseConfig); nil when the file has none.
	MCPServers json.RawMessage
	// Hooks are the file's command hooks, Source set to Path.
	Hooks []hooks.Hook
	// DisableAllHooks turns off the hooks of this layer and the layers below it (never
	// the managed policy's).
	DisableAllHooks bool
	// AllowManagedHooksOnly (the managed policy only) runs the managed policy's hooks
	// and no other.
	AllowManagedHooksOnly bool
	// Env is the environment the file adds to tool processes (commands, hooks, MCP
	// servers).
	Env map[string]string
	// EnvPassthrough names variables of sema's own environment that tool processes
	// inherit even though the environment rule holds them back (env.Inherit): exact
	// names and NAME_* prefixes, checked by env.ParsePassthrough.
	EnvPassthrough []string
	// Model is the model the file asks for ("" when none).
	Model string
	// ClaudeCompat is the file's claudeCompat word: true asks for Claude Code's files
	// (.claude/, ~/.claude/) to be read beside sema's, false turns them off (see
	// ClaudeFiles); nil when the file says nothing.
	ClaudeCompat *bool
	// Ignored are Claude Code's keys the file holds that sema does not apply, as
	// dotted paths.
	Ignored []string
}

// Sandbox is a settings file's "sandbox" member (see package sandbox): the mode and
// network words and additions to the policy. Claude Code's "enabled" reads as the mode
// on or off.
type Sandbox struct {
	// Mode is the file's sandbox.mode as sandbox.ParseMode reads it (auto, on or off);
	// "" when the file names none.
	Mode sandbox.Mode
	// Network is the file's sandbox.network word, "on" or "off" (sandbox.ParseNetwork);
	// "" when the file has no such word.
	Network string
	// Writable, Readable and Hidden are absolute paths, or "~/" paths under the home
	// directory.
	Writable, Readable, Hidden []string
	// Sockets are unix sockets commands may connect to (a database's, a container
	// daemon's): absolute or "~/" paths. Nothing else outside the write roots is
	// reachable by a socket's path.
	Sockets []string
	// SharedCaches is sandbox.sharedCaches: true lets commands write the toolchain caches
	// as they are (Go's, npm's, pip's, cargo's, Maven's, …), so a command can then change
	// what later builds outside the sandbox use; false keeps their writes in a private
	// layer. Nil when the file says nothing.
	SharedCaches *bool
}

// Load reads and parses the settings file at path. See Parse.
func Load(path string, layer Layer) (File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return File{}, sema.Errorf(CodeSettingsInvalid, "the settings file %s cannot be read: %w", path, err).With("path", path)
	}
	return Parse(data, path, layer)
}

// claudeKeys are Claude Code's settings keys that configure what sema does not have (a
// terminal UI, a login, plugins): a file written for Claude Code holds them, and refusing
// it for them would make an existing setup unusable. They are named in File.Ignored.
var claudeKeys = map[string]bool{
	"apiKeyHelper": true, "awsAuthRefresh": true, "awsCredentialExport": true, "cleanupPeriodDays": true,
	"companyAnnouncements": true, "disabledMcpjsonServers": true, "enableAllProjectMcpServers": true,
	"enabledMcpjsonServers": true, "enabledPlugins": true, "extraKnownMarketplaces": true,
	"forceLoginMethod": true, "forceLoginOrgUUID": true, "includeCoAuthoredBy": true, "otelHeadersHelper": true,
	"outputStyle": true, "spinnerTipsEnabled": true, "statusLine": true, "subagentStatusLine": true,
	"alwaysThinkingEnabled": true, "feedbackSurveyState": true, "theme": true, "verbose": true,
	"autoUpdates": true, "preferredNotifChannel": true, "respectGitignore": true,
}

// claudeSandboxKeys are the members of Claude Code's "sandbox" object that sema's
// sandbox does not read: its policy comes from the fence.
var claudeSandboxKeys = map[string]bool{
	"autoAllowBashIfSandboxed": true, "excludedCommands": true, "allowUnsandboxedCommands": true,
	"ignoreViolations": true, "enableWeakerNestedSandbox": true,
}

// Parse parses a settings document; path labels it in errors. Every key is known or
// refused by name (config.spec_unknown_key); every rule parses (config.rule_invalid);
// defaultMode is a mode word (config.permission_mode_invalid); the hooks are Claude
// Code's shape (config.hooks_invalid).
func Parse(data []byte, path string, layer Layer) (File, error) {
	name := path
	if name == "" {
		name = "the " + string(layer) + " settings"
	}
	var top map[string]json.RawMessage
	if err := strictObject(data, &top); err != nil {
		return File{}, sema.Errorf(CodeSettingsInvalid, "the settings file %s is not a JSON object: %v", name, err).With("path", name)
	}
	out := File{Path: path, Layer: layer}
	p := parser{name: name}
	for _, k := range sortedKeys(top) {
		v := top[k]
		if isNull(v) {
			continue
		}
		var err error
		switch k {
		case "$schema":
		case "permissions":
			err = p.permissions(v, &out)
		case "sandbox":
			out.Sandbox, err = p.sandbox(v, &out)
		case "mcpServers":
			out.MCPServers = v
		case "hooks":
			out.Hooks, err = hooks.ParseConfig(v, name)
		case "disableAllHooks":
			err = p.decode(k, v, &out.DisableAllHooks, "true or false")
		case "allowManagedHooksOnly":
			if layer != Managed {
				return File{}, sema.Errorf(CodeSettingsInvalid, "allowManagedHooksOnly in %s is a key of the managed policy only; remove it", name).With("path", name).With("key", k)
			}
			err = p.decode(k, v, &out.AllowManagedHooksOnly, "true or false")
		case "env":
			err = p.decode(k, v, &out.Env, "an object of string values")
			for n := range out.Env {
				if n == "" || strings.ContainsAny(n, "=\x00") {
					err = p.bad(k, "an object whose names are environment variable names; "+strconv.Quote(n)+" is not")
				}
			}
		case "envPassthrough":
			if err = p.decode(k, v, &out.EnvPassthrough, "a list of variable names and NAME_* prefixes"); err == nil {
				_, err = env.ParsePassthrough(out.EnvPassthrough, "envPassthrough in "+name)
			}
		case "model":
			err = p.decode(k, v, &out.Model, "a string")
		case "claudeCompat":
			err = p.decode(k, v, &out.ClaudeCompat, "true or false")
		default:
			if !claudeKeys[k] {
				return File{}, unknownKey(name, k)
			}
			out.Ignored = append(out.Ignored, k)
		}
		if err != nil {
			return File{}, err
		}
	}
	return out, nil
}

// parser labels a file's errors.
type parser struct{ name string }

func (p parser) bad(key, what string) error {
	return sema.Errorf(CodeSettingsInvalid, "%s in %s must be %s", key, p.name, what).With("path", p.name).With("key", key)
}

func (p parser) decode(key string, v json.RawMessage, dst any, what string) error {
	if err := json.Unmarshal(v, dst); err != nil {
		return p.bad(key, what)
	}
	return nil
}

func (p parser) permissions(raw json.RawMessage, out *File) error {
	var perms map[string]json.RawMessage
	if err := strictObject(raw, &perms); err != nil {
		return sema.Errorf(CodeSettingsInvalid, "the \"permissions\" member of %s is not a JSON object: %v", p.name, err).With("path", p.name)
	}
	var lists [3][]string
	for _, k := range sortedKeys(perms) {
		v, key := perms[k], "permissions."+k
		if isNull(v) {
			continue
		}
		switch k {
		case "allow", "deny", "ask":
			var l []string
			if err := p.decode(key, v, &l, "a list of rule strings"); err != nil {
				return err
			}
			lists[map[string]int{"allow": 0, "deny": 1, "ask": 2}[k]] = l
		case "defaultMode":
			var s string
			if err := p.decode(key, v, &s, "a string"); err != nil {
				return err
			}
			if s != "" {
				m, err := permission.ParseMode(s)
				if err != nil {
					return err
				}
				out.DefaultMode = m
			}
		case "additionalDirectories":
			if err := p.decode(key, v, &out.AdditionalDirectories, "a list of directories"); err != nil {
				return err
			}
			for _, d := range out.AdditionalDirectories {
				if d == "" {
					return p.bad(key, "a list of directories, none of them empty")
				}
			}
		case "disableBypassPermissionsMode":
			var s string
			if err := p.decode(key, v, &s, `"disable"`); err != nil {
				return err
			}
			if s != "disable" {
				return p.bad(key, `"disable" (the only value Claude Code defines); remove the key to allow the mode`)
			}
			out.DisableBypassPermissions = true
		default:
			return unknownKey(p.name, key)
		}
	}
	rules, err := permission.ParseRules(lists[0], lists[1], lists[2])
	if err != nil {
		return err
	}
	out.Rules = rules
	return nil
}

func unknownKey(name, key string) error {
	return sema.Errorf(CodeSpecUnknownKey, "the settings file %s holds the unknown key %q; remove it (sema reads permissions, hooks, disableAllHooks, env, envPassthrough, model, mcpServers, sandbox and claudeCompat, and ignores Claude Code's interface keys)", name, key).
		With("path", name).With("key", key)
}

// sandbox reads the "sandbox" member: every key known, every word valid, every path
// absolute or under "~/". Claude Code's members sema does not read are named in
// out.Ignored.
func (p parser) sandbox(raw json.RawMessage, file *File) (Sandbox, error) {
	var out Sandbox
	var m map[string]json.RawMessage
	if err := strictObject(raw, &m); err != nil {
		return out, sema.Errorf(CodeSettingsInvalid, "the \"sandbox\" member of %s is not a JSON object: %v", p.name, err).With("path", p.name)
	}
	for _, k := range sortedKeys(m) {
		v, key := m[k], "sandbox."+k
		switch k {
		case "enabled":
			var on bool
			if err := p.decode(key, v, &on, "true or false"); err != nil {
				return out, err
			}
			if out.Mode == "" {
				out.Mode = sandbox.ModeOff
				if on {
					out.Mode = sandbox.ModeOn
				}
			}
		case "mode":
			var w string
			if err := p.decode(key, v, &w, "a string"); err != nil {
				return out, err
			}
			md, err := sandbox.ParseMode(w)
			if err != nil {
				return out, err
			}
			out.Mode = md
		case "network":
			if bytes.HasPrefix(bytes.TrimSpace(v), []byte("{")) {
				// Claude Code's network object (proxy ports, Unix sockets).
				file.Ignored = append(file.Ignored, key)
				continue
			}
			var w string
			if err := p.decode(key, v, &w, `"on" or "off"`); err != nil {
				return out, err
			}
			if _, err := sandbox.ParseNetwork(w); err != nil {
				return out, err
			}
			out.Network = w
		case "sharedCaches":
			var on bool
			if err := p.decode(key, v, &on, "true or false"); err != nil {
				return out, err
			}
			out.SharedCaches = &on
		case "writable", "readable", "hidden", "sockets":
			var l []string
			if err := p.decode(key, v, &l, "a list of paths"); err != nil {
				return out, err
			}
			for _, path := range l {
				if !strings.HasPrefix(path, "/") && !strings.HasPrefix(path, "~/") {
					return out, p.bad(key, "a list of absolute or \"~/\" paths; "+strconv.Quote(path)+" is neither")
				}
			}
			switch k {
			case "writable":
				out.Writable = l
			case "readable":
				out.Readable = l
			case "sockets":
				out.Sockets = l
			default:
				out.Hidden = l
			}
		default:
			if !claudeSandboxKeys[k] {
				return out, unknownKey(p.name, key)
			}
			file.Ignored = append(file.Ignored, key)
		}
	}
	return out, nil
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

// strictObject decodes one JSON object and refuses trailing data.
func strictObject(data []byte, v *map[string]json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if *v == nil {
		return errNotObject
	}
	if _, err := dec.Token(); err != io.EOF {
		return errTrailing
	}
	return nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

type settingsErr string

func (e settingsErr) Error() string { return string(e) }

const (
	errNotObject = settingsErr("null is not an object")
	errTrailing  = settingsErr("data after the object")
)
