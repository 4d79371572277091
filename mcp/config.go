package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sema-agent/sema"
)

// CodeConfigInvalid refuses an MCP server configuration the mount would have to guess
// about: a file that is not JSON, an unknown key in a server entry, a server with no way
// to reach it, a transport type that does not fit, a bad name, a bad timeout, an unset
// variable. The message names where the server was declared, the server, and what to
// change.
const CodeConfigInvalid = "mcp.config_invalid"

// The transport types a Server may name.
const (
	TypeStdio = "stdio" // a program started by the mount, spoken to over its stdin and stdout
	TypeHTTP  = "http"  // the streamable HTTP transport
	TypeSSE   = "sse"   // the older HTTP transport of server-sent events
)

// Server is one configured MCP server, in Claude Code's mcpServers format: the value of
// one key of a file's "mcpServers" object, with the key as Name. The zero values of the
// optional fields are the defaults written beside them.
type Server struct {
	// Name is the key in mcpServers. It is spelled verbatim in tool names
	// (mcp__NAME__tool) and in permission rules (mcp__NAME), so it must match
	// ^[A-Za-z0-9_-]{1,64}$.
	Name string
	// Type is the transport: TypeStdio, TypeHTTP or TypeSSE. ParseConfig always sets
	// it: an entry that omits "type" and has a command is TypeStdio. Start reads an
	// empty Type with a Command as TypeStdio too.
	Type string
	// Command is the program a stdio server runs; it is looked up in the PATH of the
	// environment the server gets when it contains no slash.
	Command string
	// Args are the program's arguments, after Command.
	Args []string
	// Env holds variables set for a stdio server on top of Options.Env.
	Env map[string]string
	// URL is the endpoint of an http or sse server: an absolute http:// or https://
	// URL once expanded.
	URL string
	// Headers are sent with every request to an http or sse server. They never replace
	// a header the protocol itself sets (Accept, Content-Type, Mcp-Session-Id, …).
	Headers map[string]string
	// Required makes a server that fails to start refuse the run (key "required"),
	// instead of being announced and left out.
	Required bool
	// StartTimeout bounds the server's start: process start or connection, the
	// protocol's handshake and the first listing of its tools (key "startTimeoutMs",
	// an integer of milliseconds). Zero: Options.StartTimeout.
	StartTimeout time.Duration
	// CallTimeout bounds each call of one of the server's tools (key
	// "callTimeoutMs", an integer of milliseconds). Zero: Options.CallTimeout.
	CallTimeout time.Duration
	// Source is where the server was declared: a file path, "deployment", "task",
	// "--mcp-config". Messages name it so a person knows which file to fix.
	Source string
	// Project marks a server the workspace itself declared (its .mcp.json, the
	// settings of its root): the runner starts it only when the workspace is trusted.
	// ParseConfig leaves it false; the caller who knows the file sets it.
	Project bool
}

// maxTimeout bounds the timeouts a configuration may state. A day is beyond any
// sensible start or call, and the bound keeps milliseconds far from overflowing a
// time.Duration.
const maxTimeout = 24 * time.Hour

// validServerName is the rule for a server's name: the rule Claude Code's `claude mcp
// add` enforces ("Names can only contain letters, numbers, hyphens, and underscores"),
// with a length cap: 1 to 64 of them. Claude Code loads other names from a hand-written
// .mcp.json and rewrites every other character to '_' when it builds tool names; we refuse
// them instead, because the name is spelled verbatim in permission rules (mcp__NAME) and
// a rewritten name would make "a.b" and "a_b" the same server to a rule. 64 is the
// providers' limit on a whole tool name, so no longer server name can ever be spelled in
// one. Checked by hand: the regular expression that says the same compiles its bounded
// repeat into 64 states, a cost every leg with a server paid.
func validServerName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// headerNameRE is an HTTP header field name (RFC 9110's token), which net/http would
// otherwise refuse only when the first request is sent.
var headerNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$") })

