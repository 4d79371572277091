package files

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/sema-agent/sema/imagefit"
	"github.com/sema-agent/sema/tools"
)

func numbered(from int, lines ...string) string {
	var out []string
	for i, l := range lines {
		out = append(out, fmt.Sprintf("%6d\t%s", from+i, l))
	}
	return strings.Join(out, "\n")
}

func TestReadText(t *testing.T) {
	t.Parallel()
	many := strings.Repeat("line\n", 2500)
	long := strings.Repeat("é", 2500)
	cases := []struct {
		name    string
		content string
		input   map[string]any
		want    string
	}{
		{"whole file", "a\nb\nc\n", nil, numbered(1, "a", "b", "c")},
		{"no final newline", "a\nb", nil, numbered(1, "a", "b")},
		{"blank lines kept", "a\n\n\nb\n", nil, numbered(1, "a", "", "", "b")},
		{"CRLF shown without CR", "a\r\nb\r\n", nil, numbered(1, "a", "b")},
		{"BOM dropped", "\uFEFFa\nb\n", nil, numbered(1, "a", "b")},
		{"tabs kept", "\tx\ty\n", nil, numbered(1, "\tx\ty")},
		{"offset and limit", "a\nb\nc\nd\n", map[string]any{"offset": 2, "limit": 2},
			numbered(2, "b", "c") + "\n\n(Lines 2-3 of 4 are shown. Read again with offset 4 to see more.)"},
		{"offset to the end", "a\nb\nc\n", map[string]any{"offset": 3}, numbered(3, "c")},
		{"offset zero is the start", "a\nb\n", map[string]any{"offset": 0, "limit": 1},
			numbered(1, "a") + "\n\n(Lines 1-1 of 2 are shown. Read again with offset 2 to see more.)"},
		{"offset past the end", "a\nb\n", map[string]any{"offset": 5}, "The file f.txt has 2 lines, fewer than offset 5; nothing to show. Read it again with a smaller offset."},
		{"empty file", "", nil, "The file f.txt exists but is empty."},
		{"only a newline", "\n", nil, numbered(1, "")},
		{"default limit", many, nil, numbered(1, slices.Repeat([]string{"line"}, 2000)...) +
			"\n\n(Lines 1-2000 of 2500 are shown. Read again with offset 2001 to see more.)"},
		{"long line cut at 2000 characters", long + "\nshort\n", nil,
			numbered(1, strings.Repeat("é", 2000)+fmt.Sprintf(" … [line truncated: it is %d bytes long]", len(long)+1), "short")},
		{"invalid UTF-8 after the sniffed head is replaced", strings.Repeat("x\n", 5000) + "bad \xff byte\n", map[string]any{"offset": 5001},
			numbered(5001, "bad \uFFFD byte")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newReadFix(t)
			f.put(map[string]string{"f.txt": c.content})
			in := map[string]any{"file_path": "f.txt"}
			for k, v := range c.input {
				in[k] = v
			}
			if got := f.ok("Read", in); got != c.want {
				t.Errorf("Read(%v):\ngot  %q\nwant %q", in, trimTo(got, 300), trimTo(c.want, 300))
			}
		})
	}
}

