package files

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/imagefit"
	"github.com/sema-agent/sema/tools"
)

// readWith returns the Read tool of f's session with the image downsampler d.
func (f *readFix) readWith(d imagefit.Downsampler) tools.Tool {
	return &readTool{Config{Env: f.env, Fence: f.fence, ReadState: f.rs, ImageDownsampler: d}}
}

// The image downsampler seat: what Read sends for an image over the limits is the
// downsampler's output, checked again, and nothing else. Every way a downsampler can
// fail — declining, erroring, panicking, returning the original or something that is not
// an image — ends in a coded error and no image block.
func TestImageDownsamplerSeat(t *testing.T) {
	t.Parallel()
	f := newReadFix(t)
	small := encodePNG(t, gradient(40, 30))
	wide := encodePNG(t, gradient(2100, 200)) // over imagefit.MaxDimension, few bytes
	f.put(map[string]string{"small.png": string(small), "wide.png": string(wide)})
	out := encodePNG(t, gradient(20, 2)) // what the injected downsampler answers with

	cases := []struct {
		name string
		down imagefit.Downsampler
		file string
		code string // "" = success
		want []byte // on success: the image block's bytes
		text string // a fragment the result's text must hold
	}{
		{name: "injected, over the limits", file: "wide.png", want: out, text: "downsampled to 20x2 image/png",
			down: func(_ context.Context, data []byte, mt string) (imagefit.Downsampled, bool, error) {
				if !bytes.Equal(data, wide) || mt != "image/png" {
					return imagefit.Downsampled{}, false, errors.New("called with the wrong image")
				}
				return imagefit.Downsampled{Data: out, MediaType: "image/png"}, true, nil
			}},
		{name: "injected, media type read from the bytes", file: "wide.png", want: out,
			down: func(context.Context, []byte, string) (imagefit.Downsampled, bool, error) {
				return imagefit.Downsampled{Data: out}, true, nil
			}},
		{name: "injected, small image untouched", file: "small.png", want: small,
			down: func(context.Context, []byte, string) (imagefit.Downsampled, bool, error) {
				panic("called for an image within the limits")
			}},
		{name: "built-in", file: "wide.png", text: "downsampled to 2000x190 image/jpeg"},
		{name: "off, small image untouched", file: "small.png", want: small, down: imagefit.NoDownsample},
		{name: "off, over the limits", file: "wide.png", down: imagefit.NoDownsample, code: CodeImageTooLarge, text: "downsampling is off"},
		{name: "declines", file: "wide.png", code: CodeImageTooLarge, text: "could not make it smaller",
			down: func(context.Context, []byte, string) (imagefit.Downsampled, bool, error) {
				return imagefit.Downsampled{}, false, nil
			}},
		{name: "errors", file: "wide.png", code: CodeImageDownsampleFailed, text: "the image downsampler failed: no codec",
			down: func(context.Context, []byte, string) (imagefit.Downsampled, bool, error) {
				return imagefit.Downsampled{}, false, errors.New("no codec")
			}},
		{name: "errors with a code of its own", file: "wide.png", code: "acme.quota",
			down: func(context.Context, []byte, string) (imagefit.Downsampled, bool, error) {
				return imagefit.Downsampled{}, false, sema.Errorf("acme.quota", "the image service is over its quota")
			}},
		{name: "panics", file: "wide.png", code: CodeImageDownsampleFailed, text: "panicked: boom",
			down: func(context.Context, []byte, string) (imagefit.Downsampled, bool, error) {
				panic("boom")
			}},
		{name: "returns the original", file: "wide.png", code: CodeImageTooLarge, text: "still over them",
			down: func(_ context.Context, data []byte, mt string) (imagefit.Downsampled, bool, error) {
				return imagefit.Downsampled{Data: data, MediaType: mt}, true, nil
			}},
		{name: "returns nothing", file: "wide.png", code: CodeImageDownsampleFailed,
			down: func(context.Context, []byte, string) (imagefit.Downsampled, bool, error) {
				return imagefit.Downsampled{}, true, nil
			}},
		{name: "returns text", file: "wide.png", code: CodeImageDownsampleFailed,
			down: func(context.Context, []byte, string) (imagefit.Downsampled, bool, error) {
				return imagefit.Downsampled{Data: []byte("<svg/>"), MediaType: "image/png"}, true, nil
			}},
		{name: "mislabels its output", file: "wide.png", code: CodeImageDownsampleFailed, text: "not a image/jpeg image",
			down: func(context.Context, []byte, string) (imagefit.Downsampled, bool, error) {
				return imagefit.Downsampled{Data: out, MediaType: "image/jpeg"}, true, nil
			}},
		{name: "returns a truncated image", file: "wide.png", code: CodeImageDownsampleFailed, text: "does not decode",
			down: func(context.Context, []byte, string) (imagefit.Downsampled, bool, error) {
				return imagefit.Downsampled{Data: out[:12]}, true, nil
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := f.readWith(c.down).Run(context.Background(), json.RawMessage(`{"file_path":"`+c.file+`"}`))
			imgs := imageBlocks(r)
			if c.code != "" {
				if !r.IsError || r.Code != c.code || len(imgs) != 0 {
					t.Fatalf("error %v code %q with %d images (%s), want code %q and no image", r.IsError, r.Code, len(imgs), r.TextOf(), c.code)
				}
			} else {
				if r.IsError || len(imgs) != 1 {
					t.Fatalf("error %v code %q with %d images (%s), want one image", r.IsError, r.Code, len(imgs), r.TextOf())
				}
				if c.want != nil && !bytes.Equal(imgs[0].Data, c.want) {
					t.Errorf("sent %d bytes, want the %d expected", len(imgs[0].Data), len(c.want))
				}
				if len(imgs[0].Data) > imagefit.MaxBytes {
					t.Errorf("sent %d bytes, over the limit", len(imgs[0].Data))
				}
			}
			if !strings.Contains(r.TextOf(), c.text) {
				t.Errorf("text %q lacks %q", r.TextOf(), c.text)
			}
		})
	}
}

