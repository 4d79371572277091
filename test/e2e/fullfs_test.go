package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The state directory on a full filesystem: the run stops non-zero with a coded error
// (never "completed" with the loss hidden), and once space is freed the session resumes
// and completes. The filesystem is a small tmpfs mounted in a mount namespace of the
// test's own, so nothing of the machine's is filled.
func TestFullStateDirectoryStopsTheRunAndResumesAfter(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small filesystem for the state directory needs root (or a user namespace); not root here")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skipf("unshare (util-linux) is not installed: %v", err)
	}
	dir := writeTree(t, map[string]string{"big.txt": strings.Repeat("0123456789abcdef\n", 40000)}) // 680 KB
	state := filepath.Join(t.TempDir(), "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	// Sixteen reads of 2,000 lines each: about 550 KB of transcript, more than the
	// filesystem holds.
	script := writeScript(t, `{"turns":[
		{"tool_calls":[{"name":"Read","input":{"file_path":"big.txt","offset":1}}]},
		{"tool_calls":[{"name":"Read","input":{"file_path":"big.txt","offset":2001}}]},
		{"tool_calls":[{"name":"Read","input":{"file_path":"big.txt","offset":4001}}]},
		{"tool_calls":[{"name":"Read","input":{"file_path":"big.txt","offset":6001}}]},
		{"tool_calls":[{"name":"Read","input":{"file_path":"big.txt","offset":8001}}]},
		{"tool_calls":[{"name":"Read","input":{"file_path":"big.txt","offset":10001}}]},
		{"tool_calls":[{"name":"Read","input":{"file_path":"big.txt","offset":12001}}]},
		{"tool_calls":[{"name":"Read","input":{"file_path":"big.txt","offset":14001}}]},
		{"tool_calls":[{"name":"Read","input":{"file_path":"big.txt","offset":16001}}]},
		{"tool_calls":[{"name":"Read","input":{"file_path":"big.txt","offset":18001}}]},
		{"tool_calls":[{"name":"Read","input":{"file_path":"big.txt","offset":20001}}]},
		{"tool_calls":[{"name":"Read","input":{"file_path":"big.txt","offset":22001}}]},
		{"tool_calls":[{"name":"Read","input":{"file_path":"big.txt","offset":24001}}]},
		{"tool_calls":[{"name":"Read","input":{"file_path":"big.txt","offset":26001}}]},
		{"tool_calls":[{"name":"Read","input":{"file_path":"big.txt","offset":28001}}]},
		{"tool_calls":[{"name":"Read","input":{"file_path":"big.txt","offset":30001}}]},
		{"text":"read it all"},
		{"text":"resumed fine"}]}`)
	// One shell in one mount namespace: fill, then grow the filesystem and continue.
	sh := `set -u
mount -t tmpfs -o size=256k tmpfs "$STATE" || exit 90
"$SEMA" run --model "scripted/$SCRIPT" --output-format json "read big.txt" > "$OUT/first.json" 2> "$OUT/first.err"
echo $? > "$OUT/first.code"
"$SEMA" run --continue --model "scripted/$SCRIPT" --output-format json "still full" > "$OUT/full.json" 2> "$OUT/full.err"
echo $? > "$OUT/full.code"
mount -o remount,size=64m "$STATE" || exit 91
"$SEMA" run --continue --model "scripted/$SCRIPT" --output-format json "go on" > "$OUT/second.json" 2> "$OUT/second.err"
echo $? > "$OUT/second.code"
`
	out := t.TempDir()
	cmd := exec.Command(unshare, "--mount", "--propagation", "private", "bash", "-c", sh)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "SEMA_HOME=" + state, "STATE=" + state, "SEMA=" + semaBin, "SCRIPT=" + script, "OUT=" + out}
	if b, err := cmd.CombinedOutput(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok && (ee.ExitCode() == 90 || ee.ExitCode() == 91) {
			t.Skipf("a tmpfs cannot be mounted here: %s", b)
		}
		t.Fatalf("%v\n%s", err, b)
	}
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(out, name))
		return strings.TrimSpace(string(b))
	}
	if code := read("first.code"); code == "0" || !strings.Contains(read("first.json")+read("first.err"), "session.record_failed") {
		t.Fatalf("the run on a full state directory: exit %s\n%s\n%s", code, read("first.json"), read("first.err"))
	}
	if strings.Contains(read("first.json"), `"status":"completed"`) {
		t.Fatalf("the run reported completed although its transcript could not be stored:\n%s", read("first.json"))
	}
	// The stopped run's process is gone: whether or not the full disk let it release its
	// lease, the next run is not refused as busy for the lease's 30 s.
	if code := read("full.code"); code == "5" || strings.Contains(read("full.err"), "session.busy") {
		t.Fatalf("the run after the full-disk stop found the session busy: exit %s\n%s\n%s", code, read("full.json"), read("full.err"))
	}
	if code := read("second.code"); code != "0" || !strings.Contains(read("second.json"), `"status":"completed"`) {
		t.Fatalf("the resumed run after space was freed: exit %s\n%s\n%s", code, read("second.json"), read("second.err"))
	}
}
