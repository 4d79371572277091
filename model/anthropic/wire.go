package anthropic

import (
	"errors"
	"fmt"
	"math"
	"unicode/utf16"
	"unicode/utf8"
)

// wireEvent is the data of one stream event, decoded in a single pass over its JSON:
// the fields the accumulator reads, of every event type. A field that is absent, null
// or of another JSON type than the one it has on the wire is zero, so an event type
// added later, whose fields may be shaped otherwise, decodes without error. Of a key
// given twice in one object, the last counts, as with encoding/json.
//
// The byte slices point into the decoded data or into the event's scratch space; they
// are valid until the next decode, so whatever outlives the event must be copied.
type wireEvent struct {
	Type  []byte
	Index count // content_block_start, content_block_delta, content_block_stop
	// Model and MessageUsage are message.model and message.usage of message_start.
	Model        []byte
	MessageUsage usage
	// Usage is the running total that message_delta carries.
	Usage usage
	// Block is content_block of content_block_start.
	Block content
	// Delta is delta of content_block_delta and of message_delta.
	Delta content

	// scratch holds the strings that had escapes, once unescaped.
	scratch []byte
}

// count is a JSON integer that may be missing.
type count struct {
	N  int64
	OK bool
}

// usage is the token counts of a usage object.
type usage struct {
	Input, Output, CacheRead, CacheWrite count
}

// content is a content block, or a delta of one, or the delta of message_delta; one
// struct serves all three, since their fields do not clash.
type content struct {
	Type, Text, Thinking, Signature []byte
	ID, Name                        []byte
	Input                           []byte // the raw JSON of a tool_use block's input
	PartialJSON                     []byte
	StopReason                      []byte
}

// maxDepth bounds the nesting of a JSON value, as encoding/json does.
const maxDepth = 10000

var errEnd = errors.New("unexpected end of JSON")

// decode sets e from data, the JSON object of one event. It refuses what is not a
// single JSON object (RFC 8259), and what encoding/json would refuse; strings are
// unescaped as encoding/json does, invalid UTF-8 and lone surrogates included.
func (e *wireEvent) decode(data []byte) error {
	*e = wireEvent{scratch: e.scratch[:0]}
	d := jsonReader{b: data, scratch: e.scratch}
	d.ws()
	if d.peek() != '{' {
		return d.fail("the event data is not a JSON object")
	}
	err := d.object(1, func(key []byte, depth int) error {
		switch string(key) {
		case "type":
			return d.str(&e.Type, depth)
		case "index":
			return d.count(&e.Index, depth)
		case "message":
			e.Model, e.MessageUsage = nil, usage{}
			return d.objectOrSkip(depth, func(key []byte, depth int) error {
				switch string(key) {
				case "model":
					return d.str(&e.Model, depth)
				case "usage":
					return d.usage(&e.MessageUsage, depth)
				}
				return d.skip(depth)
			})
		case "usage":
			return d.usage(&e.Usage, depth)
		case "content_block":
			return d.content(&e.Block, depth)
		case "delta":
			return d.content(&e.Delta, depth)
		}
		return d.skip(depth)
	})
	e.scratch = d.scratch
	if err != nil {
		return err
	}
	d.ws()
	if d.i != len(d.b) {
		return d.fail("data follows the event's JSON object")
	}
	return nil
}

// jsonReader reads one JSON text from b.
type jsonReader struct {
	b []byte
	i int
	// scratch receives unescaped strings; it only grows during one text, so the
	// slices handed out stay valid.
	scratch []byte
}

func (d *jsonReader) fail(what string) error {
	if d.i >= len(d.b) {
		return fmt.Errorf("%s: %w", what, errEnd)
	}
	return fmt.Errorf("%s at offset %d", what, d.i)
}

func (d *jsonReader) peek() byte {
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *jsonReader) ws() {
	i := d.i
	for i < len(d.b) && (d.b[i] == ' ' || d.b[i] == '\n' || d.b[i] == '\t' || d.b[i] == '\r') {
		i++
	}
	d.i = i
}

