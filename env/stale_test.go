package env_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sema-agent/sema/env"
)

func TestCleanStaleTempsRemovesOnlyOldTempsOfAtomicWrites(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-2 * time.Hour)
	stamp := func(at time.Time) string { return strconv.FormatInt(at.UnixNano(), 36) }
	mk := func(rel string, mtime time.Time) string {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gone := []string{
		mk(".main.go.sema-"+stamp(old)+"-1.tmp", old),
		mk("sub/dir/.a b.txt.sema-"+stamp(old)+"-2z.tmp", old),
	}
	kept := []string{
		mk(".fresh.go.sema-"+stamp(time.Now())+"-3.tmp", time.Now()), // may be a write in flight
		mk(".touched.go.sema-"+stamp(old)+"-4.tmp", time.Now()),      // written to a moment ago
		mk(".young.go.sema-"+stamp(time.Now())+"-5.tmp", old),        // its name says it is new
		mk("main.go.sema-"+stamp(old)+"-6.tmp", old),                 // not hidden: not ours
		mk(".main.go.sema-"+stamp(old)+"-7.tmp.bak", old),            // other suffix
		mk(".main.go.sema-"+stamp(old)+".tmp", old),                  // no sequence number
		mk(".main.go.sema-XYZ-1.tmp", old),                           // not base 36 lower case
		mk(".main.go.tmp", old),
		mk("ordinary.txt", old),
	}
	dirLike := filepath.Join(root, ".d.sema-"+stamp(old)+"-8.tmp")
	if err := os.Mkdir(dirLike, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, ".l.sema-"+stamp(old)+"-9.tmp")
	if err := os.Symlink(kept[0], link); err != nil {
		t.Fatal(err)
	}
	kept = append(kept, dirLike, link)

	got := env.CleanStaleTemps(context.Background(), root)
	slices.Sort(got)
	slices.Sort(gone)
	if !slices.Equal(got, gone) {
		t.Fatalf("removed %q, want %q", got, gone)
	}
	for _, p := range gone {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there", p)
		}
	}
	for _, p := range kept {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}