// serverKeys are the keys a server entry may hold. Claude Code's other keys
// (headersHelper, oauth, the IDE transports) are refused by name rather than ignored:
// a server configured with one of them would not be reached the way its author meant.
var serverKeys = []string{"type", "command", "args", "env", "url", "headers", "required", "startTimeoutMs", "callTimeoutMs"}

// ParseConfig reads the MCP servers of one configuration file: the "mcpServers" object
// of data, {"mcpServers": {NAME: {type?, command, args, env, url, headers, required?,
// startTimeoutMs?, callTimeoutMs?}}}, each server tagged with source and returned
// sorted by name. Other top-level keys are ignored, since settings files carry many; a
// file without "mcpServers" declares no server.
//
// It refuses, with a *sema.Error of code CodeConfigInvalid whose message names source,
// the server and what to change: data that is not one JSON object; "mcpServers" that
// is not an object, or appears twice; a server entry that is not an object, holds an
// unknown or repeated key, or a value of the wrong JSON type; a server named twice or
// against ^[A-Za-z0-9_-]{1,64}$; a server with neither command nor url; a type that
// does not fit (stdio without command or with a url, http or sse without url or with a
// command, args or env, a type other than stdio, http, sse); an entry without "type"
// that has a url (the transport is never guessed); a url that is not an absolute http
// or https URL (checked here only when it holds no ${…}, which Expand resolves first);
// a header name that is not an HTTP token; a negative, fractional or over-a-day
// timeout.
func ParseConfig(data []byte, source string) ([]Server, error) {
	top, err := objectMembers(data)
	if err != nil {
		return nil, sema.Errorf(CodeConfigInvalid, "the MCP configuration %s is not a JSON object (%v); write {\"mcpServers\": {…}}", source, err).With("source", source)
	}
	var servers json.RawMessage
	seen := false
	for _, m := range top {
		if m.key != "mcpServers" {
			continue
		}
		if seen {
			return nil, sema.Errorf(CodeConfigInvalid, "the MCP configuration %s has the key \"mcpServers\" twice; merge them into one", source).With("source", source)
		}
		seen, servers = true, m.value
	}
	if !seen {
		return nil, nil
	}
	entries, err := objectMembers(servers)
	if err != nil {
		return nil, sema.Errorf(CodeConfigInvalid, "in the MCP configuration %s, \"mcpServers\" is not an object of servers (%v); write {\"mcpServers\": {\"name\": {…}}}", source, err).With("source", source)
	}
	out := make([]Server, 0, len(entries))
	names := make(map[string]bool, len(entries))
	for _, e := range entries {
		if names[e.key] {
			return nil, configError(source, e.key, "is declared twice in \"mcpServers\"; keep one entry")
		}
		names[e.key] = true
		s, err := parseServer(e.key, e.value, source)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Server) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// parseServer reads one server entry.
func parseServer(name string, raw json.RawMessage, source string) (Server, error) {
	s := Server{Name: name, Source: source}
	if !validServerName(name) {
		return Server{}, configError(source, name, "has a name other than letters, digits, '-' and '_' (at most 64); rename it, since the name is spelled in tool names and permission rules as written")
	}
	members, err := objectMembers(raw)
	if err != nil {
		return Server{}, configError(source, name, fmt.Sprintf("is not a JSON object (%v); write {\"command\": …} or {\"type\": \"http\", \"url\": …}", err))
	}
	has := make(map[string]bool, len(members))
	for _, m := range members {
		if has[m.key] {
			return Server{}, configError(source, name, fmt.Sprintf("has the key %q twice; keep one", m.key))
		}
		has[m.key] = true
		if !slices.Contains(serverKeys, m.key) {
			return Server{}, configError(source, name, fmt.Sprintf("has the unknown key %q; the keys a server may hold are %s", m.key, strings.Join(serverKeys, ", ")))
		}
		if err := s.setField(m.key, m.value); err != nil {
			return Server{}, configError(source, name, err.Error())
		}
	}
	if err := s.checkShape(has); err != nil {
		return Server{}, configError(source, name, err.Error())
	}
	return s, nil
}

// setField decodes the value of one key of a server entry into s. Its error is the
// end of a sentence about the server.
func (s *Server) setField(key string, raw json.RawMessage) error {
	var err error
	switch key {
	case "type":
		err = decodeAs(raw, &s.Type, "a string")
	case "command":
		err = decodeAs(raw, &s.Command, "a string")
	case "url":
		err = decodeAs(raw, &s.URL, "a string")
	case "args":
		err = decodeAs(raw, &s.Args, "an array of strings")
	case "env":
		err = decodeAs(raw, &s.Env, "an object of string values")
	case "headers":
		err = decodeAs(raw, &s.Headers, "an object of string values")
	case "required":
		err = decodeAs(raw, &s.Required, "true or false")
	case "startTimeoutMs":
		s.StartTimeout, err = decodeMillis(raw)
	case "callTimeoutMs":
		s.CallTimeout, err = decodeMillis(raw)
	}
	if err != nil {
		return fmt.Errorf("has %q %w", key, err)
	}
	return nil
}

// decodeAs decodes raw into v, which must be of the JSON type want names. A null is
// refused like any other wrong type: it would otherwise read as the empty value.
func decodeAs(raw json.RawMessage, v any, want string) error {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) || json.Unmarshal(raw, v) != nil {
		return fmt.Errorf("set to %s, which is not %s; write it as %s", clip(string(raw), 40), want, want)
	}
	return nil
}

