package treestate

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// A durable Tree (Config.Durable) keeps its stage so that it outlives the process: what
// a command changed can be recorded after the process that ran it died (kill -9, a
// terminal closed, the machine's power). Before a command runs, Arm makes every staged
// pre-image durable and writes the index that names them, with a mark that a command
// is in flight; after the command's changes are recorded, Disarm removes the mark. A
// stage found armed by a later process is a command's record left incomplete: Recover
// walks the roots against the persisted index and hands every change to its RecordFunc
// with the pre-image the stage kept.
//
// The files of a durable stage, beside the pre-images (one file per sha256):
const (
	indexFile = "index" // the snapshot at the last Arm (gob of journalIndex)
	markFile  = "mark"  // says whether a command is in flight (see the mark's layout)
)

// The mark is one small record rewritten in place, so arming costs one fdatasync and no
// change to the directory (after the first): magic (8 bytes), the in-flight byte, the
// index generation (8, big-endian), the meta's length (4), a CRC-32 of all but the
// in-flight byte (4), the meta. Disarm rewrites the in-flight byte alone, which cannot
// tear. A record whose CRC does not match was cut by a crash during Arm — before any
// command started — and is read as in flight with no meta: recovering then records
// nothing the command did not do.
const (
	markMagic  = "SEMAMRK1"
	markFlagAt = len(markMagic)
	markHead   = markFlagAt + 1 + 8 + 4 + 4
)

// fsyncEach is how many new pre-images Arm fsyncs one by one; above it, one syncfs of
// the stage's file system is cheaper than a call per file (the first Arm of a leg stages
// the whole tree).
const fsyncEach = 32

// journalIndex is the persisted snapshot: the stat cache and what the walk was told to
// leave out, so a walk by another process, which has none of the caller's Skip, leaves
// out the same.
type journalIndex struct {
	Roots   []string
	Entries []journalEntry
	// Skipped are the paths Skip refused in the walk.
	Skipped []string
}

type journalEntry struct {
	Path  string
	Size  int64
	Mtime int64
	Dev   uint64
	Ino   uint64
	Mode  uint32
	Sum   string
	Racy  bool
	Prot  bool
	Nlink uint64
}

// journalArmed is the mark's content.
type journalArmed struct {
	// Meta is the caller's, handed back by Recover; nil when the record was torn.
	Meta []byte
}

func encodeMark(gen uint64, meta []byte) []byte {
	b := make([]byte, markHead, markHead+len(meta))
	copy(b, markMagic)
	b[markFlagAt] = 1
	binary.BigEndian.PutUint64(b[markFlagAt+1:], gen)
	binary.BigEndian.PutUint32(b[markFlagAt+9:], uint32(len(meta)))
	b = append(b, meta...)
	binary.BigEndian.PutUint32(b[markFlagAt+13:], markSum(b))
	return b
}

// markSum is the CRC-32 of a mark record but its in-flight byte and its own four bytes.
func markSum(b []byte) uint32 {
	h := crc32.NewIEEE()
	h.Write(b[:markFlagAt])
	h.Write(b[markFlagAt+1 : markFlagAt+13])
	h.Write(b[markHead:])
	return h.Sum32()
}

// Arm makes the stage durable and marks a command in flight: every pre-image the index
// names is on disk, fsynced, with the index itself and meta (the caller's, returned by
// Recover). It is for a durable Tree that has walked (Primed); an error means the mark
// may not be there, and the command should not run as if it were.
func (t *Tree) Arm(meta []byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.cfg.Durable || t.cfg.StageDir == "" {
		return errors.New("treestate: Arm needs a durable stage (Config.Durable with a StageDir)")
	}
	if !t.primed {
		return errors.New("treestate: Arm before the first walk")
	}
	if err := os.MkdirAll(t.cfg.StageDir, 0o700); err != nil {
		return fmt.Errorf("treestate: making the stage: %w", err)
	}
	if err := syncStaged(t.cfg.StageDir, t.unsynced); err != nil {
		return err
	}
	t.unsynced = nil
	if t.savedGen != t.gen || !t.saved {
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(t.journalIndexLocked()); err != nil {
			return fmt.Errorf("treestate: encoding the index: %w", err)
		}
		if err := writeDurable(t.cfg.StageDir, indexFile, buf.Bytes()); err != nil {
			return err
		}
		t.savedGen, t.saved = t.gen, true
	}
	if err := t.writeMarkLocked(encodeMark(t.gen, meta)); err != nil {
		return err
	}
	t.armed = true
	// Pre-images the persisted index no longer names may go now.
	t.dropDoomedLocked()
	return nil
}

// writeMarkLocked writes the mark record in place and fdatasyncs it; the first write
// creates the file and fsyncs the directory that holds it.
func (t *Tree) writeMarkLocked(rec []byte) error {
	if t.mark == nil {
		f, err := os.OpenFile(filepath.Join(t.cfg.StageDir, markFile), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("treestate: writing the in-flight mark: %w", err)
		}
		if err := syncDir(t.cfg.StageDir); err != nil {
			f.Close()
			return err
		}
		t.mark = f
	}
	if _, err := t.mark.WriteAt(rec, 0); err != nil {
		return fmt.Errorf("treestate: writing the in-flight mark: %w", err)
	}
	if err := dataSync(t.mark); err != nil {
		return fmt.Errorf("treestate: writing the in-flight mark: %w", err)
	}
	return nil
}