// object reads an object, at its '{', calling field for each member with the reader
// at the member's value; field must read exactly that value. depth is the object's
// own nesting depth; field gets the depth of the value.
func (d *jsonReader) object(depth int, field func(key []byte, depth int) error) error {
	if depth > maxDepth {
		return d.fail("JSON nested too deeply")
	}
	d.i++ // '{'
	d.ws()
	if d.peek() == '}' {
		d.i++
		return nil
	}
	for {
		d.ws()
		if d.peek() != '"' {
			return d.fail("expected an object key")
		}
		key, err := d.string()
		if err != nil {
			return err
		}
		d.ws()
		if d.peek() != ':' {
			return d.fail("expected ':' after an object key")
		}
		d.i++
		d.ws()
		if err := field(key, depth+1); err != nil {
			return err
		}
		d.ws()
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			return nil
		default:
			return d.fail("expected ',' or '}' in an object")
		}
	}
}

// objectOrSkip reads an object with field, or skips a value of another type.
func (d *jsonReader) objectOrSkip(depth int, field func(key []byte, depth int) error) error {
	if d.peek() != '{' {
		return d.skip(depth)
	}
	return d.object(depth, field)
}

// str sets *dst to a string value, or to nil and skips a value of another type.
func (d *jsonReader) str(dst *[]byte, depth int) error {
	if d.peek() != '"' {
		*dst = nil
		return d.skip(depth)
	}
	s, err := d.string()
	*dst = s
	return err
}

// count sets *dst to an integer value, or to zero and skips a value of another type (a
// fraction or a number beyond int64 included).
func (d *jsonReader) count(dst *count, depth int) error {
	*dst = count{}
	c := d.peek()
	if c != '-' && (c < '0' || c > '9') {
		return d.skip(depth)
	}
	n, integer, err := d.number()
	if err == nil && integer {
		*dst = count{N: n, OK: true}
	}
	return err
}

func (d *jsonReader) usage(u *usage, depth int) error {
	*u = usage{}
	return d.objectOrSkip(depth, func(key []byte, depth int) error {
		switch string(key) {
		case "input_tokens":
			return d.count(&u.Input, depth)
		case "output_tokens":
			return d.count(&u.Output, depth)
		case "cache_read_input_tokens":
			return d.count(&u.CacheRead, depth)
		case "cache_creation_input_tokens":
			return d.count(&u.CacheWrite, depth)
		}
		return d.skip(depth)
	})
}

func (d *jsonReader) content(c *content, depth int) error {
	*c = content{}
	return d.objectOrSkip(depth, func(key []byte, depth int) error {
		switch string(key) {
		case "type":
			return d.str(&c.Type, depth)
		case "text":
			return d.str(&c.Text, depth)
		case "thinking":
			return d.str(&c.Thinking, depth)
		case "signature":
			return d.str(&c.Signature, depth)
		case "id":
			return d.str(&c.ID, depth)
		case "name":
			return d.str(&c.Name, depth)
		case "partial_json":
			return d.str(&c.PartialJSON, depth)
		case "stop_reason":
			return d.str(&c.StopReason, depth)
		case "input":
			start := d.i
			if err := d.skip(depth); err != nil {
				return err
			}
			c.Input = d.b[start:d.i]
			return nil
		}
		return d.skip(depth)
	})
}

// skip reads any value, checking that it is well formed.
func (d *jsonReader) skip(depth int) error {
	switch c := d.peek(); {
	case c == '{':
		return d.object(depth, func(_ []byte, depth int) error { return d.skip(depth) })
	case c == '[':
		return d.array(depth)
	case c == '"':
		_, err := d.string()
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		_, _, err := d.number()
		return err
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	}
	return d.fail("expected a JSON value")
}

func (d *jsonReader) array(depth int) error {
	if depth > maxDepth {
		return d.fail("JSON nested too deeply")
	}
	d.i++ // '['
	d.ws()
	if d.peek() == ']' {
		d.i++
		return nil
	}
	for {
		d.ws()
		if err := d.skip(depth + 1); err != nil {
			return err
		}
		d.ws()
		switch d.peek() {
		case ',':
			d.i++
		case ']':
			d.i++
			return nil
		default:
			return d.fail("expected ',' or ']' in an array")
		}
	}
}

func (d *jsonReader) literal(word string) error {
	if len(d.b)-d.i < len(word) || string(d.b[d.i:d.i+len(word)]) != word {
		return d.fail("expected " + word)
	}
	d.i += len(word)
	return nil
}

