package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Without a terminal, `sema -i` is refused by name and a bare `sema` still prints the
// help; -i with -p says which to give.
func TestInteractiveNeedsATerminal(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"-i"}, exitUsage, codeNoTerminal},
		{[]string{"-i", "fix it"}, exitUsage, codeNoTerminal},
		{[]string{"-i", "-p", "fix it"}, exitUsage, "-i opens the interactive session and -p runs headless"},
		{[]string{"-i", "fix", "it"}, exitUsage, "sema -i takes one first prompt"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), tc.args, strings.NewReader(""), &out, &errb)
		if code != tc.code || !strings.Contains(errb.String(), tc.contains) {
			t.Errorf("sema %q: exit %d, stderr %q; want exit %d and %q", tc.args, code, errb.String(), tc.code, tc.contains)
		}
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), nil, strings.NewReader(""), &out, &errb); code != exitOK || !strings.Contains(out.String(), "Usage:") {
		t.Errorf("a bare sema without a terminal: exit %d, stdout %q", code, out.String())
	}
}
