package imagefit

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"testing"

	"github.com/sema-agent/sema"
)

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

// Fit holds an image from elsewhere to Read's limits: within them it is returned
// as is, over them it goes through the downsampler, and bytes that are not an image, or
// whose claimed type would have to be trusted, are refused with a code.
func TestFit(t *testing.T) {
	t.Parallel()
	small := encodePNG(t, gradient(40, 30))
	wide := encodePNG(t, gradient(2100, 200))
	cases := []struct {
		name    string
		data    []byte
		down    Downsampler
		code    string // "" = success
		resized bool
		media   string
	}{
		{name: "within the limits", data: small, media: "image/png"},
		{name: "over the limits, built-in", data: wide, resized: true, media: "image/jpeg"},
		{name: "over the limits, off", data: wide, down: NoDownsample, code: CodeTooLarge},
		{name: "not an image", data: []byte("hello, world"), code: CodeUnreadable},
		{name: "truncated PNG", data: small[:20], code: CodeUnreadable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			img, resized, err := Fit(context.Background(), c.down, c.data)
			if c.code != "" {
				if sema.CodeOf(err) != c.code {
					t.Fatalf("err = %v, want code %s", err, c.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resized != c.resized || img.MediaType != c.media {
				t.Fatalf("resized %v media %q, want %v %q", resized, img.MediaType, c.resized, c.media)
			}
			if !c.resized && !bytes.Equal(img.Data, c.data) {
				t.Fatal("an image within the limits was changed")
			}
			if len(img.Data) > MaxBytes {
				t.Fatalf("%d bytes, over the limit", len(img.Data))
			}
		})
	}
}

func TestBoxResizeAveragesAndFlattensAlpha(t *testing.T) {
	t.Parallel()
	src := image.NewNRGBA(image.Rect(0, 0, 4, 2))
	for x := range 4 {
		for y := range 2 {
			c := color.NRGBA{0, 0, 0, 255} // black
			if x >= 2 {
				c = color.NRGBA{255, 0, 0, 0} // fully transparent: white once flattened
			}
			src.SetNRGBA(x, y, c)
		}
	}
	dst := boxResize(src, 2, 1)
	if got := dst.RGBAAt(0, 0); got != (color.RGBA{0, 0, 0, 255}) {
		t.Errorf("left pixel = %v, want opaque black", got)
	}
	if got := dst.RGBAAt(1, 0); got != (color.RGBA{255, 255, 255, 255}) {
		t.Errorf("right pixel = %v, want white", got)
	}
}
