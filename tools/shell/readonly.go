package shell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/gitconf"
	"github.com/sema-agent/sema/shellscan"
	"github.com/sema-agent/sema/tools"
)

// readonlyTool is bash_readonly; desc, which lists the allowlist, is built once.
type readonlyTool struct {
	s    *Set
	desc string
}

type readonlyInput struct {
	Command     string   `json:"command"`
	Timeout     *float64 `json:"timeout"`
	Description string   `json:"description"`
}

const readonlyDescription = `Runs a read-only bash command in the task root and returns its output (stdout and stderr together) and exit code. A command runs only if it is provably read-only; otherwise it is refused with the reason, and nothing runs.

- Allowed commands: %s. Pipes, && || ; and ( ) { } groups are fine.
- Refused: redirection to a file (only 2>/dev/null and the like), command substitution, variables, globs and ~ (write paths out literally), cd, background &, options that write or run programs (find -exec/-delete, sort -o, --output, …), options that follow symbolic links (grep -R, rg -L, find -L, du -L, ls -L, tree -l, diff -r, stat -L, file -L) and --files0-from; git in a repository whose own configuration names programs (diff drivers, filters, fsmonitor, hooks).
- Every path the command names must lie inside the workspace's read roots.
- A recursive search (grep -r, rg, find, ls -R, du, tree, git grep) of a directory that could hold files sema denies is refused; search a narrower directory or name the files.
- A path a Read deny rule covers is refused, and so is git output from history (git show, log -p, diff, grep) unless it names only paths no deny rule covers (git show HEAD:src/main.go, git diff HEAD -- src/). A file with more than one hard link is refused.
- timeout is in milliseconds (default 120000, at most 600000). Output longer than 30000 characters keeps its first and last 15000 characters.`

var readonlySchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "The read-only bash command to run."},
    "timeout": {"type": "number", "description": "Timeout in milliseconds (default 120000, at most 600000)."},
    "description": {"type": "string", "description": "What the command does, in 5 to 10 words."}
  },
  "required": ["command"],
  "additionalProperties": false
}`)

func (t *readonlyTool) Spec() tools.Spec {
	return tools.Spec{Name: NameBashReadonly, Description: t.desc, InputSchema: readonlySchema, Effect: tools.EffectRead}
}

func newReadonlyTool(s *Set) *readonlyTool {
	t := &readonlyTool{s: s}
	t.desc = fmt.Sprintf(readonlyDescription, strings.Join(t.allowed(), ", "))
	return t
}

// allowed is the allowlist in force.
func (t *readonlyTool) allowed() []string {
	if t.s.allow != nil {
		return t.s.allow
	}
	return shellscan.DefaultReadOnlyAllow
}

// readonlyEnv hardens git for the read-only band, whatever the user's or the system's
// configuration says (the repository's own is judged before the command runs: a repository
// whose configuration names a program is refused, see proveReadOnly): no optional index
// writes (a status refresh), no fsmonitor program, no signature program, no hooks
// (core.hooksPath pointing at a file holds none), no credential helper (an empty value
// empties the list), and the pager and askpass programs replaced by nothing that runs. Environment
// overrides come after every configuration file, so they win. The entries replace any
// GIT_CONFIG_COUNT of the environment; the co-author prelude, should it ever run here, adds
// its own core.hooksPath after them (a later entry wins) and takes only that one out again.
var readonlyEnv = []string{
	"GIT_OPTIONAL_LOCKS=0",
	"GIT_PAGER=cat", "GIT_ASKPASS=", "SSH_ASKPASS=",
	"GIT_CONFIG_COUNT=5",
	"GIT_CONFIG_KEY_0=core.fsmonitor", "GIT_CONFIG_VALUE_0=false",
	"GIT_CONFIG_KEY_1=log.showSignature", "GIT_CONFIG_VALUE_1=false",
	"GIT_CONFIG_KEY_2=core.hooksPath", "GIT_CONFIG_VALUE_2=/dev/null",
	"GIT_CONFIG_KEY_3=credential.helper", "GIT_CONFIG_VALUE_3=",
	"GIT_CONFIG_KEY_4=core.pager", "GIT_CONFIG_VALUE_4=cat",
}

func (t *readonlyTool) Run(ctx context.Context, input json.RawMessage) tools.Result {
	s := t.s
	var in readonlyInput
	if err := tools.Decode(input, &in); err != nil {
		return tools.FromError(err, tools.CodeInputInvalid)
	}
	if blank(in.Command) {
		return tools.Fail(tools.CodeInputInvalid, "command is empty; give the read-only bash command to run.")
	}
	timeout, bad := parseTimeout(in.Timeout)
	if bad != nil {
		return *bad
	}
	if ctx.Err() != nil {
		return cancelledResult("The call was cancelled before the command started; nothing ran.")
	}
	if r := s.proveReadOnly(ctx, in.Command); r != nil {
		return *r
	}
	if r := s.permit(ctx, PermissionRequest{Tool: NameBashReadonly, Command: in.Command, Description: in.Description, Dir: s.root, Timeout: timeout, ProvenReadOnly: true}); r != nil {
		return *r
	}
	return s.runForeground(ctx, runSpec{tool: NameBashReadonly, command: in.Command, description: in.Description, dir: s.root, timeout: timeout, env: readonlyEnv}, nil)
}

// proveReadOnly is bash_readonly's judgment, in this order: the text parses; shellscan
// proves every simple command read-only under the allowlist, a git command only where the
// configuration of the repository around the task root names no program (gitconf); every
// word is a literal; no read reaches places the text does not show (an option that follows
// symbolic links or reads a list of names: shellscan.Target.Reason); shellscan knows every
// path the command reads; and every one of those paths, and every literal argument that is
// not an option, resolves inside the read roots; and no recursive reader (grep -r, rg,
// find, ls -R, du, tree, git grep; shellscan.Script.RecursiveSegments) walks a
// directory that could hold files of the deny set, which it would read without naming
// them. The first failure is the answer.
func (s *Set) proveReadOnly(ctx context.Context, command string) *tools.Result {
	refuse := func(format string, args ...any) *tools.Result {
		r := tools.Fail(CodeNotReadOnly, "bash_readonly did not run the command: "+format, args...)
		return &r
	}
	script, err := shellscan.Parse(command)
	if err != nil {
		msg := err.Error()
		var se *sema.Error
		if errors.As(err, &se) {
			msg = se.Message
		}
		return refuse("it does not parse as bash (%s).", msg)
	}
	at := shellscan.Place{GitPrograms: func() string { return gitconf.Programs(ctx, s.cfg.Env, s.root) }}
	if v := shellscan.ReadOnlyAt(script, s.allow, at); !v.OK {
		return refuse("%s.", strings.TrimSuffix(v.Reason, "."))
	}
	var paths []string
	for _, seg := range script.Segments {
		if len(seg.Words) == 0 {
			continue
		}
		operands := false
		for _, w := range seg.Words[1:] {
			if !w.Static {
				return refuse("the word %s is expanded when the command runs (a variable, glob, ~ or substitution), so the paths it reads cannot be checked; write it out literally.", w.Raw)
			}
			lit := w.Lit
			switch {
			case operands || lit == "-" || !strings.HasPrefix(lit, "-"):
				if lit != "" && lit != "-" {
					paths = append(paths, lit)
				}
			case lit == "--":
				operands = true
			default:
				if name, value, ok := strings.Cut(lit, "="); ok && strings.HasPrefix(name, "--") && value != "" {
					paths = append(paths, value)
				}
			}
		}
	}
	targets, complete := shellscan.ReadTargets(script)
	for _, tg := range targets {
		if tg.Reason != "" {
			return refuse("%s; leave that out and name the files.", tg.Reason)
		}
	}
	if !complete {
		return refuse("it is not possible to tell every path it reads; name the files and directories literally.")
	}
	for _, tg := range targets {
		paths = append(paths, tg.Path)
	}
	canonical := map[string]string{}
	for _, p := range paths {
		if _, seen := canonical[p]; seen {
			continue
		}
		fp, err := s.cfg.Fence.Resolve(ctx, p, fence.Read)
		if err != nil {
			r := tools.FromError(err, fence.CodeUnresolvable)
			r.Content[0].Text = "bash_readonly did not run the command: " + r.Content[0].Text
			return &r
		}
		if !s.cfg.Fence.Inside(fp.Canonical, fence.Read) {
			r := tools.Fail(fence.CodeNotInRoot, "bash_readonly did not run the command: the path %q is outside the read roots; use a path inside %s.", p, strings.Join(s.cfg.Fence.ReadRoots(), ", "))
			return &r
		}
		if rd := s.cfg.ReadDenial; rd != nil && (rd.Denied("Read", s.absolute(p)) || rd.Denied("Read", fp.Canonical)) {
			r := tools.Fail(fence.CodeDenied, "bash_readonly did not run the command: a deny rule keeps %q from reads; leave it out.", p)
			return &r
		}
		if info, err := s.cfg.Fence.Env().Stat(ctx, fp.Canonical); err == nil && fence.HardLinked(fp.Canonical, info) {
			r := tools.FromError(fence.HardLinkError(p), fence.CodeHardLink)
			r.Content[0].Text = "bash_readonly did not run the command: " + r.Content[0].Text + "."
			return &r
		}
		canonical[p] = fp.Canonical
	}
	if rd := s.cfg.ReadDenial; rd != nil {
		if why := rd.ShellRisk(ctx, script, s.readonlyPlacer); why != "" {
			r := tools.Fail(fence.CodeDenied, "bash_readonly did not run the command: %s.", why)
			return &r
		}
	}
	recursive := script.RecursiveSegments()
	for _, tg := range targets {
		if i := tg.Segment; i < 0 || i >= len(recursive) || !recursive[i] {
			continue
		}
		if c := canonical[tg.Path]; s.walkMayReachDenied(ctx, c) {
			r := tools.Fail(fence.CodeDenied, "bash_readonly did not run the command: the search could read files sema denies (the state directory / deny globs) under %q (%s); search a narrower directory or name files.", tg.Path, c)
			return &r
		}
	}
	return nil
}

// absolute makes a literal path of the command absolute against the task root, where
// bash_readonly runs it, cleaned lexically.
func (s *Set) absolute(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(s.root, p)
}

// readonlyPlacer places a target for ReadDenial.ShellRisk through the fence: bash_readonly
// refuses cd and every expanded word, so a literal path is relative to the task root.
func (s *Set) readonlyPlacer(ctx context.Context, t shellscan.Target) (string, string, bool) {
	if !t.Static {
		return "", "", false
	}
	fp, err := s.cfg.Fence.Resolve(ctx, t.Path, fence.Read)
	if err != nil {
		return "", "", false
	}
	return s.absolute(t.Path), fp.Canonical, true
}

// walkMayReachDenied reports whether a recursive walk of the canonical path c could read
// a file of the deny set: c is a directory (or cannot be examined) and the fence says it
// may hold one. A file is a single read, already judged by Resolve.
func (s *Set) walkMayReachDenied(ctx context.Context, c string) bool {
	f := s.cfg.Fence
	if info, err := f.Env().Stat(ctx, c); err == nil && !info.Mode.IsDir() {
		return false
	}
	return f.MayContainDenied(c)
}
