package mcp

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sema-agent/sema"
)

func TestParseConfigAccepts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		data string
		want []Server
	}{
		{name: "no mcpServers key", data: `{"permissions": {"allow": []}}`, want: nil},
		{name: "empty", data: `{"mcpServers": {}}`, want: []Server{}},
		{
			name: "stdio without type, other top-level keys ignored",
			data: `{"theme": "dark", "mcpServers": {"files": {"command": "npx", "args": ["-y", "srv"], "env": {"A": "1"}}}}`,
			want: []Server{{Name: "files", Type: TypeStdio, Command: "npx", Args: []string{"-y", "srv"}, Env: map[string]string{"A": "1"}, Source: "src"}},
		},
		{
			name: "every key, sorted by name",
			data: `{"mcpServers": {
				"z-remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}, "required": true, "startTimeoutMs": 1500, "callTimeoutMs": 0},
				"a_local": {"type": "stdio", "command": "./srv", "required": false, "callTimeoutMs": 250},
				"m": {"type": "sse", "url": "http://localhost:1/sse"}}}`,
			want: []Server{
				{Name: "a_local", Type: TypeStdio, Command: "./srv", CallTimeout: 250 * time.Millisecond, Source: "src"},
				{Name: "m", Type: TypeSSE, URL: "http://localhost:1/sse", Source: "src"},
				{Name: "z-remote", Type: TypeHTTP, URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"},
					Required: true, StartTimeout: 1500 * time.Millisecond, Source: "src"},
			},
		},
		{
			name: "a url with a variable is checked after expansion",
			data: `{"mcpServers": {"r": {"type": "http", "url": "${BASE}/mcp"}}}`,
			want: []Server{{Name: "r", Type: TypeHTTP, URL: "${BASE}/mcp", Source: "src"}},
		},
		{
			name: "timeout written as 2000.0 is a whole number",
			data: `{"mcpServers": {"s": {"command": "x", "startTimeoutMs": 2e3}}}`,
			want: []Server{{Name: "s", Type: TypeStdio, Command: "x", StartTimeout: 2 * time.Second, Source: "src"}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseConfig([]byte(c.data), "src")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Fatalf("servers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseConfigRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		data string
		says string // a fragment of the message, besides the source
	}{
		{name: "not JSON", data: `{"mcpServers": `, says: "not a JSON object"},
		{name: "not an object", data: `["mcpServers"]`, says: "not a JSON object"},
		{name: "trailing data", data: `{} {}`, says: "not a JSON object"},
		{name: "mcpServers twice", data: `{"mcpServers": {}, "mcpServers": {}}`, says: "twice"},
		{name: "mcpServers null", data: `{"mcpServers": null}`, says: "not an object of servers"},
		{name: "mcpServers array", data: `{"mcpServers": []}`, says: "not an object of servers"},
		{name: "server twice", data: `{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`, says: "declared twice"},
		{name: "entry not an object", data: `{"mcpServers": {"a": "npx srv"}}`, says: "is not a JSON object"},
		{name: "unknown key", data: `{"mcpServers": {"a": {"command": "x", "cwd": "/tmp"}}}`, says: `unknown key "cwd"`},
		{name: "key twice", data: `{"mcpServers": {"a": {"command": "x", "command": "y"}}}`, says: `key "command" twice`},
		{name: "neither command nor url", data: `{"mcpServers": {"a": {"args": ["x"]}}}`, says: "neither"},
		{name: "url without type", data: `{"mcpServers": {"a": {"url": "https://x/mcp"}}}`, says: "no type"},
		{name: "empty type", data: `{"mcpServers": {"a": {"type": "", "command": "x"}}}`, says: "empty type"},
		{name: "unknown type", data: `{"mcpServers": {"a": {"type": "ws", "url": "ws://x"}}}`, says: `type "ws"`},
		{name: "stdio without command", data: `{"mcpServers": {"a": {"type": "stdio", "args": []}}}`, says: "without a command"},
		{name: "stdio with url", data: `{"mcpServers": {"a": {"type": "stdio", "command": "x", "url": "https://x"}}}`, says: "url or headers"},
		{name: "http without url", data: `{"mcpServers": {"a": {"type": "http"}}}`, says: "without a url"},
		{name: "sse with command", data: `{"mcpServers": {"a": {"type": "sse", "url": "https://x", "command": "x"}}}`, says: "command, args or env"},
		{name: "relative url", data: `{"mcpServers": {"a": {"type": "http", "url": "/mcp"}}}`, says: "not an absolute"},
		{name: "ftp url", data: `{"mcpServers": {"a": {"type": "sse", "url": "ftp://x/y"}}}`, says: "not an absolute"},
		{name: "bad header name", data: `{"mcpServers": {"a": {"type": "http", "url": "https://x", "headers": {"X Bad": "1"}}}}`, says: "header name"},
		{name: "name with a dot", data: `{"mcpServers": {"a.b": {"command": "x"}}}`, says: "name other than"},
		{name: "name with a space", data: `{"mcpServers": {"my server": {"command": "x"}}}`, says: "name other than"},
		{name: "empty name", data: `{"mcpServers": {"": {"command": "x"}}}`, says: "name other than"},
		{name: "name too long", data: `{"mcpServers": {"` + strings.Repeat("n", 65) + `": {"command": "x"}}}`, says: "name other than"},
		{name: "negative timeout", data: `{"mcpServers": {"a": {"command": "x", "callTimeoutMs": -1}}}`, says: "negative"},
		{name: "fractional timeout", data: `{"mcpServers": {"a": {"command": "x", "startTimeoutMs": 1.5}}}`, says: "whole number"},
		{name: "timeout as a string", data: `{"mcpServers": {"a": {"command": "x", "startTimeoutMs": "1000"}}}`, says: "not a number"},
		{name: "timeout over a day", data: `{"mcpServers": {"a": {"command": "x", "callTimeoutMs": 86400001}}}`, says: "over a day"},
		{name: "args not strings", data: `{"mcpServers": {"a": {"command": "x", "args": [1]}}}`, says: "array of strings"},
		{name: "env value a number", data: `{"mcpServers": {"a": {"command": "x", "env": {"N": 1}}}}`, says: "string values"},
		{name: "command null", data: `{"mcpServers": {"a": {"command": null}}}`, says: `"command" set to null`},
		{name: "required a string", data: `{"mcpServers": {"a": {"command": "x", "required": "yes"}}}`, says: "true or false"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseConfig([]byte(c.data), "/work/.mcp.json")
			if err == nil {
				t.Fatalf("accepted: %+v", got)
			}
			if sema.CodeOf(err) != CodeConfigInvalid {
				t.Fatalf("code %q, want %s: %v", sema.CodeOf(err), CodeConfigInvalid, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, "/work/.mcp.json") || !strings.Contains(msg, c.says) {
				t.Fatalf("message %q does not name the source and say %q", msg, c.says)
			}
		})
	}
}

// A refusal names the server, so a person knows which entry of the file to fix.
func TestParseConfigNamesTheServer(t *testing.T) {
	t.Parallel()
	_, err := ParseConfig([]byte(`{"mcpServers": {"good": {"command": "x"}, "broken": {"command": "x", "bogus": 1}}}`), "settings.json")
	var se *sema.Error
	if !errorsAs(err, &se) || se.Detail["server"] != "broken" || !strings.Contains(se.Message, `"broken"`) {
		t.Fatalf("err = %v, want one naming the server broken", err)
	}
}

func TestExpand(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"HOME": "/home/u", "EMPTY": "", "TOKEN": "s3cr3t", "_X1": "x"}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	cases := []struct {
		in, want string
	}{
		{"plain", "plain"},
		{"${HOME}/bin", "/home/u/bin"},
		{"a${_X1}b${_X1}c", "axbxc"},
		{"${EMPTY}", ""},
		{"${EMPTY:-fallback}", ""}, // set, even empty, wins over the default (Claude Code's reading)
		{"${UNSET:-fallback}", "fallback"},
		{"${UNSET:-}", ""},
		{"${UNSET:-a:-b}", "a:-b"},
		{"${UNSET:-${HOME}", "${HOME"}, // the default ends at the first '}' and is not expanded
		{"$HOME", "$HOME"},
		{"$$", "$$"},
		{"cost: 5$", "cost: 5$"},
		{"$${HOME}", "$/home/u"},
		{"$", "$"},
		{"{HOME}", "{HOME}"},
	}
	for _, c := range cases {
		s := Server{Name: "s", Command: c.in}
		got, err := s.Expand(lookup)
		if err != nil {
			t.Errorf("Expand(%q): %v", c.in, err)
			continue
		}
		if got.Command != c.want {
			t.Errorf("Expand(%q) = %q, want %q", c.in, got.Command, c.want)
		}
	}
}

// Every field that may hold a reference is expanded; names and keys are not, and the
// original is left as it was.
func TestExpandFields(t *testing.T) {
	t.Parallel()
	lookup := func(k string) (string, bool) { return "<" + k + ">", true }
	s := Server{
		Name: "s", Type: TypeHTTP, Command: "${C}", Args: []string{"${A}", "x"}, Env: map[string]string{"${K}": "${V}"},
		URL: "https://${HOST}/mcp", Headers: map[string]string{"X-${H}": "Bearer ${T}"},
	}
	got, err := s.Expand(lookup)
	if err != nil {
		t.Fatal(err)
	}
	want := Server{
		Name: "s", Type: TypeHTTP, Command: "<C>", Args: []string{"<A>", "x"}, Env: map[string]string{"${K}": "<V>"},
		URL: "https://<HOST>/mcp", Headers: map[string]string{"X-${H}": "Bearer <T>"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if s.Args[0] != "${A}" || s.Env["${K}"] != "${V}" || s.Headers["X-${H}"] != "Bearer ${T}" {
		t.Fatal("Expand changed the server it was called on")
	}
}

func TestExpandRefuses(t *testing.T) {
	t.Parallel()
	lookup := func(k string) (string, bool) { return "", k == "SET" }
	cases := []struct {
		server Server
		says   []string
	}{
		{Server{Name: "s", Command: "${MISSING}"}, []string{"${MISSING}", "not set"}},
		{Server{Name: "s", Command: "x", Args: []string{"${B}", "${A}", "${B}"}}, []string{"${A}, ${B}", "are not set"}},
		{Server{Name: "s", Type: TypeHTTP, URL: "https://x", Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}}, []string{"${TOKEN}"}},
		{Server{Name: "s", Command: "${SET"}, []string{"without a closing"}},
		{Server{Name: "s", Command: "${}"}, []string{"${}"}},
		{Server{Name: "s", Command: "${1X}"}, []string{"${1X}"}},
		{Server{Name: "s", Command: "${A-b}"}, []string{"${A-b}"}},
		{Server{Name: "s", Command: "${A:=b}"}, []string{"${A:=b}"}},
		{Server{Name: "s", Command: "${ SET }"}, []string{"${ SET }"}},
		{Server{Name: "s", Env: map[string]string{"K": "${X"}}, []string{`env["K"]`}},
	}
	for _, c := range cases {
		_, err := c.server.Expand(lookup)
		if sema.CodeOf(err) != CodeConfigInvalid {
			t.Errorf("%+v: err = %v, want %s", c.server, err, CodeConfigInvalid)
			continue
		}
		for _, frag := range append(c.says, `"s"`) {
			if !strings.Contains(err.Error(), frag) {
				t.Errorf("%+v: message %q lacks %q", c.server, err, frag)
			}
		}
	}
}

// The unset variables are listed in the detail, sorted, each once.
func TestExpandListsUnsetVariables(t *testing.T) {
	t.Parallel()
	_, err := Server{Name: "s", Command: "${Z} ${A} ${Z}"}.Expand(func(string) (string, bool) { return "", false })
	var se *sema.Error
	if !errorsAs(err, &se) {
		t.Fatalf("err = %v", err)
	}
	if diff := cmp.Diff([]string{"A", "Z"}, se.Detail["variables"]); diff != "" {
		t.Fatalf("variables (-want +got):\n%s", diff)
	}
}

func FuzzExpand(f *testing.F) {
	for _, s := range []string{"", "${A}", "${A:-d}", "$$", "$", "${", "}", "${A:-${B}}", "x${A}y${B:-}z", "${é}", "${A:-\x00}"} {
		f.Add(s)
	}
	lookup := func(k string) (string, bool) {
		switch k {
		case "A":
			return "va", true
		case "B":
			return "", true
		}
		return "", false
	}
	f.Fuzz(func(t *testing.T, in string) {
		s := Server{Name: "fz", Command: in, Args: []string{in}, URL: in}
		got, err := s.Expand(lookup)
		if err != nil {
			if sema.CodeOf(err) != CodeConfigInvalid || !strings.Contains(err.Error(), `"fz"`) {
				t.Fatalf("Expand(%q): uncoded or unnamed error %v", in, err)
			}
			if !strings.Contains(in, "${") {
				t.Fatalf("Expand(%q) refused text without a reference: %v", in, err)
			}
			return
		}
		if !strings.Contains(in, "${") && got.Command != in {
			t.Fatalf("Expand(%q) = %q, changed text without a reference", in, got.Command)
		}
		if got.Command != got.Args[0] || got.Command != got.URL {
			t.Fatalf("Expand(%q) expanded the same text differently: %q %q %q", in, got.Command, got.Args[0], got.URL)
		}
		// Only references change: the text before the first one is kept as written.
		if i := strings.Index(in, "${"); i >= 0 && !strings.HasPrefix(got.Command, in[:i]) {
			t.Fatalf("Expand(%q) = %q, changed the text before the first reference", in, got.Command)
		}
	})
}

func TestToolName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("t", 80)
	cases := []struct {
		server, tool, want string
	}{
		{"github", "create_issue", "mcp__github__create_issue"},
		{"x", "Write", "mcp__x__Write"},
		{"x", "Bash", "mcp__x__Bash"},
		{"my-srv", "get.thing", "mcp__my-srv__get_thing"},
		{"s", "a b/c", "mcp__s__a_b_c"},
		{"s", "é", "mcp__s___"},                                              // one UTF-16 code unit
		{"s", "😀", "mcp__s____"},                                             // two
		{"s", "\xff", "mcp__s___"},                                           // invalid UTF-8: one per byte
		{"s", strings.Repeat("a", 55), "mcp__s__" + strings.Repeat("a", 55)}, // 63 bytes
		{"s", strings.Repeat("a", 56), "mcp__s__" + strings.Repeat("a", 56)}, // 64 bytes, not cut
	}
	for _, c := range cases {
		if got := ToolName(c.server, c.tool); got != c.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", c.server, c.tool, got, c.want)
		}
	}
	cut := ToolName("s", long)
	if len(cut) != MaxToolNameLen || !strings.HasPrefix(cut, "mcp__s__"+strings.Repeat("t", 47)+"_") {
		t.Fatalf("ToolName of a long name = %q (%d bytes)", cut, len(cut))
	}
	if ToolName("s", long) != cut {
		t.Fatal("ToolName is not stable")
	}
}

