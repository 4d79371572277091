// Package gitignore reads .gitignore files (and .git/info/exclude) the way git does, for
// every walk of the workspace: the file tools' Glob and Grep and file history's snapshot
// of what a Bash command changed agree on what is ignored because they read it through
// the same Matcher. It reads no files itself; the walker hands it the content of each
// ignore file it meets, with the canonical directory the file sits in.
package gitignore

// Matcher is the .gitignore matcher of one directory of a walk: the patterns of the
// ignore files pushed on the way down to it. The zero value ignores nothing; it is
// immutable, so the subtrees of a walk may share their parent's matcher.
type Matcher struct{ st *ignoreStack }

// With returns the matcher extended by the patterns of a .gitignore (or
// .git/info/exclude) whose content is content and which sits in the canonical directory
// dir; deeper files pushed later win over shallower ones, as in git. Content with no
// patterns returns m itself.
func (m Matcher) With(dir string, content []byte) Matcher {
	if len(content) == 0 {
		return m
	}
	return Matcher{st: m.st.push(parseIgnore(dir, content))}
}

// Ignored reports whether the canonical path p (a directory when isDir) is excluded by
// the patterns pushed so far.
func (m Matcher) Ignored(p string, isDir bool) bool { return m.st.ignored(p, isDir) }
