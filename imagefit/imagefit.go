// Package imagefit holds an image to the limits a model accepts in one image block
// (MaxBytes, MaxDimension): an image within them is sent as it is, one over them goes
// through a Downsampler (the built-in Downsample, an embedder's own, or NoDownsample)
// and is checked against the limits again. The file tools' Read and the images an MCP
// server returns are held to the same limits through it. Every refusal is a
// *sema.Error with one of the codes below.
package imagefit

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/draw"
	_ "image/gif" // registers the GIF decoder for image.Decode
	"image/jpeg"
	_ "image/png" // registers the PNG decoder for image.Decode

	"github.com/sema-agent/sema"
)

// Image limits: what a model accepts in one image block.
const (
	// MaxBytes is the largest image sent as is (3.75 MB: 5 MB once base64 encoded, the
	// providers' limit).
	MaxBytes = 3_932_160
	// MaxDimension is the largest width or height sent as is.
	MaxDimension = 2000
	// maxPixels bounds the images decoded to downsample, so one call cannot ask for
	// gigabytes of pixels.
	maxPixels = 50_000_000
)

// Codes of the images that cannot be shown. The strings are the file tools' (fs.), as
// Read answered them first.
const (
	// CodeTooLarge refuses an image above the limits that cannot be downsampled, or
	// with downsampling off.
	CodeTooLarge = "fs.image_too_large"
	// CodeUnreadable refuses an image that does not decode, or bytes that are not an
	// image.
	CodeUnreadable = "fs.image_unreadable"
	// CodeDownsampleFailed is the code of an image the downsampler failed on: it
	// returned an error without a code of its own, panicked, or returned something that
	// is not an image.
	CodeDownsampleFailed = "fs.image_downsample_failed"
)

// Sniff returns the media type of the image whose file starts with head (image/png,
// image/jpeg, image/gif or image/webp), or "".
func Sniff(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(head, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(head, []byte("GIF87a")), bytes.HasPrefix(head, []byte("GIF89a")):
		return "image/gif"
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}

// Downsampled is what an Downsampler made of an image.
type Downsampled struct {
	// Data is the encoded image.
	Data []byte
	// MediaType is the type of Data: image/png, image/jpeg, image/gif or image/webp.
	// Empty: Read takes the type from Data's first bytes. A type Data's bytes contradict
	// is refused.
	MediaType string
}

// Downsampler is the seat that makes an image Read would show fit the limits a
// model accepts (MaxBytes, MaxDimension). Read calls it only for an image over
// them, whose size it has read (an image that does not decode is refused before), and
// never sends what it is given as it is:
//
//   - (img, true, nil): img replaces the image; Read checks it again — it must be a PNG,
//     JPEG, GIF or WebP within the limits — and refuses it otherwise;
//   - (_, false, nil): nothing done — the downsampler cannot or will not make this image
//     fit; Read refuses the image with CodeTooLarge;
//   - (_, _, err): it failed; Read answers a coded error: err's code when err is a
//     *sema.Error, else CodeDownsampleFailed. A panic is contained and answered the
//     same way.
//
// It is called for image files and for the image outputs of notebooks alike, possibly
// from several calls at once, and must honour ctx. Downsample is the built-in one;
// NoDownsample turns downsampling off.
type Downsampler func(ctx context.Context, data []byte, mimeType string) (Downsampled, bool, error)

// errDownsamplingOff is NoDownsample's answer, which Read recognises to say why the
// image was refused.
var errDownsamplingOff = errors.New("image downsampling is off")

// NoDownsample is the Downsampler that turns downsampling off, for a deployment
// that wants no image work done in its process, or answers that do not depend on a
// decoder: an image over the limits is then refused with CodeTooLarge and a
// sentence saying downsampling is off. Images within the limits are shown as before.
func NoDownsample(ctx context.Context, data []byte, mimeType string) (Downsampled, bool, error) {
	return Downsampled{}, false, errDownsamplingOff
}

// Downsample is the built-in Downsampler: it decodes a PNG, JPEG or GIF,
// scales it (box filter, aspect kept, composited over white) to fit MaxDimension,
// and re-encodes it as JPEG, lowering the quality and then the size until it fits
// MaxBytes. An image already within the limits is nothing to do ((_, false, nil)).
// A WebP image, or one of more than 50 million pixels, cannot be downsampled
// (CodeTooLarge); one that does not decode is CodeUnreadable.
func Downsample(ctx context.Context, data []byte, mimeType string) (Downsampled, bool, error) {
	w, h, err := imageSize(data, mimeType)
	if err != nil {
		return Downsampled{}, false, err
	}
	if withinLimits(len(data), w, h) {
		return Downsampled{}, false, nil
	}
	if mimeType == "image/webp" {
		return Downsampled{}, false, sema.Errorf(CodeTooLarge, "the WebP image is %dx%d and %d bytes, over the limits (%d pixels a side, %d bytes), and WebP images cannot be downsampled here; convert it to PNG or JPEG first",
			w, h, len(data), MaxDimension, MaxBytes)
	}
	if w <= 0 || h <= 0 || w*h > maxPixels {
		return Downsampled{}, false, sema.Errorf(CodeTooLarge, "the image is %dx%d, too large to downsample (at most %d pixels); make a smaller copy first", w, h, maxPixels)
	}
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return Downsampled{}, false, sema.Errorf(CodeUnreadable, "the %s image does not decode (%v) and cannot be shown", mimeType, err)
	}
	scale := min(1, float64(MaxDimension)/float64(w), float64(MaxDimension)/float64(h))
	for range 8 {
		if err := ctx.Err(); err != nil {
			return Downsampled{}, false, err
		}
		nw, nh := max(1, int(float64(w)*scale+0.5)), max(1, int(float64(h)*scale+0.5))
		small := boxResize(src, nw, nh)
		for _, q := range []int{85, 70, 55, 40} {
			var buf bytes.Buffer
			if err := jpeg.Encode(&buf, small, &jpeg.Options{Quality: q}); err != nil {
				return Downsampled{}, false, sema.Errorf(CodeUnreadable, "the image could not be re-encoded: %v", err)
			}
			if buf.Len() <= MaxBytes {
				return Downsampled{Data: buf.Bytes(), MediaType: "image/jpeg"}, true, nil
			}
		}
		scale *= 0.7
	}
	return Downsampled{}, false, sema.Errorf(CodeTooLarge, "the image cannot be made smaller than %d bytes", MaxBytes)
}

