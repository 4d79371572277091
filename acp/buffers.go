package acp

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/sema-agent/sema/tools/files"
)

// buffers are a session's file reads and writes through the client: files.Buffers over
// fs/read_text_file and fs/write_text_file, so the model reads the editor's unsaved
// buffers and its edits land in them. Both requests carry the session's id and end
// with the context of the tool call that made them.
type buffers struct {
	conn      *Conn
	sessionID string

	// The edit's diff the client is shown is of the editor's text, not the disk's: the
	// last text the editor gave for a path, and what each write replaced with what.
	mu       sync.Mutex
	lastRead map[string]string
	edits    map[string]bufferEdit
}

var _ files.Buffers = (*buffers)(nil)

// bufferEdit is one write through the editor: the text it replaced (nil for a file
// not read before it: a new one) and the text written.
type bufferEdit struct {
	before *string
	after  string
}

// sessionBuffers are the buffers of session id when the client offered both file
// requests at initialize; nil otherwise, and the session reads and writes the disk. One
// without the other is not used: reading the buffer and writing the disk (or the
// reverse) would edit text the other side does not hold.
func sessionBuffers(c ClientCapabilities, conn *Conn, id string) *buffers {
	if !c.FS.ReadTextFile || !c.FS.WriteTextFile {
		return nil
	}
	return &buffers{conn: conn, sessionID: id, lastRead: map[string]string{}, edits: map[string]bufferEdit{}}
}

// ReadText implements files.Buffers with fs/read_text_file.
func (b *buffers) ReadText(ctx context.Context, path string) (string, error) {
	var out ReadTextFileResponse
	if err := b.conn.Call(ctx, MethodReadTextFile, ReadTextFileRequest{SessionID: b.sessionID, Path: path}, &out); err != nil {
		return "", clientFailure(MethodReadTextFile, err)
	}
	if out.Content == nil {
		return "", fmt.Errorf("the editor answered %s without the file's content", MethodReadTextFile)
	}
	b.mu.Lock()
	b.lastRead[path] = *out.Content
	b.mu.Unlock()
	return *out.Content, nil
}

// WriteText implements files.Buffers with fs/write_text_file.
func (b *buffers) WriteText(ctx context.Context, path, text string) error {
	if err := b.conn.Call(ctx, MethodWriteTextFile, WriteTextFileRequest{SessionID: b.sessionID, Path: path, Content: text}, nil); err != nil {
		return clientFailure(MethodWriteTextFile, err)
	}
	b.mu.Lock()
	e := bufferEdit{after: text}
	if prev, ok := b.lastRead[path]; ok {
		e.before = &prev
	}
	delete(b.lastRead, path)
	b.edits[path] = e
	b.mu.Unlock()
	return nil
}

// forget drops what is known of path, as an edit of it is announced: the write lane
// reads the text it edits during the call.
func (b *buffers) forget(path string) {
	b.mu.Lock()
	delete(b.lastRead, path)
	delete(b.edits, path)
	b.mu.Unlock()
}

// edited returns, and forgets, the last write of path through the editor.
func (b *buffers) edited(path string) (bufferEdit, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.edits[path]
	delete(b.edits, path)
	return e, ok
}

// clientFailure says why a request to the client failed, in the words the model reads.
func clientFailure(method string, err error) error {
	var e *Error
	switch {
	case errors.Is(err, ErrClosed):
		return fmt.Errorf("the editor closed the connection before it answered %s", method)
	case errors.As(err, &e):
		return fmt.Errorf("the editor refused %s: %s", method, e.Message)
	}
	return err
}
