package files

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/imagefit"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/tools"
)

// Limits of a rendered notebook.
const (
	// notebookMaxOutputChars cuts each text output of a cell (long logs, big tables).
	notebookMaxOutputChars = 10_000
	// notebookMaxImages bounds the output images one Read returns.
	notebookMaxImages = 20
)

// ipynbFile is the part of an nbformat 4 notebook Read shows.
type ipynbFile struct {
	Cells    []ipynbCell `json:"cells"`
	Metadata struct {
		LanguageInfo struct {
			Name string `json:"name"`
		} `json:"language_info"`
	} `json:"metadata"`
}

type ipynbCell struct {
	ID       string          `json:"id"`
	CellType string          `json:"cell_type"`
	Source   ipynbText       `json:"source"`
	Outputs  []ipynbOutput   `json:"outputs"`
	Count    json.RawMessage `json:"execution_count"`
}

type ipynbOutput struct {
	OutputType string               `json:"output_type"`
	Name       string               `json:"name"`
	Text       ipynbText            `json:"text"`
	Data       map[string]ipynbText `json:"data"`
	Ename      string               `json:"ename"`
	Evalue     string               `json:"evalue"`
	Traceback  []string             `json:"traceback"`
}

// ipynbText is nbformat's multiline string: one string or a list of lines.
type ipynbText string

func (t *ipynbText) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '[' {
		var parts []string
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		*t = ipynbText(strings.Join(parts, ""))
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		// Non-string data (a JSON output such as application/json) is not shown.
		*t = ""
		return nil //nolint:nilerr // unknown mime payloads are skipped, not fatal
	}
	*t = ipynbText(s)
	return nil
}

// readNotebook renders a .ipynb file cell by cell. A file that is not a notebook is
// shown as text instead.
func (t *readTool) readNotebook(ctx context.Context, in readInput, canonical string, fi env.FileInfo, r io.Reader) tools.Result {
	data, hash, tooLarge, err := readWhole(r)
	if err != nil {
		return readFailure(ctx, in.FilePath, err)
	}
	if tooLarge {
		return tools.Fail(CodeFileTooLarge, "the notebook %s is larger than %d MB; use Grep to find what you need in it", in.FilePath, readMaxWholeFile>>20)
	}
	var nb ipynbFile
	if err := json.Unmarshal(data, &nb); err != nil || nb.Cells == nil {
		if kind, ok := binaryKind(data[:min(len(data), readSniffBytes)]); ok {
			return tools.Fail(CodeBinaryFile, "%s is a binary file (%s) and cannot be read as text", in.FilePath, kind)
		}
		return t.readText(ctx, in, canonical, fi, int64(len(data)), bufio.NewReader(bytes.NewReader(data)))
	}
	blocks := renderNotebook(&nb, func(raw []byte, mt string) (imagefit.Fitted, error) {
		return imagefit.FitAs(ctx, t.cfg.ImageDownsampler, raw, mt)
	})
	if ctx.Err() != nil {
		return cancelled()
	}
	if textSize(blocks) > ReadMaxBytes {
		return tools.Fail(CodeFileTooLarge, "the notebook %s renders to more than %d KB of text; use Grep to find the cells you need", in.FilePath, ReadMaxBytes>>10)
	}
	t.record(canonical, fi, int64(len(data)), hash)
	if len(nb.Cells) == 0 {
		return tools.Text(fmt.Sprintf("The notebook %s has no cells.", in.FilePath))
	}
	return tools.Result{Content: blocks}
}

func textSize(blocks []model.Block) int {
	n := 0
	for _, b := range blocks {
		n += len(b.Text)
	}
	return n
}

// renderNotebook renders each cell as
//
//	<cell id="…" type="code" language="python" execution_count="3">
//	source
//	</cell>
//	<output type="stream">…</output>
//
// with image outputs as image blocks between the text blocks, each made to fit by fit (an
// output fit refuses is left out, with a line saying why). A cell without an id (before
// nbformat 4.5) is named cell-N by its 0-based index, the name NotebookEdit accepts.
func renderNotebook(nb *ipynbFile, fit func(data []byte, mediaType string) (imagefit.Fitted, error)) []model.Block {
	lang := nb.Metadata.LanguageInfo.Name
	if lang == "" {
		lang = "python"
	}
	var (
		blocks []model.Block
		b      strings.Builder
		images int
	)
	for i, c := range nb.Cells {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("cell-%d", i)
		}
		fmt.Fprintf(&b, "<cell id=%q type=%q", id, c.CellType)
		if c.CellType == "code" {
			fmt.Fprintf(&b, " language=%q", lang)
			if n := strings.TrimSpace(string(c.Count)); n != "" && n != "null" {
				fmt.Fprintf(&b, " execution_count=%q", n)
			}
		}
		b.WriteString(">\n")
		b.WriteString(string(c.Source))
		if !strings.HasSuffix(string(c.Source), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString("</cell>\n")
		for _, o := range c.Outputs {
			text := outputText(o)
			if text != "" {
				fmt.Fprintf(&b, "<output type=%q>\n%s", o.OutputType, cutOutput(text))
				if !strings.HasSuffix(text, "\n") {
					b.WriteByte('\n')
				}
				b.WriteString("</output>\n")
			}
			for _, mt := range []string{"image/png", "image/jpeg"} {
				enc, ok := o.Data[mt]
				if !ok {
					continue
				}
				raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(strings.ReplaceAll(string(enc), "\n", "")))
				switch {
				case err != nil:
					b.WriteString("[an image output that is not valid base64 was left out]\n")
				case images >= notebookMaxImages:
					b.WriteString("[an image output was left out: too many images]\n")
				default:
					img, err := fit(raw, mt)
					if err != nil {
						fmt.Fprintf(&b, "[an image output was left out: %v]\n", err)
						continue
					}
					blocks = append(blocks, model.TextBlock(b.String()), model.Block{Kind: model.KindImage, MediaType: img.MediaType, Data: img.Data})
					b.Reset()
					images++
				}
				break
			}
		}
		b.WriteByte('\n')
	}
	if s := strings.TrimRight(b.String(), "\n"); s != "" {
		blocks = append(blocks, model.TextBlock(s))
	}
	return blocks
}

// outputText is the text an output shows: a stream's text, a result's text/plain, or an
// error's name, value and traceback.
func outputText(o ipynbOutput) string {
	switch o.OutputType {
	case "stream":
		return string(o.Text)
	case "error":
		s := o.Ename + ": " + o.Evalue
		if len(o.Traceback) > 0 {
			s += "\n" + stripANSI(strings.Join(o.Traceback, "\n"))
		}
		return s
	}
	return string(o.Data["text/plain"])
}

func cutOutput(s string) string {
	if cut, truncated := cutRunes([]byte(s), notebookMaxOutputChars); truncated {
		return string(cut) + fmt.Sprintf("\n… [output truncated: it is %d bytes long]\n", len(s))
	}
	return s
}

// stripANSI removes the colour escapes (ESC [ … letter) IPython puts in tracebacks.
func stripANSI(s string) string {
	if !strings.Contains(s, "\x1b[") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
