package main

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestBareResume: a --resume without an id becomes the picker's value only on a root
// command line that may open the interactive session; an id, a subcommand, -p, a
// format or "--" leave the line as it was.
func TestBareResume(t *testing.T) {
	root := newRootCmd(strings.NewReader(""), nil, nil)
	pick := "--resume=" + resumePick
	for _, c := range []struct{ in, want []string }{
		{[]string{"--resume"}, []string{pick}},
		{[]string{"-r", "--model", "sonnet"}, []string{pick, "--model", "sonnet"}},
		{[]string{"--model", "sonnet", "--resume"}, []string{"--model", "sonnet", pick}},
		{[]string{"--resume", "abc"}, []string{"--resume", "abc"}},
		{[]string{"run", "--resume"}, []string{"run", "--resume"}},
		{[]string{"-p", "hi", "--resume"}, []string{"-p", "hi", "--resume"}},
		{[]string{"--output-format", "json", "--resume"}, []string{"--output-format", "json", "--resume"}},
		{[]string{"--", "--resume"}, []string{"--", "--resume"}},
	} {
		if got := bareResume(root, c.in); !slices.Equal(got, c.want) {
			t.Errorf("bareResume(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestBareResumeRefusedHeadless: where no picker can open — output to a file, a piped
// prompt, -p, sema run — a --resume without an id is refused with exit 2, as before.
func TestBareResumeRefusedHeadless(t *testing.T) {
	for _, args := range [][]string{{"--resume"}, {"-p", "hi", "--resume"}, {"run", "hi", "--resume"}} {
		code, out := runCLI(t, args)
		if code != exitUsage || !strings.Contains(out, "needs an argument") || !strings.Contains(out, "resume") {
			t.Errorf("sema %s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
	}
	var stdout, stderr strings.Builder
	code := run(context.Background(), []string{"--resume"}, strings.NewReader("fix it"), &stdout, &stderr)
	if code != exitUsage || !strings.Contains(stderr.String(), "opens a picker only in the interactive session") {
		t.Errorf("echo fix it | sema --resume: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}
