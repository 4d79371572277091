package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// A command given the wrong number of arguments says what the argument is and how to
// write the command, with a code.
func TestWrongArgumentCountSaysHowToWriteIt(t *testing.T) {
	cases := []struct {
		args   []string
		advice string
	}{
		{[]string{"run", "fix", "the", "test"}, `quote the prompt: sema run "fix the test"`},
		{[]string{"run"}, "no prompt: stdin was empty"}, // an empty pipe, no argument
		{[]string{"rewind"}, "write it as: sema rewind"},
		{[]string{"approve"}, "write it as: sema approve"},
		{[]string{"sessions", "show"}, "write it as: sema sessions show"},
		{[]string{"mcp", "get"}, "write it as: sema mcp get"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := run(context.Background(), c.args, strings.NewReader(""), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), c.advice) || !strings.Contains(errb.String(), "(cli.usage)") {
			t.Errorf("sema %v: exit %d, stderr %q", c.args, code, errb.String())
		}
	}
}
