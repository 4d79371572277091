package permission

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/sandbox"
)

// Codes of the settings door.
const (
	// CodeSpecUnknownKey refuses a settings key sema does not read: a key a caller
	// believes configures something must not be silently ignored.
	CodeSpecUnknownKey = "config.spec_unknown_key"
	// CodeSettingsInvalid refuses a settings file that cannot be read or is not the
	// documented JSON shape.
	CodeSettingsInvalid = "config.settings_invalid"
)

// Settings is what sema reads of a settings file:
//
//	{"permissions": {"allow": [...], "deny": [...], "ask": [...], "defaultMode": "..."},
//	 "sandbox": {"mode": "auto|on|off", "network": "on|off",
//	             "writable": [...], "readable": [...], "hidden": [...]}}
type Settings struct {
	// Rules are the file's rules.
	Rules RuleSet
	// DefaultMode is the mode the file asks for; "" when it names none.
	DefaultMode Mode
	// Sandbox is the file's sandbox member.
	Sandbox SandboxSettings
	// MCPServers is the file's mcpServers member as written (Claude Code's format), for
	// the MCP client to read (mcp.ParseConfig); nil when the file has none.
	MCPServers json.RawMessage
}

// SandboxSettings is a settings file's "sandbox" member (see package sandbox): the mode
// and network words and additions to the policy.
type SandboxSettings struct {
	// Mode is the file's sandbox.mode as sandbox.ParseMode reads it (auto, on or off);
	// "" when the file has no sandbox.mode key.
	Mode sandbox.Mode
	// Network is the file's sandbox.network word, "on" or "off" (sandbox.ParseNetwork);
	// "" when the file has no sandbox.network key.
	Network string
	// Writable, Readable and Hidden are absolute paths, or "~/" paths under the home
	// directory.
	Writable, Readable, Hidden []string
}

// LoadSettings reads and parses the settings file at path. See ParseSettings.
func LoadSettings(path string) (Settings, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Settings{}, sema.Errorf(CodeSettingsInvalid, "the settings file %s cannot be read: %w", path, err).With("path", path)
	}
	return ParseSettings(data, path)
}

// ParseSettings parses a settings document; name labels it in errors. Every key is
// known or refused by name (config.spec_unknown_key); every rule parses
// (config.rule_invalid); defaultMode is a mode word (config.permission_mode_invalid).
func ParseSettings(data []byte, name string) (Settings, error) {
	var top map[string]json.RawMessage
	if err := strictObject(data, &top); err != nil {
		return Settings{}, sema.Errorf(CodeSettingsInvalid, "the settings file %s is not a JSON object: %v", name, err).With("path", name)
	}
	var out Settings
	for _, k := range sortedKeys(top) {
		if k != "permissions" && k != "sandbox" && k != "mcpServers" {
			return Settings{}, unknownKey(name, k)
		}
	}
	if raw, ok := top["mcpServers"]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		out.MCPServers = raw
	}
	if raw, ok := top["sandbox"]; ok {
		sb, err := parseSandboxSettings(raw, name)
		if err != nil {
			return Settings{}, err
		}
		out.Sandbox = sb
	}
	raw, ok := top["permissions"]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return out, nil
	}
	var perms map[string]json.RawMessage
	if err := strictObject(raw, &perms); err != nil {
		return Settings{}, sema.Errorf(CodeSettingsInvalid, "the \"permissions\" member of %s is not a JSON object: %v", name, err).With("path", name)
	}
	var lists [3][]string
	for _, k := range sortedKeys(perms) {
		v := perms[k]
		switch k {
		case "allow", "deny", "ask":
			var l []string
			if err := json.Unmarshal(v, &l); err != nil {
				return Settings{}, sema.Errorf(CodeSettingsInvalid, "permissions.%s in %s must be a list of rule strings", k, name).With("path", name).With("key", "permissions."+k)
			}
			lists[map[string]int{"allow": 0, "deny": 1, "ask": 2}[k]] = l
		case "defaultMode":
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return Settings{}, sema.Errorf(CodeSettingsInvalid, "permissions.defaultMode in %s must be a string", name).With("path", name).With("key", "permissions.defaultMode")
			}
			if s != "" {
				m, err := ParseMode(s)
				if err != nil {
					return Settings{}, err
				}
				out.DefaultMode = m
			}
		default:
			return Settings{}, unknownKey(name, "permissions."+k)
		}
	}
	rules, err := ParseRules(lists[0], lists[1], lists[2])
	if err != nil {
		return Settings{}, err
	}
	out.Rules = rules
	return out, nil
}

func unknownKey(name, key string) error {
	return sema.Errorf(CodeSpecUnknownKey, "the settings file %s holds the unknown key %q; remove it (known keys: permissions.allow, permissions.deny, permissions.ask, permissions.defaultMode, sandbox.mode, sandbox.network, sandbox.writable, sandbox.readable, sandbox.hidden)", name, key).
		With("path", name).With("key", key)
}

// parseSandboxSettings reads the "sandbox" member: every key known, every word valid,
// every path absolute or under "~/".
func parseSandboxSettings(raw json.RawMessage, name string) (SandboxSettings, error) {
	var out SandboxSettings
	var m map[string]json.RawMessage
	if err := strictObject(raw, &m); err != nil {
		return out, sema.Errorf(CodeSettingsInvalid, "the \"sandbox\" member of %s is not a JSON object: %v", name, err).With("path", name)
	}
	for _, k := range sortedKeys(m) {
		v := m[k]
		bad := func(what string) error {
			return sema.Errorf(CodeSettingsInvalid, "sandbox.%s in %s must be %s", k, name, what).With("path", name).With("key", "sandbox."+k)
		}
		switch k {
		case "mode", "network":
			var w string
			if err := json.Unmarshal(v, &w); err != nil {
				return out, bad("a string")
			}
			if k == "mode" {
				md, err := sandbox.ParseMode(w)
				if err != nil {
					return out, err
				}
				out.Mode = md
			} else {
				if _, err := sandbox.ParseNetwork(w); err != nil {
					return out, err
				}
				out.Network = w
			}
		case "writable", "readable", "hidden":
			var l []string
			if err := json.Unmarshal(v, &l); err != nil {
				return out, bad("a list of paths")
			}
			for _, p := range l {
				if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~/") {
					return out, bad("a list of absolute or \"~/\" paths; " + strconv.Quote(p) + " is neither")
				}
			}
			switch k {
			case "writable":
				out.Writable = l
			case "readable":
				out.Readable = l
			default:
				out.Hidden = l
			}
		default:
			return out, unknownKey(name, "sandbox."+k)
		}
	}
	return out, nil
}

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
