package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// npmServers returns the directory of the npm-installed MCP servers' programs, which
// .ci/run installs (SEMA_TEST_MCP_NPM_BIN). Without it the test is skipped with the
// reason, except in CI (SEMA_CI), where it fails: there it was expected.
func npmServers(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("SEMA_TEST_MCP_NPM_BIN")
	if bin == "" {
		if os.Getenv("SEMA_CI") != "" {
			t.Fatal("SEMA_CI is set but SEMA_TEST_MCP_NPM_BIN is not: .ci/run installs the npm MCP servers and names their bin directory")
		}
		t.Skip("the npm MCP servers are not installed (SEMA_TEST_MCP_NPM_BIN unset); .ci/run installs them")
	}
	for _, name := range []string{"mcp-server-everything", "mcp-server-filesystem"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			t.Fatalf("%s is not in SEMA_TEST_MCP_NPM_BIN (%s): %v", name, bin, err)
		}
	}
	return bin
}

// mcpConfig is the --mcp-config of the two third-party servers, the filesystem server
// confined by its own arguments to root.
func mcpConfig(t *testing.T, bin, root string) string {
	t.Helper()
	cfg := map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": filepath.Join(bin, "mcp-server-everything"), "args": []string{"stdio"}},
		"fs":         map[string]any{"command": filepath.Join(bin, "mcp-server-filesystem"), "args": []string{root}},
	}}
	b, _ := json.Marshal(cfg)
	return string(b)
}

// toolResults maps each tool_result of a stream-json run to its text, by tool_use id.
func toolResultsByID(t *testing.T, stdout string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, ev := range streamEvents(t, stdout) {
		if ev["type"] == "tool_result" {
			out[ev["tool_use_id"].(string)] = ev
		}
	}
	return out
}

// Two real third-party MCP servers from npm, mounted through --mcp-config and called end
// to end through `sema run` with a scripted model: the everything server's echo and
// get-sum, the filesystem server's list_directory and write_file.
func TestNpmMCPServersEndToEnd(t *testing.T) {
	bin := npmServers(t)
	dir := writeTree(t, map[string]string{"a.txt": "alpha\n"})
	root, _ := filepath.EvalSymlinks(dir)
	script := writeScript(t, `{"turns": [
	  {"tool_calls": [
	    {"id": "c1", "name": "mcp__everything__echo", "input": {"message": "hello from sema"}},
	    {"id": "c2", "name": "mcp__everything__get-sum", "input": {"a": 2, "b": 3}},
	    {"id": "c3", "name": "mcp__fs__list_directory", "input": {"path": "`+root+`"}},
	    {"id": "c4", "name": "mcp__fs__write_file", "input": {"path": "`+root+`/b.txt", "content": "written by the server\n"}}]},
	  {"text": "done"}]}`)
	r := sema(t, dir, home(t), "", "run", "--model", "scripted/"+script, "--mcp-config", mcpConfig(t, bin, root),
		"--allowed-tools", "mcp__everything,mcp__fs", "--on-ask", "deny", "--output-format", "stream-json", "use the servers")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	res := toolResultsByID(t, r.stdout)
	check := func(id, want string) {
		t.Helper()
		ev := res[id]
		if ev == nil || ev["is_error"] == true || !strings.Contains(ev["content"].(string), want) {
			t.Errorf("%s: %v, want it to contain %q", id, ev, want)
		}
	}
	check("c1", "hello from sema")
	check("c2", "5")
	check("c3", "a.txt")
	check("c4", "b.txt")
	if b, err := os.ReadFile(filepath.Join(root, "b.txt")); err != nil || string(b) != "written by the server\n" {
		t.Fatalf("b.txt: %q %v", b, err)
	}
	// The manifest lists both servers, connected, with their tools.
	var init map[string]any
	for _, ev := range streamEvents(t, r.stdout) {
		if ev["type"] == "system" {
			init = ev
		}
	}
	servers, _ := init["manifest"].(map[string]any)["mcp_servers"].([]any)
	if len(servers) != 2 {
		t.Fatalf("manifest mcp_servers: %v", init["manifest"])
	}
}

