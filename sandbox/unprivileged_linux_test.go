//go:build linux

package sandbox_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// unprivilegedEnv marks the run of the test binary as nobody, so it does not start
// another.
const unprivilegedEnv = "SEMA_SANDBOX_UNPRIVILEGED_RUN"

// nobody is the unprivileged identity the tests run as.
const nobody = 65534

// runAsNobody runs the named tests of this binary again as nobody (uid and gid 65534, no
// supplementary groups) and fails unless each of them passes there. A case that cannot be
// calibrated without root skips inside, saying so; the whole output is logged, so the
// reasons are seen. It skips, saying why, when the tests do not run as root (they then run
// unprivileged already) or the machine has no such user.
func runAsNobody(t *testing.T, tests ...string) {
	t.Helper()
	if os.Getenv(unprivilegedEnv) != "" {
		t.Skip("already the unprivileged run")
	}
	if os.Geteuid() != 0 {
		t.Skipf("not root (uid %d): the tests already ran unprivileged", os.Geteuid())
	}
	if !hasUser(nobody) {
		t.Skipf("the machine has no user %d to run the tests as", nobody)
	}
	// A directory nobody can reach and write, with a copy of the test binary: the build
	// directory and t.TempDir's parent are private to root.
	tmp := t.TempDir()
	for d := tmp; d != "/" && d != filepath.Clean(os.TempDir()); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	if err := os.Chmod(tmp, 0o1777); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tmp, "sandbox.test")
	if err := copyExecutable(bin); err != nil {
		t.Fatal(err)
	}
	run := "^(" + strings.Join(tests, "|") + ")$"
	cmd := exec.Command(bin, "-test.run", run, "-test.v", "-test.count=1")
	cmd.Dir = tmp
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + tmp, "TMPDIR=" + tmp, unprivilegedEnv + "=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	t.Logf("as uid %d:\n%s", nobody, out)
	if err != nil {
		t.Fatalf("the unprivileged run failed: %v", err)
	}
	for _, name := range tests {
		if !regexp.MustCompile(`(?m)^--- PASS: ` + regexp.QuoteMeta(name) + ` `).Match(out) {
			t.Errorf("%s did not pass as uid %d", name, nobody)
		}
	}
	if !strings.Contains(string(out), "running as uid 65534") {
		t.Errorf("the tests did not say they ran as uid %d", nobody)
	}
}

func hasUser(uid int) bool {
	b, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return false
	}
	want := ":" + strconv.Itoa(uid) + ":"
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.SplitN(l, ":", 4); len(f) == 4 && ":"+f[2]+":" == want {
			return true
		}
	}
	return false
}

// copyExecutable copies this test binary to dst, executable by all.
func copyExecutable(dst string) error {
	src, err := os.Executable()
	if err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// The process containment holds for an unprivileged user as well, whose helper goes
// through a user namespace: the same tables, run as nobody. With them, one of the
// filesystem tables, so that the harness covers the older walls too.
func TestProcessContainmentAlsoHoldsForAnUnprivilegedUser(t *testing.T) {
	kernel(t)
	runAsNobody(t,
		"TestConfinedCommandHoldsNoCapability",
		"TestRootIsNotPrivilegedConfined",
		"TestCommandReachesNoOtherProcess",
		"TestNothingOutlivesTheCommand",
		"TestInitReportsHowTheCommandEnded",
		"TestInitReapsAndSurvivesSignals",
		"TestCommandReachesNoTerminal",
		"TestCommandPlantsNoSetuidFile",
		"TestKernelStopsWhatTheAnalyzerMissed",
	)
}