// A notebook's image outputs go through the same seat: with downsampling off, an output
// over the limits is left out with a line saying why, and the rest of the notebook shows.
func TestNotebookImagesUseTheDownsampler(t *testing.T) {
	t.Parallel()
	f := newReadFix(t)
	output := func(img []byte) map[string]any {
		return map[string]any{"output_type": "display_data", "metadata": map[string]any{},
			"data": map[string]any{"image/png": base64.StdEncoding.EncodeToString(img)}}
	}
	small := encodePNG(t, gradient(8, 8))
	nb := map[string]any{"nbformat": 4, "nbformat_minor": 5, "metadata": map[string]any{},
		"cells": []any{map[string]any{"cell_type": "code", "id": "plot", "execution_count": 1, "metadata": map[string]any{}, "source": "plot()",
			"outputs": []any{output(encodePNG(t, gradient(2100, 10))), output(small)}}}}
	raw, err := json.Marshal(nb)
	if err != nil {
		t.Fatal(err)
	}
	f.put(map[string]string{"nb.ipynb": string(raw)})
	var calls atomic.Int32
	counting := func(ctx context.Context, data []byte, mt string) (imagefit.Downsampled, bool, error) {
		calls.Add(1)
		return imagefit.NoDownsample(ctx, data, mt)
	}
	r := f.readWith(counting).Run(context.Background(), json.RawMessage(`{"file_path":"nb.ipynb"}`))
	if r.IsError {
		t.Fatalf("%s: %s", r.Code, r.TextOf())
	}
	imgs := imageBlocks(r)
	if len(imgs) != 1 || !bytes.Equal(imgs[0].Data, small) {
		t.Fatalf("%d image blocks, want only the small output unchanged", len(imgs))
	}
	if !strings.Contains(r.TextOf(), "an image output was left out") || !strings.Contains(r.TextOf(), "downsampling is off") {
		t.Errorf("the notebook does not say the large output was left out: %s", r.TextOf())
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the downsampler was called %d times, want once (for the large output only)", n)
	}
}

// A call cancelled while the downsampler works answers as cancelled, not as a failed
// image.
func TestDownsamplerCancelled(t *testing.T) {
	t.Parallel()
	f := newReadFix(t)
	f.put(map[string]string{"wide.png": string(encodePNG(t, gradient(2100, 200)))})
	ctx, cancel := context.WithCancel(context.Background())
	waits := func(ctx context.Context, _ []byte, _ string) (imagefit.Downsampled, bool, error) {
		cancel()
		<-ctx.Done()
		return imagefit.Downsampled{}, false, ctx.Err()
	}
	r := f.readWith(waits).Run(ctx, json.RawMessage(`{"file_path":"wide.png"}`))
	if !r.IsError || r.Code != tools.CodeCancelled || len(imageBlocks(r)) != 0 {
		t.Fatalf("error %v code %q: %s", r.IsError, r.Code, r.TextOf())
	}
}
