package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/permission"
)

// Codes of control responses.
const (
	// codeControlUnknown answers a line that is not a control request sema knows.
	codeControlUnknown = "control.unknown"
	// codeControlMalformed answers a line that is not a JSON object, or a request with a
	// member sema does not read.
	codeControlMalformed = "control.malformed"
)

// maxControlLine bounds one control line; a longer line ends the reading.
const maxControlLine = 1 << 20

// steerer is the part of *agent.Control the control channel uses.
type steerer interface {
	SetPermissionMode(ctx context.Context, mode permission.Mode) (permission.Receipt, error)
}

// steering is the control channel of a run started with --input-format stream-json.
// It reads stdin line by line while the run goes on and answers every line with one
// control_response line on stdout:
//
//	→ {"type":"control","subtype":"set_permission_mode","mode":"plan","request_id":"r1"}
//	← {"type":"control_response","subtype":"set_permission_mode","request_id":"r1",
//	   "receipt":{"requested":"plan","effective":"plan"}}
//	→ {"type":"control","subtype":"compact","instructions":"keep the test names","request_id":"r2"}
//	← {"type":"control_response","subtype":"compact","request_id":"r2"}
//
// A compact request compacts the conversation before the run's next model request (a
// compaction event reports it).
//
// A failed request is answered with "error": {"code","message"} instead (with the
// receipt as it stands when a steer was refused). Lines are handled in the order they
// were read. Reading starts before the run does; lines read before the run is running
// are handled at its init event, before the first model request, and answered right
// after the init line. Nothing is answered after the result event, which stays the last
// line. The end of stdin ends the reading, not the run.
type steering struct {
	ctrl  *agent.Control
	steer steerer
	in    io.Reader
	ctx   context.Context

	mu     sync.Mutex // guards out and closed: one line at a time on stdout
	out    io.Writer
	closed bool

	// handling serializes the handling of lines, keeping their order across the
	// hand-over from the queue (drained by the init event) to the reader.
	handling sync.Mutex
	running  bool     // the init event was printed: the Control is bound
	queue    [][]byte // lines read before the run was running

	ready    chan struct{} // closed once running is set
	stopOnce sync.Once
	done     chan struct{} // closed when the run is over
	finished chan struct{} // closed when the reader returned
}

// maxQueuedControlLines bounds the lines kept before the run is running; the reader
// waits for the run beyond it.
const maxQueuedControlLines = 256

func newSteering(in io.Reader, out io.Writer) *steering {
	c := &agent.Control{}
	return newSteeringWith(in, out, c, c)
}

func newSteeringWith(in io.Reader, out io.Writer, ctrl *agent.Control, st steerer) *steering {
	return &steering{ctrl: ctrl, steer: st, in: in, out: out, ctx: context.Background(),
		ready: make(chan struct{}), done: make(chan struct{}), finished: make(chan struct{})}
}

// control is the Control the run's spec carries; nil without a control channel.
func (s *steering) control() *agent.Control {
	if s == nil {
		return nil
	}
	return s.ctrl
}

// writer is where the run's events go: w itself without a control channel, else the
// channel, which keeps event lines and control responses whole.
func (s *steering) writer(w io.Writer) io.Writer {
	if s == nil {
		return w
	}
	return s
}

// Write writes one event line to stdout.
func (s *steering) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.Write(p)
}

// start begins reading control lines; ctx is the run's.
func (s *steering) start(ctx context.Context) {
	if s == nil {
		return
	}
	s.ctx = ctx
	go s.read()
}

// print prints a run's event and moves the channel along: the lines read so far are
// handled right after the init event, and nothing is answered after the result event.
func (s *steering) print(p *printer, ev agent.Event) {
	if s == nil {
		p.event(ev)
		return
	}
	if ev.Type == agent.EventResult {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
	}
	p.event(ev)
	if ev.Type == agent.EventInit {
		s.handling.Lock()
		if !s.running {
			for _, line := range s.queue {
				s.respond(s.handle(line))
			}
			s.queue = nil
			s.running = true
			close(s.ready)
		}
		s.handling.Unlock()
	}
}

// stop ends the channel when the run is over. A reader blocked on stdin stays blocked
// until the process exits; it answers nothing more.
func (s *steering) stop() {
	if s == nil {
		return
	}
	s.stopOnce.Do(func() { close(s.done) })
}

