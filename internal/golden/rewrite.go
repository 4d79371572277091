package golden

import (
	"fmt"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
)

// Rewriter replaces what differs from run to run in a transcript with names. In order:
//
//   - each path given to [Rewriter.Path] (and its form with symbolic links resolved),
//     longest first, becomes its name ($ROOT, $HOME, …);
//   - each distinct UUID becomes $UUID1, $UUID2, … in the order of first appearance, so
//     that a transcript still pins which lines share an id (a session's, a message's);
//   - an RFC 3339 timestamp becomes $TIME;
//   - the value of a number field named to [Rewriter.Numbers] (durations, the token
//     estimates of a scripted model, which count the temporary paths' bytes, a process
//     id) becomes the string "$N";
//   - a SHA-256 in hex becomes $SHA256, and the platform (GOOS/GOARCH) $PLATFORM.
//
// Anything else stays as it came: a new volatile field fails the test until it is named
// here, rather than passing unseen.
type Rewriter struct {
	paths   [][2]string
	numbers []string
}

// Path names a path: every occurrence of it is written as name.
func (r *Rewriter) Path(path, name string) {
	r.paths = append(r.paths, [2]string{path, name})
	if real, err := filepath.EvalSymlinks(path); err == nil && real != path {
		r.paths = append(r.paths, [2]string{real, name})
	}
}

// Numbers names JSON fields whose number value varies from run to run.
func (r *Rewriter) Numbers(fields ...string) { r.numbers = append(r.numbers, fields...) }

var (
	uuidRE   = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timeRE   = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	sha256RE = regexp.MustCompile(`\b[0-9a-f]{64}\b`)
)

// Rewrite returns s with the volatile parts named.
func (r *Rewriter) Rewrite(s string) string {
	paths := slices.Clone(r.paths)
	slices.SortStableFunc(paths, func(a, b [2]string) int { return len(b[0]) - len(a[0]) })
	for _, p := range paths {
		s = strings.ReplaceAll(s, p[0], p[1])
	}
	seen := map[string]string{}
	s = uuidRE.ReplaceAllStringFunc(s, func(u string) string {
		name, ok := seen[u]
		if !ok {
			name = fmt.Sprintf("$UUID%d", len(seen)+1)
			seen[u] = name
		}
		return name
	})
	s = timeRE.ReplaceAllString(s, "$$TIME")
	if len(r.numbers) > 0 {
		quoted := make([]string, len(r.numbers))
		for i, f := range r.numbers {
			quoted[i] = regexp.QuoteMeta(f)
		}
		re := regexp.MustCompile(`"(` + strings.Join(quoted, "|") + `)":-?\d+(\.\d+)?`)
		s = re.ReplaceAllString(s, `"$1":"$$N"`)
	}
	s = sha256RE.ReplaceAllString(s, "$$SHA256")
	return strings.ReplaceAll(s, runtime.GOOS+"/"+runtime.GOARCH, "$PLATFORM")
}
