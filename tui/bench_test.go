package tui

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/sema-agent/sema/agent"
)

// benchModel is a model at 120x40 with the given entries, each rendered once already.
func benchModel(b *testing.B, entries int, text func(i int) string) *Model {
	b.Helper()
	m := New(context.Background(), Options{Backend: &fakeBackend{}, Model: "bench"})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	for i := range entries {
		m.add(&entry{kind: entryUser, text: fmt.Sprintf("prompt %d", i)})
		m.add(&entry{kind: entryAssistant, text: text(i)})
	}
	m.View()
	return m
}

// BenchmarkFirstFrame: a new session's first frame.
func BenchmarkFirstFrame(b *testing.B) {
	for b.Loop() {
		m := New(context.Background(), Options{Backend: &fakeBackend{}, Model: "bench"})
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
		_ = m.View()
	}
}

// BenchmarkKeystroke10kLines: a keystroke and its frame with a conversation of more than
// 10,000 lines.
func BenchmarkKeystroke10kLines(b *testing.B) {
	para := strings.Repeat("A line of the model's answer, long enough to matter.\n\n", 10)
	m := benchModel(b, 500, func(int) string { return para })
	if n := len(m.conversation()); n < 10_000 {
		b.Fatalf("the conversation has %d lines", n)
	}
	// A letter, then Backspace: the input stays one line, so a key's cost does not grow
	// with b.N (typing b.N letters made the textarea rewrap a b.N-letter line each time).
	keys := []tea.KeyPressMsg{{Code: 'a', Text: "a"}, {Code: tea.KeyBackspace}}
	i := 0
	for b.Loop() {
		m.Update(keys[i%2])
		_ = m.View()
		i++
	}
	if v := m.input.Value(); len(v) > 1 {
		b.Fatalf("the input grew to %d characters", len(v))
	}
}

// BenchmarkStream1MB: 1 MB of model text streamed in 1 KB pieces, a frame after each; the
// time per piece is the time per frame.
func BenchmarkStream1MB(b *testing.B) {
	piece := strings.Repeat("word ", 200) + "\n\n" // ~1 KB: a paragraph
	for b.Loop() {
		m := benchModel(b, 0, nil)
		m.running, m.leg = true, 1
		for range 1024 {
			m.Update(eventMsg{leg: 1, ev: agent.Event{Type: agent.EventText, Text: piece}})
			_ = m.View()
		}
	}
}

// BenchmarkMemory10kLines: the live heap, after a collection, of a session holding a
// conversation of more than 10,000 lines that has been drawn (every entry rendered and
// kept). It reports heap-MiB (live objects) and inuse-MiB (the heap's spans in use),
// the part of the process's memory the conversation decides; the bound is 60 MiB.
func BenchmarkMemory10kLines(b *testing.B) {
	para := strings.Repeat("A line of the model's answer, long enough to matter.\n\n", 10)
	var m *Model
	for b.Loop() {
		m = nil
		m = benchModel(b, 500, func(int) string { return para })
	}
	if n := len(m.conversation()); n < 10_000 {
		b.Fatalf("the conversation has %d lines", n)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "inuse-MiB")
	runtime.KeepAlive(m)
}
