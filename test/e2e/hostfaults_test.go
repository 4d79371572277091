package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// resultCode is the error code of the one result object a json-mode command printed, ""
// when it printed none or one without an error.
func resultCode(stdout string) string {
	var doc struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal([]byte(stdout), &doc)
	return doc.Error.Code
}

// The state directory's disk full at any moment of a run — before the database can be
// opened, while the session is created, while its turns are stored — is the host's
// fault: exit 1 with io.disk_full (or the record failure that wraps it), never the exit
// 2 and cli.usage of a command line to fix, nor an open failure that names no cause.
// Each step leaves a little more room on a small tmpfs in a mount namespace of the
// test's own.
func TestFullDiskExitsDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small filesystem for the state directory needs root; not root here")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skipf("unshare (util-linux) is not installed: %v", err)
	}
	dir := writeTree(t, map[string]string{"README.md": "hi\n"})
	state := filepath.Join(t.TempDir(), "state")
	os.MkdirAll(state, 0o700)
	script := writeScript(t, `{"turns":[{"text":"done"}]}`)
	out := t.TempDir()
	sh := `set -u
mount -t tmpfs -o size=512k tmpfs "$STATE" || exit 90
"$SEMA" run --model "scripted/$SCRIPT" --output-format json "first" > "$OUT/first.json" 2>&1 || exit 91
for free in 8 16 24 32 40 48 56 64 72 80; do
	rm -f "$STATE/filler"
	dd if=/dev/zero of="$STATE/filler" bs=1k count=1024 2>/dev/null
	truncate -s $(( $(stat -c %s "$STATE/filler") - free*1024 )) "$STATE/filler"
	"$SEMA" run --model "scripted/$SCRIPT" --output-format json "hello" > "$OUT/$free.json" 2> "$OUT/$free.err"
	echo $? > "$OUT/$free.code"
done
# A state directory made on the full disk: its database cannot be created.
rm -f "$STATE/filler"
dd if=/dev/zero of="$STATE/filler" bs=1k count=1024 2>/dev/null
mkdir "$STATE/new"
SEMA_HOME="$STATE/new" "$SEMA" run --model "scripted/$SCRIPT" --output-format json "hello" > "$OUT/new.json" 2> "$OUT/new.err"
echo $? > "$OUT/new.code"
ls -A "$STATE/new" > "$OUT/new.ls"
rm -f "$STATE/filler"
SEMA_HOME="$STATE/new" "$SEMA" run --model "scripted/$SCRIPT" --output-format json "hello" > "$OUT/after.json" 2> "$OUT/after.err"
echo $? > "$OUT/after.code"
`
	cmd := exec.Command(unshare, "--mount", "--propagation", "private", "bash", "-c", sh)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "SEMA_HOME=" + state, "STATE=" + state, "SEMA=" + semaBin, "SCRIPT=" + script, "OUT=" + out}
	if b, err := cmd.CombinedOutput(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 90 {
			t.Skipf("a tmpfs cannot be mounted here: %s", b)
		}
		first, _ := os.ReadFile(filepath.Join(out, "first.json"))
		t.Fatalf("%v\n%s\n%s", err, b, first)
	}
	full := 0
	for _, free := range []int{8, 16, 24, 32, 40, 48, 56, 64, 72, 80} {
		read := func(ext string) string {
			b, _ := os.ReadFile(filepath.Join(out, fmt.Sprint(free, ext)))
			return strings.TrimSpace(string(b))
		}
		code, stdout, stderr := read(".code"), read(".json"), read(".err")
		rc := resultCode(stdout)
		switch {
		case code == "0":
		case code == "1" && (rc == "io.disk_full" || rc == "session.record_failed" && strings.Contains(stdout, "io.disk_full")):
			full++
		default:
			t.Errorf("%d KB free: exit %s, code %q; want 0, or 1 with io.disk_full\nstdout: %s\nstderr: %s", free, code, rc, stdout, stderr)
		}
	}
	if full == 0 {
		t.Fatal("no run met the full disk: the test did not make the fault")
	}
	t.Logf("%d of 10 runs met the full disk", full)

	// A database that cannot be created leaves nothing: no sema.db of zero bytes,
	// which would be damage to refuse once space is freed. Then the run goes on.
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(out, name))
		return strings.TrimSpace(string(b))
	}
	if code, rc := read("new.code"), resultCode(read("new.json")); code != "1" || rc != "io.disk_full" {
		t.Fatalf("creating a database on a full disk: exit %s, code %q\n%s", code, rc, read("new.err"))
	}
	if left := read("new.ls"); left != "" {
		t.Fatalf("a database that could not be created left files behind: %q", left)
	}
	if code := read("after.code"); code != "0" {
		t.Fatalf("the run once space was freed: exit %s\n%s\n%s", code, read("after.json"), read("after.err"))
	}
}

// A process with too few file descriptors stops with io.fd_exhausted, exit 1, wherever
// it runs out — the price table, the trust record, a settings file, the state database
// — never with the code of the file it was reading (config.prices_invalid,
// config.settings_unreadable) and exit 2. Below about 7 descriptors the Go runtime
// itself cannot start and aborts with its own exit 2; those limits are not sema's to
// answer and are left out.
func TestFewDescriptorsExitFDExhausted(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skipf("prlimit (util-linux) is not installed: %v", err)
	}
	dir := writeTree(t, map[string]string{"README.md": "hi\n", ".sema/settings.json": `{"permissions":{"allow":["Read"]}}`})
	state := homeWith(t, `{}`)
	env := []string{"SEMA_HOME=" + state}
	script := writeScript(t, `{"turns":[{"text":"done"}]}`)
	if r := sema(t, dir, env, "", "run", "--model", "scripted/"+script, "--output-format", "json", "first"); r.code != 0 {
		t.Fatalf("first run: exit %d\n%s", r.code, r.stderr)
	}
	exhausted := 0
	// Each limit three times: where the descriptors run out moves with the timing of
	// the runtime's own threads.
	for i := range 36 {
		n := 5 + i/3
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, prlimit, fmt.Sprintf("--nofile=%d:%d", n, n), semaBin, "run", "--model", "scripted/"+script, "--output-format", "json", "hello")
		cmd.Dir = dir
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		cancel()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(stderr.String(), "fatal error: runtime") {
			continue // the Go runtime could not start (its own abort, exit 2)
		}
		rc := resultCode(stdout.String())
		switch {
		case code == 0:
		case code == 1 && rc == "io.fd_exhausted":
			exhausted++
		default:
			t.Errorf("nofile=%d: exit %d, code %q; want 0, or 1 with io.fd_exhausted\nstdout: %s\nstderr: %s", n, code, rc, stdout.String(), stderr.String())
		}
	}
	if exhausted == 0 {
		t.Fatal("no run ran out of descriptors: the test did not make the fault")
	}
	t.Logf("%d runs ran out of descriptors", exhausted)
}