// decodeMillis reads a timeout of whole milliseconds: a JSON number with an integral
// value (2000, 2000.0 and 2e3 alike), never a string.
func decodeMillis(raw json.RawMessage) (time.Duration, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	err := dec.Decode(&v)
	n, isNumber := v.(json.Number)
	if err != nil || !isNumber {
		return 0, fmt.Errorf("set to %s, which is not a number of milliseconds; write an integer such as 30000", clip(string(raw), 40))
	}
	f, err := n.Float64()
	switch {
	case err != nil || f != math.Trunc(f):
		return 0, fmt.Errorf("set to %s, which is not a whole number of milliseconds; write an integer such as 30000", n)
	case f < 0:
		return 0, fmt.Errorf("set to %s; a timeout cannot be negative (0 takes the default)", n)
	case f > float64(maxTimeout.Milliseconds()):
		return 0, fmt.Errorf("set to %s, over a day; write at most %d", n, maxTimeout.Milliseconds())
	}
	return time.Duration(f) * time.Millisecond, nil
}

// checkShape refuses a server whose keys do not make one transport, and sets the
// stdio type an entry with a command may leave out. has lists the keys the entry held.
// Its error is the end of a sentence about the server.
func (s *Server) checkShape(has map[string]bool) error {
	switch s.Type {
	case "":
		if !has["type"] {
			if s.Command == "" && s.URL == "" {
				return errors.New("has neither \"command\" nor \"url\"; give a command to run, or a type and a url")
			}
			if s.URL != "" {
				return errors.New("has a url but no type; add \"type\": \"http\" (streamable HTTP) or \"type\": \"sse\"")
			}
			s.Type = TypeStdio
			return s.checkStdio(has)
		}
		return errors.New("has an empty type; write \"stdio\", \"http\" or \"sse\"")
	case TypeStdio:
		return s.checkStdio(has)
	case TypeHTTP, TypeSSE:
		return s.checkRemote(has)
	}
	return fmt.Errorf("has the type %q; write \"stdio\", \"http\" (streamable HTTP) or \"sse\"", clip(s.Type, 40))
}

// checkStdio refuses a stdio server that cannot be started or that names remote keys.
func (s *Server) checkStdio(has map[string]bool) error {
	switch {
	case s.Command == "":
		return errors.New("is a stdio server without a command; set \"command\" to the program to run")
	case has["url"], has["headers"]:
		return errors.New("is a stdio server with a url or headers, which only http and sse servers use; remove them or set the type")
	}
	return nil
}

