package settings

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/hooks"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/sandbox"
)

func mustParse(t *testing.T, doc, path string, layer Layer) File {
	t.Helper()
	f, err := Parse([]byte(doc), path, layer)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// withHook gives f one hook of its own, so that which layers' hooks apply shows.
func withHook(f File, cmd string) File {
	f.Hooks = []hooks.Hook{{Event: hooks.Stop, Command: cmd, Source: f.Path}}
	return f
}

func hookCommands(m Merged) []string {
	var out []string
	for _, h := range m.Hooks {
		out = append(out, h.Command)
	}
	return out
}

// TestMergePrecedence: the highest layer naming a word wins; rules, directories and the
// environment's names add up, a higher layer's value winning.
func TestMergePrecedence(t *testing.T) {
	t.Parallel()
	user := mustParse(t, `{"permissions":{"allow":["Read"],"defaultMode":"plan","additionalDirectories":["~/shared"]},"env":{"A":"user","B":"user"},"model":"m-user"}`, "/u.json", User)
	proj := mustParse(t, `{"permissions":{"deny":["Bash(rm *)"],"defaultMode":"acceptEdits","additionalDirectories":["../sibling"]},"env":{"B":"project"}}`, "/r/.sema/settings.json", Project)
	local := mustParse(t, `{"model":"m-local","sandbox":{"mode":"off"}}`, "/r/.sema/settings.local.json", Local)
	flag := mustParse(t, `{"permissions":{"ask":["Write"]},"env":{"C":"flag"}}`, "", Flag)
	m := Merge([]File{user, proj, local, flag}, MergeOptions{Root: "/r", Home: "/home/u", TrustWorkspace: true})
	if m.DefaultMode != permission.ModeAcceptEdits {
		t.Errorf("mode %q: the project's must beat the user's", m.DefaultMode)
	}
	if m.Model != "m-local" {
		t.Errorf("model %q", m.Model)
	}
	if diff := cmp.Diff([]string{"A=user", "B=project", "C=flag"}, m.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/home/u/shared", "/sibling"}, m.AdditionalDirectories); diff != "" {
		t.Errorf("directories (-want +got):\n%s", diff)
	}
	if len(m.Rules.Allow) != 1 || len(m.Rules.Deny) != 1 || len(m.Rules.Ask) != 1 {
		t.Errorf("rules %+v", m.Rules)
	}
	if m.Sandbox.Mode != sandbox.ModeOff {
		t.Errorf("sandbox %q", m.Sandbox.Mode)
	}
	for _, a := range m.Applied {
		if !a.Trusted || len(a.Dropped) > 0 {
			t.Errorf("trusted workspace, yet %+v", a)
		}
	}
}

// TestMergeUntrustedWorkspace: a workspace the operator does not trust applies only
// what tightens, and the manifest's entry names the rest.
func TestMergeUntrustedWorkspace(t *testing.T) {
	t.Parallel()
	proj := withHook(mustParse(t, `{"permissions":{"allow":["Bash"],"deny":["Read(.env)"],"ask":["Write"],"defaultMode":"bypassPermissions","additionalDirectories":["/"]},
		"env":{"LD_PRELOAD":"/tmp/x.so"},"model":"expensive","disableAllHooks":true,
		"sandbox":{"mode":"off","network":"on","writable":["/etc"],"hidden":["~/.aws"]}}`, "/r/.sema/settings.json", Project), "evil")
	local := mustParse(t, `{"sandbox":{"mode":"on","network":"off"}}`, "/r/.sema/settings.local.json", Local)
	user := withHook(mustParse(t, `{}`, "/u.json", User), "user-guard")
	m := Merge([]File{user, proj, local}, MergeOptions{Root: "/r"})
	if len(m.Rules.Allow) != 0 || len(m.Rules.Deny) != 1 || len(m.Rules.Ask) != 1 {
		t.Errorf("rules %+v: deny and ask apply, allow does not", m.Rules)
	}
	if m.DefaultMode != "" || m.Model != "" || len(m.Env) != 0 || len(m.AdditionalDirectories) != 0 {
		t.Errorf("grants applied: %+v", m)
	}
	if diff := cmp.Diff([]string{"user-guard"}, hookCommands(m)); diff != "" {
		t.Errorf("hooks (-want +got): the workspace's neither run nor disable the user's:\n%s", diff)
	}
	if m.Sandbox.Mode != sandbox.ModeOn || m.Sandbox.Network != "off" || len(m.Sandbox.Writable) != 0 || !slices.Equal(m.Sandbox.Hidden, []string{"~/.aws"}) {
		t.Errorf("sandbox %+v: only what tightens applies", m.Sandbox)
	}
	a := m.Applied[1]
	if a.Trusted || !strings.Contains(a.Why, "--trust-project") {
		t.Fatalf("applied %+v", a)
	}
	for _, want := range []string{"permissions.allow", "permissions.defaultMode", "permissions.additionalDirectories", "hooks", "env", "model", "disableAllHooks", "sandbox.mode", "sandbox.network"} {
		if !slices.Contains(a.Dropped, want) {
			t.Errorf("dropped %v lacks %s", a.Dropped, want)
		}
	}
}

// TestMergeHookSwitches: disableAllHooks turns off its layer and those below, never the
// managed policy's; the managed policy's allowManagedHooksOnly and disableAllHooks hold
// over every layer.
func TestMergeHookSwitches(t *testing.T) {
	t.Parallel()
	user := func() File { return withHook(File{Path: "/u", Layer: User}, "user") }
	proj := func() File { return withHook(File{Path: "/p", Layer: Project}, "project") }
	flag := func() File { return withHook(File{Path: "/f", Layer: Flag}, "flag") }
	managed := func() File { return withHook(File{Path: "/m", Layer: Managed}, "managed") }
	off := func(f File) File { f.DisableAllHooks = true; return f }
	only := func(f File) File { f.AllowManagedHooksOnly = true; return f }
	cases := []struct {
		name  string
		files []File
		want  []string
	}{
		{"all run", []File{user(), proj(), flag(), managed()}, []string{"user", "project", "flag", "managed"}},
		{"the project turns off itself and the user's", []File{user(), off(proj()), flag(), managed()}, []string{"flag", "managed"}},
		{"the flag file turns off all but the managed", []File{user(), proj(), off(flag()), managed()}, []string{"managed"}},
		{"managed only", []File{user(), proj(), flag(), only(managed())}, []string{"managed"}},
		{"managed off", []File{user(), proj(), flag(), off(managed())}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := Merge(c.files, MergeOptions{TrustWorkspace: true})
			if diff := cmp.Diff(c.want, hookCommands(m)); diff != "" {
				t.Fatalf("hooks (-want +got):\n%s", diff)
			}
		})
	}
}

