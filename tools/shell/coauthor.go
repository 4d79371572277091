package shell

import (
	"os"
	"path/filepath"
	"strings"
)

// gitHooks are the hook names git 2.39 runs (githooks(5)). The co-author hooks directory
// holds every one of them, because pointing core.hooksPath at it hides the repository's
// own hooks from git: each one forwards to the repository's hook of the same name.
var gitHooks = []string{
	"applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
	"prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout",
	"post-merge", "pre-push", "pre-receive", "update", "proc-receive", "post-receive",
	"post-update", "reference-transaction", "push-to-checkout", "pre-auto-gc", "post-rewrite",
	"sendemail-validate", "fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist",
	"p4-post-changelist", "p4-pre-submit", "post-index-change",
}

// hookScript is every hook of the co-author hooks directory. It first takes the set's
// core.hooksPath entry back out of GIT_CONFIG_COUNT (the prelude recorded where it put
// it), so the repository's own hooks, and any git they run, see the configuration they
// would have seen without it; then it finds the repository's hooks directory as git
// would (core.hooksPath, else the common git directory's hooks) and runs the hook of the
// same name there. prepare-commit-msg then adds the trailer, except to merge and squash
// messages.
const hookScript = `#!/bin/sh
# Installed by sema for one command that makes a git commit; see package tools/shell.
name=${0##*/}
base=${SEMA_GIT_CONFIG_BASE:-0}
case $base in ''|*[!0-9]*) base=0 ;; esac
unset "GIT_CONFIG_KEY_$base" "GIT_CONFIG_VALUE_$base" SEMA_GIT_CONFIG_BASE
if [ "$base" -gt 0 ]; then GIT_CONFIG_COUNT=$base; export GIT_CONFIG_COUNT; else unset GIT_CONFIG_COUNT; fi
dir=$(git config --type=path --get core.hooksPath 2>/dev/null)
if [ -z "$dir" ]; then
	common=$(git rev-parse --git-common-dir 2>/dev/null) && [ -n "$common" ] && dir=$common/hooks
fi
own=
if [ -n "$dir" ] && [ -f "$dir/$name" ] && [ -x "$dir/$name" ]; then own=$dir/$name; fi
if [ "$name" != prepare-commit-msg ]; then
	if [ -n "$own" ]; then exec "$own" "$@"; fi
	exit 0
fi
if [ -n "$own" ]; then "$own" "$@" || exit $?; fi
case $2 in merge|squash) exit 0 ;; esac
exec git interpret-trailers --in-place --if-exists addIfDifferent --trailer TRAILER "$1"
`

// coAuthorFor returns the hooks directory a command must run with to get the co-author
// trailer ("" when no trailer is configured or the command makes no commit), and a note
// for the answer when the directory could not be made (the command then runs without).
func (s *Set) coAuthorFor(command string) (string, string) {
	if s.trailer == "" || !hasGitCommit(command) {
		return "", ""
	}
	s.hooksOnce.Do(func() {
		if err := s.ensureScratch(); err != nil {
			s.hooksErr = err
			return
		}
		dir := filepath.Join(s.scratch, "git-hooks")
		if err := os.Mkdir(dir, 0o700); err != nil {
			s.hooksErr = err
			return
		}
		text := strings.Replace(hookScript, "TRAILER", shq(s.trailer), 1)
		for _, name := range gitHooks {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o700); err != nil {
				s.hooksErr = err
				return
			}
		}
		s.hooksDir = dir
	})
	if s.hooksErr != nil {
		return "", "The Co-Authored-By trailer could not be set up (" + s.hooksErr.Error() + "); commits made by this command do not carry it."
	}
	return s.hooksDir, ""
}
