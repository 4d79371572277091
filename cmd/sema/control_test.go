package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
)

// fakeSteerer records steers and answers with a receipt, or with err.
type fakeSteerer struct {
	mu    sync.Mutex
	modes []permission.Mode
	err   error
}

func (f *fakeSteerer) SetPermissionMode(_ context.Context, m permission.Mode) (permission.Receipt, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.modes = append(f.modes, m)
	if f.err != nil {
		return permission.Receipt{Requested: permission.ModeDefault, Effective: permission.ModeDefault}, f.err
	}
	return permission.Receipt{Requested: m, Effective: m}, nil
}

func (f *fakeSteerer) steered() []permission.Mode {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]permission.Mode(nil), f.modes...)
}

func TestControlLines(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		line      string
		steerErr  error
		wantSteer permission.Mode // "" when no steer may happen
		wantCode  string
		wantEff   permission.Mode // the receipt's effective mode; "" for no receipt
		wantID    string
	}{
		{"steer", `{"type":"control","subtype":"set_permission_mode","mode":"plan"}`, nil, permission.ModePlan, "", permission.ModePlan, ""},
		{"request id is echoed", `{"type":"control","subtype":"set_permission_mode","mode":"bypassPermissions","request_id":"r7"}`, nil, permission.ModeBypassPermissions, "", permission.ModeBypassPermissions, "r7"},
		{"unknown mode", `{"type":"control","subtype":"set_permission_mode","mode":"yolo","request_id":"r8"}`, nil, "", permission.CodeModeInvalid, "", "r8"},
		{"no mode", `{"type":"control","subtype":"set_permission_mode"}`, nil, "", codeControlMalformed, "", ""},
		{"a member sema does not read", `{"type":"control","subtype":"set_permission_mode","mode":"plan","scope":"all"}`, nil, "", codeControlMalformed, "", ""},
		{"unknown subtype", `{"type":"control","subtype":"interrupt","request_id":"r9"}`, nil, "", codeControlUnknown, "", "r9"},
		{"not a control line", `{"type":"user","message":{"role":"user","content":"hi"}}`, nil, "", codeControlUnknown, "", ""},
		{"not JSON", `set mode plan`, nil, "", codeControlMalformed, "", ""},
		{"compact before the run", `{"type":"control","subtype":"compact","request_id":"c1"}`, nil, "", agent.CodeNotRunning, "", "c1"},
		{"compact with a member sema does not read", `{"type":"control","subtype":"compact","keep":"all"}`, nil, "", codeControlMalformed, "", ""},
		{"a refused steer keeps its receipt", `{"type":"control","subtype":"set_permission_mode","mode":"auto"}`,
			sema.Errorf(permission.CodeAutoArmFailed, "the classifier could not be armed"), permission.ModeAuto, permission.CodeAutoArmFailed, permission.ModeDefault, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			st := &fakeSteerer{err: c.steerErr}
			s := newSteeringWith(strings.NewReader(""), io.Discard, nil, st)
			r := s.handle([]byte(c.line))
			got := st.steered()
			if c.wantSteer == "" && len(got) > 0 || c.wantSteer != "" && (len(got) != 1 || got[0] != c.wantSteer) {
				t.Fatalf("steered %v, want %q", got, c.wantSteer)
			}
			if code := codeOf(r.Error); code != c.wantCode {
				t.Fatalf("error %v, want code %q", r.Error, c.wantCode)
			}
			if eff := effectiveOf(r.Receipt); eff != c.wantEff {
				t.Fatalf("receipt %+v, want effective %q", r.Receipt, c.wantEff)
			}
			if r.RequestID != c.wantID {
				t.Fatalf("request id %q, want %q", r.RequestID, c.wantID)
			}
		})
	}
}

func codeOf(e *sema.Error) string {
	if e == nil {
		return ""
	}
	return e.Code
}

func effectiveOf(r *permission.Receipt) permission.Mode {
	if r == nil {
		return ""
	}
	return r.Effective
}

// lineSink collects written lines and announces each one.
type lineSink struct {
	mu    sync.Mutex
	lines []string
	added chan struct{}
}

func newLineSink() *lineSink { return &lineSink{added: make(chan struct{}, 64)} }