func trimTo(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func TestReadAbsoluteAndRelativePaths(t *testing.T) {
	t.Parallel()
	f := newReadFix(t)
	f.put(map[string]string{"dir/f.txt": "hello\n"})
	for _, p := range []string{"dir/f.txt", "./dir/f.txt", f.path("dir/f.txt"), "dir/../dir/f.txt"} {
		if got := f.ok("Read", map[string]any{"file_path": p}); got != numbered(1, "hello") {
			t.Errorf("Read(%s) = %q", p, got)
		}
	}
}

func TestReadLargeFiles(t *testing.T) {
	t.Parallel()
	f := newReadFix(t)
	// 300 KB of short lines: the first 2000 lines fit, so Read answers without offset.
	short := strings.Repeat("0123456789\n", 30_000)
	// 300 KB of 300-byte lines: 2000 of them do not fit.
	wide := strings.Repeat(strings.Repeat("w", 299)+"\n", 1000)
	f.put(map[string]string{"short.txt": short, "wide.txt": wide})

	got := f.ok("Read", map[string]any{"file_path": "short.txt"})
	if !strings.HasSuffix(got, "(Lines 1-2000 of 30000 are shown. Read again with offset 2001 to see more.)") {
		t.Errorf("short lines: unexpected tail %q", got[max(0, len(got)-120):])
	}
	msg := f.fails("Read", map[string]any{"file_path": "wide.txt"}, CodeFileTooLarge)
	if !strings.Contains(msg, "offset and limit") {
		t.Errorf("refusal does not say how to read a part: %s", msg)
	}
	got = f.ok("Read", map[string]any{"file_path": "wide.txt", "offset": 10, "limit": 100})
	if n := strings.Count(got, "\t"); n != 100 || !strings.HasPrefix(got, "    10\t") || !strings.Contains(got, "\n   109\t") {
		t.Errorf("a part of a large file: %d lines, starts %q", n, got[:20])
	}
	f.fails("Read", map[string]any{"file_path": "wide.txt", "offset": 1, "limit": 1000}, CodeFileTooLarge)
	if _, ok := f.rs.Lookup(f.path("wide.txt")); !ok {
		t.Error("a successful partial read of a large file was not recorded")
	}
}

func TestReadRefusals(t *testing.T) {
	t.Parallel()
	f := newReadFix(t)
	elf := "\x7fELF\x02\x01\x01\x00" + strings.Repeat("\x00", 64)
	f.put(map[string]string{
		"nul.txt":    "text\x00more",
		"latin1.txt": "caf\xe9\n",
		"doc.pdf":    "%PDF-1.7\n%\xe2\xe3\xcf\xd3\n",
		"prog":       elf,
		"arch.zip":   "PK\x03\x04" + strings.Repeat("\x00", 40),
		"db.sqlite":  "SQLite format 3\x00" + strings.Repeat("\x01", 40),
		"dir/x.txt":  "x",
	})
	if err := syscall.Mkfifo(f.path("fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		input any
		code  string
		says  string
	}{
		{map[string]any{"file_path": "nul.txt"}, CodeBinaryFile, "binary"},
		{map[string]any{"file_path": "latin1.txt"}, CodeBinaryFile, "binary"},
		{map[string]any{"file_path": "doc.pdf"}, CodeBinaryFile, "PDF"},
		{map[string]any{"file_path": "prog"}, CodeBinaryFile, "ELF"},
		{map[string]any{"file_path": "arch.zip"}, CodeBinaryFile, "zip"},
		{map[string]any{"file_path": "db.sqlite"}, CodeBinaryFile, "SQLite"},
		{map[string]any{"file_path": "dir"}, CodeIsDirectory, "use LS"},
		{map[string]any{"file_path": "missing.txt"}, CodeFileNotFound, "does not exist"},
		{map[string]any{"file_path": "fifo"}, CodeNotRegular, "not a regular file"},
		{map[string]any{"file_path": ""}, tools.CodeInputInvalid, "file_path"},
		{map[string]any{"file_path": "dir/x.txt", "offset": -1}, tools.CodeInputInvalid, "offset"},
		{map[string]any{"file_path": "dir/x.txt", "limit": -5}, tools.CodeInputInvalid, "limit"},
		{`{"file_path": "dir/x.txt", "pages": "1"}`, tools.CodeInputInvalid, "pages"},
		{`{"file_path": 7}`, tools.CodeInputInvalid, "file_path"},
	}
	for _, c := range cases {
		msg := f.fails("Read", c.input, c.code)
		if !strings.Contains(msg, c.says) {
			t.Errorf("Read(%v): message %q does not mention %q", c.input, msg, c.says)
		}
	}
	for _, p := range []string{"nul.txt", "doc.pdf", "dir", "missing.txt"} {
		if _, ok := f.rs.Lookup(f.path(p)); ok {
			t.Errorf("a refused read of %s was recorded", p)
		}
	}
}

func TestReadRecordsReadState(t *testing.T) {
	t.Parallel()
	f := newReadFix(t)
	content := strings.Repeat("some text\n", 50)
	f.put(map[string]string{"real/f.txt": content})
	f.symlink(f.path("real/f.txt"), "link.txt")
	sum := sha256.Sum256([]byte(content))
	want := hex.EncodeToString(sum[:])
	fi, err := os.Stat(f.path("real/f.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []map[string]any{
		{"file_path": "real/f.txt"},
		{"file_path": "real/f.txt", "offset": 10, "limit": 2}, // a partial read hashes the whole file
		{"file_path": "link.txt"},                             // recorded under the canonical path
	} {
		f.rs.Forget(f.path("real/f.txt"))
		f.ok("Read", in)
		rec, ok := f.rs.Lookup(f.path("real/f.txt"))
		if !ok {
			t.Fatalf("Read(%v) recorded nothing", in)
		}
		if rec.Hash != want || rec.Size != int64(len(content)) || !rec.ModTime.Equal(fi.ModTime()) {
			t.Errorf("Read(%v) recorded %+v, want size %d, mtime %v, hash %s", in, rec, len(content), fi.ModTime(), want)
		}
		if rec.Hash != contentHash([]byte(content)) {
			t.Errorf("the record's hash differs from the write lane's contentHash")
		}
	}
	if _, ok := f.rs.Lookup(f.path("link.txt")); ok {
		t.Error("a read through a link was recorded under the link's path")
	}
}

func encodePNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gradient(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetNRGBA(x, y, color.NRGBA{uint8(x), uint8(y), uint8(x + y), 255})
		}
	}
	return img
}

// withTextChunk returns the PNG p with a tEXt chunk of n bytes after its header: a
// small image in a file over the byte limit.
func withTextChunk(t *testing.T, p []byte, n int) []byte {
	t.Helper()
	const ihdrEnd = 8 + 4 + 4 + 13 + 4 // signature, then IHDR's length, type, data, CRC
	if string(p[12:16]) != "IHDR" {
		t.Fatal("not a PNG")
	}
	data := append([]byte("tEXtComment\x00"), bytes.Repeat([]byte("x"), n)...)
	var chunk []byte
	chunk = binary.BigEndian.AppendUint32(chunk, uint32(len(data)-4))
	chunk = append(chunk, data...)
	chunk = binary.BigEndian.AppendUint32(chunk, crc32.ChecksumIEEE(data))
	return slices.Concat(p[:ihdrEnd], chunk, p[ihdrEnd:])
}

// webpHeader builds the first bytes of a lossless WebP file of the given size.
func webpHeader(w, h int) []byte {
	b := []byte("RIFF\x00\x00\x00\x00WEBPVP8L\x00\x00\x00\x00\x2f")
	bits := uint32(w-1) | uint32(h-1)<<14
	b = append(b, byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24))
	return append(b, make([]byte, 16)...)
}

