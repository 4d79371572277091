package model

import "strings"

// contextWindows are the context windows, in tokens, of the model families docs/cli.md
// names, matched by name prefix (the longest prefix that matches wins), as their
// providers publish them.
var contextWindows = []struct {
	prefix string
	tokens int
}{
	{"claude-", 200_000},
	{"gpt-4.1", 1_047_576},
	{"gpt-4o", 128_000},
	{"gpt-5", 400_000},
	{"o3", 200_000},
	{"o4-mini", 200_000},
	{"o1", 200_000},
}

// ContextWindow returns the context window in tokens of the model named name, and
// whether it is known. A model of another family (a local model behind an
// OpenAI-compatible server) is not known: its window is the deployment's to declare.
func ContextWindow(name string) (int, bool) {
	best, tokens := -1, 0
	for _, w := range contextWindows {
		if strings.HasPrefix(name, w.prefix) && len(w.prefix) > best {
			best, tokens = len(w.prefix), w.tokens
		}
	}
	return tokens, best >= 0
}
