package main

import (
	"strings"
	"testing"
)

// sema attach refuses by name, before it opens anything: an address that is not an
// http(s) URL, no token, and no terminal to draw on.
func TestAttachRefusals(t *testing.T) {
	t.Setenv(tokenEnv, "")
	for _, tc := range []struct {
		args     []string
		contains string
	}{
		{[]string{"attach"}, codeAttachURL},
		{[]string{"attach", "127.0.0.1:7777"}, codeAttachURL},
		{[]string{"attach", "ftp://host/"}, codeAttachURL},
		{[]string{"attach", "http://"}, codeAttachURL},
		{[]string{"attach", "http://127.0.0.1:7777"}, codeAttachToken},
		{[]string{"attach", "--token", "tok", "http://127.0.0.1:7777"}, codeNoTerminal},
		{[]string{"attach", "--token", "tok", "http://127.0.0.1:7777", "SESSION"}, codeNoTerminal},
		{[]string{"attach", "http://127.0.0.1:7777", "a", "b"}, "accepts at most 2 arg"},
	} {
		code, out, errw := cli(t, "", tc.args...)
		if code != exitUsage || !strings.Contains(errw, tc.contains) || out != "" {
			t.Errorf("sema %q: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, code, out, errw, exitUsage, tc.contains)
		}
	}
	t.Setenv(tokenEnv, "tok")
	if code, _, errw := cli(t, "", "attach", "http://127.0.0.1:7777"); code != exitUsage || !strings.Contains(errw, codeNoTerminal) {
		t.Errorf("with %s set: exit %d, stderr %q; want the terminal refusal", tokenEnv, code, errw)
	}
}