// number reads a number; n is its value when integer reports that it is an integer
// that fits an int64.
func (d *jsonReader) number() (n int64, integer bool, err error) {
	neg := d.peek() == '-'
	if neg {
		d.i++
	}
	// u is the magnitude; it stops growing past any int64's.
	var u uint64
	integer = true
	switch c := d.peek(); {
	case c == '0':
		d.i++
	case c >= '1' && c <= '9':
		for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
			if u <= (math.MaxUint64-9)/10 {
				u = u*10 + uint64(d.b[d.i]-'0')
			} else {
				u = math.MaxUint64 // beyond any int64
			}
			d.i++
		}
	default:
		return 0, false, d.fail("expected a digit")
	}
	if d.peek() == '.' {
		d.i++
		if err := d.digits("after '.'"); err != nil {
			return 0, false, err
		}
		integer = false
	}
	if c := d.peek(); c == 'e' || c == 'E' {
		d.i++
		if c := d.peek(); c == '+' || c == '-' {
			d.i++
		}
		if err := d.digits("in an exponent"); err != nil {
			return 0, false, err
		}
		integer = false
	}
	switch {
	case !integer:
		return 0, false, nil
	case neg && u <= 1<<63:
		return -int64(u), true, nil // u = 1<<63 gives -1<<63: int64(u) wraps to it, and so does its negation
	case !neg && u < 1<<63:
		return int64(u), true, nil
	}
	return 0, false, nil
}

// digits reads one or more digits.
func (d *jsonReader) digits(where string) error {
	if c := d.peek(); c < '0' || c > '9' {
		return d.fail("expected a digit " + where)
	}
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	return nil
}

// string reads a string, at its opening quote, and returns its value: a slice of b
// when it has no escapes and is valid UTF-8, else a slice of scratch.
func (d *jsonReader) string() ([]byte, error) {
	d.i++ // '"'
	start := d.i
	for d.i < len(d.b) {
		i := d.i
		for i < len(d.b) && plain[d.b[i]] {
			i++
		}
		d.i = i
		if d.i == len(d.b) {
			break
		}
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return d.b[start : d.i-1], nil
		case c == '\\':
			return d.unescape(start)
		case c < 0x20:
			return nil, d.fail("control character in a string")
		case c < utf8.RuneSelf:
			d.i++
		default:
			r, size := utf8.DecodeRune(d.b[d.i:])
			if r == utf8.RuneError && size == 1 {
				return d.unescape(start)
			}
			d.i += size
		}
	}
	return nil, d.fail("unterminated string")
}

// plain marks the bytes that stand for themselves in a string: printable ASCII but
// the quote and the backslash.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// unescape finishes a string whose plain prefix is b[start:d.i] into scratch.
func (d *jsonReader) unescape(start int) ([]byte, error) {
	from := len(d.scratch)
	out := append(d.scratch, d.b[start:d.i]...)
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			d.scratch = out
			return out[from:], nil
		case c < 0x20:
			d.scratch = out
			return nil, d.fail("control character in a string")
		case c == '\\':
			d.i++
			if d.i >= len(d.b) {
				d.scratch = out
				return nil, d.fail("unterminated escape")
			}
			switch e := d.b[d.i]; e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := hex4(d.b[d.i+1:])
				if !ok {
					d.scratch = out
					return nil, d.fail("invalid \\u escape")
				}
				d.i += 4
				if utf16.IsSurrogate(r) {
					// A pair is one character; a lone half is U+FFFD, and what
					// follows it is read on its own.
					hi := r
					r = utf8.RuneError
					if rest := d.b[d.i+1:]; len(rest) >= 6 && rest[0] == '\\' && rest[1] == 'u' {
						if lo, ok := hex4(rest[2:]); ok {
							if pair := utf16.DecodeRune(hi, lo); pair != utf8.RuneError {
								r = pair
								d.i += 6
							}
						}
					}
				}
				out = utf8.AppendRune(out, r)
			default:
				d.scratch = out
				return nil, d.fail("invalid escape")
			}
			d.i++
		case c < utf8.RuneSelf:
			out = append(out, c)
			d.i++
		default:
			r, size := utf8.DecodeRune(d.b[d.i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, d.b[d.i:d.i+size]...)
			}
			d.i += size
		}
	}
	d.scratch = out
	return nil, d.fail("unterminated string")
}

// hex4 reads four hex digits.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
