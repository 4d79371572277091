package gate

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/permission"
)

// secretMarker is the secret the hostile shell tests plant; every command of their
// tables prints it when run by plain bash, and none may be allowed.
const secretMarker = "SEMA-SECRET-4b1e07"

// hostileShell runs cmd the way an unguarded shell would, in dir, with a home and a
// git configuration of the test's own, and returns what it printed.
func hostileShell(t *testing.T, dir, home, cmd string) string {
	t.Helper()
	c := exec.Command("bash", "--noprofile", "--norc", "-c", cmd)
	c.Dir = dir
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_GLOBAL=" + filepath.Join(home, "gitconfig"),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@example.com", "LC_ALL=C", "GIT_PAGER=cat", "PAGER=cat"}
	out, _ := c.CombinedOutput()
	return string(out)
}

// secretRepo is a task root holding secrets (working tree and history) under a git
// repository of two commits, inside the test's temporary directory.
func secretRepo(t *testing.T) (*testLeg, string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	l := newTestLeg(t)
	home := filepath.Join(l.base, "githome")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(l.root, ".git")); err != nil {
		t.Fatal(err)
	}
	l.write("secrets/key", "token="+secretMarker+"-v1\n")
	l.write("id.pem", "-----BEGIN KEY-----\n"+secretMarker+"\n")
	l.write(".env", "PASSWORD="+secretMarker+"\n")
	l.write("src/main.go", "package main\n")
	run := func(cmd string) {
		t.Helper()
		c := exec.Command("bash", "--noprofile", "--norc", "-c", cmd)
		c.Dir = l.root
		c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_GLOBAL=" + filepath.Join(home, "gitconfig"),
			"GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
	}
	run("git init -q && git add -A && git commit -q -m one")
	l.write("secrets/key", "token="+secretMarker+"-v2\n")
	l.write("src/main.go", "package main\n\nfunc main() {}\n")
	run("git commit -q -am two")
	return l, home
}

// TestReadDenyRulesCoverUnnamedShellReads: with Read deny rules in force, a command that
// reads a denied path without naming it — a recursive search, a glob, git's object store
// — is not allowed in any mode, bypassPermissions included. Every command is calibrated:
// plain bash in the same directory prints the secret.
func TestReadDenyRulesCoverUnnamedShellReads(t *testing.T) {
	t.Parallel()
	l, home := secretRepo(t)
	rules := mustRules(t, nil, []string{"Read(./secrets/**)", "Read(*.pem)", "Read(./.env)"}, nil)
	cmds := []string{
		"grep -r SEMA-SECRET .",
		"grep -rh SEMA-SECRET",
		"find . -name '*.pem' | xargs cat",
		"cat secrets/*",
		"cat *.pem",
		"cat ./.e*",
		"cat secrets/{key,none} 2>/dev/null",
		"head -n 5 secre?s/key",
		"tail -n 1 .en[v]",
		"bash -c 'cat secrets/*'",
		"git show HEAD:secrets/key",
		"git show HEAD~1:./id.pem",
		"git --no-pager show HEAD:.env",
		"git show HEAD -- secrets",
		"git show",
		"git log -p",
		"git log -p -- .",
		"git log --patch --all",
		"git whatchanged -p",
		"git diff HEAD~1",
		"git diff HEAD~1 HEAD -- secrets/",
		"git diff HEAD~1:secrets/key HEAD:secrets/key",
		"git cat-file -p HEAD:secrets/key",
		"git cat-file blob HEAD:.env",
		"git cat-file -p $(git rev-parse HEAD:secrets/key)",
		"git grep SEMA-SECRET HEAD",
		"git grep SEMA-SECRET",
		"git grep -h SEMA-SECRET HEAD~1 -- .",
		"git archive HEAD | tar -xO",
		"git blame secrets/key",
		"git annotate -- id.pem",
		"git -C . show HEAD:secrets/key",
		"eval 'git show HEAD:secrets/key'",
	}
	modes := []permission.Mode{permission.ModeDefault, permission.ModeAcceptEdits, permission.ModeBypassPermissions}
	for _, cmd := range cmds {
		if out := hostileShell(t, l.root, home, cmd); !strings.Contains(out, secretMarker) {
			t.Errorf("calibration: %q does not print the secret under plain bash:\n%s", cmd, out)
			continue
		}
		for _, m := range modes {
			d := l.gate(m, rules).Decide(context.Background(), l.bashCall(cmd, false))
			if d.Behavior == permission.Allow {
				t.Errorf("%s: %q was allowed: %+v", m, cmd, d)
			}
		}
	}
	// What the rules do not cover stays allowed: the analysis proves these.
	narrow := mustRules(t, nil, []string{"Read(./secrets/**)", "Read(./.env)"}, nil)
	for _, cmd := range []string{
		"git show HEAD:src/main.go",
		"git show HEAD -- src",
		"git diff HEAD~1 -- src/",
		"git log --oneline",
		"git log -p -- src/main.go",
		"cat src/main.go",
		"grep -r main src",
	} {
		if d := l.gate(permission.ModeDefault, narrow).Decide(context.Background(), l.bashCall(cmd, false)); d.Behavior != permission.Allow {
			t.Errorf("%q: %+v, want allow", cmd, d)
		}
	}
	// Not read-only by the analyzer's allowlist, so the default mode asks its ordinary
	// question; bypassPermissions answers it, since no deny rule could be reached.
	for _, cmd := range []string{"git cat-file -p HEAD:src/main.go", "git blame src/main.go", "git show HEAD:src/main.go"} {
		if d := l.gate(permission.ModeBypassPermissions, narrow).Decide(context.Background(), l.bashCall(cmd, false)); d.Behavior != permission.Allow {
			t.Errorf("bypassPermissions: %q: %+v, want allow", cmd, d)
		}
	}
}

