package files

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/tools"
)

// GlobMaxResults caps the paths one Glob answer lists.
const GlobMaxResults = 100

type globTool struct{ cfg Config }

type globInput struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
}

const globDescription = `Finds files by name with a glob pattern, fast in trees of any size.

- Patterns: "*" matches within one path segment, "**" matches any number of directories, "?" one character, "[abc]" a set, "{a,b}" alternatives. Examples: "**/*.go", "src/**/*.{ts,tsx}", "*.md" (only directly in the directory searched).
- The pattern is matched against paths relative to path (default: the task root). An absolute pattern is also accepted.
- Only files are listed (absolute paths, one per line), the most recently modified first, at most 100; files ignored by .gitignore and version-control directories (.git) are skipped.
- To search file contents, use Grep. For an open-ended search that needs several rounds of globbing and grepping, run the searches in parallel.`

var globSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "The glob pattern to match file paths against, e.g. \"**/*.go\"."},
    "path": {"type": "string", "description": "The directory to search in: absolute, or relative to the task root. Omit it to search the task root."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`)

func (t *globTool) Spec() tools.Spec {
	return tools.Spec{Name: "Glob", Description: globDescription, InputSchema: globSchema, Effect: tools.EffectRead}
}

func (t *globTool) Run(ctx context.Context, input json.RawMessage) tools.Result {
	var in globInput
	if err := tools.Decode(input, &in); err != nil {
		return tools.FromError(err, tools.CodeInputInvalid)
	}
	if in.Pattern == "" {
		return tools.Fail(tools.CodeInputInvalid, "pattern is required: give a glob such as \"**/*.go\"")
	}
	dir, pattern := in.Path, filepath.ToSlash(in.Pattern)
	if dir == "" {
		dir = "."
	}
	if filepath.IsAbs(in.Pattern) {
		// An absolute pattern names its own directory: its static prefix.
		base, rest := doublestar.SplitPattern(pattern)
		dir, pattern = filepath.FromSlash(base), rest
	}
	pattern = strings.TrimPrefix(pattern, "./")
	if !doublestar.ValidatePattern(pattern) {
		return tools.Fail(CodePatternInvalid, "the glob pattern %q is malformed (check its brackets and braces)", in.Pattern)
	}
	if ctx.Err() != nil {
		return cancelled()
	}
	root, res := t.cfg.searchDir(ctx, dir)
	if res != nil {
		return *res
	}
	// The pattern's static directories narrow the walk ("src/**/*.go" walks src only).
	if base, rest := doublestar.SplitPattern(pattern); base != "." && base != "" {
		sub, err := t.cfg.Fence.Resolve(ctx, filepath.Join(root, filepath.FromSlash(base)), fence.Read)
		if err != nil {
			return tools.FromError(err, fence.CodeUnresolvable)
		}
		if !sub.Exists {
			return tools.Text("No files found")
		}
		if fi, err := t.cfg.Env.Stat(ctx, sub.Canonical); err != nil || !fi.IsDir() {
			return tools.Text("No files found")
		}
		root, pattern = sub.Canonical, rest
	}
	opts := walkOptions{Gitignore: true, Tool: "Glob"}
	if !strings.Contains(pattern, "**") && !strings.Contains(pattern, "{") {
		opts.MaxDepth = strings.Count(pattern, "/") + 1
	}
	type hit struct {
		path  string
		mtime time.Time
	}
	var hits []hit
	stats, err := t.cfg.walk(ctx, root, opts, func(f walkFile) error {
		if !doublestar.MatchUnvalidated(pattern, f.Rel) {
			return nil
		}
		var mtime time.Time
		if fi, err := t.cfg.Env.Stat(ctx, f.Canonical); err == nil {
			mtime = fi.ModTime
		}
		hits = append(hits, hit{f.Path, mtime})
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return cancelled()
		}
		return tools.Fail(CodeReadFailed, "the search under %s failed: %v", dir, err)
	}
	if len(hits) == 0 {
		return tools.Text("No files found" + skippedNote(stats))
	}
	slices.SortFunc(hits, func(a, b hit) int {
		if c := b.mtime.Compare(a.mtime); c != 0 {
			return c
		}
		return strings.Compare(a.path, b.path)
	})
	var b strings.Builder
	for i, h := range hits {
		if i == GlobMaxResults {
			fmt.Fprintf(&b, "(Results are truncated: %d of %d files are shown. Use a more specific path or pattern.)\n", GlobMaxResults, len(hits))
			break
		}
		b.WriteString(showName(h.path))
		b.WriteByte('\n')
	}
	return tools.Text(strings.TrimSuffix(b.String(), "\n") + skippedNote(stats))
}

// searchDir resolves the directory a search tool was given. A refusal comes back as the
// Result to answer with.
func (c Config) searchDir(ctx context.Context, spelled string) (string, *tools.Result) {
	p, err := c.Fence.Resolve(ctx, spelled, fence.Read)
	if err != nil {
		r := tools.FromError(err, fence.CodeUnresolvable)
		return "", &r
	}
	if !p.Exists {
		r := tools.Fail(CodeFileNotFound, "the directory %s does not exist; check the path", spelled)
		return "", &r
	}
	fi, err := c.Env.Stat(ctx, p.Canonical)
	if err != nil {
		r := readFailure(ctx, spelled, err)
		return "", &r
	}
	if !fi.IsDir() {
		r := tools.Fail(CodeNotDirectory, "%s is a file, not a directory; give the directory to search", spelled)
		return "", &r
	}
	return p.Canonical, nil
}

// skippedNote tells the model that part of the tree could not be searched.
func skippedNote(s walkStats) string {
	if s.Unreadable == 0 {
		return ""
	}
	return fmt.Sprintf("\n(%s could not be read; what is below is not listed.)", plural(s.Unreadable, "directory"))
}
