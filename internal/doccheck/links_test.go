package doccheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// Every relative link of the README and of the pages under docs/ reaches a file of the
// repository, and every #anchor a heading of the page it names: moving a section to
// another page, or renaming its heading, without its links fails here.
func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(pages) < 10 {
		t.Fatalf("pages under docs/: %v, %v", pages, err)
	}
	pages = append(pages, filepath.Join(root, "README.md"))
	links := 0
	for _, page := range pages {
		text := read(t, page)
		for _, target := range relativeLinks(text) {
			links++
			if problem := linkProblem(t, page, target); problem != "" {
				rel, _ := filepath.Rel(root, page)
				t.Errorf("%s links to %s: %s", rel, target, problem)
			}
		}
	}
	if links < 40 {
		t.Errorf("found %d relative links in the docs; the pattern no longer finds them", links)
	}
}

// The check above reports a missing file and a missing anchor.
func TestDocsLinkCheckCatchesABrokenLink(t *testing.T) {
	t.Parallel()
	page := filepath.Join(moduleRoot(t), "docs", "cli.md")
	for _, target := range []string{"no-such-page.md", "sandbox.md#no-such-heading", "#no-such-heading"} {
		if linkProblem(t, page, target) == "" {
			t.Errorf("%s was not reported", target)
		}
	}
	if p := linkProblem(t, page, "sandbox.md#environment-what-commands-hooks-and-mcp-servers-inherit"); p != "" {
		t.Errorf("a good link was reported: %s", p)
	}
}

// relativeLinks returns the targets of the Markdown links that are not web addresses,
// outside code blocks.
func relativeLinks(md string) []string {
	md = regexp.MustCompile("(?ms)^[ \t]*```.*?^[ \t]*```").ReplaceAllString(md, "")
	var targets []string
	for _, m := range regexp.MustCompile(`\]\(([^)\s]+)\)`).FindAllStringSubmatch(md, -1) {
		if !strings.Contains(m[1], "://") && !strings.HasPrefix(m[1], "mailto:") {
			targets = append(targets, m[1])
		}
	}
	return targets
}

// linkProblem says why a link from page does not resolve, or "" when it does.
func linkProblem(t *testing.T, page, target string) string {
	t.Helper()
	file, anchor, _ := strings.Cut(target, "#")
	path := page
	if file != "" {
		path = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
	}
	if _, err := os.Stat(path); err != nil {
		return "no such file"
	}
	if anchor == "" {
		return ""
	}
	if !strings.HasSuffix(path, ".md") {
		return "an anchor into a file that is not Markdown"
	}
	for _, slug := range headingSlugs(read(t, path)) {
		if slug == anchor {
			return ""
		}
	}
	return "no heading has the anchor #" + anchor
}

// headingSlugs returns the anchors GitHub gives a Markdown file's headings: lower case,
// punctuation dropped, spaces made hyphens (a repeated heading's -1, -2 are not modelled).
func headingSlugs(md string) []string {
	md = regexp.MustCompile("(?ms)^[ \t]*```.*?^[ \t]*```").ReplaceAllString(md, "")
	var slugs []string
	for _, m := range regexp.MustCompile(`(?m)^#+ (.+)$`).FindAllStringSubmatch(md, -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(m[1])) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		slugs = append(slugs, b.String())
	}
	return slugs
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
