package files

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/draw"
	_ "image/gif" // registers the GIF decoder for image.Decode
	"image/jpeg"
	_ "image/png" // registers the PNG decoder for image.Decode

	"github.com/sema-agent/sema"
)

// Image limits: what a model accepts in one image block.
const (
	// ImageMaxBytes is the largest image Read sends as is (3.75 MB: 5 MB once base64
	// encoded, the providers' limit).
	ImageMaxBytes = 3_932_160
	// ImageMaxDimension is the largest width or height Read sends as is.
	ImageMaxDimension = 2000
	// imageMaxPixels bounds the images Read decodes to downsample, so one call cannot ask
	// for gigabytes of pixels.
	imageMaxPixels = 50_000_000
)

// sniffImage returns the media type of the image whose file starts with head, or "".
func sniffImage(head []byte) string {
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

// fittedImage is an image ready for a model.
type fittedImage struct {
	data                []byte
	mediaType           string
	width, height       int // of the file
	outWidth, outHeight int // of data
	resized             bool
}

// fitImage returns data as is when it is within ImageMaxBytes and ImageMaxDimension, and
// otherwise decodes it, scales it (box filter, aspect kept) to fit, and re-encodes it as
// JPEG, lowering quality and then size until it fits. Errors are *sema.Error with
// CodeImageTooLarge or CodeImageUnreadable.
func fitImage(data []byte, mediaType string) (fittedImage, error) {
	var w, h int
	if mediaType == "image/webp" {
		var ok bool
		if w, h, ok = webpSize(data); !ok {
			return fittedImage{}, sema.Errorf(CodeImageUnreadable, "the WebP image is malformed and cannot be shown")
		}
	} else {
		cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			return fittedImage{}, sema.Errorf(CodeImageUnreadable, "the %s image does not decode (%v) and cannot be shown", mediaType, err)
		}
		w, h = cfg.Width, cfg.Height
	}
	fit := fittedImage{data: data, mediaType: mediaType, width: w, height: h, outWidth: w, outHeight: h}
	if len(data) <= ImageMaxBytes && w <= ImageMaxDimension && h <= ImageMaxDimension {
		return fit, nil
	}
	if mediaType == "image/webp" {
		return fittedImage{}, sema.Errorf(CodeImageTooLarge, "the WebP image is %dx%d and %d bytes, over the limits (%d pixels a side, %d bytes), and WebP images cannot be downsampled here; convert it to PNG or JPEG first",
			w, h, len(data), ImageMaxDimension, ImageMaxBytes)
	}
	if w <= 0 || h <= 0 || w*h > imageMaxPixels {
		return fittedImage{}, sema.Errorf(CodeImageTooLarge, "the image is %dx%d, too large to downsample (at most %d pixels); make a smaller copy first", w, h, imageMaxPixels)
	}
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return fittedImage{}, sema.Errorf(CodeImageUnreadable, "the %s image does not decode (%v) and cannot be shown", mediaType, err)
	}
	scale := min(1, float64(ImageMaxDimension)/float64(w), float64(ImageMaxDimension)/float64(h))
	for range 8 {
		nw, nh := max(1, int(float64(w)*scale+0.5)), max(1, int(float64(h)*scale+0.5))
		small := boxResize(src, nw, nh)
		for _, q := range []int{85, 70, 55, 40} {
			var buf bytes.Buffer
			if err := jpeg.Encode(&buf, small, &jpeg.Options{Quality: q}); err != nil {
				return fittedImage{}, sema.Errorf(CodeImageUnreadable, "the image could not be re-encoded: %v", err)
			}
			if buf.Len() <= ImageMaxBytes {
				fit.data, fit.mediaType, fit.outWidth, fit.outHeight, fit.resized = buf.Bytes(), "image/jpeg", nw, nh, true
				return fit, nil
			}
		}
		scale *= 0.7
	}
	return fittedImage{}, sema.Errorf(CodeImageTooLarge, "the image cannot be made smaller than %d bytes", ImageMaxBytes)
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
