package treestate_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/history/treestate"
)

type rec struct {
	c    treestate.Change
	data []byte
}

func collect(t *testing.T, tr *treestate.Tree) (treestate.Diff, map[string]rec) {
	t.Helper()
	got := map[string]rec{}
	d, err := tr.Sync(context.Background(), func(_ context.Context, c treestate.Change, b []byte) error {
		got[c.Path] = rec{c, b}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return d, got
}

func write(t *testing.T, p, s string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func root(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSyncReportsCreateChangeDeleteAndMode(t *testing.T) {
	for _, stage := range []string{"memory", "disk"} {
		t.Run(stage, func(t *testing.T) {
			r := root(t)
			write(t, r+"/keep.txt", "keep\n", 0o644)
			write(t, r+"/edit.txt", "before\n", 0o644)
			write(t, r+"/gone.txt", "gone\n", 0o600)
			write(t, r+"/run.sh", "echo\n", 0o644)
			cfg := treestate.Config{Env: env.NewHost(), Roots: []string{r}}
			if stage == "disk" {
				cfg.StageDir = t.TempDir() + "/stage"
			}
			tr := treestate.New(cfg)
			if d, got := collect(t, tr); len(got) != 0 || d.Files != 4 {
				t.Fatalf("first sync: %d changes, %d files; want 0 and 4", len(got), d.Files)
			}
			write(t, r+"/edit.txt", "after\n", 0o644)
			write(t, r+"/sub/new.txt", "new\n", 0o644)
			if err := os.Remove(r + "/gone.txt"); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(r+"/run.sh", 0o755); err != nil {
				t.Fatal(err)
			}
			_, got := collect(t, tr)
			var paths []string
			for p := range got {
				paths = append(paths, strings.TrimPrefix(p, r))
			}
			slices.Sort(paths)
			if want := []string{"/edit.txt", "/gone.txt", "/run.sh", "/sub/new.txt"}; !slices.Equal(paths, want) {
				t.Fatalf("changes %v, want %v", paths, want)
			}
			if e := got[r+"/edit.txt"]; !e.c.Existed || string(e.data) != "before\n" || e.c.Mode != 0o644 {
				t.Errorf("edit.txt pre-image %+v %q", e.c, e.data)
			}
			if e := got[r+"/gone.txt"]; !e.c.Existed || string(e.data) != "gone\n" || e.c.Mode != 0o600 {
				t.Errorf("gone.txt pre-image %+v %q", e.c, e.data)
			}
			if e := got[r+"/run.sh"]; !e.c.Existed || string(e.data) != "echo\n" || e.c.Mode != 0o644 {
				t.Errorf("run.sh pre-image %+v %q", e.c, e.data)
			}
			if e := got[r+"/sub/new.txt"]; e.c.Existed || e.data != nil {
				t.Errorf("new.txt pre-image %+v", e.c)
			}
			// Nothing changed since: nothing is reported, and a touch alone is no change.
			if err := os.Chtimes(r+"/keep.txt", time.Now(), time.Now()); err != nil {
				t.Fatal(err)
			}
			if _, got := collect(t, tr); len(got) != 0 {
				t.Fatalf("a quiet sync reported %v", got)
			}
			// The bytes of the change are now the pre-image of the next one.
			write(t, r+"/edit.txt", "again\n", 0o644)
			if _, got := collect(t, tr); string(got[r+"/edit.txt"].data) != "after\n" {
				t.Fatalf("second change's pre-image %q", got[r+"/edit.txt"].data)
			}
		})
	}
}

func TestSyncCatchesASameSizeRewriteInTheSameTick(t *testing.T) {
	r := root(t)
	write(t, r+"/f", "aaaa", 0o644)
	tr := treestate.New(treestate.Config{Env: env.NewHost(), Roots: []string{r}})
	collect(t, tr)
	fi, _ := os.Stat(r + "/f")
	write(t, r+"/f", "bbbb", 0o644)
	if err := os.Chtimes(r+"/f", fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if _, got := collect(t, tr); string(got[r+"/f"].data) != "aaaa" {
		t.Fatalf("a rewrite keeping size and mtime was missed: %v", got)
	}
}

func TestSyncListsWhatItCannotCover(t *testing.T) {
	r := root(t)
	write(t, r+"/big.bin", strings.Repeat("x", 100), 0o644)
	write(t, r+"/small.txt", "s", 0o644)
	tr := treestate.New(treestate.Config{Env: env.NewHost(), Roots: []string{r}, MaxFileSize: 10})
	d, _ := collect(t, tr)
	if !slices.Equal(d.Oversize, []string{r + "/big.bin"}) {
		t.Fatalf("oversize %v", d.Oversize)
	}
	write(t, r+"/big.bin", strings.Repeat("y", 101), 0o644)
	_, got := collect(t, tr)
	if c := got[r+"/big.bin"].c; !c.Existed || !c.Unrecoverable || c.Sum != "" {
		t.Fatalf("a change of a file over the cap: %+v, want it listed unrecoverable", c)
	}

	r2 := root(t)
	for i := range 5 {
		write(t, filepath.Join(r2, "d", string(rune('a'+i))), "x", 0o644)
	}
	write(t, r2+"/e/z", "x", 0o644)
	tr2 := treestate.New(treestate.Config{Env: env.NewHost(), Roots: []string{r2}, MaxFiles: 3})
	d2, _ := collect(t, tr2)
	if d2.Files != 3 || len(d2.Beyond) != 3 || !slices.Contains(d2.Beyond, r2+"/e/") {
		t.Fatalf("files %d, beyond %v", d2.Files, d2.Beyond)
	}
}

func TestSyncSkipsIgnoredGitDeniedAndLinks(t *testing.T) {
	r := root(t)
	outside := root(t)
	write(t, outside+"/secret.txt", "outside\n", 0o644)
	write(t, r+"/.gitignore", "build/\n*.log\n", 0o644)
	write(t, r+"/build/out.o", "o", 0o644)
	write(t, r+"/x.log", "l", 0o644)
	write(t, r+"/.git/config", "c", 0o644)
	write(t, r+"/.git/info/exclude", "local.tmp\n", 0o644)
	write(t, r+"/local.tmp", "t", 0o644)
	write(t, r+"/denied/key", "k", 0o644)
	write(t, r+"/src/a.go", "a", 0o644)
	if err := os.Symlink(outside, r+"/link"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside+"/secret.txt", r+"/filelink"); err != nil {
		t.Fatal(err)
	}
	tr := treestate.New(treestate.Config{Env: env.NewHost(), Roots: []string{r},
		Skip: func(p string) bool { return p == r+"/denied" }})
	d, _ := collect(t, tr)
	if d.Files != 2 { // .gitignore and src/a.go
		t.Fatalf("walked %d files, want 2 (.gitignore, src/a.go)", d.Files)
	}
	for _, p := range []string{r + "/build/out.o", r + "/x.log", r + "/.git/config", r + "/local.tmp", r + "/denied/key", outside + "/secret.txt"} {
		if err := os.WriteFile(p, []byte("changed"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, got := collect(t, tr); len(got) != 0 {
		t.Fatalf("changes outside the walk were reported: %v", got)
	}
	// A file newly ignored is not reported deleted: it is still there.
	write(t, r+"/.gitignore", "build/\n*.log\nsrc/\n", 0o644)
	_, got := collect(t, tr)
	if _, ok := got[r+"/src/a.go"]; ok || len(got) != 1 {
		t.Fatalf("changes %v, want only .gitignore", got)
	}
}

// A file written where a symbolic link stood (sed -i on a link replaces it with a file)
// is not a file created from nothing: a rewind that deleted it would neither restore the
// link nor keep the bytes. It is reported as a change whose earlier state cannot be put
// back (Existed, Unrecoverable), which file history records as lost. A file created where
// nothing stood is still new. Calibrated: before links were noted, it was reported new,
// and a rewind deleted it and called that done.
func TestSyncReportsAFileReplacingALink(t *testing.T) {
	r := root(t)
	write(t, r+"/configs/dev.yml", "mode: a\n", 0o644)
	if err := os.Symlink("configs/dev.yml", r+"/config.yml"); err != nil {
		t.Fatal(err)
	}
	tr := treestate.New(treestate.Config{Env: env.NewHost(), Roots: []string{r}})
	collect(t, tr)
	if err := os.Remove(r + "/config.yml"); err != nil {
		t.Fatal(err)
	}
	write(t, r+"/config.yml", "mode: b\n", 0o644)
	write(t, r+"/fresh.txt", "new\n", 0o644)
	_, got := collect(t, tr)
	if c, ok := got[r+"/config.yml"]; !ok || !c.c.Existed || !c.c.Unrecoverable {
		t.Errorf("the file that replaced a link: %+v (reported %v), want Existed and Unrecoverable", c.c, ok)
	}
	if c, ok := got[r+"/fresh.txt"]; !ok || c.c.Existed || c.c.Unrecoverable {
		t.Errorf("a file created where nothing stood: %+v (reported %v), want new", c.c, ok)
	}
}
