package sqlitedb

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// SQLite's shared lock on a database file: a read lock on SHARED_SIZE bytes from
// SHARED_FIRST (sqlite3.c's os_unix locking), which every connection in WAL mode keeps.
const (
	sharedFirst = 0x40000002
	sharedSize  = 510
)

// sharedLockHeld reports whether this process holds SQLite's shared lock on db's file.
// An open file description's lock conflicts with a process's record lock even in that
// process, so asking, through the descriptor held for the file, whether a write lock
// could be had tells.
func sharedLockHeld(t *testing.T, db *sql.DB) bool {
	t.Helper()
	h := handlesOf(db)[0]
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: sharedFirst, Len: sharedSize}
	if err := unix.FcntlFlock(h.file.f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		t.Skipf("F_OFD_GETLK: %v: this kernel cannot show the process's locks", err)
	}
	return lk.Type == unix.F_RDLCK
}

// Nothing this package does to a database file in a process drops the locks that
// process's connections hold on it: closing any descriptor of the file would (POSIX
// record locks), and then another process closing its last connection takes itself for
// the last user, checkpoints and deletes the log this one still commits to. A sequence
// of every step that reads, syncs or opens the file beside open connections: a
// checkpoint (which syncs the file), the check a command runs before it opens a file
// (CheckFile), a second Open of the same file and its Close, OpenAttached and its Close.
// Calibrated: with any one of them closing a descriptor of its own, the lock is gone
// after it.
func TestConnectionsKeepTheirLocksOnTheFile(t *testing.T) {
	checkpointSettings(t, 16)
	path := filepath.Join(t.TempDir(), "l.db")
	// Attached, so that the file is a store's, which CheckFile accepts.
	db, err := OpenAttached(context.Background(), path, Options{}, Schema{Component: "rows", Steps: []string{rowsTable}})
	if err != nil {
		t.Fatal(err)
	}
	defer Close(db)
	put := txWriter(db)
	if err := put("a", []byte{1}); err != nil {
		t.Fatal(err)
	}
	if !sharedLockHeld(t, db) {
		t.Fatal("no shared lock on the file with a connection open: the probe reads nothing")
	}
	steps := []struct {
		name string
		do   func() error
	}{
		{"a checkpoint beside the writers", func() error { checkpointNow(t, db); return nil }},
		{"CheckFile", func() error { return CheckFile(path, Options{}.busyTimeout()) }},
		{"a second Open of the file, then its Close", func() error {
			other, err := Open(path, Options{})
			if err != nil {
				return err
			}
			if err := Tx(context.Background(), other, func(q Querier) error {
				_, err := q.ExecContext(context.Background(), insertRow, "b", []byte{2})
				return err
			}); err != nil {
				return err
			}
			return Close(other)
		}},
		{"OpenAttached, then its Close", func() error {
			other, err := OpenAttached(context.Background(), path, Options{}, Schema{Component: "held", Steps: []string{`CREATE TABLE held (x)`}})
			if err != nil {
				return err
			}
			return Close(other)
		}},
		{"steady commits with checkpoints", func() error {
			for i := range 64 {
				if err := put("c"+string(rune('a'+i%26))+string(rune('a'+i/26)), []byte{3}); err != nil {
					return err
				}
			}
			return nil
		}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if !sharedLockHeld(t, db) {
			t.Fatalf("after %s the process holds no lock on the file its connection still has open", s.name)
		}
	}
	checkRowsAtLeast(t, db, 1+1+64)
}

// The harm the locks prevent: another program's connection (the sqlite3 shell, a backup
// tool), closing while this process still has the file open, leaves the log alone, and
// this process's next commit is one every reader finds. Calibrated: with one step that
// closes a descriptor of the file (the checkpoint's sync as it was), the shell
// checkpoints and removes the log as it closes, and the commit made after goes to the
// unlinked log: no other reader sees it, and a kill of this process would lose it.
func TestAnotherProgramLeavesTheLogOfThisOne(t *testing.T) {
	shell, err := exec.LookPath("sqlite3")
	if err != nil {
		if os.Getenv("SEMA_CI") != "" {
			t.Fatalf("SEMA_CI is set and the sqlite3 shell is missing: .ci/run installs it (%v)", err)
		}
		t.Skip("the sqlite3 shell is not installed (apt-get install sqlite3): no other program to close beside this one")
	}
	checkpointSettings(t, 16)
	path := filepath.Join(t.TempDir(), "l.db")
	db, err := OpenAttached(context.Background(), path, Options{}, Schema{Component: "rows", Steps: []string{rowsTable}})
	if err != nil {
		t.Fatal(err)
	}
	put := txWriter(db)
	if err := put("a", []byte{1}); err != nil {
		t.Fatal(err)
	}
	checkpointNow(t, db)
	if err := CheckFile(path, Options{}.busyTimeout()); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(shell, path, "SELECT count(*) FROM w;").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "1" {
		t.Fatalf("the sqlite3 shell: %v, %q; want the one row", err, out)
	}
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Errorf("the other program removed the log this process has open: %v", err)
	}
	if err := put("b", []byte{2}); err != nil {
		t.Fatal(err)
	}
	// Committed is committed for every reader, not only this process: were the log gone,
	// the commit would sit in an unlinked file, and be lost with this process.
	if out, err := exec.Command(shell, path, "SELECT count(*) FROM w WHERE id = 'b';").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "1" {
		t.Errorf("another program reading after this process committed: %v, %q; want the row", err, out)
	}
	if err := Close(db); err != nil {
		t.Fatal(err)
	}
}
