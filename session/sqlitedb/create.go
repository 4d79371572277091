package sqlitedb

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// create makes the database file abs, absent until now, whole: image, or else an empty
// SQLite database (one page), is written under a temporary name beside it, synced, and
// linked into place.
// A crash at any point leaves either no file at abs or a complete one, so a file of zero
// bytes at abs is never one sema is still creating: CheckFile can refuse it as damage.
// Another process creating the same file at the same moment wins or loses the link
// whole, and the loser opens the winner's file. won reports that the file placed is
// this call's.
func create(abs string, image []byte) (won bool, err error) {
	var suffix [6]byte
	rand.Read(suffix[:])
	tmp := fmt.Sprintf("%s%s%d-%s", abs, creating, os.Getpid(), hex.EncodeToString(suffix[:]))
	// Nothing of a failed creation stays beside the database: the temporary file, and
	// the -wal and -shm SQLite leaves when it cannot finish (a full disk).
	defer os.Remove(tmp)
	defer os.Remove(tmp + "-wal")
	defer os.Remove(tmp + "-shm")
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return false, err
	}
	if len(image) > 0 {
		_, err := f.Write(image)
		if serr := f.Sync(); err == nil {
			err = serr
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return false, fmt.Errorf("create database %s: %w", abs, err)
		}
		return place(tmp, abs)
	}
	f.Close()
	// Setting user_version writes the header page, which is what makes an empty file a
	// database. The file is born in WAL mode, the mode Open keeps it in: turning a placed
	// file from rollback to WAL would be one more write transaction on it, whose journal
	// a kill could leave hot for a reader that may not roll it back. Closing the one
	// connection checkpoints the -wal into the file and removes both -wal and -shm.
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: tmp}).EscapedPath()+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)")
	if err != nil {
		return false, err
	}
	_, err = db.Exec(`PRAGMA user_version = 0`)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, fmt.Errorf("create database %s: %w", abs, err)
	}
	if err := syncFile(tmp); err != nil {
		return false, err
	}
	return place(tmp, abs)
}

// place links the complete, synced file tmp in at abs, unless a file is there already.
func place(tmp, abs string) (won bool, err error) {
	// A link, not a rename: a rename would replace a file another process placed (and
	// may have written sessions to) in the meantime.
	if err := os.Link(tmp, abs); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		// A file system without hard links: a rename, when nothing has been placed in
		// the meantime, is still whole; only the moment between the look and the
		// rename is open to a race.
		if _, serr := os.Lstat(abs); !errors.Is(serr, fs.ErrNotExist) {
			return false, nil
		}
		if err := os.Rename(tmp, abs); err != nil {
			return false, err
		}
	}
	return true, syncFile(filepath.Dir(abs))
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// creating marks the temporary files of create, followed by the creator's process id.
const creating = ".creating-"

// removeStale removes what creations of abs killed before they finished left beside it
// (see create): the temporary files of processes that are gone. One of a process still
// running may be a creation under way, and is left.
func removeStale(abs string) {
	names, _ := filepath.Glob(abs + creating + "*")
	for _, name := range names {
		base := strings.TrimSuffix(strings.TrimSuffix(name, "-wal"), "-shm")
		pidText, _, ok := strings.Cut(strings.TrimPrefix(base, abs+creating), "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || processAlive(pid) {
			continue
		}
		os.Remove(base + "-wal")
		os.Remove(base + "-shm")
		os.Remove(base)
	}
}
