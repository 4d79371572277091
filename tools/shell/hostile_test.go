package shell

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema/internal/gate"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/shellscan"
	"github.com/sema-agent/sema/tools"
)

// plainBash runs command the way a shell without sema's analysis would: bash in dir, with
// the extra environment. It returns the combined output.
func plainBash(t *testing.T, dir, command string, extraEnv ...string) string {
	t.Helper()
	cmd := exec.Command("bash", "--noprofile", "--norc", "-c", command)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), extraEnv...)
	out, _ := cmd.CombinedOutput()
	return string(out)
}

func needBash(t *testing.T) bool {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Log("calibration skipped: bash is not installed")
		return false
	}
	return true
}

// gateFor is a permission gate over the fix's fence, with allow rules.
func gateFor(t *testing.T, f *fix, mode permission.Mode, allowRules []string, roAllow []string) (*gate.Gate, permission.Scope) {
	t.Helper()
	rules, err := permission.ParseRules(allowRules, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gate.New(gate.Config{Modes: gate.FixedMode(mode), Rules: rules,
		Resolver: gate.FenceResolver(f.set.cfg.Fence), ReadOnlyAllow: roAllow})
	if err != nil {
		t.Fatal(err)
	}
	return g, gate.ScopeOf(context.Background(), f.set.cfg.Fence, tempDir(t))
}

func decide(g *gate.Gate, scope permission.Scope, command string) permission.Decision {
	in, _ := json.Marshal(map[string]any{"command": command})
	return g.Decide(context.Background(), permission.Call{Tool: "Bash", Effect: tools.EffectExec, Input: in, Scope: scope})
}

// hostileAllow is the read-only allowlist the hostile tests run under: the default one and
// the readers a deployment might add, so that the refusal must come from the reading of the
// options, not from the list.
var hostileAllow = append(append([]string(nil), shellscan.DefaultReadOnlyAllow...), "tar", "rsync", "sed")

// TestHostileLinkAndNameListReads: readers that follow symbolic links, or take the names of
// the files they read from a file, must not reach a secret outside the roots through a link
// or a list inside them — neither through bash_readonly nor through the permission gate
// (default mode, and an allow rule naming the program). Every case is calibrated: plain bash
// running the same command in the root prints the secret.
func TestHostileLinkAndNameListReads(t *testing.T) {
	t.Parallel()
	const token = "TOKEN7f3a"
	f := newReadonlyFix(t, func(c *Config) { c.ReadonlyAllow = hostileAllow })
	outside := tempDir(t)
	secret := filepath.Join(outside, token)
	for name, content := range map[string]string{
		token:    token + "\n",
		"s.json": `"` + token + `"` + "\n",
		"m.jq":   `def f: "` + token + `";` + "\n",
	} {
		if err := os.WriteFile(filepath.Join(outside, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f.put("a.txt", "plain\n")
	f.put("list0", secret+"\x00")
	f.put("listn", secret+"\n")
	f.put("cmp/b/sub/"+token, "other\n")
	if err := os.MkdirAll(f.path("cmp/a"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"link":      outside,
		"flink":     secret,
		"jlink":     filepath.Join(outside, "s.json"),
		"cmp/a/sub": outside,
		"lib":       outside,
	} {
		if err := os.Symlink(target, f.path(link)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		command string
		prog    string // the program an allow rule names
	}{
		{"grep -R " + token + " .", "grep"},
		{"grep -nR " + token + " .", "grep"},
		{"grep --dereference-recursive " + token + " .", "grep"},
		{"grep --deref " + token + " .", "grep"},
		{"find -L . -name '" + token + "*'", "find"},
		{"find . -follow -name '" + token + "*'", "find"},
		{"ls -LR", "ls"},
		{"ls --dereference -R link/", "ls"},
		{"du -aL .", "du"},
		{"du --dereference -a", "du"},
		{"du --files0-from=list0", "du"},
		{"diff -r cmp/a cmp/b", "diff"},
		{"diff --recursive cmp/a cmp/b", "diff"},
		{"sort --files0-from=list0", "sort"},
		{"wc --files0-from=list0", "wc"},
		{"wc --files0=list0", "wc"},
		{"file -f listn", "file"},
		{"file --files-from listn", "file"},
		{"jq -n -L lib 'import \"m\" as m; m::f'", "jq"},
		{"jq -n -Llib 'include \"m\"; f'", "jq"},
		{"jq -n --rawfile a flink '$a'", "jq"},
		{"jq -n --slurpfile a jlink '$a'", "jq"},
		{"tar -chf - link", "tar"},
		{"tar -cf - -T listn", "tar"},
		{"tar --create --dereference --file=- link", "tar"},
		{"rsync -rL --list-only ./ ", "rsync"},
		{"rsync -r --copy-links --list-only ./", "rsync"},
		{"cat listn | xargs cat", "cat"},
		{"xargs -a listn cat", "xargs"},
		{"cp -rL link copied && cat copied/" + token, "cp"},
	}
	if len(cases) < 10 {
		t.Fatalf("only %d spellings", len(cases))
	}
	calibrate := needBash(t)
	gate, scope := gateFor(t, f, permission.ModeDefault, nil, hostileAllow)
	for _, tc := range cases {
		t.Run(tc.command, func(t *testing.T) {
			code, text := f.readonly(tc.command)
			if code == "" || strings.Contains(text, token) {
				t.Errorf("bash_readonly ran it (code %q): %s", code, text)
			}
			if d := decide(gate, scope, tc.command); d.Behavior == permission.Allow {
				t.Errorf("the gate allowed it in default mode: %+v", d)
			}
			ruled, _ := gateFor(t, f, permission.ModeDefault, []string{"Bash(" + tc.prog + ":*)"}, hostileAllow)
			if d := decide(ruled, scope, tc.command); d.Behavior == permission.Allow {
				t.Errorf("the gate allowed it under Bash(%s:*): %+v", tc.prog, d)
			}
			if !calibrate {
				return
			}
			if out := plainBash(t, f.root, tc.command); !strings.Contains(out, token) {
				t.Errorf("calibration: plain bash did not reach the secret: %q", out)
			}
			os.RemoveAll(f.path("copied"))
		})
	}
}

// gitHostileCase is one repository (or sed) setup and the command that would make it run a
// program that leaves a marker.
type gitHostileCase struct {
	name    string
	setup   func(t *testing.T, root string, prog func(kind string) string)
	command string // MARK in it is replaced by the marker's path
	prog    string // the program an allow rule names (the rule is Bash(prog:*))
}

// TestHostileConfiguredPrograms: a read-only git command in a repository whose configuration
// names a program (a textconv, a diff command, diff.external, a clean filter, fsmonitor, a
// hook, an include), git configuration given on the command line, and a sed script that
// runs commands must not run that program — neither through bash_readonly nor through the
// permission gate (default mode, and an allow rule naming the program). Every case is
// calibrated: plain bash running the same command in the root leaves the marker.
func TestHostileConfiguredPrograms(t *testing.T) {
	needGit(t)
	home := tempDir(t)
	if err := os.WriteFile(filepath.Join(home, "gitconfig"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, "gitconfig"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")

	textconv := func(t *testing.T, root string, prog func(string) string) {
		put(t, root, ".gitattributes", "*.txt diff=conv\n")
		git(t, root, "config", "diff.conv.textconv", prog("conv"))
	}
	filter := func(t *testing.T, root string, prog func(string) string) {
		put(t, root, ".gitattributes", "*.txt filter=cl\n")
		git(t, root, "config", "filter.cl.clean", prog("filter"))
		// An unchanged file whose timestamps moved must be hashed again, through the
		// filter; without it, whether git hashes anything depends on the clock (a changed
		// size says "modified" without hashing, and only a racily clean entry is rehashed).
		staleStat(t, root)
	}
	hook := func(dir string) func(t *testing.T, root string, prog func(string) string) {
		return func(t *testing.T, root string, prog func(string) string) {
			if dir != ".git/hooks" {
				git(t, root, "config", "core.hooksPath", dir)
			}
			p := prog("plain")
			put(t, root, dir+"/post-index-change", "#!/bin/sh\nexec "+p+"\n")
			os.Chmod(filepath.Join(root, dir, "post-index-change"), 0o755)
			staleStat(t, root)
		}
	}
	sedScript := func(t *testing.T, root string, prog func(string) string) {
		put(t, root, "script.sed", "1e touch MARK\n")
	}
	cases := []gitHostileCase{
		{"textconv diff", textconv, "git diff", "git"},
		{"textconv log -p", textconv, "git log -p", "git"},
		{"textconv show", textconv, "git show HEAD", "git"},
		{"textconv between commits", textconv, "git diff HEAD~1 HEAD", "git"},
		{"textconv despite --no-ext-diff", textconv, "git --no-pager diff --no-ext-diff", "git"},
		{"diff.external", func(t *testing.T, root string, prog func(string) string) {
			git(t, root, "config", "diff.external", prog("plain"))
		}, "git diff", "git"},
		{"diff driver command", func(t *testing.T, root string, prog func(string) string) {
			put(t, root, ".gitattributes", "*.txt diff=ext\n")
			git(t, root, "config", "diff.ext.command", prog("plain"))
		}, "git diff", "git"},
		{"clean filter status", filter, "git status", "git"},
		{"clean filter diff", filter, "git diff --stat", "git"},
		{"fsmonitor", func(t *testing.T, root string, prog func(string) string) {
			git(t, root, "config", "core.fsmonitor", prog("plain"))
		}, "git status", "git"},
		{"post-index-change hook", hook(".git/hooks"), "git status", "git"},
		{"hooksPath in the tree", hook("githooks"), "git status --short", "git"},
		{"include", func(t *testing.T, root string, prog func(string) string) {
			put(t, root, ".gitattributes", "*.txt diff=conv\n")
			put(t, root, "inc.cfg", "[diff \"conv\"]\n\ttextconv = "+prog("conv")+"\n")
			git(t, root, "config", "include.path", "../inc.cfg")
		}, "git diff", "git"},
		{"-c diff.external", nil, "git -c diff.external=PROG diff", "git"},
		{"-c core.fsmonitor", nil, "git -c core.fsmonitor=PROG status", "git"},
		{"--config-env", nil, "E=PROG git --config-env=diff.external=E diff", "git"},
		{"sed 1e", nil, "sed '1e touch MARK' a.txt", "sed"},
		{"sed -e e", nil, "sed -e 'e touch MARK' a.txt", "sed"},
		{"sed --expression", nil, "sed --expression='1e touch MARK' a.txt", "sed"},
		{"sed s///e", nil, "sed 's|.*|touch MARK|e' a.txt", "sed"},
		{"sed s///ep", nil, "sed -n 's|^|touch MARK #|ep' a.txt", "sed"},
		{"sed -f", sedScript, "sed -f script.sed a.txt", "sed"},
		{"sed --file", sedScript, "sed --file=script.sed a.txt", "sed"},
	}
	if len(cases) < 10 {
		t.Fatalf("only %d spellings", len(cases))
	}
	calibrate := needBash(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newReadonlyFix(t, func(c *Config) { c.ReadonlyAllow = hostileAllow })
			marks := tempDir(t)
			mark := filepath.Join(marks, "ran")
			progs := tempDir(t)
			prog := func(kind string) string {
				body := map[string]string{
					"conv":   "cat \"$1\"",
					"filter": "cat",
					"plain":  "exit 0",
				}[kind]
				p := filepath.Join(progs, kind)
				if err := os.WriteFile(p, []byte("#!/bin/sh\necho ran >> "+shq(mark)+"\n"+body+"\n"), 0o755); err != nil {
					t.Fatal(err)
				}
				return p
			}
			gitRepo(t, f.root)
			if tc.setup != nil {
				tc.setup(t, f.root, prog)
			}
			// The sed script file names the marker too.
			if b, err := os.ReadFile(f.path("script.sed")); err == nil {
				put(t, f.root, "script.sed", strings.ReplaceAll(string(b), "MARK", mark))
			}
			command := strings.ReplaceAll(strings.ReplaceAll(tc.command, "MARK", mark), "PROG", prog("plain"))
			code, text := f.readonly(command)
			if code == "" {
				t.Errorf("bash_readonly ran it: %s", text)
			}
			gate, scope := gateFor(t, f, permission.ModeDefault, nil, hostileAllow)
			if d := decide(gate, scope, command); d.Behavior == permission.Allow {
				t.Errorf("the gate allowed it in default mode: %+v", d)
			}
			ruled, _ := gateFor(t, f, permission.ModeDefault, []string{"Bash(" + tc.prog + ":*)"}, hostileAllow)
			if d := decide(ruled, scope, command); d.Behavior == permission.Allow {
				t.Errorf("the gate allowed it under Bash(%s:*): %+v", tc.prog, d)
			}
			if _, err := os.Stat(mark); err == nil {
				t.Fatalf("the configured program ran")
			}
			if !calibrate {
				return
			}
			out := plainBash(t, f.root, command)
			if _, err := os.Stat(mark); err != nil {
				t.Errorf("calibration: plain bash did not run the program: %q", out)
			}
		})
	}
}

// gitRepo makes a repository in root with two commits of a.txt and a change in the work
// tree.
func gitRepo(t *testing.T, root string) {
	t.Helper()
	git(t, root, "init", "-q", "-b", "main")
	put(t, root, "a.txt", "one\n")
	put(t, root, "b.txt", "same\n")
	git(t, root, "add", "a.txt", "b.txt")
	git(t, root, "commit", "-q", "-m", "one")
	put(t, root, "a.txt", "two\n")
	git(t, root, "commit", "-q", "-am", "two")
	put(t, root, "a.txt", "three\n")
}

// staleStat gives b.txt new timestamps with the same bytes, so a status refreshes the index
// (and writes it, when it may).
func staleStat(t *testing.T, root string) {
	t.Helper()
	p := filepath.Join(root, "b.txt")
	later := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, later, later); err != nil {
		t.Fatal(err)
	}
}

func put(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