// TestManagedSandbox: the managed policy's sandbox words are kept apart, for the runner
// to hold every seat to them.
func TestManagedSandbox(t *testing.T) {
	t.Parallel()
	managed := mustParse(t, `{"sandbox":{"mode":"on","network":"off"},"permissions":{"disableBypassPermissionsMode":"disable"}}`, "/m", Managed)
	user := mustParse(t, `{"sandbox":{"mode":"off"}}`, "/u", User)
	m := Merge([]File{user, managed}, MergeOptions{})
	if m.ManagedSandbox.Mode != sandbox.ModeOn || m.ManagedSandbox.Network != "off" || m.Sandbox.Mode != sandbox.ModeOn || !m.DenyBypassPermissions {
		t.Fatalf("merged %+v", m)
	}
}

// TestClaudeFileParses: a settings file written for Claude Code, with its interface
// keys, hooks and sandbox object, parses; the keys sema does not apply are named.
func TestClaudeFileParses(t *testing.T) {
	t.Parallel()
	doc := `{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "permissions": {"allow": ["Bash(npm run lint)"], "deny": ["Read(./.env)"], "additionalDirectories": ["../docs/"]},
  "env": {"CLAUDE_CODE_ENABLE_TELEMETRY": "0"},
  "includeCoAuthoredBy": false,
  "statusLine": {"type": "command", "command": "~/.claude/statusline.sh"},
  "sandbox": {"enabled": true, "autoAllowBashIfSandboxed": true, "network": {"allowUnixSockets": []}},
  "hooks": {"PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "gofmt -w \"$CLAUDE_PROJECT_DIR\""}]}]}
}`
	f := mustParse(t, doc, "/r/.claude/settings.json", Project)
	if f.Sandbox.Mode != sandbox.ModeOn || len(f.Rules.Allow) != 1 || f.Env["CLAUDE_CODE_ENABLE_TELEMETRY"] != "0" {
		t.Fatalf("parsed %+v", f)
	}
	want := []string{"includeCoAuthoredBy", "sandbox.autoAllowBashIfSandboxed", "sandbox.network", "statusLine"}
	got := slices.Clone(f.Ignored)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}
}

