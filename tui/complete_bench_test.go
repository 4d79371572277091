package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// BenchmarkKeystrokeCompletion: a keystroke and its frame with the @ list open over a
// walk at its bound (pathLimit paths): the list narrows on every key.
func BenchmarkKeystrokeCompletion(b *testing.B) {
	m := New(context.Background(), Options{Backend: &fakeBackend{}, Roots: []string{"/r"}})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	items := make([]pathItem, 0, pathLimit)
	for i := range pathLimit {
		p := fmt.Sprintf("pkg%d/sub%d/file_%d.go", i%97, i%13, i)
		items = append(items, pathItem{text: p, lower: strings.ToLower(p), base: fmt.Sprintf("file_%d.go", i)})
	}
	m.Update(pathsMsg{items: items})
	for _, r := range "@file_1" {
		m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	if m.comp == nil || len(m.comp.items) == 0 {
		b.Fatal("the list did not open")
	}
	bs, x := tea.KeyPressMsg{Code: tea.KeyBackspace}, tea.KeyPressMsg{Code: '2', Text: "2"}
	for b.Loop() {
		m.Update(x)
		_ = m.View()
		m.Update(bs)
		_ = m.View()
	}
}