// Disarm removes the in-flight mark: what the command changed is recorded. Without a
// mark it does nothing.
func (t *Tree) Disarm() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.cfg.Durable || t.cfg.StageDir == "" {
		return nil
	}
	if !t.armed {
		return nil
	}
	// No fsync: a mark that comes back after a power loss makes Recover record again
	// what is recorded already, which a first-touch store takes as a no-op.
	if _, err := t.mark.WriteAt([]byte{0}, int64(markFlagAt)); err != nil {
		return fmt.Errorf("treestate: clearing the in-flight mark: %w", err)
	}
	t.armed = false
	t.dropDoomedLocked()
	return nil
}

// Recover finishes the record of a command a dead process left in flight in the durable
// stage cfg.StageDir: it walks the roots the stage's index names (cfg.Roots is ignored),
// leaving out what that walk left out and what cfg.Skip refuses, and hands every file
// created, changed or deleted since the index to record, with its pre-image from the
// stage. A pre-image the stage lost is handed over as Unrecoverable, and its error is in
// Diff.RecordErr. A stage with no mark has nothing to recover: armed is false. The stage
// is left as it is; the caller removes it once the records are stored.
func Recover(ctx context.Context, cfg Config, record RecordFunc) (meta []byte, d Diff, armed bool, err error) {
	a, err := readArmed(cfg.StageDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Diff{}, false, nil
	}
	if err != nil {
		return nil, Diff{}, true, err
	}
	b, err := os.ReadFile(filepath.Join(cfg.StageDir, indexFile))
	if err != nil {
		return a.Meta, Diff{}, true, fmt.Errorf("treestate: the stage's index is unreadable: %w", err)
	}
	var ix journalIndex
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&ix); err != nil {
		return a.Meta, Diff{}, true, fmt.Errorf("treestate: the stage's index is damaged: %w", err)
	}
	skipped := make(map[string]bool, len(ix.Skipped))
	for _, p := range ix.Skipped {
		skipped[p] = true
	}
	own := cfg.Skip
	cfg.Skip = func(p string) bool { return skipped[p] || own != nil && own(p) }
	cfg.Roots, cfg.Durable, cfg.Protected, cfg.Spots, cfg.ProtectedOnly = ix.Roots, false, nil, nil, false
	t := New(cfg)
	for _, e := range ix.Entries {
		t.index[e.Path] = entry{size: e.Size, mtime: e.Mtime, dev: e.Dev, ino: e.Ino, mode: fs.FileMode(e.Mode), sum: e.Sum, racy: e.Racy, prot: e.Prot, nlink: e.Nlink}
		if e.Sum != "" {
			t.refs[e.Sum]++
		}
	}
	t.primed = true
	// The stage's files are the dead process's record: this walk reads them and leaves
	// them, so a second Recover after a failed one finds them still.
	t.keepStage = true
	d, err = t.sync(ctx, record, nil)
	return a.Meta, d, true, err
}

// readArmed reads the mark of dir: fs.ErrNotExist when there is none or no command is
// in flight.
func readArmed(dir string) (journalArmed, error) {
	var a journalArmed
	b, err := os.ReadFile(filepath.Join(dir, markFile))
	if err != nil {
		return a, err
	}
	if len(b) > markFlagAt && b[markFlagAt] == 0 {
		return a, fs.ErrNotExist
	}
	if len(b) < markHead || string(b[:markFlagAt]) != markMagic {
		return a, nil // torn while being armed: in flight, no meta
	}
	n := int(binary.BigEndian.Uint32(b[markFlagAt+9:]))
	if markHead+n > len(b) {
		return a, nil
	}
	b = b[:markHead+n]
	if binary.BigEndian.Uint32(b[markFlagAt+13:]) != markSum(b) {
		return a, nil
	}
	a.Meta = b[markHead:]
	return a, nil
}

func (t *Tree) journalIndexLocked() journalIndex {
	ix := journalIndex{Roots: t.roots, Skipped: t.skipped, Entries: make([]journalEntry, 0, len(t.index))}
	for p, e := range t.index {
		ix.Entries = append(ix.Entries, journalEntry{Path: p, Size: e.size, Mtime: e.mtime, Dev: e.dev, Ino: e.ino, Mode: uint32(e.mode),
			Sum: e.sum, Racy: e.racy, Prot: e.prot, Nlink: e.nlink})
	}
	return ix
}

// dropDoomedLocked removes the pre-images no entry uses any more, once the index on disk
// no longer names them either.
func (t *Tree) dropDoomedLocked() {
	for s := range t.doomed {
		if t.refs[s] == 0 {
			_ = os.Remove(filepath.Join(t.cfg.StageDir, s))
		}
	}
	clear(t.doomed)
}

// syncStaged makes the named files of dir, and dir's entries, durable.
func syncStaged(dir string, names []string) error {
	if len(names) == 0 {
		return nil
	}
	if len(names) > fsyncEach && syncFS(dir) == nil {
		return nil
	}
	slices.Sort(names)
	for _, n := range slices.Compact(names) {
		f, err := os.Open(filepath.Join(dir, n))
		if errors.Is(err, fs.ErrNotExist) {
			continue // staged and dropped again since
		}
		if err != nil {
			return fmt.Errorf("treestate: making a pre-image durable: %w", err)
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return fmt.Errorf("treestate: making a pre-image durable: %w", err)
		}
	}
	return syncDir(dir)
}

// writeDurable replaces dir/name with data: a temporary file, fsynced, renamed over it,
// and dir fsynced, so the name holds the old bytes or the new ones after any crash.
func writeDurable(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("treestate: writing the stage's %s: %w", name, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("treestate: writing the stage's %s: %w", name, err)
	}
	return nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("treestate: making the stage durable: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("treestate: making the stage durable: %w", err)
	}
	return nil
}
