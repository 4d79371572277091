package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestVersionShortcut: --version alone, answered without the command tree, prints what
// the command tree's version flag prints.
func TestVersionShortcut(t *testing.T) {
	run1 := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
		return code, out.String(), errb.String()
	}
	// With a second argument the shortcut does not apply and cobra answers.
	code, want, stderr := run1("--version", "--model", "x")
	if code != exitOK || stderr != "" || !strings.HasPrefix(want, "sema version ") {
		t.Fatalf("cobra's --version: code %d, stdout %q, stderr %q", code, want, stderr)
	}
	for _, flag := range []string{"--version", "-v"} {
		code, got, stderr := run1(flag)
		if code != exitOK || got != want || stderr != "" {
			t.Errorf("%s: code %d, stdout %q, stderr %q; want 0, %q", flag, code, got, stderr, want)
		}
	}
}