func TestReadImages(t *testing.T) {
	t.Parallel()
	f := newReadFix(t)
	small := encodePNG(t, gradient(40, 30))
	wide := encodePNG(t, gradient(2100, 200))
	heavy := withTextChunk(t, encodePNG(t, gradient(64, 48)), imagefit.MaxBytes) // few pixels, many bytes
	var jpg, gf bytes.Buffer
	if err := jpeg.Encode(&jpg, gradient(64, 64), nil); err != nil {
		t.Fatal(err)
	}
	if err := gif.Encode(&gf, gradient(16, 16), nil); err != nil {
		t.Fatal(err)
	}
	if len(heavy) <= imagefit.MaxBytes {
		t.Fatalf("the heavy fixture is only %d bytes", len(heavy))
	}
	f.put(map[string]string{
		"small.png":      string(small),
		"wide.png":       string(wide),
		"heavy.png":      string(heavy),
		"photo.jpg":      string(jpg.Bytes()),
		"anim.gif":       string(gf.Bytes()),
		"named-wrong.md": string(small), // sniffed by content, not by name
		"small.webp":     string(webpHeader(100, 50)),
		"huge.webp":      string(webpHeader(4000, 100)),
		"broken.png":     "\x89PNG\r\n\x1a\nthis is not a png",
	})
	cases := []struct {
		file      string
		mediaType string
		same      []byte // the block must carry these bytes unchanged
		maxW      int    // else the block must decode within these dimensions
		wantW     int
	}{
		{file: "small.png", mediaType: "image/png", same: small},
		{file: "named-wrong.md", mediaType: "image/png", same: small},
		{file: "photo.jpg", mediaType: "image/jpeg", same: jpg.Bytes()},
		{file: "anim.gif", mediaType: "image/gif", same: gf.Bytes()},
		{file: "small.webp", mediaType: "image/webp", same: webpHeader(100, 50)},
		{file: "wide.png", mediaType: "image/jpeg", maxW: imagefit.MaxDimension, wantW: 2000},
		{file: "heavy.png", mediaType: "image/jpeg", maxW: imagefit.MaxDimension, wantW: 64},
	}
	for _, c := range cases {
		r := f.run("Read", map[string]any{"file_path": c.file})
		if r.IsError {
			t.Fatalf("Read(%s): %s %s", c.file, r.Code, r.TextOf())
		}
		imgs := imageBlocks(r)
		if len(imgs) != 1 {
			t.Fatalf("Read(%s): %d image blocks", c.file, len(imgs))
		}
		b := imgs[0]
		if b.MediaType != c.mediaType {
			t.Errorf("Read(%s): media type %s, want %s", c.file, b.MediaType, c.mediaType)
		}
		if len(b.Data) > imagefit.MaxBytes {
			t.Errorf("Read(%s): %d bytes, over the limit", c.file, len(b.Data))
		}
		if c.same != nil {
			if !bytes.Equal(b.Data, c.same) {
				t.Errorf("Read(%s): the image was changed", c.file)
			}
			continue
		}
		cfg, _, err := image.DecodeConfig(bytes.NewReader(b.Data))
		if err != nil {
			t.Fatalf("Read(%s): the downsampled image does not decode: %v", c.file, err)
		}
		if cfg.Width > c.maxW || cfg.Height > c.maxW || cfg.Width != c.wantW {
			t.Errorf("Read(%s): downsampled to %dx%d, want width %d", c.file, cfg.Width, cfg.Height, c.wantW)
		}
		if !strings.Contains(r.TextOf(), "downsampled") {
			t.Errorf("Read(%s): the text does not say the image was downsampled: %s", c.file, r.TextOf())
		}
	}
	f.fails("Read", map[string]any{"file_path": "huge.webp"}, CodeImageTooLarge)
	f.fails("Read", map[string]any{"file_path": "broken.png"}, CodeImageUnreadable)
	if rec, ok := f.rs.Lookup(f.path("heavy.png")); !ok || rec.Size != int64(len(heavy)) || rec.Hash != contentHash(heavy) {
		t.Errorf("an image read recorded %+v (ok %v), want the file's size and hash", rec, ok)
	}
}

