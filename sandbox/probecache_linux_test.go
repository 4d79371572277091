//go:build linux

package sandbox

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

var fullKernel = Kernel{Landlock: 7, MountNamespace: true, NetworkNamespace: true, PIDNamespace: true, Overlay: true}

// counting returns an ask that answers k and counts its calls.
func counting(k Kernel) (func() Kernel, *int) {
	n := new(int)
	return func() Kernel { *n++; return k }, n
}

func privateDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cache")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestProbeKeptForTheNextProcess: a full answer is asked once and then read back; a
// partial one is asked every time; a file kept under another key (another boot, binary,
// setting) or damaged is asked again and replaced.
func TestProbeKeptForTheNextProcess(t *testing.T) {
	if probeKey(landlockABI()) == "" {
		t.Skip("this machine's boot id, executable or namespaces cannot be read: nothing is kept here")
	}
	dir := privateDir(t)
	ask, n := counting(fullKernel)
	for range 3 {
		if got := probeKept(dir, ask); got != fullKernel {
			t.Fatalf("got %+v, want %+v", got, fullKernel)
		}
	}
	if *n != 1 {
		t.Fatalf("a full answer was asked %d times over three processes, want once", *n)
	}

	partial := Kernel{Landlock: 7, MountNamespace: true, NetworkNamespace: true, Reason: "no PID namespace"}
	pdir := privateDir(t)
	ask, n = counting(partial)
	for range 2 {
		if got := probeKept(pdir, ask); got != partial {
			t.Fatalf("got %+v, want the partial answer", got)
		}
	}
	if *n != 2 {
		t.Fatalf("a partial answer was asked %d times over two processes, want every time", *n)
	}

	for name, content := range map[string]string{
		"another key": mustJSON(t, keptProbe{Key: "another boot", Kernel: fullKernel}),
		"damaged":     `{"key": "`,
		"not full":    mustJSON(t, keptProbe{Key: probeKey(landlockABI()), Kernel: Kernel{Landlock: 7}}),
	} {
		d := privateDir(t)
		if err := os.WriteFile(filepath.Join(d, probeCacheName), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		ask, n := counting(fullKernel)
		probeKept(d, ask)
		if *n != 1 {
			t.Fatalf("%s: asked %d times, want once", name, *n)
		}
		if _, ok := keptKernel(d, probeKey(landlockABI())); !ok {
			t.Fatalf("%s: the fresh answer was not kept in its place", name)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestProbeKeptOnlyWhereTheUserAloneWrites: a kept answer is a reason not to ask, so it
// is read only from a file of the user's own that no one else can have written: not
// through a link, not from a file or directory others may write, not from a directory
// of another user. Calibrated: the same content, in place and private, is read.
func TestProbeKeptOnlyWhereTheUserAloneWrites(t *testing.T) {
	key := probeKey(landlockABI())
	if key == "" {
		t.Skip("this machine's boot id, executable or namespaces cannot be read: nothing is kept here")
	}
	valid := mustJSON(t, keptProbe{Key: key, Kernel: fullKernel})

	dir := privateDir(t)
	if err := os.WriteFile(filepath.Join(dir, probeCacheName), []byte(valid), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := keptKernel(dir, key); !ok {
		t.Fatal("calibration: a private, valid kept answer was not read")
	}

	// A link in the kept file's place, to a valid answer elsewhere.
	linked := privateDir(t)
	target := filepath.Join(t.TempDir(), "planted.json")
	os.WriteFile(target, []byte(valid), 0o600)
	if err := os.Symlink(target, filepath.Join(linked, probeCacheName)); err != nil {
		t.Fatal(err)
	}
	if _, ok := keptKernel(linked, key); ok {
		t.Fatal("a kept answer was read through a link")
	}

	// A kept file others may write.
	open := privateDir(t)
	p := filepath.Join(open, probeCacheName)
	os.WriteFile(p, []byte(valid), 0o600)
	if err := os.Chmod(p, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, ok := keptKernel(open, key); ok {
		t.Fatal("a kept answer others may write was read")
	}

	// Directories: a link to a private directory, one others may write, another user's.
	uid := os.Getuid()
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(dir, link)
	if ensurePrivateDir(link, uid) {
		t.Fatal("a link to a directory was taken as the private directory")
	}
	shared := filepath.Join(t.TempDir(), "shared")
	os.Mkdir(shared, 0o700)
	os.Chmod(shared, 0o777)
	if ensurePrivateDir(shared, uid) {
		t.Fatal("a directory others may write was taken as the private directory")
	}
	if !ensurePrivateDir(dir, uid) {
		t.Fatal("calibration: the user's own private directory was refused")
	}
	if uid == 0 {
		other := filepath.Join(t.TempDir(), "other")
		os.Mkdir(other, 0o700)
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if ensurePrivateDir(other, uid) {
			t.Fatal("another user's directory was taken as the private directory")
		}
	} else {
		t.Log("not root: another user's directory cannot be made here; that case is checked when the tests run as root")
	}
}

// TestProbeCacheDirChoice: $XDG_RUNTIME_DIR/sema when the runtime directory is the
// user's and private, else sema-UID in the temporary directory.
func TestProbeCacheDirChoice(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	rt := filepath.Join(t.TempDir(), "run")
	os.Mkdir(rt, 0o700)
	t.Setenv("XDG_RUNTIME_DIR", rt)
	if got := probeCacheDir(); got != filepath.Join(rt, "sema") {
		t.Fatalf("with a private runtime directory: %q", got)
	}
	os.Chmod(rt, 0o777)
	want := filepath.Join(tmp, "sema-"+strconv.Itoa(os.Getuid()))
	if got := probeCacheDir(); got != want {
		t.Fatalf("with a runtime directory others may write: %q, want %q", got, want)
	}
	t.Setenv("XDG_RUNTIME_DIR", "relative/run")
	if got := probeCacheDir(); got != want {
		t.Fatalf("with a relative runtime directory: %q, want %q", got, want)
	}
}