// checkRemote refuses an http or sse server without a usable URL or with stdio keys.
func (s *Server) checkRemote(has map[string]bool) error {
	switch {
	case s.URL == "":
		return fmt.Errorf("is an %s server without a url; set \"url\" to its endpoint", s.Type)
	case has["command"], has["args"], has["env"]:
		return fmt.Errorf("is an %s server with a command, args or env, which only stdio servers use; remove them or set the type to \"stdio\"", s.Type)
	}
	if !strings.Contains(s.URL, "$") {
		if err := checkURL(s.URL); err != nil {
			return err
		}
	}
	for k := range s.Headers {
		if !headerNameRE().MatchString(k) {
			return fmt.Errorf("has the header name %q, which is not an HTTP header name; use letters, digits and '-'", clip(k, 40))
		}
	}
	return nil
}

// checkURL refuses an endpoint the HTTP transports cannot use. Its error is the end of
// a sentence about the server.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("has the url %q, which is not an absolute http:// or https:// URL; write the full endpoint", clip(raw, 80))
	}
	return nil
}

// validate is the check Start makes on a server it is given, which may not come from
// ParseConfig: the same shape rules, applied to a Server value, and the rules that
// only expanded values can meet (a URL, header values without line breaks).
func (s Server) validate() error {
	name := s.Name
	if !validServerName(name) {
		return configError(s.Source, name, "has a name other than letters, digits, '-' and '_' (at most 64); rename it")
	}
	has := map[string]bool{
		"type": s.Type != "", "command": s.Command != "", "args": len(s.Args) > 0, "env": len(s.Env) > 0,
		"url": s.URL != "", "headers": len(s.Headers) > 0,
	}
	c := s
	if c.Type == "" && c.Command != "" {
		c.Type = TypeStdio
	}
	if err := c.checkShape(has); err != nil {
		return configError(s.Source, name, err.Error())
	}
	if c.Type != TypeStdio {
		if err := checkURL(c.URL); err != nil {
			return configError(s.Source, name, err.Error())
		}
		for k, v := range c.Headers {
			if strings.ContainsAny(v, "\r\n\x00") {
				return configError(s.Source, name, fmt.Sprintf("has a line break or NUL in the value of the header %q; remove it", k))
			}
		}
	}
	switch {
	case s.StartTimeout < 0 || s.CallTimeout < 0:
		return configError(s.Source, name, "has a negative timeout; a timeout cannot be negative (0 takes the default)")
	case s.StartTimeout > maxTimeout || s.CallTimeout > maxTimeout:
		return configError(s.Source, name, "has a timeout over a day; shorten it")
	}
	return nil
}

// configError is the CodeConfigInvalid refusal of one server: "in SOURCE, the MCP
// server NAME " + what.
func configError(source, name, what string) *sema.Error {
	where := source
	if where == "" {
		where = "an unnamed source"
	}
	return sema.Errorf(CodeConfigInvalid, "in %s, the MCP server %q %s", where, name, what).With("source", source).With("server", name)
}

// member is one key and value of a JSON object, in the order written.
type member struct {
	key   string
	value json.RawMessage
}

// objectMembers splits a JSON object into its members, keeping their order and
// repeated keys (encoding/json would keep only the last of a repeated key, hiding a
// mistake). Anything but exactly one object is an error.
func objectMembers(data []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("found %s instead of an object", describeToken(tok))
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("found %s instead of a key", describeToken(tok))
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, member{key: key, value: v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("found more after the object")
	}
	return out, nil
}

// describeToken names a JSON token for a message.
func describeToken(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		return fmt.Sprintf("%q", v.String())
	case string:
		return fmt.Sprintf("the string %q", clip(v, 40))
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}

// clip cuts s to at most n bytes at a rune boundary, marking the cut, for quoting
// input in a message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// utf8RuneStart reports whether b starts a UTF-8 sequence (is not a continuation
// byte).
func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
