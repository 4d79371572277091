package model

import "testing"

func TestContextWindow(t *testing.T) {
	for _, c := range []struct {
		name  string
		want  int
		known bool
	}{
		{"claude-sonnet-4-5", 200_000, true},
		{"claude-opus-4-1-20250805", 200_000, true},
		{"gpt-4.1-mini", 1_047_576, true},
		{"gpt-4o", 128_000, true},
		{"gpt-5-codex", 400_000, true},
		{"o4-mini", 200_000, true},
		{"llama3.1:8b", 0, false},
		{"", 0, false},
	} {
		got, known := ContextWindow(c.name)
		if got != c.want || known != c.known {
			t.Errorf("ContextWindow(%q) = %d, %v; want %d, %v", c.name, got, known, c.want, c.known)
		}
	}
}