func (l *lineSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	for _, s := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		l.lines = append(l.lines, s)
	}
	l.mu.Unlock()
	l.added <- struct{}{}
	return len(p), nil
}

func (l *lineSink) types(t *testing.T) []string {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.lines {
		var obj struct{ Type, Subtype string }
		if err := json.Unmarshal([]byte(s), &obj); err != nil {
			t.Fatalf("line is not JSON: %q", s)
		}
		out = append(out, obj.Type+"/"+obj.Subtype)
	}
	return out
}

var (
	agentMessage = model.Message{Role: model.RoleAssistant, Content: []model.Block{model.TextBlock("hi")}}
	initEvent    = agent.Event{Type: agent.EventInit, Manifest: &agent.Manifest{}}
	resultEvent  = agent.Event{Type: agent.EventResult, Result: &agent.TaskResult{Status: sema.StatusCompleted}}
)

// TestControlLinesWaitForInit: lines read before the run is running are answered right
// after the init line, in order, before anything else of the run.
func TestControlLinesWaitForInit(t *testing.T) {
	t.Parallel()
	out := newLineSink()
	st := &fakeSteerer{}
	s := newSteeringWith(strings.NewReader(
		`{"type":"control","subtype":"set_permission_mode","mode":"plan"}`+"\n\n"+
			`{"type":"control","subtype":"nope"}`+"\n"+
			`{"type":"control","subtype":"set_permission_mode","mode":"acceptEdits"}`+"\n"), out, nil, st)
	s.start(context.Background())
	<-s.finished // every line is read and queued; the end of stdin does not end anything
	if len(st.steered()) != 0 {
		t.Fatalf("steered before the run was running: %v", st.steered())
	}
	p := newPrinter("stream-json", s.writer(out), io.Discard)
	s.print(p, initEvent)
	s.print(p, agent.Event{Type: agent.EventAssistant, Message: &agentMessage})
	want := []string{"system/init", "control_response/set_permission_mode", "control_response/nope", "control_response/set_permission_mode", "assistant/"}
	if got := out.types(t); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("lines %v, want %v", got, want)
	}
	if got := st.steered(); len(got) != 2 || got[0] != permission.ModePlan || got[1] != permission.ModeAcceptEdits {
		t.Fatalf("steered %v", got)
	}
}

// TestControlLinesWhileRunningAndAfterTheEnd: a line that arrives while the run goes on
// is answered at once; after the result nothing more is steered or written.
func TestControlLinesWhileRunningAndAfterTheEnd(t *testing.T) {
	t.Parallel()
	out := newLineSink()
	st := &fakeSteerer{}
	pr, pw := io.Pipe()
	s := newSteeringWith(pr, out, nil, st)
	s.start(context.Background())
	p := newPrinter("stream-json", s.writer(out), io.Discard)
	s.print(p, initEvent)
	<-out.added // the init line

	io.WriteString(pw, `{"type":"control","subtype":"set_permission_mode","mode":"dontAsk"}`+"\n")
	<-out.added // its answer
	if got := out.types(t); len(got) != 2 || got[1] != "control_response/set_permission_mode" {
		t.Fatalf("lines %v", got)
	}

	s.print(p, resultEvent)
	<-out.added // the result line
	s.stop()
	io.WriteString(pw, `{"type":"control","subtype":"set_permission_mode","mode":"plan"}`+"\n")
	pw.Close()
	<-s.finished
	if got := st.steered(); len(got) != 1 || got[0] != permission.ModeDontAsk {
		t.Fatalf("steered %v", got)
	}
	if got := out.types(t); got[len(got)-1] != "result/success" || len(got) != 3 {
		t.Fatalf("lines %v: the result must be the last", got)
	}
}

// TestNoControlChannel: without --input-format stream-json the run gets no Control and
// its events go straight to stdout.
func TestNoControlChannel(t *testing.T) {
	t.Parallel()
	var s *steering
	out := newLineSink()
	if s.control() != nil || s.writer(out) != io.Writer(out) {
		t.Fatal("a nil channel must hand out no Control and stdout itself")
	}
	s.start(context.Background())
	s.print(newPrinter("stream-json", out, io.Discard), initEvent)
	s.stop()
	if got := out.types(t); len(got) != 1 || got[0] != "system/init" {
		t.Fatalf("lines %v", got)
	}
}
