package treestate_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/history/treestate"
)

// protectedNames stands in for the fence's rule: these names at any depth, and
// .config/systemd.
func protectedFunc(p string) bool {
	name := filepath.Base(p)
	switch name {
	case ".git", ".vscode", ".claude", ".envrc", ".mcp.json", ".husky":
		return true
	case "systemd":
		return filepath.Base(filepath.Dir(p)) == ".config"
	}
	return false
}

// seed is the tree every case starts from.
func seed(t *testing.T) string {
	r := root(t)
	write(t, r+"/a.txt", "a\n", 0o644)
	write(t, r+"/.envrc", "export A=1\n", 0o640)
	write(t, r+"/.vscode/settings.json", "{}\n", 0o644)
	write(t, r+"/sub/.git/HEAD", "ref: refs/heads/main\n", 0o644)
	write(t, r+"/sub/.git/config", "[core]\n", 0o644)
	write(t, r+"/.gitignore", "ignored/\n.config/\n", 0o644)
	return r
}

// snapshot is every path under r (but sub/.git's contents) with its kind and bytes.
func snapshot(t *testing.T, r string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(r, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == r {
			return nil
		}
		rel := strings.TrimPrefix(p, r+"/")
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "link:" + l
		case fi.IsDir():
			out[rel] = "dir:" + fi.Mode().Perm().String()
		default:
			b, _ := os.ReadFile(p)
			out[rel] = fi.Mode().Perm().String() + ":" + string(b)
		}
		return nil
	})
	return out
}