// Fitted is an image ready for a model, with what it was made from.
type Fitted struct {
	// Data is the image to send: the original, or what the downsampler made of it.
	Data []byte
	// MediaType is Data's type.
	MediaType string
	// Width and Height are the original image's.
	Width, Height int
	// OutWidth and OutHeight are Data's.
	OutWidth, OutHeight int
	// Resized reports that Data is the downsampler's, not the original.
	Resized bool
}

// imageSize reads an image's width and height without decoding its pixels. Its error is
// a *sema.Error with CodeUnreadable.
func imageSize(data []byte, mediaType string) (w, h int, err error) {
	if mediaType == "image/webp" {
		var ok bool
		if w, h, ok = webpSize(data); !ok {
			return 0, 0, sema.Errorf(CodeUnreadable, "the WebP image is malformed and cannot be shown")
		}
		return w, h, nil
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return 0, 0, sema.Errorf(CodeUnreadable, "the %s image does not decode (%v) and cannot be shown", mediaType, err)
	}
	return cfg.Width, cfg.Height, nil
}

// withinLimits reports whether an image of n bytes and w x h pixels may be sent as
// it is.
func withinLimits(n, w, h int) bool {
	return n <= MaxBytes && w <= MaxDimension && h <= MaxDimension
}

// FitAs returns data, an image of the type mediaType (as Sniff read it), as is when it
// is within MaxBytes and MaxDimension, and otherwise what down (nil: Downsample) made of
// it, checked against the limits again. An image over the limits is never returned:
// every refusal is a *sema.Error (CodeTooLarge, CodeUnreadable, CodeDownsampleFailed,
// or the code of the downsampler's own error), or ctx's error when ctx ended.
func FitAs(ctx context.Context, down Downsampler, data []byte, mediaType string) (Fitted, error) {
	w, h, err := imageSize(data, mediaType)
	if err != nil {
		return Fitted{}, err
	}
	fit := Fitted{Data: data, MediaType: mediaType, Width: w, Height: h, OutWidth: w, OutHeight: h}
	if withinLimits(len(data), w, h) {
		return fit, nil
	}
	over := fmt.Sprintf("the %s image is %dx%d and %d bytes, over the limits a model accepts (%d pixels a side, %d bytes)", mediaType, w, h, len(data), MaxDimension, MaxBytes)
	if down == nil {
		down = Downsample
	}
	out, ok, err := downsampleSafely(ctx, down, data, mediaType)
	var se *sema.Error
	switch {
	case errors.Is(err, errDownsamplingOff):
		return Fitted{}, sema.Errorf(CodeTooLarge, "%s, and image downsampling is off; make a smaller copy first", over)
	case err != nil && ctx.Err() != nil:
		return Fitted{}, ctx.Err()
	case errors.As(err, &se):
		return Fitted{}, err
	case err != nil:
		return Fitted{}, sema.Errorf(CodeDownsampleFailed, "%s, and the image downsampler failed: %v", over, err)
	case !ok:
		return Fitted{}, sema.Errorf(CodeTooLarge, "%s, and the image downsampler could not make it smaller; make a smaller copy first", over)
	}
	mt := Sniff(out.Data)
	if mt == "" || out.MediaType != "" && out.MediaType != mt {
		return Fitted{}, sema.Errorf(CodeDownsampleFailed, "%s, and the image downsampler returned %d bytes that are not a %s image", over, len(out.Data), cmp.Or(out.MediaType, "PNG, JPEG, GIF or WebP"))
	}
	ow, oh, err := imageSize(out.Data, mt)
	if err != nil {
		return Fitted{}, sema.Errorf(CodeDownsampleFailed, "%s, and the image the downsampler returned does not decode", over)
	}
	if !withinLimits(len(out.Data), ow, oh) {
		return Fitted{}, sema.Errorf(CodeTooLarge, "%s, and the image downsampler made it %dx%d and %d bytes, still over them; make a smaller copy first", over, ow, oh, len(out.Data))
	}
	fit.Data, fit.MediaType, fit.OutWidth, fit.OutHeight, fit.Resized = out.Data, mt, ow, oh, true
	return fit, nil
}