func (s *steering) read() {
	defer close(s.finished)
	sc := bufio.NewScanner(s.in)
	sc.Buffer(make([]byte, 0, 4096), maxControlLine)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		line = bytes.Clone(line)
		s.handling.Lock()
		if !s.running && len(s.queue) < maxQueuedControlLines {
			s.queue = append(s.queue, line)
			s.handling.Unlock()
			continue
		}
		s.handling.Unlock()
		if !s.await() {
			return
		}
		s.handling.Lock()
		s.respond(s.handle(line))
		s.handling.Unlock()
	}
	if err := sc.Err(); err != nil && s.await() {
		s.respond(controlResponse{Error: sema.Errorf(codeControlMalformed, "stdin could not be read as control lines (%v); no further control lines are read", err)})
	}
}

// await waits until the run is running; false once it is over.
func (s *steering) await() bool {
	select {
	case <-s.ready:
	case <-s.done:
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// controlResponse is one answer line.
type controlResponse struct {
	Subtype   string              `json:"subtype,omitempty"`
	RequestID string              `json:"request_id,omitempty"`
	Receipt   *permission.Receipt `json:"receipt,omitempty"`
	Error     *sema.Error         `json:"error,omitempty"`
}

// respond writes one control_response line, unless the run is over.
func (s *steering) respond(r controlResponse) {
	obj := struct {
		Type string `json:"type"`
		controlResponse
	}{"control_response", r}
	line, err := json.Marshal(obj)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.out.Write(append(line, '\n'))
}

// handle answers one control line.
func (s *steering) handle(line []byte) controlResponse {
	var head struct {
		Type      string `json:"type"`
		Subtype   string `json:"subtype"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		return controlResponse{Error: sema.Errorf(codeControlMalformed, "a control line is not a JSON object (%v); send one object per line, such as {\"type\":\"control\",\"subtype\":\"set_permission_mode\",\"mode\":\"plan\"}", err)}
	}
	r := controlResponse{Subtype: head.Subtype, RequestID: head.RequestID}
	if head.Type != "control" {
		r.Error = sema.Errorf(codeControlUnknown, "sema reads only control lines on stdin (type \"control\"), not %q", head.Type).With("type", head.Type)
		return r
	}
	switch head.Subtype {
	case "set_permission_mode":
		var req struct {
			Type      string  `json:"type"`
			Subtype   string  `json:"subtype"`
			RequestID string  `json:"request_id"`
			Mode      *string `json:"mode"`
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			r.Error = sema.Errorf(codeControlMalformed, "the set_permission_mode request is not valid (%v); its members are type, subtype, mode and request_id", err)
			return r
		}
		if req.Mode == nil {
			r.Error = sema.Errorf(codeControlMalformed, "the set_permission_mode request names no mode; add \"mode\"")
			return r
		}
		mode, err := permission.ParseMode(*req.Mode)
		if err != nil {
			r.Error = asSemaError(err)
			return r
		}
		receipt, err := s.steer.SetPermissionMode(s.ctx, mode)
		if err != nil {
			r.Error = asSemaError(err)
			if receipt.Effective == "" {
				return r
			}
		}
		r.Receipt = &receipt
		return r
	case "compact":
		var req struct {
			Type         string `json:"type"`
			Subtype      string `json:"subtype"`
			RequestID    string `json:"request_id"`
			Instructions string `json:"instructions"`
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			r.Error = sema.Errorf(codeControlMalformed, "the compact request is not valid (%v); its members are type, subtype, instructions and request_id", err)
			return r
		}
		if s.ctrl == nil {
			r.Error = sema.Errorf(agent.CodeNotRunning, "the task is not running; a compaction can be asked for only while it runs")
			return r
		}
		if err := s.ctrl.Compact(req.Instructions); err != nil {
			r.Error = asSemaError(err)
		}
		return r
	default:
		r.Error = sema.Errorf(codeControlUnknown, "unknown control request %q; sema answers set_permission_mode and compact", head.Subtype).With("subtype", head.Subtype)
		return r
	}
}

// asSemaError keeps a coded error and codes anything else as a failed control request.
func asSemaError(err error) *sema.Error {
	var se *sema.Error
	if errors.As(err, &se) {
		return se
	}
	return &sema.Error{Code: "control.failed", Message: err.Error(), Err: err}
}