// TestHardLinkedShellReadsAsk: a command naming a file of the root that is another name
// of a file outside the roots reads an unknown place: the mode never answers it. Every
// command is calibrated: plain bash prints the outside file's secret.
func TestHardLinkedShellReadsAsk(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	out := filepath.Join(l.outside, "secret.txt")
	if err := os.WriteFile(out, []byte("a\ntoken="+secretMarker+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(out, filepath.Join(l.root, "twin.txt")); err != nil {
		t.Skipf("hard links are not available here: %v", err)
	}
	if err := os.Link(out, filepath.Join(l.root, "src", "twin2.txt")); err != nil {
		t.Fatal(err)
	}
	l.write("plain.txt", "plain\n")
	cmds := []string{
		"cat twin.txt",
		"cat ./twin.txt",
		"cat src/../twin.txt",
		"cat " + filepath.Join(l.root, "twin.txt"),
		"head -n 5 twin.txt",
		"tail -n 1 twin.txt",
		"grep token twin.txt",
		"grep -h SEMA src/twin2.txt plain.txt",
		"sort twin.txt",
		"uniq twin.txt",
		"cut -c1-80 src/twin2.txt",
		"cat plain.txt twin.txt | grep SEMA",
		"cp twin.txt copy.txt && cat copy.txt",
	}
	for _, cmd := range cmds {
		if got := hostileShell(t, l.root, l.home, cmd); !strings.Contains(got, secretMarker) {
			t.Errorf("calibration: %q does not print the secret under plain bash:\n%s", cmd, got)
			continue
		}
		os.Remove(filepath.Join(l.root, "copy.txt"))
		for _, m := range []permission.Mode{permission.ModeDefault, permission.ModeAcceptEdits, permission.ModePlan, permission.ModeDontAsk} {
			d := l.gate(m, permission.RuleSet{}).Decide(context.Background(), l.bashCall(cmd, false))
			if d.Behavior == permission.Allow {
				t.Errorf("%s: %q was allowed: %+v", m, cmd, d)
			}
		}
	}
	if d := l.gate(permission.ModeDefault, permission.RuleSet{}).Decide(context.Background(), l.bashCall("cat plain.txt", false)); d.Behavior != permission.Allow {
		t.Errorf("a file with one name: %+v, want allow", d)
	}
}
