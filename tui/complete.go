package tui

import (
	"os"
	"path/filepath"
	"strings"
	"unicode"

	tea "charm.land/bubbletea/v2"

	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/gitignore"
)

// pathLimit bounds the walk behind @: a huge tree lists its first pathLimit entries,
// shallowest first, rather than stalling the screen.
const pathLimit = 20000

// completionRows is how many paths the @ list shows.
const completionRows = 6

// pathItem is one path @ can insert: as shown and inserted (relative to the first
// root, absolute under another root), and lower-cased for matching.
type pathItem struct {
	text, lower, base string
	dir               bool
}

// pathsMsg carries the finished walk of the roots.
type pathsMsg struct{ items []pathItem }

// completion is the open @ list: the query typed after @, the matching paths and the
// chosen row.
type completion struct {
	query string
	items []pathItem
	sel   int
}

// walkRoots lists the files and directories under roots, breadth first, at most limit:
// .git, what .gitignore (and .git/info/exclude) excludes and the places the fence
// protects (ProtectedCandidate names: credentials, shell start-up files, …) are left
// out, and a symbolic link is listed only when it resolves inside a root, so @ never
// offers a path the task cannot read.
func walkRoots(roots []string, limit int) []pathItem {
	var canon []string
	for _, r := range roots {
		if c, err := filepath.EvalSymlinks(r); err == nil {
			canon = append(canon, c)
		}
	}
	inRoots := func(p string) bool {
		for _, r := range canon {
			if fence.Contains(r, p) {
				return true
			}
		}
		return false
	}
	type dir struct {
		path, show string
		ign        gitignore.Matcher
	}
	var out []pathItem
	for i, root := range canon {
		var ign gitignore.Matcher
		if b, err := os.ReadFile(filepath.Join(root, ".git", "info", "exclude")); err == nil {
			ign = ign.With(root, b)
		}
		queue := []dir{{path: root, show: "", ign: ign}}
		if i > 0 {
			queue[0].show = root
		}
		for len(queue) > 0 && len(out) < limit {
			d := queue[0]
			queue = queue[1:]
			if b, err := os.ReadFile(filepath.Join(d.path, ".gitignore")); err == nil {
				d.ign = d.ign.With(d.path, b)
			}
			ents, err := os.ReadDir(d.path)
			if err != nil {
				continue
			}
			for _, e := range ents {
				name := e.Name()
				if name == ".git" || (isASCII(name) && fence.ProtectedCandidate(name)) {
					continue
				}
				p := filepath.Join(d.path, name)
				isDir := e.IsDir()
				if e.Type()&os.ModeSymlink != 0 {
					t, err := filepath.EvalSymlinks(p)
					if err != nil || !inRoots(t) {
						continue
					}
					if fi, err := os.Stat(t); err == nil && fi.IsDir() {
						isDir = true
					}
				}
				if d.ign.Ignored(p, isDir) {
					continue
				}
				show := name
				if d.show != "" {
					show = d.show + "/" + name
				}
				it := pathItem{text: show, dir: isDir, base: strings.ToLower(name)}
				if isDir {
					it.text += "/"
					if e.Type()&os.ModeSymlink == 0 { // a linked directory is offered, not entered
						queue = append(queue, dir{path: p, show: show, ign: d.ign})
					}
				}
				it.lower = strings.ToLower(it.text)
				out = append(out, it)
				if len(out) >= limit {
					break
				}
			}
		}
	}
	return out
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// matchPaths ranks the paths containing query (ignoring case): a name that starts with
// it first, then a path that does, then the rest; shorter paths first within each, the
// walk's order (shallow first) among equals. It keeps only the best n as it goes, so a
// key costs one pass over the walk, not a sort of it.
func matchPaths(items []pathItem, query string, n int) []pathItem {
	q := strings.ToLower(query)
	type hit struct {
		rank, size int
		it         pathItem
	}
	best := make([]hit, 0, n+1)
	for _, it := range items {
		if !strings.Contains(it.lower, q) {
			continue
		}
		h := hit{rank: 2, size: len(it.text), it: it}
		switch {
		case strings.HasPrefix(it.base, q):
			h.rank = 0
		case strings.HasPrefix(it.lower, q):
			h.rank = 1
		}
		i := len(best)
		for i > 0 && (best[i-1].rank > h.rank || best[i-1].rank == h.rank && best[i-1].size > h.size) {
			i--
		}
		if i >= n {
			continue
		}
		best = append(best[:i], append([]hit{h}, best[i:]...)...)
		if len(best) > n {
			best = best[:n]
		}
	}
	out := make([]pathItem, 0, len(best))
	for _, h := range best {
		out = append(out, h.it)
	}
	return out
}

// atQuery finds the @ word the cursor is at the end of: the text after an @ that starts
// the line or follows a space, up to the cursor, with no space in it.
func (m *Model) atQuery() (string, bool) {
	lines := strings.Split(m.input.Value(), "\n")
	row := m.input.Line()
	if row >= len(lines) {
		return "", false
	}
	line := []rune(lines[row])
	col := min(m.input.Column(), len(line))
	for i := col - 1; i >= 0; i-- {
		switch {
		case line[i] == '@' && (i == 0 || unicode.IsSpace(line[i-1])):
			return string(line[i+1 : col]), true
		case unicode.IsSpace(line[i]):
			return "", false
		}
	}
	return "", false
}

// refreshCompletion opens, narrows or closes the @ list after the input changed. The
// first @ starts the walk of the roots (once a session; the list says so meanwhile).
func (m *Model) refreshCompletion() tea.Cmd {
	q, ok := m.atQuery()
	if !ok || len(m.opts.Roots) == 0 {
		m.comp, m.compShut = nil, false
		return nil
	}
	if m.compShut {
		return nil // Esc closed it: it stays closed until the @ word ends
	}
	m.comp = &completion{query: q, items: matchPaths(m.paths, q, completionRows)}
	if m.paths != nil || m.walking {
		return nil
	}
	m.walking = true
	roots := append([]string(nil), m.opts.Roots...)
	return func() tea.Msg { return pathsMsg{items: walkRoots(roots, pathLimit)} }
}

// completionKey handles a key while the @ list is open; false leaves it to the input.
func (m *Model) completionKey(k string) bool {
	c := m.comp
	switch k {
	case "up", "ctrl+p":
		if c.sel > 0 {
			c.sel--
		}
	case "down", "ctrl+n":
		if c.sel < len(c.items)-1 {
			c.sel++
		}
	case "esc":
		m.comp, m.compShut = nil, true
	case "tab", "enter":
		if len(c.items) == 0 {
			return k == "tab"
		}
		m.insertPath(c.query, c.items[c.sel])
	default:
		return false
	}
	return true
}

// insertPath replaces the @ word's query with the chosen path; a file ends the word
// (a space follows), a directory leaves it open to go on into it.
func (m *Model) insertPath(query string, it pathItem) {
	for range []rune(query) {
		m.input, _ = m.input.Update(tea.KeyPressMsg{Code: tea.KeyBackspace})
	}
	text := it.text
	if !it.dir {
		text += " "
	}
	m.input.InsertString(text)
	m.comp = nil
	if it.dir {
		m.refreshCompletion()
	}
}

// completionLines is the @ list, shown above the input.
func (m *Model) completionLines() []string {
	c := m.comp
	if c == nil {
		return nil
	}
	if len(c.items) == 0 {
		word := "no path matches"
		if m.paths == nil {
			word = "listing the files…"
		}
		return []string{m.styles.dim.Render("  @ " + word)}
	}
	var out []string
	for i, it := range c.items {
		lead := "    "
		if i == c.sel {
			out = append(out, m.styles.user.Render("  › "+sanitize(it.text)))
			continue
		}
		out = append(out, m.styles.dim.Render(lead+sanitize(it.text)))
	}
	return out
}
