package shell

import (
	"fmt"
	"os"
	"sync"
	"unicode/utf8"
)

// capture keeps the first and the last keep characters of a stream, counting the ones in
// between. A character is a UTF-8 encoded rune; each byte of an invalid sequence counts
// as one (and shows as U+FFFD). Memory stays bounded whatever the stream's length.
type capture struct {
	keep      int
	head      []byte
	headRunes int
	// tail holds the bytes after head, trimmed from the front to at most 2*tailBytes but
	// never below tailBytes, which always covers the last keep runes.
	tail  []byte
	carry []byte // an incomplete rune at the end of the last write
	total int    // complete runes seen, head included
}

func newCapture(keep int) *capture { return &capture{keep: keep} }

func (c *capture) tailBytes() int { return utf8.UTFMax*c.keep + utf8.UTFMax }

func (c *capture) Write(p []byte) (int, error) {
	n := len(p)
	data := p
	if len(c.carry) > 0 {
		data = append(c.carry, p...)
		c.carry = nil
	}
	// Hold back an incomplete rune at the end until its remaining bytes arrive.
	cut := len(data)
	for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax; i-- {
		if utf8.RuneStart(data[i]) {
			if !utf8.FullRune(data[i:]) {
				cut = i
			}
			break
		}
	}
	c.carry = append([]byte(nil), data[cut:]...)
	data = data[:cut]
	if c.headRunes < c.keep {
		i := 0
		for i < len(data) && c.headRunes < c.keep {
			_, size := utf8.DecodeRune(data[i:])
			i += size
			c.headRunes++
			c.total++
		}
		c.head = append(c.head, data[:i]...)
		data = data[i:]
	}
	if len(data) > 0 {
		c.total += utf8.RuneCount(data)
		c.tail = append(c.tail, data...)
		if tb := c.tailBytes(); len(c.tail) > 2*tb {
			drop := len(c.tail) - tb
			// Cut at a rune start, so the kept bytes decode as they were written.
			for drop > 0 && !utf8.RuneStart(c.tail[drop]) {
				drop--
			}
			c.tail = append(c.tail[:0:0], c.tail[drop:]...)
		}
	}
	return n, nil
}

// Len is the number of characters written so far.
func (c *capture) Len() int { return c.total + utf8.RuneCount(c.carry) }

// String returns the stream when it has at most 2*keep characters, else its first and
// last keep characters around a line that says how many were elided.
func (c *capture) String() string {
	total := c.Len()
	rest := append(append([]byte(nil), c.tail...), c.carry...)
	if total <= 2*c.keep {
		return text(c.head) + text(rest)
	}
	i := len(rest)
	for k := 0; k < c.keep && i > 0; k++ {
		_, size := utf8.DecodeLastRune(rest[:i])
		i -= size
	}
	elided, unit := total-2*c.keep, "characters"
	if elided == 1 {
		unit = "character"
	}
	return text(c.head) + fmt.Sprintf("\n\n... [%d %s elided] ...\n\n", elided, unit) + text(rest[i:])
}

// text turns output bytes into text, each byte of an invalid sequence becoming one
// U+FFFD, so the text has exactly as many characters as were counted.
func text(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return string([]rune(string(b)))
}

// sink is the writer a command's output goes to: a capture while the command runs in the
// foreground, a background task's file once it was adopted.
type sink struct {
	mu   sync.Mutex
	cap  *capture
	file *outFile
}

func (s *sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file != nil {
		return s.file.Write(p)
	}
	return s.cap.Write(p)
}

// String is the captured text so far.
func (s *sink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cap.String()
}

// handOver writes what was captured so far to f and sends everything after it there.
// It returns the captured text, which the adopting answer shows, and the file offset
// where the output the answer has not shown begins.
func (s *sink) handOver(f *outFile) (string, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	text := s.cap.String()
	f.Write([]byte(text))
	s.file = f
	written, _ := f.state()
	return text, written
}

// outFile is a background task's output file: writes beyond limit bytes are dropped and
// counted. Reads use ReadAt, so they never disturb the writer.
type outFile struct {
	mu      sync.Mutex
	f       *os.File
	limit   int64
	written int64
	dropped int64
	err     error
}

func createOutFile(path string, limit int64) (*outFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	return &outFile{f: f, limit: limit}, nil
}

// Write never fails: a task's output must not kill the task.
func (o *outFile) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	room := o.limit - o.written
	take := int64(len(p))
	if take > room {
		take = max(room, 0)
	}
	if take > 0 && o.err == nil {
		n, err := o.f.WriteAt(p[:take], o.written)
		o.written += int64(n)
		if err != nil {
			o.err = err
		}
		take = int64(n)
	}
	o.dropped += int64(len(p)) - take
	return len(p), nil
}

// state returns the bytes written so far and the bytes dropped.
func (o *outFile) state() (written, dropped int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.written, o.dropped
}

func (o *outFile) readAt(off, n int64) ([]byte, error) {
	if n <= 0 {
		return nil, nil
	}
	b := make([]byte, n)
	k, err := o.f.ReadAt(b, off)
	if int64(k) == n {
		err = nil
	}
	return b[:k], err
}

func (o *outFile) close() error { return o.f.Close() }