// Fit holds an image that did not come from a file (a tool of an MCP server returned
// it, say) to the limits Read holds its own images to: it returns data as it is when
// it is within MaxBytes and MaxDimension, and otherwise what down made of it (nil:
// Downsample), checked against the limits again, with resized set. The media type is
// read from data's first bytes, never taken from whoever sent it; bytes that are not a
// PNG, JPEG, GIF or WebP image are CodeUnreadable. Every refusal is a *sema.Error
// (CodeTooLarge, CodeUnreadable, CodeDownsampleFailed, or the code of down's own
// error), or ctx's error when ctx ended, exactly as for a file Read shows.
func Fit(ctx context.Context, down Downsampler, data []byte) (img Downsampled, resized bool, err error) {
	mt := Sniff(data)
	if mt == "" {
		return Downsampled{}, false, sema.Errorf(CodeUnreadable, "the %d bytes are not a PNG, JPEG, GIF or WebP image and cannot be shown", len(data))
	}
	fit, err := FitAs(ctx, down, data, mt)
	if err != nil {
		return Downsampled{}, false, err
	}
	return Downsampled{Data: fit.Data, MediaType: fit.MediaType}, fit.Resized, nil
}

// downsampleSafely calls a downsampler with its panic contained: a seat the deployment
// filled must not take the process down with it.
func downsampleSafely(ctx context.Context, down Downsampler, data []byte, mediaType string) (out Downsampled, ok bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, ok, err = Downsampled{}, false, sema.Errorf(CodeDownsampleFailed, "the image downsampler panicked: %v", p)
		}
	}()
	return down(ctx, data, mediaType)
}

// boxResize scales src to nw x nh (nw <= width, nh <= height) by averaging the source
// pixels that fall in each destination pixel, compositing over white (JPEG has no alpha).
// Source rows are converted one at a time (draw has fast paths for the decoders' image
// types), so memory beyond src is proportional to one row plus the output.
func boxResize(src image.Image, nw, nh int) *image.RGBA {
	b := src.Bounds()
	w, h := b.Dx(), b.Dy()
	dst := image.NewRGBA(image.Rect(0, 0, nw, nh))
	line := image.NewRGBA(image.Rect(0, 0, w, 1))
	type acc struct{ r, g, b, a, n uint32 }
	row := make([]acc, nw)
	colOf := make([]int, w) // source column -> destination column
	for x := range w {
		colOf[x] = x * nw / w
	}
	flush := func(dy int) {
		for dx := range row {
			s := &row[dx]
			if s.n == 0 {
				continue
			}
			// Premultiplied colour over white: c + (1 - alpha) * white.
			white := 255 - s.a/s.n
			i := dst.PixOffset(dx, dy)
			dst.Pix[i+0] = uint8(s.r/s.n + white)
			dst.Pix[i+1] = uint8(s.g/s.n + white)
			dst.Pix[i+2] = uint8(s.b/s.n + white)
			dst.Pix[i+3] = 0xff
			*s = acc{}
		}
	}
	cur := 0
	for y := range h {
		if dy := y * nh / h; dy != cur {
			flush(cur)
			cur = dy
		}
		draw.Draw(line, line.Bounds(), src, image.Pt(b.Min.X, b.Min.Y+y), draw.Src)
		pix := line.Pix
		for x := range w {
			s := &row[colOf[x]]
			s.r += uint32(pix[4*x])
			s.g += uint32(pix[4*x+1])
			s.b += uint32(pix[4*x+2])
			s.a += uint32(pix[4*x+3])
			s.n++
		}
	}
	flush(cur)
	return dst
}

// webpSize reads the canvas size from a WebP file's first chunk (VP8, VP8L or VP8X).
func webpSize(data []byte) (w, h int, ok bool) {
	if len(data) < 30 {
		return 0, 0, false
	}
	switch string(data[12:16]) {
	case "VP8X":
		w = 1 + int(uint32(data[24])|uint32(data[25])<<8|uint32(data[26])<<16)
		h = 1 + int(uint32(data[27])|uint32(data[28])<<8|uint32(data[29])<<16)
		return w, h, true
	case "VP8 ":
		if data[23] != 0x9d || data[24] != 0x01 || data[25] != 0x2a {
			return 0, 0, false
		}
		w = int(binary.LittleEndian.Uint16(data[26:]) & 0x3fff)
		h = int(binary.LittleEndian.Uint16(data[28:]) & 0x3fff)
		return w, h, true
	case "VP8L":
		if data[20] != 0x2f {
			return 0, 0, false
		}
		bits := binary.LittleEndian.Uint32(data[21:])
		return 1 + int(bits&0x3fff), 1 + int(bits>>14&0x3fff), true
	}
	return 0, 0, false
}
