package replay

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// The placeholders a normalised text carries where the run's moment showed through.
const (
	// PlaceholderTime stands for a time of day or a date and time.
	PlaceholderTime = "<time>"
	// PlaceholderDuration stands for how long something took.
	PlaceholderDuration = "<duration>"
	// PlaceholderTemp stands for the random first element of a temporary path.
	PlaceholderTemp = "<tmp>"
	// PlaceholderID stands for a UUID.
	PlaceholderID = "<id>"
)

var (
	// An RFC 3339 or ISO 8601 time, with or without fractions and zone, "T" or a space
	// between date and time: what date(1), git log --date=iso and most logs print.
	isoTime = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z| ?[+-]\d{2}:?\d{2}\b)?`)
	})
	// ls -l's modification time ("Dec  6 06:06") and date(1)'s default clock
	// ("06:06:29" after a weekday and month).
	lsTime = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} +(?:\d{2}:\d{2}(?::\d{2})?|\d{4})\b`)
	})
	// A bare clock: 06:06:29, 06:06:29.123.
	clock = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b\d{2}:\d{2}:\d{2}(?:\.\d+)?\b`) })
	// A Go or test-runner duration: 12ms, 1.5s, 2m3.4s, 850µs, "(0.01s)".
	duration = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\b(?:\d+h)?(?:\d+m)?\d+(?:\.\d+)?(?:ns|µs|us|ms|s)\b`)
	})
	// A UUID: session ids, request ids, temporary names.
	uuid = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	})
)

// Normaliser rewrites a tool result's text so that two runs of the same call compare
// equal when they differ only in what the moment decides: where the workspace lies,
// when the call ran, how long it took, which temporary names it got. Both sides of a
// comparison go through the same Normaliser, so whatever it replaces it replaces alike.
//
// The rules, in order:
//   - Scratch (the replay's copy of the workspace, as given and as its symlinks
//     resolve) becomes Root, the directory the session recorded.
//   - Times (RFC 3339 and ISO 8601, ls -l's "Dec  6 06:06", a bare hh:mm:ss) become
//     <time>.
//   - Durations (12ms, 1.5s, 2m3.4s, 850µs) become <duration>.
//   - UUIDs become <id>.
//   - A path in the temporary directory ($TMPDIR, /tmp) becomes <tmp> for its first
//     element (/tmp/go-build123/b001 → <tmp>/b001), unless it lies in Root.
//
// Text is idempotent: normalising a normalised text changes nothing.
type Normaliser struct {
	// Root is the workspace the session recorded; a path inside it is kept.
	Root string
	// Scratch is the replay's copy of the workspace; empty when there is none.
	Scratch string

	scratches []string
	temps     []string
}

// NewNormaliser returns the normaliser of a replay of a session recorded in root run
// in scratch.
func NewNormaliser(root, scratch string) *Normaliser {
	n := &Normaliser{Root: root, Scratch: scratch}
	if scratch != "" && scratch != root {
		n.scratches = append(n.scratches, scratch)
		if real, err := filepath.EvalSymlinks(scratch); err == nil && real != scratch && real != root {
			n.scratches = append(n.scratches, real)
		}
	}
	for _, t := range []string{os.TempDir(), "/tmp", "/var/tmp"} {
		t = strings.TrimRight(t, "/")
		if t != "" && !containsString(n.temps, t) {
			n.temps = append(n.temps, t)
		}
	}
	return n
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Same reports whether a and b normalise to the same text. It decides the common case
// — the same text once the scratch path is the root — without the rules that need
// regular expressions, which are most of a replay's comparing.
func (n *Normaliser) Same(a, b string) bool {
	if pa, pb := n.paths(a), n.paths(b); pa == pb {
		return true
	}
	return n.Text(a) == n.Text(b)
}

// paths applies the first rule: the scratch path becomes the root.
func (n *Normaliser) paths(s string) string {
	for _, sc := range n.scratches {
		if !strings.Contains(n.Root, sc) {
			// A scratch path inside the root's own text would be found again in the
			// replacement, and the rewrite would not settle.
			s = replacePath(s, sc, n.Root)
		}
	}
	return s
}

// Text returns s normalised.
func (n *Normaliser) Text(s string) string {
	s = n.paths(s)
	s = isoTime().ReplaceAllString(s, PlaceholderTime)
	s = lsTime().ReplaceAllString(s, PlaceholderTime)
	s = clock().ReplaceAllString(s, PlaceholderTime)
	s = duration().ReplaceAllString(s, PlaceholderDuration)
	s = uuid().ReplaceAllString(s, PlaceholderID)
	for _, t := range n.temps {
		s = n.tempPaths(s, t)
	}
	return s
}

// tempPaths replaces the first element of every path under dir — the random part of a
// temporary name — with <tmp>, leaving paths inside Root alone.
func (n *Normaliser) tempPaths(s, dir string) string {
	prefix := dir + "/"
	if !strings.Contains(s, prefix) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, prefix)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		if i > 0 && pathByte(s[i-1]) || n.Root != "" && startsPath(s[i:], n.Root) {
			// Part of a longer path (/home/x/tmp/…), or the workspace itself.
			b.WriteString(s[:i+len(prefix)])
			s = s[i+len(prefix):]
			continue
		}
		j := i + len(prefix)
		k := j
		for k < len(s) && pathByte(s[k]) && s[k] != '/' {
			k++
		}
		if k == j {
			b.WriteString(s[:j])
			s = s[j:]
			continue
		}
		b.WriteString(s[:i])
		b.WriteString(PlaceholderTemp)
		s = s[k:]
	}
}

// replacePath replaces every occurrence of the path from in s that is a whole path or
// a path's leading part (followed by '/' or a byte no path name would end at) with to.
func replacePath(s, from, to string) string {
	if from == "" || !strings.Contains(s, from) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, from)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(from)
		whole := (end == len(s) || !pathByte(s[end]) || s[end] == '/') && (i == 0 || !pathByte(s[i-1]))
		b.WriteString(s[:i])
		if whole {
			b.WriteString(to)
		} else {
			b.WriteString(from)
		}
		s = s[end:]
	}
}

// startsPath reports whether s begins with the path p as a whole path or its leading
// part.
func startsPath(s, p string) bool {
	return strings.HasPrefix(s, p) && (len(s) == len(p) || !pathByte(s[len(p)]) || s[len(p)] == '/')
}

// pathByte reports whether c can be part of a path as tools print it.
func pathByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '/' || c == '+' || c == '@' || c >= 0x80
}
