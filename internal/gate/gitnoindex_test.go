package gate

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/permission"
)

// TestGitDiffNoIndexReadBoundary: `git diff` comparing files on the filesystem (with
// --no-index, or with two paths one of which lies outside the repository) reads them, so a
// path outside the read roots is the read-boundary question, and the question names it,
// with the kernel confining the command or not. An allow rule for all of Bash leaves the
// read boundary as the only ground for a question.
func TestGitDiffNoIndexReadBoundary(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	l.write("a.txt", "a")
	l.write("b.txt", "b")
	out := l.write(filepath.Join(l.outside, "a"), "secret")
	rel := "../../../outside/a" // from the task root's src directory
	if got, _ := filepath.Abs(filepath.Join(l.root, "src", rel)); got != out {
		t.Fatalf("the relative spelling leads to %s, not %s", got, out)
	}
	spellings := []string{
		"git diff --no-index " + out + " a.txt",
		"git diff --no-index -- " + out + " a.txt",
		"git diff --no-index -U1 a.txt " + out,
		"git --no-pager diff --no-index " + out + " a.txt",
		"git -C src diff --no-index " + rel + " ../a.txt",
		"git -C src --no-pager diff --no-index -- ../a.txt " + rel,
		"git diff " + out + " a.txt",                 // no --no-index: git compares files outside the repository anyway
		"git diff -U0 -- a.txt " + out,               // the same after leading options
		"nice git diff --no-index " + out + " a.txt", // behind a wrapper
		"bash -c 'git diff --no-index " + out + " a.txt'",
	}
	// Calibration: each spelling, run, really prints the outside file.
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("git is not installed, so the spellings cannot be calibrated: %v", err)
	}
	for _, cmd := range spellings {
		c := exec.Command("bash", "-c", cmd)
		c.Dir = l.root
		c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + l.home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
		if b, _ := c.CombinedOutput(); !strings.Contains(string(b), "secret") {
			t.Fatalf("uncalibrated: %q does not read %s when run:\n%s", cmd, out, b)
		}
	}
	allowBash := mustRules(t, []string{"Bash"}, nil, nil)
	for _, sandboxed := range []bool{false, true} {
		g, err := New(Config{Modes: FixedMode(permission.ModeDefault), Rules: allowBash, Resolver: FenceResolver(l.fence), Sandboxed: sandboxed})
		if err != nil {
			t.Fatal(err)
		}
		for _, cmd := range spellings {
			d := l.decideBash(g, cmd)
			if verdict(d) != "ask!" || !strings.Contains(d.Reason, "reads "+out+", outside the read roots") {
				t.Errorf("sandboxed=%v: %q = %s %q, want the read-boundary question naming %s", sandboxed, cmd, verdict(d), d.Reason, out)
			}
		}
		// Calibration: the same commands comparing files inside the roots are the allow rule's.
		for _, cmd := range []string{
			"git diff --no-index a.txt b.txt",
			"git -C src diff --no-index ../a.txt ../b.txt",
			"git diff a.txt b.txt",
		} {
			if d := l.decideBash(g, cmd); verdict(d) != "allow" {
				t.Errorf("sandboxed=%v: %q = %s %q, want allow", sandboxed, cmd, verdict(d), d.Reason)
			}
		}
	}
}