// TestSources: --setting-sources words, and the files each layer reads, lowest first.
func TestSources(t *testing.T) {
	t.Parallel()
	got, err := ParseSources(" project , user,project")
	if err != nil || !slices.Equal(got, []Layer{Project, User}) {
		t.Fatalf("ParseSources = %v, %v", got, err)
	}
	for _, bad := range []string{"managed", "flag", "users", "user;project"} {
		if _, err := ParseSources(bad); !sema.IsCode(err, CodeSourcesInvalid) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	var paths []string
	for _, s := range WorkspaceSources("/r", nil, true) {
		paths = append(paths, string(s.Layer)+":"+s.Path)
	}
	want := []string{"project:/r/.claude/settings.json", "project:/r/.sema/settings.json", "local:/r/.claude/settings.local.json", "local:/r/.sema/settings.local.json"}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("workspace sources (-want +got):\n%s", diff)
	}
	if n := len(WorkspaceSources("/r", []Layer{}, false)); n != 0 {
		t.Errorf("no sources read %d files", n)
	}
	if u := UserSources("/h", true); len(u) != 2 || u[0].Path != "/h/.claude/settings.json" || u[1].Path != "/h/.sema/settings.json" {
		t.Errorf("user sources %v", u)
	}
}

// TestTrust: a trusted directory trusts what is below it, not its neighbours whose names
// share its prefix, nor a symbolic link's name standing for another place.
func TestTrust(t *testing.T) {
	t.Parallel()
	state, base := t.TempDir(), t.TempDir()
	for _, d := range []string{"repo/sub", "repo-evil", "elsewhere"} {
		os.MkdirAll(filepath.Join(base, d), 0o755)
	}
	os.Symlink(filepath.Join(base, "elsewhere"), filepath.Join(base, "repo", "link"))
	tr := OpenTrust(state)
	if ok, err := tr.Trusted(filepath.Join(base, "repo")); ok || err != nil {
		t.Fatalf("empty record trusts: %v %v", ok, err)
	}
	if _, err := tr.Add(filepath.Join(base, "repo")); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]bool{"repo": true, "repo/sub": true, "repo-evil": false, "repo/link": false, "elsewhere": false} {
		if ok, err := tr.Trusted(filepath.Join(base, dir)); ok != want || err != nil {
			t.Errorf("%s: trusted=%v err=%v, want %v", dir, ok, err, want)
		}
	}
	if _, err := tr.Add(filepath.Join(base, "missing")); !sema.IsCode(err, CodeTrustInvalid) {
		t.Errorf("a missing directory: %v", err)
	}
	if was, err := tr.Remove(filepath.Join(base, "repo")); !was || err != nil {
		t.Fatalf("remove: %v %v", was, err)
	}
	if ok, _ := tr.Trusted(filepath.Join(base, "repo/sub")); ok {
		t.Error("still trusted after remove")
	}
	os.WriteFile(filepath.Join(state, TrustFile), []byte("{not json"), 0o600)
	if _, err := tr.Trusted(base); !sema.IsCode(err, CodeTrustInvalid) {
		t.Errorf("a broken record must refuse, not trust or forget: %v", err)
	}
}

// FuzzParse: no document panics the parser, and what it accepts has every rule parsed
// and every hook compiled.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{}`, `{"permissions":{"allow":["Read"]}}`, `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"x"}]}]}}`,
		`{"sandbox":{"enabled":true}}`, `{"env":{"A":"b"}}`, `null`, `{"statusLine":1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		for _, l := range []Layer{User, Project, Managed} {
			file, err := Parse([]byte(doc), "f.json", l)
			if err != nil {
				if sema.CodeOf(err) == "" {
					t.Fatalf("uncoded refusal %v", err)
				}
				continue
			}
			if _, err := hooks.NewSet(file.Hooks); err != nil {
				t.Fatalf("accepted hooks that do not compile: %v", err)
			}
		}
	})
}
