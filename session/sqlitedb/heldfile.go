package sqlitedb

import (
	"os"
	"sync"
)

// POSIX record locks belong to a process and a file, not to a descriptor: closing any
// descriptor of a file drops every lock the process holds on it. SQLite keeps a shared
// lock on a database file for as long as a connection has it open — in WAL mode that
// lock is what tells another process this one still uses the log — and it cannot know
// that a descriptor other code opened on the same file was closed. Its lock is then
// gone: another process that closes its last connection believes it is the last user,
// checkpoints, and deletes the log this process still appends to, whose next commits go
// to an unlinked file and are lost.
//
// So this package never closes a descriptor of a database file while a connection of
// this process may have it open. Each file it opens connections on (Open's, CheckFile's
// check) is held: a descriptor opened before the first connection and closed only after
// the last one is gone, across every Open of the file in the process. What the package
// reads or syncs of the file itself goes through that descriptor. (SQLite's own
// connections are safe among themselves: its file layer keeps a closed connection's
// descriptor open while another connection of the process holds a lock.)

// heldFile is one database file held open; see hold.
type heldFile struct {
	f        *os.File
	info     os.FileInfo
	writeErr error // why f could not be opened for writing (nil: it was)
	refs     int
	// more are descriptors of the same file that holds opened before they found it held
	// (it was placed under its name in the meantime): closing them would drop the locks
	// too, so they close with f.
	more []*os.File
}

// held are the files held, at most one entry per file.
var held struct {
	sync.Mutex
	files []*heldFile
}

// hold holds the file at abs until a matching release, opening it when this process
// does not hold it yet: for reading and writing, else for reading only. writeErr says why
// it could not be opened for writing (nil: it could).
func hold(abs string) (h *heldFile, writeErr error, err error) {
	held.Lock()
	defer held.Unlock()
	if info, err := os.Stat(abs); err == nil {
		if h := heldAs(info); h != nil {
			h.refs++
			return h, h.writeErr, nil
		}
	}
	f, err := os.OpenFile(abs, os.O_RDWR, 0)
	if err != nil {
		writeErr = err
		if f, err = os.Open(abs); err != nil {
			return nil, writeErr, err
		}
	}
	info, err := f.Stat()
	if err != nil {
		// Which file this is cannot be told, so closing f could drop another holder's
		// locks: it is left open, one descriptor for the life of the process.
		return nil, writeErr, err
	}
	if h := heldAs(info); h != nil {
		h.refs++
		h.more = append(h.more, f)
		return h, writeErr, nil
	}
	h = &heldFile{f: f, info: info, writeErr: writeErr, refs: 1}
	held.files = append(held.files, h)
	return h, writeErr, nil
}

// heldAs is the hold of the file info describes (nil: none). held must be locked.
func heldAs(info os.FileInfo) *heldFile {
	for _, h := range held.files {
		if os.SameFile(h.info, info) {
			return h
		}
	}
	return nil
}

// release ends one hold of h (nil: none); the last closes its descriptors. Call it only
// once every connection the hold covered is closed.
func (h *heldFile) release() {
	if h == nil {
		return
	}
	held.Lock()
	defer held.Unlock()
	if h.refs--; h.refs > 0 {
		return
	}
	for i, o := range held.files {
		if o == h {
			held.files = append(held.files[:i], held.files[i+1:]...)
			break
		}
	}
	for _, f := range h.more {
		f.Close()
	}
	h.f.Close()
}