// A guarded Sync puts back every change in a protected entry, whatever the spelling,
// and leaves every other change to be recorded. Each case is calibrated: an unguarded
// Sync over the same change sees it.
func TestSyncGuardedPutsProtectedEntriesBack(t *testing.T) {
	cases := []struct {
		name   string
		prep   func(t *testing.T, r string) // before the first walk
		do     func(t *testing.T, r string)
		revert []string // Diff.Reverted, relative
	}{
		{name: "create a file", do: func(t *testing.T, r string) { write(t, r+"/.mcp.json", "{}", 0o644) }, revert: []string{".mcp.json"}},
		{name: "create a deep file", do: func(t *testing.T, r string) { write(t, r+"/x/y/.envrc", "evil", 0o644) }, revert: []string{"x/y/.envrc"}},
		{name: "create a directory tree", do: func(t *testing.T, r string) {
			write(t, r+"/.claude/commands/x.md", "run", 0o644)
			must(t, os.Symlink("/etc", r+"/.claude/commands/etc"))
		}, revert: []string{".claude"}},
		{name: "create an empty directory", do: func(t *testing.T, r string) { must(t, os.Mkdir(r+"/.husky", 0o755)) }, revert: []string{".husky"}},
		{name: "init a nested repository", do: func(t *testing.T, r string) {
			write(t, r+"/sub2/.git/hooks/pre-commit", "#!/bin/sh\n", 0o755)
		}, revert: []string{"sub2/.git"}},
		{name: "a hook in an existing repository", do: func(t *testing.T, r string) {
			write(t, r+"/sub/.git/hooks/pre-commit", "#!/bin/sh\n", 0o755)
		}, revert: []string{"sub/.git/hooks"}},
		{name: "a repository's config", do: func(t *testing.T, r string) {
			write(t, r+"/sub/.git/config", "[core]\n\tfsmonitor = touch /tmp/x\n", 0o644)
		}, revert: []string{"sub/.git/config"}},
		{name: "a link named .git", do: func(t *testing.T, r string) {
			must(t, os.MkdirAll(r+"/sub3", 0o755))
			must(t, os.Symlink("../sub", r+"/sub3/.git"))
		}, revert: []string{"sub3/.git"}},
		{name: "change a file", do: func(t *testing.T, r string) { write(t, r+"/.envrc", "export A=2\n", 0o755) }, revert: []string{".envrc"}},
		{name: "remove a file", do: func(t *testing.T, r string) { must(t, os.Remove(r+"/.envrc")) }, revert: []string{".envrc"}},
		{name: "replace a file by a link", do: func(t *testing.T, r string) {
			must(t, os.Remove(r+"/.envrc"))
			must(t, os.Symlink("a.txt", r+"/.envrc"))
		}, revert: []string{".envrc"}},
		{name: "rename over a file", do: func(t *testing.T, r string) {
			write(t, r+"/tmp", "export EVIL=1\n", 0o644)
			must(t, os.Rename(r+"/tmp", r+"/.envrc"))
		}, revert: []string{".envrc"}},
		{name: "add and change in a directory", do: func(t *testing.T, r string) {
			write(t, r+"/.vscode/settings.json", `{"evil":1}`, 0o644)
			write(t, r+"/.vscode/tasks.json", `{}`, 0o644)
			must(t, os.Mkdir(r+"/.vscode/d", 0o755))
		}, revert: []string{".vscode/d", ".vscode/settings.json", ".vscode/tasks.json"}},
		{name: "remove a directory", do: func(t *testing.T, r string) { must(t, os.RemoveAll(r+"/.vscode")) }, revert: []string{".vscode", ".vscode/settings.json"}},
		{name: "replace a directory by a link", do: func(t *testing.T, r string) {
			must(t, os.RemoveAll(r+"/.vscode"))
			must(t, os.Symlink("/etc", r+"/.vscode"))
		}, revert: []string{".vscode", ".vscode/settings.json"}},
		{name: "replace a directory by a link to a look-alike", do: func(t *testing.T, r string) {
			write(t, r+"/other/settings.json", "{}\n", 0o644)
			must(t, os.RemoveAll(r+"/.vscode"))
			must(t, os.Symlink("other", r+"/.vscode"))
		}, revert: []string{".vscode", ".vscode/settings.json"}},
		{name: "ignore it first", prep: func(t *testing.T, r string) {
			write(t, r+"/.gitignore", ".mcp.json\n", 0o644)
		}, do: func(t *testing.T, r string) {
			write(t, r+"/.mcp.json", "{}", 0o644)
		}, revert: []string{".mcp.json"}},
		{name: "in an ignored directory, at a spot", do: func(t *testing.T, r string) {
			write(t, r+"/.config/systemd/user/x.service", "[Service]\n", 0o644)
		}, revert: []string{".config/systemd"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, guarded := range []bool{false, true} {
				r := seed(t)
				if tc.prep != nil {
					tc.prep(t, r)
				}
				tr := treestate.New(treestate.Config{Env: env.NewHost(), Roots: []string{r}, Protected: protectedFunc, Spots: []string{".config/systemd"}})
				ctx := context.Background()
				if _, err := tr.Sync(ctx, nil); err != nil {
					t.Fatal(err)
				}
				before := snapshot(t, r)
				tc.do(t, r)
				changed := snapshot(t, r)
				if equal(changed, before) {
					t.Fatal("uncalibrated: the case changed nothing")
				}
				var recorded []string
				rec := func(_ context.Context, c treestate.Change, _ []byte) error {
					if p := strings.TrimPrefix(c.Path, r+"/"); isProtected(p) {
						recorded = append(recorded, p)
					}
					return nil
				}
				sync := tr.Sync
				if guarded {
					sync = func(ctx context.Context, rec treestate.RecordFunc) (treestate.Diff, error) {
						return tr.SyncGuarded(ctx, rec, nil)
					}
				}
				d, err := sync(ctx, rec)
				if err != nil {
					t.Fatal(err)
				}
				if !guarded {
					// Calibration: unguarded, the change is there and was seen.
					if !equal(snapshot(t, r), changed) {
						t.Fatal("an unguarded Sync changed the tree")
					}
					if len(d.Reverted) != 0 {
						t.Fatalf("an unguarded Sync reverted %v", d.Reverted)
					}
					continue
				}
				if got := rel(r, d.Reverted); !slices.Equal(got, tc.revert) {
					t.Errorf("reverted %v, want %v (unreverted %v: %v)", got, tc.revert, d.Unreverted, d.RevertErr)
				}
				// Protected paths are as before; the rest as the case left it.
				want := map[string]string{}
				for k, v := range before {
					if isProtected(k) {
						want[k] = v
					}
				}
				for k, v := range changed {
					if !isProtected(k) {
						want[k] = v
					}
				}
				if now := snapshot(t, r); !equal(now, want) {
					t.Errorf("the tree after the revert:\n%v\nwant\n%v", now, want)
				}
				if len(recorded) != 0 {
					t.Errorf("reverted changes were recorded: %v", recorded)
				}
				// The cache moved on to the tree as it is: the next walk finds nothing.
				d, err = tr.SyncGuarded(ctx, rec, nil)
				if err != nil || len(d.Changes) != 0 || len(d.Reverted) != 0 {
					t.Errorf("the walk after the revert: %+v, %v", d, err)
				}
			}
		})
	}
}

