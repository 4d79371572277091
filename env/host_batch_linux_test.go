//go:build linux

package env

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// tree is a workspace and, beside it, a directory outside it that no write may reach.
type tree struct{ root, outside string }

func newTree(t *testing.T) tree {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tr := tree{root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{tr.root, tr.outside, filepath.Join(tr.outside, "deep")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeOS(t, filepath.Join(tr.outside, "f.txt"), "outside")
	writeOS(t, filepath.Join(tr.outside, "deep", "f.txt"), "outside deep")
	return tr
}

func writeOS(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshot maps every path under dir (links not followed) to its content, its link
// target or "dir", so a test can tell that nothing changed, and that no temporary file
// was left anywhere.
func snapshotOS(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			out[p] = "link:" + target
			return err
		case d.IsDir():
			out[p] = "dir"
		default:
			b, err := os.ReadFile(p)
			out[p] = string(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func noTemps(t *testing.T, dirs ...string) {
	t.Helper()
	for _, dir := range dirs {
		for p := range snapshotOS(t, dir) {
			if strings.Contains(filepath.Base(p), ".sema-") {
				t.Errorf("a temporary file was left behind: %s", p)
			}
		}
	}
}

func errnoOf(err error) syscall.Errno {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if e, ok := pe.Err.(syscall.Errno); ok {
			return e
		}
	}
	return 0
}

// Every path WriteFile refuses, WriteFiles refuses with the same errno and, as WriteFile,
// leaves both trees as they were. Each hostile path is calibrated first: following it
// as an ordinary write would really reaches the outside directory (or the link's
// target), so a batch that followed it would be caught.
func TestWriteFilesRefusesWhatWriteFileRefuses(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		// setup builds the hostile shape in tr and returns the path to write and, for
		// an escape, the file outside an ordinary write of the path would reach.
		setup func(t *testing.T, tr tree) (path, escape string)
		want  syscall.Errno
	}{
		{"symlinked parent", func(t *testing.T, tr tree) (string, string) {
			os.Symlink(tr.outside, filepath.Join(tr.root, "sub"))
			return filepath.Join(tr.root, "sub", "f.txt"), filepath.Join(tr.outside, "f.txt")
		}, syscall.ELOOP},
		{"symlink in the middle", func(t *testing.T, tr tree) (string, string) {
			os.Symlink(tr.outside, filepath.Join(tr.root, "sub"))
			return filepath.Join(tr.root, "sub", "deep", "f.txt"), filepath.Join(tr.outside, "deep", "f.txt")
		}, syscall.ELOOP},
		{"dot-dot after a symlink", func(t *testing.T, tr tree) (string, string) {
			// root/link/.. is outside/, not root/: the kernel resolves .. after the link.
			os.Symlink(filepath.Join(tr.outside, "deep"), filepath.Join(tr.root, "link"))
			return tr.root + "/link/../f.txt", filepath.Join(tr.outside, "f.txt")
		}, syscall.ELOOP},
		{"relative symlinked parent", func(t *testing.T, tr tree) (string, string) {
			os.Symlink("../outside", filepath.Join(tr.root, "sub"))
			return filepath.Join(tr.root, "sub", "f.txt"), filepath.Join(tr.outside, "f.txt")
		}, syscall.ELOOP},
		{"symlink at the target", func(t *testing.T, tr tree) (string, string) {
			os.Symlink(filepath.Join(tr.outside, "f.txt"), filepath.Join(tr.root, "f.txt"))
			return filepath.Join(tr.root, "f.txt"), filepath.Join(tr.outside, "f.txt")
		}, syscall.ELOOP},
		{"dangling symlink at the target", func(t *testing.T, tr tree) (string, string) {
			os.Symlink(filepath.Join(tr.outside, "new.txt"), filepath.Join(tr.root, "f.txt"))
			return filepath.Join(tr.root, "f.txt"), ""
		}, syscall.ELOOP},
		{"directory at the target", func(t *testing.T, tr tree) (string, string) {
			os.Mkdir(filepath.Join(tr.root, "d"), 0o755)
			return filepath.Join(tr.root, "d"), ""
		}, syscall.EISDIR},
		{"file as parent", func(t *testing.T, tr tree) (string, string) {
			writeOS(t, filepath.Join(tr.root, "file"), "x")
			return filepath.Join(tr.root, "file", "f.txt"), ""
		}, syscall.ENOTDIR},
		{"missing parent", func(t *testing.T, tr tree) (string, string) {
			return filepath.Join(tr.root, "no", "f.txt"), ""
		}, syscall.ENOENT},
		{"relative path", func(t *testing.T, tr tree) (string, string) {
			return "f.txt", ""
		}, syscall.EINVAL},
		{"path ending in a slash", func(t *testing.T, tr tree) (string, string) {
			return tr.root + "/", ""
		}, syscall.EINVAL},
	}
	h := NewHost()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// WriteFile on one tree, WriteFiles on another built the same way.
			var errs [2]error
			for k := range errs {
				tr := newTree(t)
				path, escape := c.setup(t, tr)
				if escape != "" {
					// Calibration: an ordinary open of path lands on escape.
					a, err1 := os.Stat(path)
					b, err2 := os.Stat(escape)
					if err1 != nil || err2 != nil || !os.SameFile(a, b) {
						t.Fatalf("calibration: %s does not reach %s (%v, %v)", path, escape, err1, err2)
					}
				}
				before := snapshotOS(t, filepath.Dir(tr.root))
				if k == 0 {
					errs[k] = h.WriteFile(ctx, path, []byte("evil"), 0o644)
				} else {
					// In a batch between two good files, which are written.
					good1, good2 := filepath.Join(tr.root, "good1"), filepath.Join(tr.root, "good2")
					got := h.WriteFiles(ctx, []FileWrite{{good1, []byte("1"), 0o644}, {path, []byte("evil"), 0o644}, {good2, []byte("2"), 0o644}})
					if len(got) != 3 || got[0] != nil || got[2] != nil {
						t.Fatalf("WriteFiles = %v, want only the hostile path to fail", got)
					}
					errs[k] = got[1]
					var pe *fs.PathError
					if !errors.As(errs[k], &pe) || pe.Path != path {
						t.Fatalf("the failure %v does not name %q", errs[k], path)
					}
					for _, g := range []string{good1, good2} {
						b, err := os.ReadFile(g)
						if err != nil || (string(b) != "1" && string(b) != "2") {
							t.Fatalf("%s: %q, %v", g, b, err)
						}
						os.Remove(g)
					}
				}
				if d := snapshotOS(t, filepath.Dir(tr.root)); fmt.Sprint(d) != fmt.Sprint(before) {
					t.Fatalf("the refused write changed the trees:\nbefore %v\nafter  %v", before, d)
				}
			}
			if errnoOf(errs[0]) != c.want {
				t.Fatalf("WriteFile: %v, want %v (the case is miscalibrated)", errs[0], c.want)
			}
			if errnoOf(errs[1]) != c.want {
				t.Fatalf("WriteFiles: %v, WriteFile: %v", errs[1], errs[0])
			}
		})
	}
}

