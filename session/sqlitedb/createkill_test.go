package sqlitedb_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sema-agent/sema/session/sqlitedb"
)

// createLoop, in a child process (SQLITEDB_CREATE_LOOP names a directory), creates new
// stores one after another, each in a directory of its own, until it is killed.
func init() {
	dir := os.Getenv("SQLITEDB_CREATE_LOOP")
	if dir == "" {
		return
	}
	s := sqlitedb.Schema{Component: "c", Steps: []string{`CREATE TABLE t (x INTEGER)`}}
	for i := 0; ; i++ {
		sub := filepath.Join(dir, fmt.Sprintf("%d-%d", os.Getpid(), i))
		os.Mkdir(sub, 0o700)
		db, err := sqlitedb.OpenAttached(context.Background(), filepath.Join(sub, "s.db"), sqlitedb.Options{}, s)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		sqlitedb.Close(db)
		if i == 0 {
			// The parent times its kill from here, not from the start of the process,
			// whose start-up alone can outlast a short sleep on a loaded machine.
			os.Stdout.WriteString("created\n")
		}
	}
}

// kill -9 at random moments while stores are being created: no file at a store's path
// is ever left empty (which the next open would take for damage), and what the killed
// creations left beside the paths is removed by the next open of each path.
func TestCreateKilledLeavesNoEmptyFile(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes for a few seconds")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 1))
	for range 20 {
		cmd, out := sqlitedb.StartChild(t, "SQLITEDB_CREATE_LOOP="+dir)
		// Wait for the first store, then kill at a random moment in the creations after it.
		if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "created\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the creating process did not report its first store: %q, %v", line, err)
		}
		time.Sleep(time.Duration(5+rng.IntN(60)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		sqlitedb.WaitKilled(t, cmd, "the creating process")
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "*", "s.db"))
	if len(paths) < 20 {
		t.Fatalf("only %d stores created: the kills did not land during creation", len(paths))
	}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() == 0 {
			t.Errorf("%s is empty after a kill", p)
		} else if err := sqlitedb.CheckFile(p, 0); err != nil {
			t.Errorf("%s after a kill: %v", p, err)
		}
	}
	// Each killed creation's files, found again by the next open of its path, are
	// removed; the store is then created (or opened) as if nothing had happened.
	left, _ := filepath.Glob(filepath.Join(dir, "*", "s.db.creating-*"))
	subs, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, sub := range subs {
		db, err := sqlitedb.Open(filepath.Join(sub, "s.db"), sqlitedb.Options{})
		if err != nil {
			t.Fatalf("opening %s after the kills: %v", sub, err)
		}
		sqlitedb.Close(db)
	}
	if after, _ := filepath.Glob(filepath.Join(dir, "*", "s.db.creating-*")); len(after) > 0 {
		t.Errorf("left beside the stores after every path was opened again: %v", after)
	}
	t.Logf("%d stores created across 20 kills; %d files of killed creations removed", len(paths), len(left))
}
