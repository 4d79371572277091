package shell

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/sema-agent/sema/env"
)

// BenchmarkBashTrue is one foreground Bash call of `true` through the tool: decoding,
// the working-directory trap, the process group, settling and the working-directory
// check. Compare with BenchmarkExecBashTrue, the bare cost of the same shell.
func BenchmarkBashTrue(b *testing.B) { benchBashTrue(b) }

// BenchmarkBashTrueCold is BenchmarkBashTrue with spares off: every command's reaper is
// the executable started again.
func BenchmarkBashTrueCold(b *testing.B) {
	env.WarmStart(false)
	defer env.WarmStart(true)
	benchBashTrue(b)
}

func benchBashTrue(b *testing.B) {
	f := newFix(b)
	tool := f.tools[NameBash]
	input := json.RawMessage(`{"command":"true"}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if r := tool.Run(ctx, input); r.IsError {
			b.Fatal(r.TextOf())
		}
	}
}

// BenchmarkBashTrueInSubdirectory is BenchmarkBashTrue from a working directory below
// the root, so every call re-checks the carried directory.
func BenchmarkBashTrueInSubdirectory(b *testing.B) {
	f := newFix(b)
	tool := f.tools[NameBash]
	ctx := context.Background()
	if r := tool.Run(ctx, json.RawMessage(`{"command":"mkdir -p a/b/c && cd a/b/c"}`)); r.IsError {
		b.Fatal(r.TextOf())
	}
	input := json.RawMessage(`{"command":"true"}`)
	b.ReportAllocs()
	for b.Loop() {
		if r := tool.Run(ctx, input); r.IsError {
			b.Fatal(r.TextOf())
		}
	}
}

// BenchmarkReadonlyLs is one bash_readonly call of `ls -la .`: parse, proof, path
// placement and the run.
func BenchmarkReadonlyLs(b *testing.B) {
	f := newFix(b, func(c *Config) { c.ReadOnly = true })
	tool := f.tools[NameBashReadonly]
	input := json.RawMessage(`{"command":"ls -la ."}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if r := tool.Run(ctx, input); r.IsError {
			b.Fatal(r.TextOf())
		}
	}
}

// BenchmarkExecBashTrue is the baseline: os/exec running `bash -c true` directly.
func BenchmarkExecBashTrue(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if err := exec.Command("bash", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}
