package shell

import (
	"bytes"
	"context"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sema-agent/sema/env"
)

// A confined command's git does not read the user's global configuration: ~/.gitconfig
// and ~/.config/git can hold credentials (a credential helper's store, a token in an
// url.*.insteadOf, an http.*.extraHeader) and name programs, so the sandbox grants
// neither. Commits must still carry the user's identity, so the set writes, once per
// leg, a sanitized copy into its scratch directory — the keys below and nothing else —
// and points GIT_CONFIG_GLOBAL at it.

// gitSafeKeys are the global git settings a confined command's git gets: identity and
// settings that change how git formats, merges and names things, none of which names a
// program, a credential, a URL or another file. Keys are as `git config --list` prints
// them (section and name in lower case).
var gitSafeKeys = map[string]bool{
	"user.name": true, "user.email": true, "user.useconfigonly": true,
	"author.name": true, "author.email": true, "committer.name": true, "committer.email": true,
	"init.defaultbranch": true, "core.autocrlf": true, "core.eol": true, "core.safecrlf": true,
	"core.quotepath": true, "core.precomposeunicode": true, "core.filemode": true,
	"pull.rebase": true, "pull.ff": true, "push.default": true, "push.autosetupremote": true,
	"merge.conflictstyle": true, "merge.ff": true, "diff.algorithm": true, "diff.renames": true,
	"diff.colormoved": true, "rebase.autosquash": true, "rebase.autostash": true,
	"rebase.updaterefs": true, "rerere.enabled": true, "fetch.prune": true, "color.ui": true,
	"column.ui": true, "log.date": true, "branch.sort": true, "tag.sort": true,
	"commit.verbose": true, "advice.detachedhead": true, "safe.directory": true,
}

// gitConfigEnv is the variable git reads its global configuration from instead of
// ~/.gitconfig and $XDG_CONFIG_HOME/git/config.
const gitConfigEnv = "GIT_CONFIG_GLOBAL"

// readGlobalGit runs `git config --global --includes --list -z` unconfined, in the task
// root (so an includeIf on the repository's directory picks the identity it would) and
// with the commands' environment (so HOME and XDG_CONFIG_HOME are theirs), and returns
// its entries: "key\nvalue", NUL-separated. Nothing when git is missing or fails.
func (s *Set) readGlobalGit(ctx context.Context) []byte {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var out, errs bytes.Buffer
	req := env.ExecRequest{
		Argv:        []string{"git", "config", "--global", "--includes", "--list", "-z"},
		Dir:         s.root,
		Env:         append(slices.Clip(s.cfg.ExtraEnv), noPromptEnv...),
		Passthrough: s.cfg.EnvPassthrough,
		Stdout:      &out,
		Stderr:      &errs,
	}
	p, err := s.exec.Start(ctx, req)
	if err != nil {
		return nil
	}
	st, err := p.Wait()
	p.Close()
	if err != nil || st.Code != 0 {
		return nil
	}
	return out.Bytes()
}

// sanitizedGitConfig is the configuration file made of the safe entries of list (the
// output of `git config --list -z`), in git's syntax, every value quoted.
func sanitizedGitConfig(list []byte) []byte {
	sections := map[string][]string{}
	for _, ent := range bytes.Split(list, []byte{0}) {
		key, value, _ := strings.Cut(string(ent), "\n")
		if !gitSafeKeys[key] {
			continue
		}
		section, name, _ := strings.Cut(key, ".")
		sections[section] = append(sections[section], "\t"+name+" = "+gitQuote(value)+"\n")
	}
	names := make([]string, 0, len(sections))
	for n := range sections {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	b.WriteString("# The user's git identity and settings that name no program, credential or URL,\n# for commands in sema's sandbox (the global configuration itself is not readable there).\n")
	for _, n := range names {
		b.WriteString("[" + n + "]\n")
		for _, l := range sections[n] {
			b.WriteString(l)
		}
	}
	return b.Bytes()
}

// gitQuote writes v as a double-quoted git configuration value.
func gitQuote(v string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range v {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		default:
			if r < 0x20 {
				continue // no other control character survives git's parser
			}
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// writeGitIdentity writes the sanitized global configuration to path (0600).
func (s *Set) writeGitIdentity(ctx context.Context, path string) error {
	return os.WriteFile(path, sanitizedGitConfig(s.readGlobalGit(ctx)), 0o600)
}
