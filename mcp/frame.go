package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// rpcMessageTooLarge is the JSON-RPC error code of the answer a frameGuard puts in
// place of a response over the message limit. It lies in the range JSON-RPC leaves to
// implementations (-32000 to -32099); Run recognises it to answer CodeMessageTooLarge.
const rpcMessageTooLarge = -32042

// maxIDLen bounds the id a frameGuard keeps of a response it drops. JSON-RPC ids are
// numbers or short strings; a longer one is not worth an answer.
const maxIDLen = 256

// frameGuard reads a stdio server's output, one newline-delimited message at a time,
// and passes on only messages of at most limit bytes. The SDK's own bound on a stdio
// message (IOTransport.MaxLineLength) ends the whole session when one message is over
// it; this guard keeps the session and the call apart: the bytes of a message over the
// limit are read and discarded as they arrive, never held, and a response is replaced
// by a JSON-RPC error answering the same request id, so the one call that asked for
// too much fails and the server goes on serving. A request or notification over the
// limit is dropped and reported through dropped.
//
// Memory is bounded by the limit: the guard holds at most one message of at most
// limit bytes, plus bufio's buffer.
type frameGuard struct {
	src     *bufio.Reader
	closer  io.Closer
	limit   int
	dropped func(size int64, response bool)

	line []byte // the message being handed out
	off  int    // how much of line has been handed out
}

// newFrameGuard guards r (closed by the guard's Close) with the given limit.
func newFrameGuard(r io.ReadCloser, limit int, dropped func(size int64, response bool)) *frameGuard {
	return &frameGuard{src: bufio.NewReaderSize(r, 64<<10), closer: r, limit: limit, dropped: dropped}
}

// Read hands out the current message, reading the next one when it is spent.
func (g *frameGuard) Read(p []byte) (int, error) {
	for g.off >= len(g.line) {
		if err := g.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, g.line[g.off:])
	g.off += n
	return n, nil
}

// Close closes the server's output.
func (g *frameGuard) Close() error { return g.closer.Close() }

// next reads the next message within the limit into line: a message as sent, the
// error answer that replaces a response over the limit, or, at the end of the output,
// what was left without a final newline.
func (g *frameGuard) next() error {
	if cap(g.line) > 1<<20 {
		g.line = nil // do not keep a large buffer for the small messages that follow
	}
	g.line, g.off = g.line[:0], 0
	for {
		chunk, err := g.src.ReadSlice('\n')
		if len(g.line)+len(chunk) > g.limit {
			replacement, err := g.skip(chunk, err)
			if err != nil {
				return err
			}
			if replacement != nil {
				g.line = replacement
				return nil
			}
			continue
		}
		g.line = appendDoubling(g.line, chunk, g.limit)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case len(g.line) > 0:
			return nil // the last message, without a newline; the error comes next time
		default:
			return err
		}
	}
}

// appendDoubling is append, growing b to at least twice its size, and never beyond
// limit: append's own growth for large slices (a quarter at a time) would allocate
// about five times the final size while a message of many megabytes is read.
func appendDoubling(b, more []byte, limit int) []byte {
	if need := len(b) + len(more); need > cap(b) {
		grown := make([]byte, len(b), min(max(need, 2*cap(b)), max(need, limit)))
		copy(grown, b)
		b = grown
	}
	return append(b, more...)
}

