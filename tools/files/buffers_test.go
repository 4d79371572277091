package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/tools"
)

// editorBufs is an editor holding unsaved buffers: ReadText answers a buffer when there
// is one, else the disk; WriteText records the write and saves it to the disk.
type editorBufs struct {
	mu       sync.Mutex
	open     map[string]string // unsaved buffers, by absolute path
	reads    []string
	writes   map[string][]string
	readErr  error
	writeErr error
}

func newEditorBufs() *editorBufs {
	return &editorBufs{open: map[string]string{}, writes: map[string][]string{}}
}

func (b *editorBufs) ReadText(_ context.Context, path string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reads = append(b.reads, path)
	if b.readErr != nil {
		return "", b.readErr
	}
	if text, ok := b.open[path]; ok {
		return text, nil
	}
	data, err := os.ReadFile(path)
	return string(data), err
}

func (b *editorBufs) WriteText(_ context.Context, path, text string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.writeErr != nil {
		return b.writeErr
	}
	b.writes[path] = append(b.writes[path], text)
	delete(b.open, path) // saved: the buffer is the file now
	return os.WriteFile(path, []byte(text), 0o644)
}

func (b *editorBufs) wrote(path string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.writes[path]
}

// refusingBufs fails the test when a file tool asks it anything.
type refusingBufs struct{ t *testing.T }

func (b refusingBufs) ReadText(_ context.Context, path string) (string, error) {
	b.t.Errorf("the editor was asked to read %s", path)
	return "", errors.New("asked")
}

func (b refusingBufs) WriteText(_ context.Context, path, _ string) error {
	b.t.Errorf("the editor was asked to write %s", path)
	return errors.New("asked")
}

// bufFix is one session's Read and write tools over a temporary root, with bufs as the
// editor.
type bufFix struct{ *laneFix }

func newBufFix(t *testing.T, bufs Buffers, configure ...func(*fence.Config)) *bufFix {
	t.Helper()
	f := newLaneFix(t)
	if len(configure) > 0 {
		fc := fence.Config{Env: f.env, Root: f.root}
		for _, c := range configure {
			c(&fc)
		}
		fn, err := fence.New(context.Background(), fc)
		if err != nil {
			t.Fatal(err)
		}
		f.fence = fn
	}
	cfg := Config{Env: f.env, Fence: f.fence, ReadState: f.rs, Buffers: bufs}
	ts := WriteTools(cfg, f.lc)
	f.lane = ts[0].(*writeTool).lane
	f.tools = map[string]tools.Tool{}
	for _, tl := range ts {
		f.tools[tl.Spec().Name] = tl
	}
	f.tools["Read"] = ReadTools(cfg)[0]
	return &bufFix{f}
}

func (f *bufFix) readFile(rel string) tools.Result {
	f.t.Helper()
	return f.call("Read", map[string]any{"file_path": f.path(rel)})
}

func TestReadShowsTheEditorsUnsavedBuffer(t *testing.T) {
	bufs := newEditorBufs()
	f := newBufFix(t, bufs)
	f.put("a.go", "package disk\n")
	bufs.open[f.path("a.go")] = "package buffer\n\nfunc unsaved() {}\n"

	r := f.readFile("a.go")
	wantCode(t, r, "")
	if text := r.TextOf(); !strings.Contains(text, "package buffer") || !strings.Contains(text, "unsaved") || strings.Contains(text, "disk") {
		t.Fatalf("Read showed %q, want the buffer's text", text)
	}
	rec, ok := f.rs.Lookup(f.path("a.go"))
	if !ok {
		t.Fatal("the read was not recorded")
	}
	want := "package buffer\n\nfunc unsaved() {}\n"
	if rec.Size != int64(len(want)) || rec.Hash != contentHash([]byte(want)) {
		t.Fatalf("the record is %+v, want the buffer's size %d and hash", rec, len(want))
	}
}

func TestEditOfTheBufferGoesBackThroughTheEditor(t *testing.T) {
	bufs := newEditorBufs()
	f := newBufFix(t, bufs)
	f.put("a.go", "package disk\n")
	bufs.open[f.path("a.go")] = "package buffer\n\nfunc unsaved() {}\n"
	wantCode(t, f.readFile("a.go"), "")

	r := f.call("Edit", map[string]any{"file_path": f.path("a.go"), "old_string": "unsaved", "new_string": "edited"})
	wantCode(t, r, "")
	want := "package buffer\n\nfunc edited() {}\n"
	if got := bufs.wrote(f.path("a.go")); len(got) != 1 || got[0] != want {
		t.Fatalf("the editor was handed %q, want one write of %q", got, want)
	}
	// Every station ran as without the editor: permission (with the buffer's diff),
	// the content check, file history.
	f.settle()
	if c := f.rec.counts(); c != [5]int{1, 1, 1, 0, 1} {
		t.Fatalf("hook counts %v, want permission, before-write, track and edited once", c)
	}
	if d := f.rec.perm[0].Diff; !strings.Contains(d, "-func unsaved() {}") || !strings.Contains(d, "+func edited() {}") {
		t.Fatalf("the permission diff is not the buffer's:\n%s", d)
	}
	rec, _ := f.rs.Lookup(f.path("a.go"))
	if rec.Hash != contentHash([]byte(want)) {
		t.Fatal("the read-state does not point at the text written")
	}
	// A second edit needs no new read: the editor's text is what the lane wrote.
	wantCode(t, f.call("Edit", map[string]any{"file_path": f.path("a.go"), "old_string": "edited", "new_string": "again"}), "")
	if got := f.bytes("a.go"); got != "package buffer\n\nfunc again() {}\n" {
		t.Fatalf("the file holds %q", got)
	}
}

