package tui

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/sema-agent/sema/agent"
)

// ImagePrompter is a back-end that can attach images to a prompt. A prompt that names
// image files is sent through it; a back-end without it (Remote: the service's API takes
// a prompt's text only) makes the screen refuse such a prompt, sending nothing.
type ImagePrompter interface {
	// PromptImages is Backend.Prompt with images: the paths of image files (absolute)
	// sent with the prompt, which the back-end reads as its Read tool would.
	PromptImages(ctx context.Context, prompt string, images []string, emit func(agent.Event)) error
}

// PromptImages implements ImagePrompter: the images are the leg's TaskSpec.Images by
// path, so the runner reads them through the fence and the Read deny rules, and refuses
// the leg by name before it starts when one may not be read.
func (l *Local) PromptImages(ctx context.Context, prompt string, images []string, emit func(agent.Event)) error {
	imgs := make([]agent.Image, 0, len(images))
	for _, p := range images {
		imgs = append(imgs, agent.Image{Path: p})
	}
	return l.prompt(ctx, prompt, imgs, emit)
}

// PromptWith is Backend.Prompt with images given as agent.Images (a path, or bytes an
// editor sent): the leg's TaskSpec.Images, judged by the runner as PromptImages's are.
func (l *Local) PromptWith(ctx context.Context, prompt string, images []agent.Image, emit func(agent.Event)) error {
	return l.prompt(ctx, prompt, images, emit)
}

// imageExts are the endings of the files a prompt attaches as images.
var imageExts = map[string]bool{".png": true, ".jpg": true, ".jpeg": true, ".gif": true, ".webp": true}

// trailing is what may end a sentence right after a path ("look at @a.png.") and is
// not part of it.
const trailing = ".,;:!?)"

// attachImages finds the image files a prompt names: a word @path (relative to root,
// as @ completes it, or absolute) or an absolute path (pasted or dropped, possibly
// quoted or with its spaces escaped) that ends in .png, .jpg, .jpeg, .gif or .webp and
// names an existing file. Each becomes an attachment: its word is replaced by the
// marker [image: NAME] and its absolute path is returned, in order. A word that names no
// such file stays as it was typed.
func attachImages(prompt, root string) (text string, images []string) {
	var b strings.Builder
	for i := 0; i < len(prompt); {
		if isSpace(prompt[i]) {
			b.WriteByte(prompt[i])
			i++
			continue
		}
		end, word := scanWord(prompt, i)
		core, tail := splitWord(word)
		if p, ok := imageFile(core, root); ok {
			b.WriteString("[image: " + filepath.Base(p) + "]" + tail)
			images = append(images, p)
		} else {
			b.WriteString(prompt[i:end])
		}
		i = end
	}
	return b.String(), images
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// scanWord returns the end of the word starting at i and the word as a shell would
// read a dropped path: a quoted run ('…' or "…", possibly after @) up to its closing
// quote, and a backslash-escaped space kept in the word.
func scanWord(s string, i int) (end int, word string) {
	j := i
	if s[j] == '@' {
		j++
	}
	if j < len(s) && (s[j] == '\'' || s[j] == '"') {
		if k := strings.IndexByte(s[j+1:], s[j]); k >= 0 {
			end = j + 1 + k + 1
			for end < len(s) && !isSpace(s[end]) {
				end++
			}
			return end, s[i:j] + s[j+1:j+1+k] + s[j+1+k+1:end]
		}
	}
	var w strings.Builder
	for end = i; end < len(s) && !isSpace(s[end]); end++ {
		if s[end] == '\\' && end+1 < len(s) && s[end+1] == ' ' {
			end++
		}
		w.WriteByte(s[end])
	}
	return end, w.String()
}

// splitWord separates a word into the path (with its @) and the punctuation that ends
// a sentence after it.
func splitWord(w string) (core, tail string) {
	core = strings.TrimRight(w, trailing)
	if !imageExts[strings.ToLower(filepath.Ext(core))] {
		core = w
	}
	return core, w[len(core):]
}

// imageFile reports the absolute path of the image file a word names: @path (relative
// to root) or @/abs, or a bare absolute path, ending in an image's extension and naming
// an existing regular file. Whether the task may read it is the runner's to say.
func imageFile(word, root string) (string, bool) {
	p, at := strings.CutPrefix(word, "@")
	if !imageExts[strings.ToLower(filepath.Ext(p))] {
		return "", false
	}
	switch {
	case filepath.IsAbs(p):
	case at && root != "":
		p = filepath.Join(root, p)
	default:
		return "", false
	}
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	return filepath.Clean(p), true
}

// attach turns a prompt's image words into attachments and returns the text to show
// and send with how to send it; nil when the back-end cannot take images, after the
// screen said so (the prompt is not sent, and goes back to the input when it is empty).
func (m *Model) attach(prompt string) (string, func(ctx context.Context, emit func(agent.Event)) error) {
	text, images := attachImages(prompt, m.taskRoot())
	backend := m.opts.Backend
	if len(images) == 0 {
		return prompt, func(ctx context.Context, emit func(agent.Event)) error { return backend.Prompt(ctx, prompt, emit) }
	}
	ip, ok := backend.(ImagePrompter)
	if !ok {
		m.add(&entry{kind: entryError, text: "not sent: images are not supported over attach (the service takes a prompt's text only); send the prompt without " +
			sanitize(strings.Join(imageNames(images), ", ")) + ", or run sema in the workspace"})
		if m.input.Value() == "" {
			m.input.SetValue(prompt)
		}
		return text, nil
	}
	return text, func(ctx context.Context, emit func(agent.Event)) error {
		return ip.PromptImages(ctx, text, images, emit)
	}
}

func imageNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}