func TestReadNotebook(t *testing.T) {
	t.Parallel()
	f := newReadFix(t)
	png64 := base64.StdEncoding.EncodeToString(encodePNG(t, gradient(8, 8)))
	nb := map[string]any{
		"nbformat": 4, "nbformat_minor": 4,
		"metadata": map[string]any{"language_info": map[string]any{"name": "python"}},
		"cells": []any{
			map[string]any{"cell_type": "markdown", "id": "intro", "metadata": map[string]any{}, "source": []string{"# Title\n", "Some text"}},
			map[string]any{"cell_type": "code", "execution_count": 3, "metadata": map[string]any{}, "source": "print('hi')\n1 + 1",
				"outputs": []any{
					map[string]any{"output_type": "stream", "name": "stdout", "text": []string{"hi\n"}},
					map[string]any{"output_type": "execute_result", "execution_count": 3, "metadata": map[string]any{}, "data": map[string]any{"text/plain": "2"}},
					map[string]any{"output_type": "display_data", "metadata": map[string]any{}, "data": map[string]any{"image/png": png64, "text/plain": "<Figure>"}},
				}},
			map[string]any{"cell_type": "code", "execution_count": nil, "metadata": map[string]any{}, "source": "1/0",
				"outputs": []any{map[string]any{"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero",
					"traceback": []string{"\x1b[0;31mZeroDivisionError\x1b[0m: division by zero"}}}},
		},
	}
	raw, err := json.Marshal(nb)
	if err != nil {
		t.Fatal(err)
	}
	f.put(map[string]string{"nb.ipynb": string(raw), "broken.ipynb": "{not json\n"})
	r := f.run("Read", map[string]any{"file_path": "nb.ipynb"})
	if r.IsError {
		t.Fatalf("Read: %s", r.TextOf())
	}
	text := r.TextOf()
	for _, want := range []string{
		"<cell id=\"intro\" type=\"markdown\">\n# Title\nSome text\n</cell>",
		"<cell id=\"cell-1\" type=\"code\" language=\"python\" execution_count=\"3\">\nprint('hi')\n1 + 1\n</cell>",
		"<output type=\"stream\">\nhi\n</output>",
		"<output type=\"execute_result\">\n2\n</output>",
		"<output type=\"display_data\">\n<Figure>\n</output>",
		"<cell id=\"cell-2\" type=\"code\" language=\"python\">\n1/0\n</cell>",
		"ZeroDivisionError: division by zero\nZeroDivisionError: division by zero",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("notebook rendering lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\x1b[") {
		t.Error("ANSI escapes were not stripped from the traceback")
	}
	if imgs := imageBlocks(r); len(imgs) != 1 || imgs[0].MediaType != "image/png" {
		t.Errorf("want one PNG output image, got %d blocks", len(imgs))
	}
	if rec, ok := f.rs.Lookup(f.path("nb.ipynb")); !ok || rec.Hash != contentHash(raw) {
		t.Errorf("the notebook read was not recorded with its hash: %+v %v", rec, ok)
	}
	// A .ipynb that is not a notebook is shown as text.
	if got := f.ok("Read", map[string]any{"file_path": "broken.ipynb"}); got != numbered(1, "{not json") {
		t.Errorf("broken notebook: %q", got)
	}
}

func TestReadSpecIsWellFormed(t *testing.T) {
	t.Parallel()
	f := newReadFix(t)
	want := []string{"Read", "Glob", "Grep", "LS"}
	for i, tl := range ReadTools(Config{Env: f.env, Fence: f.fence, ReadState: f.rs}) {
		s := tl.Spec()
		if s.Name != want[i] {
			t.Errorf("tool %d is %s, want %s", i, s.Name, want[i])
		}
		if s.Effect != tools.EffectRead {
			t.Errorf("%s: effect %s", s.Name, s.Effect)
		}
		var schema struct {
			Type       string                    `json:"type"`
			Properties map[string]map[string]any `json:"properties"`
			Required   []string                  `json:"required"`
		}
		if err := json.Unmarshal(s.InputSchema, &schema); err != nil || schema.Type != "object" {
			t.Errorf("%s: schema does not parse as an object schema: %v", s.Name, err)
		}
		if s.Description == "" || s.ModelSpec().Name != s.Name {
			t.Errorf("%s: incomplete spec", s.Name)
		}
	}
	// The field names are Claude Code's.
	fields := map[string][]string{
		"Read": {"file_path", "offset", "limit"},
		"Glob": {"pattern", "path"},
		"Grep": {"pattern", "path", "glob", "type", "output_mode", "-i", "-n", "-A", "-B", "-C", "head_limit", "multiline"},
		"LS":   {"path", "ignore"},
	}
	for name, fs := range fields {
		var schema struct {
			Properties map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(f.tools[name].Spec().InputSchema, &schema); err != nil {
			t.Fatal(err)
		}
		if len(schema.Properties) != len(fs) {
			t.Errorf("%s has %d properties, want %d", name, len(schema.Properties), len(fs))
		}
		for _, p := range fs {
			if _, ok := schema.Properties[p]; !ok {
				t.Errorf("%s lacks property %s", name, p)
			}
		}
	}
}

func TestReadCancelled(t *testing.T) {
	t.Parallel()
	f := newReadFix(t)
	f.put(map[string]string{"a.txt": "a\n"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, in := range map[string]string{
		"Read": `{"file_path":"a.txt"}`, "Glob": `{"pattern":"*"}`, "Grep": `{"pattern":"a"}`, "LS": `{}`,
	} {
		r := f.tools[name].Run(ctx, json.RawMessage(in))
		if !r.IsError || r.Code != tools.CodeCancelled {
			t.Errorf("%s under a cancelled context: %v %s", name, r.IsError, r.Code)
		}
	}
}

// TestReadResultKeepsOnlyItsText holds many Read results, as a conversation does, and
// checks the heap they keep is about their text: a result built in a buffer sized for the
// whole file (a window of a large file) or for the default 2,000 lines (a small file)
// kept that buffer for as long as the conversation lived. Not parallel: it reads the heap.
func TestReadResultKeepsOnlyItsText(t *testing.T) {
	f := newReadFix(t)
	f.put(map[string]string{
		"small.txt": "hello\n",
		"large.txt": strings.Repeat(strings.Repeat("l", 99)+"\n", 10_000), // 1 MB: over ReadMaxBytes
	})
	cases := []struct {
		name  string
		input map[string]any
		n     int
	}{
		{"a small file whole", map[string]any{"file_path": "small.txt"}, 400},
		// The last lines: a window that ends before the file's end gets a note appended,
		// which makes a new string anyway.
		{"the last five lines of a large file", map[string]any{"file_path": "large.txt", "offset": 9996, "limit": 5}, 40},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			held := make([]tools.Result, 0, c.n)
			text := 0
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			for range c.n {
				r := f.run("Read", c.input)
				if r.IsError {
					t.Fatalf("Read(%v): %s", c.input, r.TextOf())
				}
				text += len(r.TextOf())
				held = append(held, r)
			}
			runtime.GC()
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			kept := int(after.HeapAlloc) - int(before.HeapAlloc)
			// Each result keeps its text and a few small values; a buffer sized for the
			// file or the default window would be 16 KB (small) or 272 KB (large) each.
			if limit := 4*text + c.n*1024 + 256<<10; kept > limit {
				t.Errorf("%d results of %d bytes of text in all keep %d bytes of heap (at most %d expected)", c.n, text, kept, limit)
			}
			runtime.KeepAlive(held)
		})
	}
}