func TestBufferChangedAfterTheReadIsRefused(t *testing.T) {
	bufs := newEditorBufs()
	f := newBufFix(t, bufs)
	f.put("a.txt", "one\n")
	wantCode(t, f.readFile("a.txt"), "")
	bufs.open[f.path("a.txt")] = "one\ntyped by the person\n"
	wantCode(t, f.call("Edit", map[string]any{"file_path": f.path("a.txt"), "old_string": "one", "new_string": "two"}), CodeChangedSinceRead)
	if len(bufs.wrote(f.path("a.txt"))) != 0 {
		t.Fatal("a refused edit reached the editor")
	}
}

func TestWriteCreatesANewFileThroughTheEditor(t *testing.T) {
	bufs := newEditorBufs()
	f := newBufFix(t, bufs)
	wantCode(t, f.call("Write", map[string]any{"file_path": f.path("sub/new.txt"), "content": "fresh\n"}), "")
	if got := bufs.wrote(f.path("sub/new.txt")); len(got) != 1 || got[0] != "fresh\n" {
		t.Fatalf("the editor was handed %q", got)
	}
}

func TestEditorFailuresAreCodedAndWriteNothing(t *testing.T) {
	bufs := newEditorBufs()
	f := newBufFix(t, bufs)
	f.put("a.txt", "one\n")
	wantCode(t, f.readFile("a.txt"), "")

	bufs.writeErr = errors.New("the buffer is read-only")
	r := f.call("Edit", map[string]any{"file_path": f.path("a.txt"), "old_string": "one", "new_string": "two"})
	wantCode(t, r, CodeEditorWriteFailed)
	if !strings.Contains(r.TextOf(), "the buffer is read-only") {
		t.Fatalf("the answer does not give the editor's reason: %s", r.TextOf())
	}
	if got := f.bytes("a.txt"); got != "one\n" {
		t.Fatalf("the disk was written around the editor: %q", got)
	}
	f.settle()
	if c := f.rec.counts(); c[3] != 1 || f.rec.proofs[0] != ProofVerify {
		t.Fatalf("the history record was not annulled for verification: counts %v proofs %v", c, f.rec.proofs)
	}

	bufs.writeErr, bufs.readErr = nil, errors.New("the editor is gone")
	wantCode(t, f.call("Edit", map[string]any{"file_path": f.path("a.txt"), "old_string": "one", "new_string": "two"}), CodeEditorReadFailed)
	wantCode(t, f.readFile("a.txt"), CodeEditorReadFailed)
	if got := f.bytes("a.txt"); got != "one\n" {
		t.Fatalf("the disk changed: %q", got)
	}
}

func TestRefusedPathsNeverReachTheEditor(t *testing.T) {
	outside := t.TempDir()
	writeTestFile(t, filepath.Join(outside, "secret.txt"), "TOPSECRET\n")
	f := newBufFix(t, refusingBufs{t}, func(c *fence.Config) { c.DenyGlobs = []string{"**/*.pem"} })
	f.put("key.pem", "-----BEGIN PRIVATE KEY-----\n")
	f.put("bin.dat", "\x00\x01\x02binary")
	f.put("nb.ipynb", `{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}`)
	f.put("dir/x.txt", "x\n")
	f.put("twice.txt", "linked\n")
	if err := os.Link(f.path("twice.txt"), f.path("other.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), f.path("link")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ rel, code string }{
		{"../" + filepath.Base(outside) + "/secret.txt", ""},
		{"link", ""},
		{"key.pem", ""},
		{"twice.txt", CodeHardLink},
		{"bin.dat", CodeBinaryFile},
		{"dir", CodeIsDirectory},
	} {
		r := f.readFile(c.rel)
		if !r.IsError || (c.code != "" && r.Code != c.code) {
			t.Errorf("Read %s: IsError=%v code=%s, want a refusal %s", c.rel, r.IsError, r.Code, c.code)
		}
	}
	// A notebook is shown from the disk, and edited there.
	wantCode(t, f.readFile("nb.ipynb"), "")
	wantCode(t, f.call("NotebookEdit", map[string]any{"notebook_path": f.path("nb.ipynb"), "new_source": "print(1)", "cell_type": "code", "edit_mode": "insert"}), "")
	// The write lane refuses the same paths before the editor is asked.
	for _, rel := range []string{"link", "key.pem", "twice.txt", filepath.Join(outside, "new.txt")} {
		p := rel
		if !filepath.IsAbs(p) {
			p = f.path(rel)
		}
		r := f.call("Write", map[string]any{"file_path": p, "content": "x"})
		if !r.IsError {
			t.Errorf("Write %s was not refused: %s", rel, r.TextOf())
		}
	}
}