// skip discards the rest of a message over the limit: what line holds, chunk, and
// whatever follows up to the next newline, watching it go by for the request id of a
// response. It returns the error answer to put in its place (nil when the message was
// not a response with an id), or the error that ended the output.
func (g *frameGuard) skip(chunk []byte, err error) ([]byte, error) {
	var sc idScanner
	size := int64(len(g.line) + len(chunk))
	sc.feed(g.line)
	sc.feed(chunk)
	g.line = g.line[:0]
	for errors.Is(err, bufio.ErrBufferFull) {
		chunk, err = g.src.ReadSlice('\n')
		size += int64(len(chunk))
		sc.feed(chunk)
	}
	if err != nil {
		return nil, err
	}
	id, response := sc.result()
	if g.dropped != nil {
		g.dropped(size, response)
	}
	if !response {
		return nil, nil
	}
	msg, _ := json.Marshal(fmt.Sprintf("the server's answer was %d bytes, over the client's limit of %d bytes for one message, and was discarded", size, g.limit))
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`+"\n", id, rpcMessageTooLarge, msg), nil
}

// idScanner watches the bytes of one JSON-RPC message go by, without keeping them,
// for the members of its top-level object that make it a response: an "id" that is a
// number or a string, and no "method" (a request from the server carries one). It
// tracks strings, escapes and nesting, so a key or a value inside a nested object, or
// inside a string, is never mistaken for a top-level one.
type idScanner struct {
	started, notObject bool
	depth              int
	inString, escaped  bool

	wantKey bool   // at depth 1, the next string is a key
	inKey   bool   // reading a key at depth 1
	key     []byte // the key being read, at most a few bytes of it

	inID   bool   // reading the top-level value of "id"
	idBad  bool   // that value is not a scalar
	value  []byte // the bytes of that value
	id     []byte // the last complete id
	method bool   // the object has a top-level "method"
}

// feed scans the next bytes of the message.
func (s *idScanner) feed(b []byte) {
	for i := 0; i < len(b); i++ {
		if s.notObject {
			return
		}
		if s.inString {
			if !s.escaped && !s.inKey && !s.inID {
				// Inside a string nothing matters but its end: skip to the next quote
				// or backslash at once, which is most of a large message.
				j := bytes.IndexAny(b[i:], "\"\\")
				if j < 0 {
					return
				}
				i += j
			}
			s.stringByte(b[i])
			continue
		}
		c := b[i]
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		if !s.started {
			s.started = true
			if c != '{' {
				s.notObject = true // a batch or garbage: nothing to answer
				return
			}
		}
		s.structural(c)
	}
}

// stringByte scans a byte inside a string.
func (s *idScanner) stringByte(c byte) {
	switch {
	case s.escaped:
		s.escaped = false
	case c == '\\':
		s.escaped = true
	case c == '"':
		s.inString = false
		if s.inKey {
			s.inKey = false
			return
		}
	}
	if s.inKey && len(s.key) < 8 {
		s.key = append(s.key, c)
	}
	if s.inID && s.depth == 1 {
		s.appendValue(c)
	}
}

// structural scans a byte outside strings.
func (s *idScanner) structural(c byte) {
	switch c {
	case '{', '[':
		s.depth++
		if s.depth == 1 {
			s.wantKey = true
		} else if s.inID {
			s.idBad = true
		}
	case '}', ']':
		if s.depth == 1 {
			s.endValue()
		}
		s.depth--
	case '"':
		s.inString = true
		switch {
		case s.depth == 1 && s.wantKey:
			s.wantKey, s.inKey, s.key = false, true, s.key[:0]
		case s.depth == 1 && s.inID:
			s.appendValue(c)
		}
	case ':':
		if s.depth == 1 {
			switch string(s.key) {
			case "id":
				s.inID, s.idBad, s.value = true, false, s.value[:0]
			case "method":
				s.method = true
			}
		}
	case ',':
		if s.depth == 1 {
			s.endValue()
			s.wantKey = true
		}
	default:
		if s.depth == 1 && s.inID {
			s.appendValue(c)
		}
	}
}

// appendValue keeps a byte of the id's value, giving up on an id too long to be one.
func (s *idScanner) appendValue(c byte) {
	if len(s.value) >= maxIDLen {
		s.idBad = true
		return
	}
	s.value = append(s.value, c)
}

// endValue closes the value of a top-level member, keeping it when it was the id.
func (s *idScanner) endValue() {
	if !s.inID {
		return
	}
	s.inID = false
	if s.idBad || len(s.value) == 0 || !json.Valid(s.value) {
		return
	}
	switch c := s.value[0]; {
	case c == '"', c == '-', '0' <= c && c <= '9':
		s.id = append(s.id[:0], s.value...)
	}
}

// result returns the id of a response, and whether the message was one.
func (s *idScanner) result() (id []byte, response bool) {
	if s.notObject || s.method || s.id == nil {
		return nil, false
	}
	return s.id, true
}
