package files

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/imagefit"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/tools"
)

// Codes of the read tools' error results. Path refusals keep the fence's codes
// (fs.path_not_in_root, fs.path_unresolvable, …).
const (
	CodeFileNotFound          = "fs.file_not_found"           // the path does not exist
	CodeIsDirectory           = "fs.is_directory"             // Read was given a directory
	CodeNotDirectory          = "fs.not_directory"            // LS or Glob was given a file
	CodeNotRegular            = "fs.not_regular_file"         // a device, socket or pipe
	CodeBinaryFile            = "fs.binary_file"              // Read refuses binary content (PDF included, for now)
	CodeFileTooLarge          = "fs.file_too_large"           // the answer would be too large; read a part
	CodeImageTooLarge         = imagefit.CodeTooLarge         // an image above the limits that cannot be downsampled, or with downsampling off
	CodeImageUnreadable       = imagefit.CodeUnreadable       // an image that does not decode
	CodeImageDownsampleFailed = imagefit.CodeDownsampleFailed // the image downsampler failed: an error without a code, a panic, or bytes that are not an image
	CodeReadFailed            = "fs.read_failed"              // the env could not read the file
	CodePatternInvalid        = "fs.pattern_invalid"          // a glob or regular expression that does not compile
)

// Limits of the Read tool.
const (
	// ReadDefaultLimit is how many lines Read returns when no limit is given.
	ReadDefaultLimit = 2000
	// ReadMaxLineChars is the length (in characters) beyond which a line is truncated.
	ReadMaxLineChars = 2000
	// ReadMaxBytes bounds what one Read returns: a larger file is read whole only when the
	// lines asked for (by default the first ReadDefaultLimit) add up to no more than this.
	ReadMaxBytes = 256 << 10
	// readSniffBytes is how much of a file decides whether it is binary.
	readSniffBytes = 8 << 10
	// readMaxWholeFile bounds the files Read loads whole (images, notebooks).
	readMaxWholeFile = 64 << 20
)

type readTool struct{ cfg Config }

// readBufferSize is the buffer of the readers Read streams files through.
const readBufferSize = 64 << 10

// readers are reused across calls: a Read of a small file should not cost a fresh
// 64 KB buffer.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufferSize) }}

type readInput struct {
	FilePath string `json:"file_path"`
	Offset   int    `json:"offset"`
	Limit    int    `json:"limit"`
}

const readDescription = `Reads a file of the workspace. file_path is an absolute path or a path relative to the task root.

- By default up to 2000 lines are returned, from the first line. For a long file, give offset (the 1-based line number to start at) and limit (how many lines) to read a part of it; otherwise read the whole file.
- Lines are numbered like "cat -n": the line number right-aligned, a tab, then the line exactly as in the file. The number and the tab are not part of the file. Lines longer than 2000 characters are truncated.
- Images (PNG, JPEG, GIF, WebP) are returned as images you can see; large ones are downsampled.
- Jupyter notebooks (.ipynb) are shown cell by cell with their outputs.
- Directories cannot be read: use LS. Binary files (archives, executables, PDF) are refused.
- A file larger than 256 KB is returned whole only if it fits; otherwise read it in parts with offset and limit, or search it with Grep.
- Read a file before you edit or overwrite it. You may read several files at once by calling Read in parallel.`

var readSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "file_path": {"type": "string", "description": "The file to read: an absolute path, or a path relative to the task root."},
    "offset": {"type": "integer", "minimum": 0, "description": "The 1-based line number to start reading at. Give it only for files too long to read at once."},
    "limit": {"type": "integer", "minimum": 0, "description": "How many lines to read. Give it only for files too long to read at once."}
  },
  "required": ["file_path"],
  "additionalProperties": false
}`)

func (t *readTool) Spec() tools.Spec {
	return tools.Spec{Name: "Read", Description: readDescription, InputSchema: readSchema, Effect: tools.EffectRead}
}

func (t *readTool) Run(ctx context.Context, input json.RawMessage) tools.Result {
	var in readInput
	if err := tools.Decode(input, &in); err != nil {
		return tools.FromError(err, tools.CodeInputInvalid)
	}
	switch {
	case in.FilePath == "":
		return tools.Fail(tools.CodeInputInvalid, "file_path is required: give the path of the file to read")
	case in.Offset < 0:
		return tools.Fail(tools.CodeInputInvalid, "offset must be a line number of 1 or more, not %d", in.Offset)
	case in.Limit < 0:
		return tools.Fail(tools.CodeInputInvalid, "limit must be a number of lines of 1 or more, not %d", in.Limit)
	}
	if ctx.Err() != nil {
		return cancelled()
	}
	p, err := t.cfg.Fence.Resolve(ctx, in.FilePath, fence.Read)
	if err != nil {
		return tools.FromError(err, fence.CodeUnresolvable)
	}
	if !p.Exists {
		return tools.Fail(CodeFileNotFound, "the file %s does not exist; check the path (LS or Glob can find it)", in.FilePath)
	}
	fi, err := t.cfg.Env.Stat(ctx, p.Canonical)
	if err != nil {
		return readFailure(ctx, in.FilePath, err)
	}
	if fi.IsDir() {
		return tools.Fail(CodeIsDirectory, "%s is a directory, not a file; use LS to list it", in.FilePath)
	}
	if !fi.IsRegular() {
		return tools.Fail(CodeNotRegular, "%s is not a regular file (it is a device, socket or pipe) and cannot be read", in.FilePath)
	}
	rc, err := t.cfg.openContent(ctx, in.FilePath, p.Canonical)
	if err != nil {
		return readFailure(ctx, in.FilePath, err)
	}
	defer rc.Close()
	br := readers.Get().(*bufio.Reader)
	br.Reset(rc)
	defer func() {
		br.Reset(nil) // drop rc, keep the buffer
		readers.Put(br)
	}()
	head, err := br.Peek(readSniffBytes)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return readFailure(ctx, in.FilePath, err)
	}
	if mt := imagefit.Sniff(head); mt != "" {
		return t.readImage(ctx, in.FilePath, p.Canonical, fi, br, mt)
	}
	if strings.EqualFold(filepath.Ext(p.Canonical), ".ipynb") {
		return t.readNotebook(ctx, in, p.Canonical, fi, br)
	}
	if kind, ok := binaryKind(head); ok {
		return tools.Fail(CodeBinaryFile, "%s is a binary file (%s) and cannot be read as text", in.FilePath, kind)
	}
	if t.cfg.Buffers != nil {
		// Every check has passed on the disk's file; the text shown is the editor's.
		text, err := t.cfg.readBuffer(ctx, in.FilePath, p.Canonical)
		if err != nil {
			return readFailure(ctx, in.FilePath, err)
		}
		return t.readText(ctx, in, p.Canonical, fi, int64(len(text)), strings.NewReader(text))
	}
	return t.readText(ctx, in, p.Canonical, fi, fi.Size, br)
}

// readText answers with the numbered lines the input asks for of r (size bytes) and
// records the read.
func (t *readTool) readText(ctx context.Context, in readInput, canonical string, fi env.FileInfo, size int64, r io.Reader) tools.Result {
	start, limit := in.Offset, in.Limit
	if start == 0 {
		start = 1
	}
	if limit == 0 {
		limit = ReadDefaultLimit
	}
	w, err := scanLines(ctx, r, int(min(size, ReadMaxBytes)), start, limit, size > ReadMaxBytes)
	if err != nil {
		return readFailure(ctx, in.FilePath, err)
	}
	if w.tooLarge {
		if in.Offset == 0 && in.Limit == 0 {
			return tools.Fail(CodeFileTooLarge, "%s is %d bytes, more than Read returns at once (%d KB); give offset and limit to read a part of it, or use Grep to find what you need in it",
				in.FilePath, size, ReadMaxBytes>>10)
		}
		return tools.Fail(CodeFileTooLarge, "lines %d-%d of %s are more than Read returns at once (%d KB); ask for fewer lines with limit",
			start, start+limit-1, in.FilePath, ReadMaxBytes>>10)
	}
	if last := start + w.shown - 1; (start > 1 || last < w.total) && w.shown > 0 {
		t.recordPart(canonical, fi, w.size, w.hash, start, last)
	} else {
		t.record(canonical, fi, w.size, w.hash)
	}
	switch {
	case w.total == 0:
		return tools.Text(fmt.Sprintf("The file %s exists but is empty.", in.FilePath))
	case start > w.total:
		return tools.Text(fmt.Sprintf("The file %s has %d lines, fewer than offset %d; nothing to show. Read it again with a smaller offset.", in.FilePath, w.total, start))
	}
	text := w.out.String()
	if w.out.Cap()-len(text) > len(text)/8+512 {
		// The builder was sized for the whole file and the window is a part of it: the
		// result lives as long as the conversation, so it keeps only its own bytes.
		text = strings.Clone(text)
	}
	if last := start + w.shown - 1; last < w.total {
		text += fmt.Sprintf("\n\n(Lines %d-%d of %d are shown. Read again with offset %d to see more.)", start, last, w.total, last+1)
	}
	return tools.Text(text)
}

// record notes a successful read for the write lane's read-before-edit check. Size and
// Hash are of the bytes actually read (the whole file, even for a partial window), so the
// record describes what the model was shown; ModTime is the one Stat saw before reading.
func (t *readTool) record(canonical string, fi env.FileInfo, size int64, hash string) {
	if t.cfg.ReadState == nil {
		return
	}
	t.cfg.ReadState.Record(canonical, ReadRecord{Size: size, ModTime: fi.ModTime, Hash: hash})
}

// recordPart is record for a read that showed only lines from..to: the record still
// admits an edit of the whole file (the hash is of all of it), and its ranges say which
// lines the model saw.
func (t *readTool) recordPart(canonical string, fi env.FileInfo, size int64, hash string, from, to int) {
	if t.cfg.ReadState == nil {
		return
	}
	t.cfg.ReadState.recordPart(canonical, ReadRecord{Size: size, ModTime: fi.ModTime, Hash: hash}, from, to)
}

// lineWindow is what scanLines saw of a file.
type lineWindow struct {
	out      strings.Builder // the rendered window
	shown    int             // lines rendered
	total    int             // lines in the file
	size     int64           // bytes in the file
	hash     string          // hex sha256 of every byte
	tooLarge bool            // the window is over ReadMaxBytes (only when bounded)
}

// scanLines streams r (of about size bytes) once: it hashes every byte, counts the lines,
// and renders lines start..start+limit-1 "cat -n" style. With bounded set it stops early (tooLarge) when the
// window's content passes ReadMaxBytes.
func scanLines(ctx context.Context, r io.Reader, size int, start, limit int, bounded bool) (*lineWindow, error) {
	w := &lineWindow{}
	// Room for the window as it will most likely be: the bytes (at most ReadMaxBytes)
	// and eight more per line for its number, of which a file of size bytes has at most
	// size+1. A larger guess would be kept by the result's text (see readText).
	w.out.Grow(min(size, ReadMaxBytes) + min(limit, ReadDefaultLimit, size+1)*8)
	h := sha256.New()
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, readBufferSize)
	}
	var (
		line     []byte // the kept prefix of the current line
		lineLen  int    // bytes of the current line so far
		windowed int    // content bytes kept in the window
		lineNo   = 1
		keepMax  = ReadMaxLineChars * utf8.UTFMax
	)
	inWindow := func() bool { return lineNo >= start && lineNo < start+limit }
	// finish ends the current line, whose kept prefix is text.
	finish := func(text []byte) {
		if inWindow() {
			w.renderLine(lineNo, text, lineLen)
			windowed += min(len(text), keepMax) + 8
			w.shown++
		}
		w.total = lineNo
		lineNo++
		line, lineLen = line[:0], 0
	}
	for n := 0; ; n++ {
		if n%64 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		chunk, err := br.ReadSlice('\n')
		h.Write(chunk)
		w.size += int64(len(chunk))
		whole := lineLen == 0 && len(chunk) <= keepMax // the usual case: render from the reader's buffer
		if !whole && inWindow() && len(line) < keepMax {
			line = append(line, chunk[:min(len(chunk), keepMax-len(line))]...)
		}
		lineLen += len(chunk)
		if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
			if whole {
				finish(chunk)
			} else {
				finish(line)
			}
			if bounded && windowed > ReadMaxBytes {
				w.tooLarge = true
				return w, nil
			}
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			if lineLen > 0 {
				if whole {
					finish(chunk)
				} else {
					finish(line)
				}
			}
			if bounded && windowed > ReadMaxBytes {
				w.tooLarge = true
			}
			w.hash = hex.EncodeToString(h.Sum(nil))
			return w, nil
		default:
			return nil, err
		}
	}
}

// renderLine appends line number n, a tab and the line (without its line ending; cut at
// ReadMaxLineChars characters with a marker) to the window.
func (w *lineWindow) renderLine(n int, line []byte, fullLen int) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if n == 1 {
		line = bytes.TrimPrefix(line, []byte("\uFEFF"))
	}
	if w.shown > 0 {
		w.out.WriteByte('\n')
	}
	var num [24]byte
	digits := strconv.AppendInt(num[:0], int64(n), 10)
	for i := len(digits); i < 6; i++ {
		w.out.WriteByte(' ')
	}
	w.out.Write(digits)
	w.out.WriteByte('\t')
	cut, truncated := cutRunes(line, ReadMaxLineChars)
	if utf8.Valid(cut) {
		w.out.Write(cut)
	} else {
		w.out.WriteString(strings.ToValidUTF8(string(cut), "\uFFFD"))
	}
	if truncated {
		fmt.Fprintf(&w.out, " … [line truncated: it is %d bytes long]", fullLen)
	}
}

// cutRunes returns the first n characters of b, and whether anything was cut.
func cutRunes(b []byte, n int) ([]byte, bool) {
	if len(b) <= n {
		return b, false // no more characters than bytes
	}
	i := 0
	for c := 0; i < len(b); c++ {
		if c == n {
			return b[:i], true
		}
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		_, size := utf8.DecodeRune(b[i:])
		i += size
	}
	return b, false
}

// binaryKind reports whether head (the start of a file) is binary: a NUL byte or invalid
// UTF-8 (a character cut by the end of head does not count). kind names the content for
// the refusal.
func binaryKind(head []byte) (kind string, binary bool) {
	if bytes.HasPrefix(head, []byte("%PDF-")) {
		return "PDF; reading PDF documents is not supported yet", true
	}
	text := head
	if len(head) == readSniffBytes {
		// Drop a character the sniff window cut in two.
		for i := 1; i <= utf8.UTFMax-1 && i <= len(text); i++ {
			if utf8.RuneStart(text[len(text)-i]) {
				if !utf8.FullRune(text[len(text)-i:]) {
					text = text[:len(text)-i]
				}
				break
			}
		}
	}
	if bytes.IndexByte(text, 0) < 0 && utf8.Valid(text) {
		return "", false
	}
	switch {
	case bytes.HasPrefix(head, []byte("\x7fELF")):
		return "an ELF executable or library", true
	case bytes.HasPrefix(head, []byte("\xcf\xfa\xed\xfe")), bytes.HasPrefix(head, []byte("\xce\xfa\xed\xfe")), bytes.HasPrefix(head, []byte("\xca\xfe\xba\xbe")):
		return "a Mach-O executable, or a Java class file", true
	case bytes.HasPrefix(head, []byte("MZ")):
		return "a Windows executable", true
	case bytes.HasPrefix(head, []byte("SQLite format 3\x00")):
		return "an SQLite database", true
	case bytes.HasPrefix(head, []byte("!<arch>\n")):
		return "an ar archive", true
	}
	if ct := http.DetectContentType(head); ct != "application/octet-stream" && !strings.HasPrefix(ct, "text/") {
		return ct, true
	}
	return "unknown binary data", true
}

// readFailure turns an env error into the Result the model sees.
func readFailure(ctx context.Context, spelled string, err error) tools.Result {
	var se *sema.Error
	switch {
	case ctx.Err() != nil:
		return cancelled()
	case errors.As(err, &se):
		return tools.FromError(err, CodeReadFailed) // a refusal that carries its own code
	case errors.Is(err, iofs.ErrNotExist):
		return tools.Fail(CodeFileNotFound, "the file %s does not exist (it may have been removed); check the path", spelled)
	case errors.Is(err, iofs.ErrPermission):
		return tools.Fail(CodeReadFailed, "%s cannot be read: permission denied", spelled)
	}
	return tools.Fail(CodeReadFailed, "%s cannot be read: %v", spelled, err)
}

func cancelled() tools.Result {
	return tools.Fail(tools.CodeCancelled, "the call was cancelled before it finished")
}

// readWhole reads the rest of r (at most readMaxWholeFile bytes), hashing every byte.
func readWhole(r io.Reader) (data []byte, hash string, tooLarge bool, err error) {
	data, err = io.ReadAll(io.LimitReader(r, readMaxWholeFile+1))
	if err != nil {
		return nil, "", false, err
	}
	if len(data) > readMaxWholeFile {
		return nil, "", true, nil
	}
	sum := sha256.Sum256(data)
	return data, hex.EncodeToString(sum[:]), false, nil
}

// readImage answers with the image (downsampled when over the limits).
func (t *readTool) readImage(ctx context.Context, spelled, canonical string, fi env.FileInfo, r io.Reader, mediaType string) tools.Result {
	data, hash, tooLarge, err := readWhole(r)
	if err != nil {
		return readFailure(ctx, spelled, err)
	}
	if tooLarge {
		return tools.Fail(CodeImageTooLarge, "the image %s is larger than %d MB and cannot be shown", spelled, readMaxWholeFile>>20)
	}
	img, err := imagefit.FitAs(ctx, t.cfg.ImageDownsampler, data, mediaType)
	if err != nil {
		if ctx.Err() != nil {
			return cancelled()
		}
		return tools.FromError(err, CodeImageDownsampleFailed)
	}
	t.record(canonical, fi, int64(len(data)), hash)
	note := fmt.Sprintf("Image %s (%s, %dx%d, %s).", spelled, mediaType, img.Width, img.Height, byteSize(len(data)))
	if img.Resized {
		note = fmt.Sprintf("Image %s (%s, %dx%d, %s), shown downsampled to %dx%d %s (%s).", spelled, mediaType, img.Width, img.Height,
			byteSize(len(data)), img.OutWidth, img.OutHeight, img.MediaType, byteSize(len(img.Data)))
	}
	return tools.Result{Content: []model.Block{
		model.TextBlock(note),
		{Kind: model.KindImage, MediaType: img.MediaType, Data: img.Data},
	}}
}

// byteSize formats n bytes for people.
func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
