//go:build linux

package env_test

import (
	"context"
	"testing"

	"github.com/sema-agent/sema/env"
)

// BenchmarkHostStartAndWait is the whole life of the smallest command through the host:
// start `true`, wait for it and for what it left, release it. It includes the reaper's
// own start (the executable started again) where the program has no PID namespace.
func BenchmarkHostStartAndWait(b *testing.B) { benchStartAndWait(b) }

// BenchmarkHostStartAndWaitCold is BenchmarkHostStartAndWait with spares off: the reaper
// is the executable started again for every command.
func BenchmarkHostStartAndWaitCold(b *testing.B) {
	env.WarmStart(false)
	defer env.WarmStart(true)
	benchStartAndWait(b)
}

func benchStartAndWait(b *testing.B) {
	h := env.NewHost()
	for b.Loop() {
		p, err := h.Start(context.Background(), env.ExecRequest{Argv: []string{"true"}, Dir: "/"})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Wait(); err != nil {
			b.Fatal(err)
		}
		p.Close()
	}
}
