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
	for _, args := range [][]string{{"run"}, {"run", "fix", "the", "test"}, {"rewind"}, {"approve"}, {"sessions", "show"}} {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), "write it as: sema") || !strings.Contains(errb.String(), "(cli.usage)") {
			t.Errorf("sema %v: exit %d, stderr %q", args, code, errb.String())
		}
	}
}
