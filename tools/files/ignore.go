package files

// IgnoreMatcher is the .gitignore matcher of the walks of Glob and Grep, offered to other
// walkers of the workspace (file history's snapshot of Bash changes) so every walk of
// the roots agrees on what is ignored. The zero value ignores nothing; it is immutable,
// so the subtrees of a walk may share their parent's matcher.
type IgnoreMatcher struct{ st *ignoreStack }

// With returns the matcher extended by the patterns of a .gitignore (or
// .git/info/exclude) whose content is content and which sits in the canonical directory
// dir; deeper files pushed later win over shallower ones, as in git.
func (m IgnoreMatcher) With(dir string, content []byte) IgnoreMatcher {
	return IgnoreMatcher{st: m.st.push(parseIgnore(dir, content))}
}

// Ignored reports whether the canonical path p (a directory when isDir) is excluded by
// the patterns pushed so far.
func (m IgnoreMatcher) Ignored(p string, isDir bool) bool { return m.st.ignored(p, isDir) }