// A change outside protected entries is recorded, not reverted, and a guarded Sync lists
// the protected entries there are, for the sandbox to keep read-only.
func TestSyncGuardedRecordsTheRest(t *testing.T) {
	r := seed(t)
	tr := treestate.New(treestate.Config{Env: env.NewHost(), Roots: []string{r}, Protected: protectedFunc})
	ctx := context.Background()
	d, err := tr.Sync(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var tops []string
	for _, e := range d.Protected {
		tops = append(tops, strings.TrimPrefix(e.Path, r+"/"))
	}
	if want := []string{".envrc", ".vscode", "sub/.git"}; !slices.Equal(tops, want) {
		t.Errorf("protected entries %v, want %v", tops, want)
	}
	write(t, r+"/a.txt", "changed\n", 0o644)
	write(t, r+"/.mcp.json", "{}", 0o644)
	var recorded []string
	d, err = tr.SyncGuarded(ctx, func(_ context.Context, c treestate.Change, _ []byte) error {
		recorded = append(recorded, strings.TrimPrefix(c.Path, r+"/"))
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(recorded, []string{"a.txt"}) || !slices.Equal(rel(r, d.Reverted), []string{".mcp.json"}) {
		t.Errorf("recorded %v, reverted %v", recorded, d.Reverted)
	}
}

// Without file history the walk keeps the bytes of protected files only, and still puts
// them back; other changes are not reported.
func TestProtectedOnly(t *testing.T) {
	r := seed(t)
	tr := treestate.New(treestate.Config{Env: env.NewHost(), Roots: []string{r}, Protected: protectedFunc, ProtectedOnly: true})
	ctx := context.Background()
	if _, err := tr.Sync(ctx, nil); err != nil {
		t.Fatal(err)
	}
	write(t, r+"/a.txt", "changed\n", 0o644)
	write(t, r+"/.envrc", "evil\n", 0o644)
	d, err := tr.SyncGuarded(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Changes) != 0 || !slices.Equal(rel(r, d.Reverted), []string{".envrc"}) {
		t.Errorf("changes %+v, reverted %v", d.Changes, d.Reverted)
	}
	if b, _ := os.ReadFile(r + "/.envrc"); string(b) != "export A=1\n" {
		t.Errorf(".envrc after: %q", b)
	}
}

// The walk reports regular files with more than one hard link.
func TestSyncReportsHardLinks(t *testing.T) {
	r := seed(t)
	outside := t.TempDir() + "/secret"
	write(t, outside, "secret\n", 0o600)
	must(t, os.Link(outside, r+"/linked"))
	d, err := treestate.New(treestate.Config{Env: env.NewHost(), Roots: []string{r}}).Sync(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rel(r, d.Linked), []string{"linked"}) {
		t.Errorf("linked %v", d.Linked)
	}
}

// isProtected reports whether a relative path has a protected component.
func isProtected(rel string) bool {
	for p := rel; p != "." && p != "/"; p = filepath.Dir(p) {
		if protectedFunc("/r/" + p) {
			return true
		}
	}
	return false
}

func rel(r string, ps []string) []string {
	var out []string
	for _, p := range ps {
		out = append(out, strings.TrimPrefix(p, r+"/"))
	}
	return out
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A removed .git directory cannot be restored (its store is never kept), and is said so;
// its config and hooks are not made again alone, which would leave a broken repository.
func TestSyncGuardedCannotRestoreARepository(t *testing.T) {
	r := seed(t)
	write(t, r+"/sub/.git/hooks/pre-push", "#!/bin/sh\n", 0o755)
	tr := treestate.New(treestate.Config{Env: env.NewHost(), Roots: []string{r}, Protected: protectedFunc})
	ctx := context.Background()
	if _, err := tr.Sync(ctx, nil); err != nil {
		t.Fatal(err)
	}
	must(t, os.RemoveAll(r+"/sub/.git"))
	var recorded []string
	d, err := tr.SyncGuarded(ctx, func(_ context.Context, c treestate.Change, _ []byte) error {
		recorded = append(recorded, c.Path)
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rel(r, d.Unreverted), []string{"sub/.git"}) || d.RevertErr == nil || len(d.Reverted) != 0 {
		t.Errorf("unreverted %v (%v), reverted %v", d.Unreverted, d.RevertErr, d.Reverted)
	}
	if _, err := os.Lstat(r + "/sub/.git"); !os.IsNotExist(err) {
		t.Errorf("sub/.git was made again in part: %v", err)
	}
	if len(recorded) != 0 {
		t.Errorf("parts of a .git directory were handed to file history: %v", recorded)
	}
}

// What keep names stands, and is recorded: a protected write a person approved.
func TestSyncGuardedKeeps(t *testing.T) {
	r := seed(t)
	tr := treestate.New(treestate.Config{Env: env.NewHost(), Roots: []string{r}, Protected: protectedFunc})
	ctx := context.Background()
	if _, err := tr.Sync(ctx, nil); err != nil {
		t.Fatal(err)
	}
	write(t, r+"/.vscode/settings.json", `{"mine":1}`, 0o644)
	write(t, r+"/.mcp.json", "{}", 0o644)
	var recorded []string
	d, err := tr.SyncGuarded(ctx, func(_ context.Context, c treestate.Change, _ []byte) error {
		recorded = append(recorded, strings.TrimPrefix(c.Path, r+"/"))
		return nil
	}, func(p string) bool { return p == r+"/.vscode/settings.json" })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(recorded, []string{".vscode/settings.json"}) || !slices.Equal(rel(r, d.Reverted), []string{".mcp.json"}) {
		t.Errorf("recorded %v, reverted %v", recorded, rel(r, d.Reverted))
	}
}

// A protected entry the walk may not enter (a credential store: Skip) is still seen when
// it is created, and removed, without its bytes being read.
func TestSyncGuardedRemovesASkippedCreation(t *testing.T) {
	r := seed(t)
	skip := func(p string) bool { return filepath.Base(p) == ".ssh" }
	prot := func(p string) bool { return protectedFunc(p) || filepath.Base(p) == ".ssh" }
	tr := treestate.New(treestate.Config{Env: env.NewHost(), Roots: []string{r}, Protected: prot, Skip: skip})
	ctx := context.Background()
	if _, err := tr.Sync(ctx, nil); err != nil {
		t.Fatal(err)
	}
	write(t, r+"/.ssh/authorized_keys", "ssh-ed25519 AAAA evil\n", 0o600)
	var recorded []string
	d, err := tr.SyncGuarded(ctx, func(_ context.Context, c treestate.Change, _ []byte) error {
		recorded = append(recorded, c.Path)
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rel(r, d.Reverted), []string{".ssh"}) || len(recorded) != 0 {
		t.Errorf("reverted %v, recorded %v", rel(r, d.Reverted), recorded)
	}
	if _, err := os.Lstat(r + "/.ssh"); !os.IsNotExist(err) {
		t.Errorf(".ssh is still there: %v", err)
	}
}