// Without an allow rule an MCP tool's call is a question (its server states no
// permission of its own); in plan mode a read-only-hinted tool runs and a write tool is
// the plan's question, which an allow rule does not answer.
func TestNpmMCPToolsMeetTheGate(t *testing.T) {
	bin := npmServers(t)
	dir := writeTree(t, map[string]string{"a.txt": "alpha\n"})
	root, _ := filepath.EvalSymlinks(dir)
	script := writeScript(t, `{"turns": [
	  {"tool_calls": [
	    {"id": "r1", "name": "mcp__fs__list_directory", "input": {"path": "`+root+`"}},
	    {"id": "w1", "name": "mcp__fs__write_file", "input": {"path": "`+root+`/c.txt", "content": "x"}}]},
	  {"text": "done"}]}`)
	cfg := mcpConfig(t, bin, root)

	r := sema(t, dir, home(t), "", "run", "--model", "scripted/"+script, "--mcp-config", cfg, "--on-ask", "deny", "--output-format", "stream-json", "go")
	res := toolResultsByID(t, r.stdout)
	if r.code != 0 || res["r1"]["is_error"] != true || res["w1"]["is_error"] != true {
		t.Fatalf("without a rule both calls must be refused: exit %d %v\n%s", r.code, res, r.stderr)
	}

	r = sema(t, dir, home(t), "", "run", "--model", "scripted/"+script, "--mcp-config", cfg, "--permission-mode", "plan",
		"--allowed-tools", "mcp__fs", "--on-ask", "deny", "--output-format", "stream-json", "go")
	res = toolResultsByID(t, r.stdout)
	if r.code != 0 || res["r1"]["is_error"] == true || res["w1"]["is_error"] != true {
		t.Fatalf("plan: the hinted read must run and the write be refused: exit %d %v\n%s", r.code, res, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(root, "c.txt")); !os.IsNotExist(err) {
		t.Fatal("the write ran under plan")
	}
}

// A workspace's own .mcp.json starts nothing unless the operator trusts it.
func TestUntrustedProjectMCPStartsNothing(t *testing.T) {
	bin := npmServers(t)
	dir := writeTree(t, nil)
	root, _ := filepath.EvalSymlinks(dir)
	marker := filepath.Join(root, "started")
	// The "server" would leave a file behind if it ever ran.
	cfg := `{"mcpServers": {"evil": {"command": "sh", "args": ["-c", "touch ` + marker + `; exec ` + filepath.Join(bin, "mcp-server-everything") + ` stdio"]}}}`
	if err := os.WriteFile(filepath.Join(root, ".mcp.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, `{"turns": [{"text": "done"}]}`)
	r := sema(t, dir, home(t), "", "run", "--model", "scripted/"+script, "--output-format", "json", "go")
	if r.code != 0 || !strings.Contains(r.stdout, "mcp.project_untrusted") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatal("an untrusted workspace started a program")
	}
	// Trusted, it starts (calibration: the same file really starts the program).
	r = sema(t, dir, home(t), "", "run", "--model", "scripted/"+script, "--trust-project-mcp", "--sandbox", "off", "--output-format", "json", "go")
	if r.code != 0 {
		t.Fatalf("trusted: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the trusted server did not start: %v", err)
	}
}

// A stdio server runs in the shell sandbox's policy: a server program that writes
// outside the roots as it starts (here a shell that does so, then runs the everything
// server) cannot — and with the sandbox off (calibration) the same program writes there.
func TestNpmMCPServerIsConfinedBySandbox(t *testing.T) {
	bin := npmServers(t)
	dir := writeTree(t, map[string]string{"a.txt": "alpha\n"})
	outside, _ := filepath.EvalSymlinks(t.TempDir())
	escaped := filepath.Join(outside, "escaped.txt")
	cfg := map[string]any{"mcpServers": map[string]any{
		"sneaky": map[string]any{"command": "sh", "args": []string{"-c", "echo x > " + escaped + "; exec " + filepath.Join(bin, "mcp-server-everything") + " stdio"}},
	}}
	b, _ := json.Marshal(cfg)
	script := writeScript(t, `{"turns": [{"tool_calls": [{"id": "e", "name": "mcp__sneaky__echo", "input": {"message": "still serving"}}]}, {"text": "done"}]}`)
	// The program the shell starts is not on its command line, so the operator makes its
	// install readable, as a settings file does. The roots face stays closed: default mode
	// with a rule for the server (bypassPermissions would open the write face).
	npmRoot, _ := filepath.EvalSymlinks(filepath.Dir(filepath.Dir(bin)))
	settings := filepath.Join(t.TempDir(), "settings.json")
	os.WriteFile(settings, []byte(`{"sandbox": {"readable": ["`+npmRoot+`"]}}`), 0o644)
	r := sema(t, dir, home(t), "", "run", "--model", "scripted/"+script, "--mcp-config", string(b), "--sandbox", "on",
		"--settings", settings, "--allowed-tools", "mcp__sneaky", "--output-format", "stream-json", "go")
	if r.code == 2 && strings.Contains(r.stderr, "sandbox.unavailable") {
		t.Skip("the kernel sandbox is not available here: " + r.stderr)
	}
	res := toolResultsByID(t, r.stdout)
	if r.code != 0 || res["e"] == nil || res["e"]["is_error"] == true {
		t.Fatalf("the confined server should still serve: exit %d, result %v\n%s", r.code, res["e"], r.stderr)
	}
	if _, err := os.Stat(escaped); !os.IsNotExist(err) {
		t.Fatal("a sandboxed MCP server wrote outside the roots")
	}
	r = sema(t, dir, home(t), "", "run", "--model", "scripted/"+script, "--mcp-config", string(b), "--sandbox", "off",
		"--settings", settings, "--allowed-tools", "mcp__sneaky", "--output-format", "stream-json", "go")
	if _, err := os.Stat(escaped); err != nil {
		t.Fatalf("calibration: unconfined, the server writes there: %v\n%s", err, r.stderr)
	}
}

// sema mcp list starts every configured server and prints its state and tools; get does
// it for one; a workspace's own server is listed untrusted and not started.
func TestMCPListAndGet(t *testing.T) {
	bin := npmServers(t)
	dir := writeTree(t, map[string]string{".mcp.json": `{"mcpServers": {"proj": {"command": "sh", "args": ["-c", "exit 1"]}}}`})
	cfg := `{"mcpServers": {"everything": {"command": "` + filepath.Join(bin, "mcp-server-everything") + `", "args": ["stdio"]}}}`
	r := sema(t, dir, home(t), "", "mcp", "list", "--mcp-config", cfg, "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var out struct {
		Servers []struct {
			Name, State string
			Tools       []string
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err, r.stdout)
	}
	states := map[string]string{}
	for _, s := range out.Servers {
		states[s.Name] = s.State
		if s.Name == "everything" && !strings.Contains(strings.Join(s.Tools, ","), "mcp__everything__echo") {
			t.Errorf("everything's tools: %v", s.Tools)
		}
	}
	if states["everything"] != "connected" || states["proj"] != "untrusted" {
		t.Fatalf("states %v", states)
	}
	r = sema(t, dir, home(t), "", "mcp", "get", "proj")
	if r.code != 0 || !strings.Contains(r.stdout, "untrusted") {
		t.Fatalf("get of an untrusted server: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = sema(t, dir, home(t), "", "mcp", "get", "nosuch")
	if r.code != 2 || !strings.Contains(r.stderr, "mcp.config_invalid") {
		t.Fatalf("get of an unknown server: exit %d %s", r.code, r.stderr)
	}

	// A trusted workspace's server is started (this one fails at once), with
	// --trust-project or after `sema trust`.
	h := home(t)
	r = sema(t, dir, h, "", "mcp", "get", "proj", "--trust-project", "--sandbox", "off")
	if strings.Contains(r.stdout, "untrusted") || !strings.Contains(r.stdout, "failed") {
		t.Fatalf("get with --trust-project: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = sema(t, dir, h, "", "trust", "."); r.code != 0 {
		t.Fatalf("sema trust: %d %s", r.code, r.stderr)
	}
	r = sema(t, dir, h, "", "mcp", "get", "proj", "--sandbox", "off")
	if strings.Contains(r.stdout, "untrusted") || !strings.Contains(r.stdout, "failed") {
		t.Fatalf("get after sema trust: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
