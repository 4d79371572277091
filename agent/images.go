package agent

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/imagefit"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
)

// Image is an image attached to a task's prompt (TaskSpec.Images). Exactly one of Path
// and Data is set.
type Image struct {
	// Path is an image file the engine reads as the Read tool would: absolute, or
	// relative to TaskSpec.Root, through the fence (the read roots and face, the deny
	// set, the credential stores) and the Read deny rules. A path any of them refuses is
	// refused by name before the leg starts.
	Path string
	// MediaType is the image's type: image/png, image/jpeg, image/gif or image/webp.
	// Empty: read from the image's first bytes. A type the bytes contradict is refused
	// (config.image_invalid).
	MediaType string
	// Data is the image's raw bytes (not base64), for an embedder that holds the image
	// itself.
	Data []byte
}

// Codes of the images a task's prompt cannot carry. An image over the limits a model
// accepts that cannot be downsampled keeps imagefit's codes (fs.image_too_large, …), a
// path the fence refuses the fence's (fs.path_denied, fs.path_not_in_root, …), and a
// path a Read deny rule names is permission.denied, as the Read tool answers them.
const (
	// CodeImageInvalid refuses an image that is not one: both or neither of Path and
	// Data, bytes that are not a PNG, JPEG, GIF or WebP image, or a MediaType they
	// contradict.
	CodeImageInvalid = "config.image_invalid"
	// CodeImageUnreadable refuses an image file that is missing, not a regular file, or
	// could not be read.
	CodeImageUnreadable = "config.image_unreadable"
)

// maxImageFile bounds what is read of an attached image file before it is fitted, as
// Read bounds the images it shows.
const maxImageFile = 64 << 20

// prepareImages reads and checks the spec's images once, before the session's leg
// starts, and keeps them in the spec as bytes ready for the model: a refused image
// ends the leg before anything was recorded or sent.
func (l *leg) prepareImages(ctx context.Context) error {
	if len(l.spec.Images) == 0 {
		return nil
	}
	out := make([]Image, 0, len(l.spec.Images))
	for i, img := range l.spec.Images {
		ready, err := l.loadImage(ctx, i, img)
		if err != nil {
			return err
		}
		out = append(out, ready)
	}
	l.spec.Images = out
	return nil
}

// loadImage returns img's bytes as the model is sent them (downsampled when over the
// limits), with their media type and without a path.
func (l *leg) loadImage(ctx context.Context, i int, img Image) (Image, error) {
	name := fmt.Sprintf("image %d", i+1)
	data := img.Data
	switch {
	case img.Path != "" && img.Data != nil:
		return Image{}, configError(CodeImageInvalid, "%s has both a Path and Data; give one of them", name).With("image", i)
	case img.Path == "" && len(img.Data) == 0:
		return Image{}, configError(CodeImageInvalid, "%s has neither a Path nor Data; give the file to read or the image's bytes", name).With("image", i)
	case img.Path != "":
		name = img.Path
		var err error
		if data, err = l.readImageFile(ctx, img.Path); err != nil {
			return Image{}, err
		}
	case len(data) > maxImageFile:
		return Image{}, configError(CodeImageInvalid, "%s is %d bytes, more than the %d MB an attached image may be; attach a smaller one", name, len(data), maxImageFile>>20).With("image", i)
	}
	mt := imagefit.Sniff(data)
	if mt == "" {
		return Image{}, configError(CodeImageInvalid, "%s is not a PNG, JPEG, GIF or WebP image (its bytes read as %s); attach one of those", name, http.DetectContentType(data)).With("image", i)
	}
	if want := strings.ToLower(strings.TrimSpace(img.MediaType)); want != "" && want != mt {
		return Image{}, configError(CodeImageInvalid, "%s is said to be %s but its bytes are %s; give its real media type, or none", name, img.MediaType, mt).With("image", i)
	}
	fit, err := imagefit.FitAs(ctx, l.deps.ImageDownsampler, data, mt)
	if err != nil {
		if ctx.Err() != nil {
			return Image{}, ctx.Err()
		}
		code, msg := sema.CodeOf(err), sema.MessageOf(err)
		if code == "" {
			code = imagefit.CodeDownsampleFailed
		}
		return Image{}, configError(code, "%s: %s", name, msg).With("image", i)
	}
	return Image{MediaType: fit.MediaType, Data: fit.Data}, nil
}

// readImageFile reads the image file spelled as a task names it, refused where the
// Read tool would refuse it: the fence's answer for a path outside the read face, in the
// deny set or a credential store, or escaping through a link; permission.denied for a
// path a Read deny rule names.
func (l *leg) readImageFile(ctx context.Context, spelled string) ([]byte, error) {
	p, err := l.fence.Resolve(ctx, spelled, fence.Read)
	if err != nil {
		return nil, err
	}
	if !p.Exists {
		return nil, configError(CodeImageUnreadable, "the image %s does not exist; check the path (relative paths start at the task root)", spelled).With("path", spelled)
	}
	if l.readDenial().Denied("Read", p.Canonical) {
		return nil, sema.Errorf(permission.CodeDenied, "a deny rule keeps Read from %s, so it cannot be attached; attach another file or remove the rule", spelled).With("path", spelled)
	}
	rc, err := l.deps.Env.Open(ctx, p.Canonical)
	if err != nil {
		return nil, configError(CodeImageUnreadable, "the image %s could not be opened (%v); check that it is a readable file", spelled, err).With("path", spelled)
	}
	defer rc.Close()
	fi, ok := env.OpenedInfo(rc)
	if !ok {
		if fi, err = l.deps.Env.Stat(ctx, p.Canonical); err != nil {
			return nil, configError(CodeImageUnreadable, "the image %s could not be read (%v)", spelled, err).With("path", spelled)
		}
	}
	if !fi.IsRegular() {
		return nil, configError(CodeImageUnreadable, "%s is not a regular file; attach an image file", spelled).With("path", spelled)
	}
	if fence.HardLinked(p.Canonical, fi) {
		return nil, fence.HardLinkError(spelled)
	}
	data, err := io.ReadAll(io.LimitReader(rc, maxImageFile+1))
	if err != nil {
		return nil, configError(CodeImageUnreadable, "the image %s could not be read (%v)", spelled, err).With("path", spelled)
	}
	if len(data) > maxImageFile {
		return nil, configError(CodeImageUnreadable, "the image %s is larger than %d MB; attach a smaller copy", spelled, maxImageFile>>20).With("path", spelled)
	}
	return data, nil
}

// promptBlocks is the first user message's content: the prompt's text, then the
// images (prepareImages made them ready).
func promptBlocks(prompt string, images []Image) []model.Block {
	blocks := make([]model.Block, 0, 1+len(images))
	if strings.TrimSpace(prompt) != "" {
		blocks = append(blocks, model.TextBlock(prompt))
	}
	for _, img := range images {
		blocks = append(blocks, model.Block{Kind: model.KindImage, MediaType: img.MediaType, Data: img.Data})
	}
	return blocks
}
