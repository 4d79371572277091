package files

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	iofs "io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/sema-agent/sema/tools"
)

// LSMaxEntries caps the entries one LS answer lists.
const LSMaxEntries = 1000

type lsTool struct{ cfg Config }

type lsInput struct {
	Path   string   `json:"path"`
	Ignore []string `json:"ignore"`
}

const lsDescription = `Lists a directory as a tree: subdirectories end with "/", their contents are indented below them. path is an absolute path or a path relative to the task root (default: the task root).

- ignore takes glob patterns of entries to leave out (matched against the name and the path relative to path), e.g. ["node_modules", "*.log"].
- Version-control directories (.git) are not listed; symbolic links are listed but not followed.
- At most 1000 entries are listed, nearest first; for a large tree prefer Glob and Grep, which search it without listing it.`

var lsSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "The directory to list: absolute, or relative to the task root. Defaults to the task root."},
    "ignore": {"type": "array", "items": {"type": "string"}, "description": "Glob patterns of entries to leave out."}
  },
  "additionalProperties": false
}`)

func (t *lsTool) Spec() tools.Spec {
	return tools.Spec{Name: "LS", Description: lsDescription, InputSchema: lsSchema, Effect: tools.EffectRead}
}

// lsEntry is one listed entry; rel is "/"-separated under the listed directory.
type lsEntry struct {
	rel  string
	dir  bool
	link bool
}

func (t *lsTool) Run(ctx context.Context, input json.RawMessage) tools.Result {
	var in lsInput
	if err := tools.Decode(input, &in); err != nil {
		return tools.FromError(err, tools.CodeInputInvalid)
	}
	for _, p := range in.Ignore {
		if !doublestar.ValidatePattern(p) {
			return tools.Fail(CodePatternInvalid, "the ignore pattern %q is malformed (check its brackets and braces)", p)
		}
	}
	if ctx.Err() != nil {
		return cancelled()
	}
	spelled := cmp.Or(in.Path, ".")
	root, res := t.cfg.searchDir(ctx, spelled)
	if res != nil {
		return *res
	}
	ignored := func(rel string) bool {
		base := path.Base(rel)
		for _, p := range in.Ignore {
			p = strings.TrimSuffix(p, "/")
			if doublestar.MatchUnvalidated(p, base) || doublestar.MatchUnvalidated(p, rel) {
				return true
			}
		}
		return false
	}
	// Breadth first, so a deep subtree cannot crowd out the entries near the top.
	var (
		entries    []lsEntry
		unreadable int
		truncated  bool
	)
	queue := []string{""}
	for len(queue) > 0 && !truncated {
		if ctx.Err() != nil {
			return cancelled()
		}
		rel := queue[0]
		queue = queue[1:]
		ents, err := t.cfg.Env.ReadDir(ctx, filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			if ctx.Err() != nil {
				return cancelled()
			}
			unreadable++
			continue
		}
		for _, e := range ents {
			if full := filepath.Join(root, filepath.FromSlash(rel), e.Name); vcsDirs[e.Name] || t.cfg.Fence.Denied(full) || t.cfg.ruleDenied("LS", full) {
				continue // a denied entry is not even named
			}
			r := e.Name
			if rel != "" {
				r = rel + "/" + e.Name
			}
			if ignored(r) {
				continue
			}
			if len(entries) == LSMaxEntries {
				truncated = true
				break
			}
			ent := lsEntry{rel: r, dir: e.Type.IsDir(), link: e.Type&iofs.ModeSymlink != 0}
			entries = append(entries, ent)
			if ent.dir {
				queue = append(queue, r)
			}
		}
	}
	return tools.Text(renderTree(root, entries, truncated, unreadable))
}

// renderTree draws the listing as nested "- name" lines, two spaces of indent per level,
// the listed directory first with its absolute path and every directory ending in "/".
func renderTree(root string, entries []lsEntry, truncated bool, unreadable int) string {
	slices.SortFunc(entries, func(a, b lsEntry) int { return comparePaths(a.rel, b.rel) })
	var b strings.Builder
	if truncated {
		fmt.Fprintf(&b, "There are more than %d entries under %s; the first %d (nearest first) are listed. List a subdirectory, or use Glob and Grep to search.\n\n", LSMaxEntries, root, LSMaxEntries)
	}
	b.WriteString("- ")
	b.WriteString(showName(strings.TrimSuffix(root, "/") + "/"))
	b.WriteString("\n")
	for _, e := range entries {
		depth := strings.Count(e.rel, "/") + 1
		b.WriteString(strings.Repeat("  ", depth))
		b.WriteString("- ")
		name := path.Base(e.rel)
		if e.dir {
			name += "/"
		}
		b.WriteString(showName(name))
		switch {
		case e.dir:
		case e.link:
			b.WriteString(" (symlink, not followed)")
		}
		b.WriteByte('\n')
	}
	if len(entries) == 0 {
		b.WriteString("  (empty directory)\n")
	}
	if unreadable > 0 {
		fmt.Fprintf(&b, "(%s could not be read.)\n", plural(unreadable, "directory"))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// comparePaths orders "/"-separated paths segment by segment, so a directory's contents
// follow it directly ("a/b" before "a-b").
func comparePaths(a, b string) int {
	for {
		ai, bi := strings.IndexByte(a, '/'), strings.IndexByte(b, '/')
		as, bs := a, b
		if ai >= 0 {
			as = a[:ai]
		}
		if bi >= 0 {
			bs = b[:bi]
		}
		if c := strings.Compare(as, bs); c != 0 {
			return c
		}
		switch {
		case ai < 0 && bi < 0:
			return 0
		case ai < 0:
			return -1
		case bi < 0:
			return 1
		}
		a, b = a[ai+1:], b[bi+1:]
	}
}