// A directory swapped for a symlink to the outside after the batch opened it (while
// its temporary files were synced) does not redirect the renames: they act on the
// directory that was checked, now moved aside, as WriteFile's do.
func TestWriteFilesSwappedDirectoryIsNotFollowed(t *testing.T) {
	tr := newTree(t)
	sub := filepath.Join(tr.root, "sub")
	os.Mkdir(sub, 0o755)
	writeOS(t, filepath.Join(sub, "f.txt"), "old")
	beforeRenames = func() {
		if err := os.Rename(sub, sub+".moved"); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(tr.outside, sub); err != nil {
			t.Error(err)
		}
	}
	defer func() { beforeRenames = nil }()
	if errs := NewHost().WriteFiles(context.Background(), []FileWrite{{filepath.Join(sub, "f.txt"), []byte("new"), 0o644}}); errs != nil {
		t.Fatal(errs)
	}
	if b, _ := os.ReadFile(filepath.Join(tr.outside, "f.txt")); string(b) != "outside" {
		t.Fatalf("the outside file was written: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(sub+".moved", "f.txt")); string(b) != "new" {
		t.Fatalf("the checked directory's file holds %q", b)
	}
	noTemps(t, tr.root, tr.outside)
}

// A file that fails after its temporary file was written (here its path became a
// directory before the rename) is reported by its index and path; its temporary file
// is gone, and every other file of the batch is written.
func TestWriteFilesFailureNamesTheFileAndLeavesNoTemp(t *testing.T) {
	tr := newTree(t)
	var files []FileWrite
	for i := range 6 {
		dir := tr.root
		if i%2 == 1 {
			dir = filepath.Join(tr.root, "d")
		}
		files = append(files, FileWrite{Path: filepath.Join(dir, fmt.Sprintf("f%d.txt", i)), Data: []byte(fmt.Sprint("new ", i)), Perm: 0o644})
	}
	os.Mkdir(filepath.Join(tr.root, "d"), 0o755)
	for _, f := range files {
		writeOS(t, f.Path, "old")
	}
	bad := files[3].Path
	beforeRenames = func() {
		os.Remove(bad)
		os.Mkdir(bad, 0o755)
		writeOS(t, filepath.Join(bad, "inside"), "x") // a rename over a non-empty directory fails
	}
	defer func() { beforeRenames = nil }()
	errs := NewHost().WriteFiles(context.Background(), files)
	if len(errs) != len(files) {
		t.Fatalf("WriteFiles = %v, want one answer per file", errs)
	}
	for i, err := range errs {
		if i == 3 {
			var pe *fs.PathError
			if !errors.As(err, &pe) || pe.Path != bad {
				t.Fatalf("file 3: %v, want an error naming %s", err, bad)
			}
			continue
		}
		if err != nil {
			t.Fatalf("file %d: %v", i, err)
		}
		if b, _ := os.ReadFile(files[i].Path); string(b) != string(files[i].Data) {
			t.Fatalf("file %d holds %q", i, b)
		}
	}
	noTemps(t, tr.root)
}

// An existing file keeps its mode and a new one gets perm, whatever the umask; a path
// given twice ends with the last bytes; a batch over more directories than one pass
// holds is written whole.
func TestWriteFilesModesDuplicatesAndPasses(t *testing.T) {
	tr := newTree(t)
	ctx := context.Background()
	kept := filepath.Join(tr.root, "kept.sh")
	writeOS(t, kept, "old")
	os.Chmod(kept, 0o751)
	fresh := filepath.Join(tr.root, "fresh.txt")
	twice := filepath.Join(tr.root, "twice.txt")
	files := []FileWrite{
		{kept, []byte("new"), 0o600},
		{fresh, []byte("fresh"), 0o666},
		{twice, []byte("first"), 0o644},
		{twice, []byte("second"), 0o600}, // created by the first entry, so its mode stays
	}
	for i := range maxBatchDirs + 20 {
		d := filepath.Join(tr.root, fmt.Sprint("d", i))
		os.Mkdir(d, 0o755)
		files = append(files, FileWrite{filepath.Join(d, "f"), []byte(fmt.Sprint(i)), 0o644})
	}
	if errs := NewHost().WriteFiles(ctx, files); errs != nil {
		t.Fatal(errs)
	}
	for _, c := range []struct {
		path string
		data string
		mode fs.FileMode
	}{{kept, "new", 0o751}, {fresh, "fresh", 0o666}, {twice, "second", 0o644}} {
		fi, err := os.Stat(c.path)
		b, _ := os.ReadFile(c.path)
		if err != nil || fi.Mode().Perm() != c.mode || string(b) != c.data {
			t.Errorf("%s: %q mode %v (%v), want %q mode %v", c.path, b, fi.Mode().Perm(), err, c.data, c.mode)
		}
	}
	for i := range maxBatchDirs + 20 {
		if b, _ := os.ReadFile(filepath.Join(tr.root, fmt.Sprint("d", i), "f")); string(b) != fmt.Sprint(i) {
			t.Fatalf("d%d/f holds %q", i, b)
		}
	}
	noTemps(t, tr.root)
}

// A cancelled ctx fails every file with its error and changes nothing.
func TestWriteFilesCancelled(t *testing.T) {
	tr := newTree(t)
	f := filepath.Join(tr.root, "f.txt")
	writeOS(t, f, "old")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	errs := NewHost().WriteFiles(ctx, []FileWrite{{f, []byte("new"), 0o644}, {filepath.Join(tr.root, "g"), nil, 0o644}})
	if len(errs) != 2 || !errors.Is(errs[0], context.Canceled) || !errors.Is(errs[1], context.Canceled) {
		t.Fatalf("WriteFiles with a cancelled ctx = %v", errs)
	}
	if b, _ := os.ReadFile(f); string(b) != "old" {
		t.Fatalf("f.txt = %q", b)
	}
	if _, err := os.Lstat(filepath.Join(tr.root, "g")); !os.IsNotExist(err) {
		t.Fatal("a cancelled batch created a file")
	}
	// Cancelled between the syncs and the renames: nothing renamed, no temporary file.
	ctx, cancel = context.WithCancel(context.Background())
	beforeRenames = cancel
	defer func() { beforeRenames = nil }()
	errs = NewHost().WriteFiles(ctx, []FileWrite{{f, []byte("new"), 0o644}})
	if len(errs) != 1 || !errors.Is(errs[0], context.Canceled) {
		t.Fatalf("WriteFiles cancelled before the renames = %v", errs)
	}
	if b, _ := os.ReadFile(f); string(b) != "old" {
		t.Fatalf("f.txt = %q", b)
	}
	noTemps(t, tr.root)
}

func TestKernelAtLeast(t *testing.T) {
	for release, want := range map[string]bool{
		"6.18.44-fc-v1147": true, "5.8.0": true, "5.8-rc1": true, "5.10.0-21-amd64": true,
		"5.7.19": false, "4.19.0": false, "": false, "x.y": false, "5": false,
	} {
		if got := kernelAtLeast(release, 5, 8); got != want {
			t.Errorf("kernelAtLeast(%q, 5, 8) = %v, want %v", release, got, want)
		}
	}
}