// Names that share their first 55 bytes stay apart once cut, and every name fits the
// providers' pattern.
func TestToolNameCutNamesStayUnique(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	prefix := strings.Repeat("x", 60)
	for i := range 1000 {
		tool := prefix + string(rune('a'+i%26)) + strings.Repeat("y", i/26)
		name := ToolName("server", tool)
		if other, dup := seen[name]; dup {
			t.Fatalf("%q and %q both became %q", other, tool, name)
		}
		seen[name] = tool
		if len(name) > MaxToolNameLen || !providerName.MatchString(name) {
			t.Fatalf("%q does not fit the providers' pattern", name)
		}
	}
}

func FuzzToolName(f *testing.F) {
	for _, s := range []string{"", "a", "a.b", "😀", strings.Repeat("z", 100)} {
		f.Add("srv", s)
	}
	f.Fuzz(func(t *testing.T, server, tool string) {
		name := ToolName(server, tool)
		if len(name) > MaxToolNameLen || !providerName.MatchString(name) {
			t.Fatalf("ToolName(%q, %q) = %q does not fit the providers' pattern", server, tool, name)
		}
		if !strings.HasPrefix(name, "mcp__") {
			t.Fatalf("ToolName(%q, %q) = %q lacks the mcp__ prefix", server, tool, name)
		}
	})
}
