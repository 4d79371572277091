package files

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/imagefit"
)

// Codes of a failure of Config.Buffers.
const (
	CodeEditorReadFailed  = "fs.editor_read_failed"  // the editor could not give the text of a file it was asked for
	CodeEditorWriteFailed = "fs.editor_write_failed" // the editor did not confirm a write it was handed
)

// Buffers is an editor's view of the files it holds: an ACP client's fs capabilities
// (fs/read_text_file, fs/write_text_file). With it, what the model reads of a text file
// is what the person sees in the editor, an unsaved change included, and what the write
// lane writes reaches the editor's buffer instead of going around it. It is only a
// source and a sink of text: every path reaches it after the fence, the deny rules and
// the file checks have admitted it, and every decision of the write lane (read-before-
// edit, permission, hooks, file history) is made as without it. Images, notebooks and
// binary files are read from and written to the disk as without it, and Grep, Glob and
// LS walk the disk: a search over the workspace is not a read of the files in view.
type Buffers interface {
	// ReadText returns the text the editor shows for the absolute path (its unsaved
	// buffer when it has one, else the file).
	ReadText(ctx context.Context, path string) (string, error)
	// WriteText replaces the text of the absolute path through the editor, which
	// writes it to the file (creating it if need be) before it returns.
	WriteText(ctx context.Context, path, text string) error
}

// editorText reports whether Read takes a file from the editor: a text file, as Read
// judges from the start of its content on the disk (head) and its name. Images,
// notebooks and binary files are the disk's, as Read shows them differently.
func editorText(canonical string, head []byte) bool {
	if imagefit.Sniff(head) != "" || strings.EqualFold(filepath.Ext(canonical), ".ipynb") {
		return false
	}
	_, binary := binaryKind(head)
	return !binary
}

// readBuffer asks the editor for the text of canonical. There is no fall-back to the
// disk: the editor answering at all says it holds the path, and a model shown the disk
// where the person sees a buffer would edit text that is not there.
func (c Config) readBuffer(ctx context.Context, spelled, canonical string) (string, error) {
	text, err := c.Buffers.ReadText(ctx, canonical)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", sema.Errorf(CodeEditorReadFailed, "the editor could not give the text of %s (%s)", spelled, sema.MessageOf(err))
	}
	return text, nil
}

// laneContent is the write lane's read of an existing file at station 3: the file's
// bytes, or the editor's text when the lane has Buffers, the mutation writes text
// (not a notebook) and the file is one Read takes from the editor. The file is opened
// either way, through openContent: Open keeps ReadFile's rule (a symlink in the final
// component is not followed), and a hard-linked file is refused, since the diff the lane
// answers with would show its content; this before the editor is asked. The disk's
// bytes are read into a buffer sized from what station 3 saw, in one allocation.
func (l *lane) laneContent(ctx context.Context, m mutation, key string, size int64) (data []byte, buffered bool, err error) {
	rc, err := l.cfg.openContent(ctx, m.spelled, key)
	if err != nil {
		return nil, false, err
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, readSniffBytes)
	if l.viaEditor(m) {
		head, err := br.Peek(readSniffBytes)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, false, err
		}
		if editorText(key, head) {
			text, err := l.cfg.readBuffer(ctx, m.spelled, key)
			if err != nil {
				return nil, false, err
			}
			return []byte(text), true, nil
		}
	}
	var b bytes.Buffer
	b.Grow(int(size) + bytes.MinRead)
	if _, err := b.ReadFrom(br); err != nil {
		return nil, false, err
	}
	return b.Bytes(), false, nil
}

// viaEditor reports whether m's text goes through Buffers: Write, Edit and MultiEdit
// do; NotebookEdit works on the notebook's JSON, which Read shows from the disk.
func (l *lane) viaEditor(m mutation) bool { return l.cfg.Buffers != nil && m.hook != HookNotebookEdit }

// writeBuffer is station 7's write through the editor. Its failure is coded: the
// editor's sentence says why, and whether it wrote anything is not known (the lane
// treats it as a write that may have happened).
func (l *lane) writeBuffer(ctx context.Context, key string, data []byte) error {
	if err := l.cfg.Buffers.WriteText(ctx, key, string(data)); err != nil {
		if ctx.Err() != nil {
			return sema.Errorf(CodeEditorWriteFailed, "the call ended before the editor confirmed the write of %s; the file may be changed. Read it before editing it again", key)
		}
		return sema.Errorf(CodeEditorWriteFailed, "the editor did not write %s (%s); the file may be changed. Read it before editing it again", key, sema.MessageOf(err))
	}
	return nil
}
