package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
)

func TestUsageRefusalsUnderJSONOutputPrintOneResultObject(t *testing.T) {
	cases := [][]string{
		{"run", "--output-format", "json", "--permission-mode", "sideways", "x"},
		{"run", "--output-format=json", "--resume", "a", "--continue", "x"},
		{"run", "--output-format", "stream-json", "--no-such-flag", "x"},
		{"--output-format", "json", "run"}, // wrong argument count
		{"run", "--output-format", "json", "--on-ask", "maybe", "x"},
	}
	for _, args := range cases {
		var out, errw bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &out, &errw)
		if code != exitUsage {
			t.Fatalf("%q: exit %d, want %d (stderr %q)", args, code, exitUsage, errw.String())
		}
		dec := json.NewDecoder(&out)
		var obj struct {
			Type   string      `json:"type"`
			Status string      `json:"status"`
			Error  *sema.Error `json:"error"`
		}
		if err := dec.Decode(&obj); err != nil {
			t.Fatalf("%q: stdout %q is not a JSON object: %v", args, out.String(), err)
		}
		if dec.More() {
			t.Fatalf("%q: more than one object on stdout", args)
		}
		if obj.Type != "result" || obj.Status != string(sema.StatusError) || obj.Error == nil || obj.Error.Code == "" || obj.Error.Message == "" {
			t.Fatalf("%q: %+v", args, obj)
		}
		if errw.Len() == 0 {
			t.Fatalf("%q: nothing on stderr", args)
		}
	}
	var out, errw bytes.Buffer
	if code := run(context.Background(), []string{"run", "--permission-mode", "sideways", "x"}, strings.NewReader(""), &out, &errw); code != exitUsage || out.Len() != 0 {
		t.Fatalf("text output: exit %d, stdout %q", code, out.String())
	}
}

func TestTextOutputNeverCarriesRawEscapes(t *testing.T) {
	var out, errw bytes.Buffer
	p := newPrinter("text", &out, &errw)
	p.event(agent.Event{Type: agent.EventNotice, Notice: &sema.Notice{Code: "x.y", Message: "file \x1b[2Jevil\rname"}})
	p.event(agent.Event{Type: agent.EventResult, Result: &agent.TaskResult{Status: sema.StatusCompleted, Result: "line one\n\x1b]0;title\x07line\ttwo\u202e"}})
	for _, s := range []string{out.String(), errw.String()} {
		if strings.ContainsAny(s, "\x1b\r\x07\u202e") {
			t.Fatalf("raw control characters printed: %q", s)
		}
	}
	if want := "line one\n\\x1b]0;title\\x07line\ttwo\\u202e\n"; out.String() != want {
		t.Fatalf("answer printed as %q, want %q", out.String(), want)
	}
}
