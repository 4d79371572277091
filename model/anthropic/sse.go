package anthropic

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
)

// maxLine bounds one line of an event stream, and the data of one event, as the SDK's
// own decoder bounds a line (32 MiB).
const maxLine = 32 << 20

// formatError is a stream that broke the wire format: framing, JSON, or the order of
// events. It is never retried.
type formatError string

func (e formatError) Error() string { return string(e) }

// sseReader splits a text/event-stream body into events, as the SDK's decoder does:
// lines end in "\n" (a "\r" before it is dropped), a blank line dispatches the event
// read so far if it has a name or data, "event:" names it, each "data:" line adds its
// value and a "\n" to its data, comments and other fields are ignored, and an event
// the body ends without dispatching is dropped.
type sseReader struct {
	br   *bufio.Reader
	long []byte // a line longer than br's buffer
	name []byte
	data []byte
}

// sseReaders keeps readers, with their 32 KiB buffers, between streams: a service
// reads hundreds of streams a second, and a buffer per stream was a tenth of all it
// allocated.
var sseReaders = sync.Pool{New: func() any { return &sseReader{br: bufio.NewReaderSize(nil, 32<<10)} }}

// newSSEReader returns a reader of r; release gives it back when the stream is done.
func newSSEReader(r io.Reader) *sseReader {
	s := sseReaders.Get().(*sseReader)
	s.br.Reset(r)
	return s
}

// release returns s to the pool. Nothing next returned may be used after it.
func (s *sseReader) release() {
	s.br.Reset(nil)
	s.name, s.data = s.name[:0], s.data[:0]
	if cap(s.long) > 1<<20 {
		s.long = nil // an outsized line's buffer is not kept for every later stream
	}
	s.long = s.long[:0]
	sseReaders.Put(s)
}

// next returns the next event; its slices are valid until the following call. At the
// end of the body it returns io.EOF; a failed read returns the reader's error.
func (s *sseReader) next() (name, data []byte, err error) {
	s.name, s.data = s.name[:0], s.data[:0]
	for {
		line, err := s.line()
		if err != nil {
			return nil, nil, err
		}
		if len(line) == 0 {
			if len(s.name) == 0 && len(s.data) == 0 {
				continue
			}
			return s.name, s.data, nil
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "event":
			s.name = append(s.name[:0], value...)
		case "data":
			if len(s.data)+len(value) >= maxLine {
				return nil, nil, formatError(fmt.Sprintf("an event's data is longer than %d MiB", maxLine>>20))
			}
			s.data = append(s.data, value...)
			s.data = append(s.data, '\n')
		}
	}
}

// line returns the next line without its line ending.
func (s *sseReader) line() ([]byte, error) {
	line, err := s.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		s.long = append(s.long[:0], line...)
		for err == bufio.ErrBufferFull {
			if len(s.long) > maxLine {
				return nil, formatError(fmt.Sprintf("a line of the stream is longer than %d MiB", maxLine>>20))
			}
			line, err = s.br.ReadSlice('\n')
			s.long = append(s.long, line...)
		}
		line = s.long
	}
	if err != nil {
		// A last line without its "\n" cannot end an event; what it began is dropped.
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// assemble reads the event stream of res into acc until message_stop or the end of
// the body. It returns a formatError for a stream that broke the wire format, the
// API's error for an error event (an *sdk.Error, as the SDK's stream returns it), and
// the body's error for a failed read; the end of the body is no error, and acc.stopped
// tells whether the response was complete.
func assemble(res *http.Response, acc *accumulator) error {
	r := newSSEReader(res.Body)
	defer r.release()
	var ev wireEvent
	for !acc.stopped {
		name, data, err := r.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch string(name) {
		case "ping", "":
			// Keep-alives, and events without a name, which the API never sends.
			continue
		case "error":
			return eventError(res, bytes.TrimSuffix(data, []byte("\n")))
		}
		if len(bytes.TrimSuffix(data, []byte("\n"))) == 0 {
			continue
		}
		if err := ev.decode(data); err != nil {
			return formatError(fmt.Sprintf("the data of a %s event is not valid JSON: %v", name, err))
		}
		if err := acc.add(&ev); err != nil {
			return formatError(err.Error())
		}
	}
	return nil
}

// eventError is the error of an error event, built as the SDK builds it, so that it is
// classified like an error status.
func eventError(res *http.Response, data []byte) error {
	aerr := &sdk.Error{
		Request:     res.Request,
		Response:    res,
		StatusCode:  res.StatusCode,
		RequestID:   res.Header.Get("request-id"),
		WorkspaceID: res.Header.Get("anthropic-workspace-id"),
	}
	if aerr.UnmarshalJSON(data) != nil {
		return fmt.Errorf("received error while streaming: %s", data)
	}
	return aerr
}

// isFormatError reports whether err is a formatError.
func isFormatError(err error) bool {
	var fe formatError
	return errors.As(err, &fe)
}
