package main

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/settings"
)

// managedFiles are where the machine's managed policy is looked for: sema's own, then,
// with the compatibility switch, Claude Code's. Tests point them elsewhere.
var managedFiles = struct{ sema, claude string }{settings.ManagedFile, settings.ClaudeManagedFile}

// loadSettings reads the settings files the command line owns: the user's (unless
// --setting-sources leaves them out), the --settings file or inline document, and the
// managed policy. Claude Code's files are read beside sema's unless --no-claude-compat
// or the deployment's claudeCompat false turns them off (settings.ClaudeFiles). The
// workspace's files are the runner's to read.
func (s *permissionSetup) loadSettings(o *runOptions) error {
	user := true
	if o.settingSources != nil {
		src, err := settings.ParseSources(*o.settingSources)
		if err != nil {
			return err
		}
		s.sources = []settings.Layer{}
		for _, l := range src {
			if l != settings.User {
				s.sources = append(s.sources, l)
			}
		}
		// Without the user's layer the home directory still serves "~/".
		user = containsLayer(src, settings.User)
	}
	word, err := claudeSwitch(o)
	if err != nil {
		return err
	}
	var own *settings.File
	if user && s.home != "" {
		if own, err = loadOptional(filepath.Join(s.home, settings.UserFile), settings.User); err != nil {
			return err
		}
	}
	flag, err := loadFlagSettings(o.settings)
	if err != nil {
		return err
	}
	managed, err := loadOptional(managedFiles.sema, settings.Managed)
	if err != nil {
		return err
	}
	s.compat = settings.ClaudeFiles(word, own, flag, managed)
	if user && s.compat && s.home != "" {
		claude, err := loadOptional(filepath.Join(s.home, ".claude", "settings.json"), settings.User)
		if err != nil {
			return err
		}
		if claude != nil {
			s.files = append(s.files, *claude)
		}
	}
	for _, f := range []*settings.File{own, flag} {
		if f != nil {
			s.files = append(s.files, *f)
		}
	}
	if managed == nil && s.compat {
		if managed, err = loadOptional(managedFiles.claude, settings.Managed); err != nil {
			return err
		}
	}
	s.managed = managed
	return nil
}

// codeClaudeSwitchConflict refuses --claude-compat with --no-claude-compat.
const codeClaudeSwitchConflict = "config.claude_compat_conflict"

// claudeSwitch is the command line's word on Claude Code's files: true for
// --claude-compat, false for --no-claude-compat, nil for neither.
func claudeSwitch(o *runOptions) (*bool, error) {
	switch {
	case o.claudeCompat && o.noClaudeCompat:
		return nil, sema.Errorf(codeClaudeSwitchConflict, "--claude-compat and --no-claude-compat contradict each other; give one (Claude Code's files are read unless --no-claude-compat)")
	case o.claudeCompat:
		on := true
		return &on, nil
	case o.noClaudeCompat:
		off := false
		return &off, nil
	}
	return nil, nil
}

func containsLayer(list []settings.Layer, l settings.Layer) bool {
	for _, x := range list {
		if x == l {
			return true
		}
	}
	return false
}

// loadFlagSettings reads --settings: a file, or a JSON document when it begins with
// "{"; nil without the flag.
func loadFlagSettings(flag string) (*settings.File, error) {
	if flag == "" {
		return nil, nil
	}
	var f settings.File
	var err error
	if strings.HasPrefix(strings.TrimSpace(flag), "{") {
		f, err = settings.Parse([]byte(flag), "", settings.Flag)
	} else {
		f, err = settings.Load(flag, settings.Flag)
	}
	if err != nil {
		return nil, err
	}
	return &f, nil
}

// loadOptional loads path as layer; nil when there is no such file.
func loadOptional(path string, layer settings.Layer) (*settings.File, error) {
	if _, err := os.Stat(path); errors.Is(err, iofs.ErrNotExist) {
		return nil, nil
	}
	f, err := settings.Load(path, layer)
	if err != nil {
		return nil, err
	}
	return &f, nil
}

// workspaceTrusted reports whether the run applies the workspace's own settings, hooks
// and MCP servers in full: --trust-project, or a trust recorded with `sema trust`.
func workspaceTrusted(o *runOptions, stateDir, root string) (bool, error) {
	if o.trustProject {
		return true, nil
	}
	return settings.OpenTrust(stateDir).Trusted(root)
}

// trustDeps records the workspace's trust in deps.
func trustDeps(deps *agent.Deps, trusted, trustMCP bool) {
	var policy agent.Policy
	if deps.Policy != nil {
		policy = *deps.Policy
	}
	policy.TrustProjectSettings = trusted
	deps.Policy = &policy
	deps.MCP = &agent.MCPOptions{TrustProject: trustMCP || trusted}
}

// settingsModel is the model the settings files name when neither --model nor
// $SEMA_MODEL does: the highest layer's, the workspace's only when it is trusted. A
// bare name ("claude-sonnet-4-5") goes to the provider whose key is set.
func settingsModel(s *permissionSetup, root string, trusted bool) string {
	files := append([]settings.File(nil), s.files...)
	if trusted {
		for _, src := range settings.WorkspaceSources(root, s.sources, s.compat) {
			if f, err := loadOptional(src.Path, src.Layer); err == nil && f != nil {
				files = append(files, *f)
			}
		}
	}
	if s.managed != nil {
		files = append(files, *s.managed)
	}
	rank := map[settings.Layer]int{settings.User: 0, settings.Project: 1, settings.Local: 2, settings.Flag: 3, settings.Managed: 4}
	name, best := "", -1
	for _, f := range files {
		if f.Model != "" && rank[f.Layer] >= best {
			name, best = f.Model, rank[f.Layer]
		}
	}
	if name == "" || strings.Contains(name, "/") {
		return name
	}
	switch {
	case os.Getenv("ANTHROPIC_API_KEY") != "":
		return "anthropic/" + name
	case os.Getenv("OPENAI_API_KEY") != "":
		return "openai/" + name
	}
	return ""
}

// newTrustCmd is `sema trust [DIR]`, `sema trust --remove DIR` and `sema trust list`:
// the record of workspaces whose own settings, hooks and MCP servers apply.
func newTrustCmd(stdout io.Writer) *cobra.Command {
	var home string
	var remove bool
	cmd := &cobra.Command{
		Use:   "trust [DIR]",
		Short: "Trust a workspace: its own settings files' hooks, allow rules, env and MCP servers apply",
		Long: `A workspace's .sema/settings.json, .sema/settings.local.json and .mcp.json are what the
repository chose, and a cloned repository must not run programs or grant itself
permissions by itself. Until you trust the workspace (here, or with --trust-project on
one run), only what tightens applies: its deny and ask rules, a sandbox turned on, the
network turned off. Trusting a directory trusts everything below it. The record is kept
in the state directory (--home, $SEMA_HOME, ~/.sema).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			state, err := stateDir(home)
			if err != nil {
				return usageErr(err)
			}
			t := settings.OpenTrust(state)
			if remove {
				was, err := t.Remove(dir)
				if err != nil {
					return usageErr(err)
				}
				if !was {
					return usageErr(sema.Errorf(settings.CodeTrustInvalid, "%s is not in the trust record; sema trust list shows what is", dir))
				}
				fmt.Fprintf(stdout, "no longer trusted: %s\n", dir)
				return nil
			}
			abs, err := t.Add(dir)
			if err != nil {
				return usageErr(err)
			}
			fmt.Fprintf(stdout, "trusted: %s\n", abs)
			return nil
		},
	}
	cmd.Flags().StringVar(&home, "home", "", "state directory (default $SEMA_HOME, else ~/.sema)")
	cmd.Flags().BoolVar(&remove, "remove", false, "stop trusting DIR")
	list := &cobra.Command{
		Use:   "list",
		Short: "List the trusted workspaces",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			state, err := stateDir(home)
			if err != nil {
				return usageErr(err)
			}
			l, err := settings.OpenTrust(state).List()
			if err != nil {
				return usageErr(err)
			}
			for _, w := range l {
				fmt.Fprintln(stdout, w)
			}
			return nil
		},
	}
	list.Flags().StringVar(&home, "home", "", "state directory (default $SEMA_HOME, else ~/.sema)")
	cmd.AddCommand(list)
	return cmd
}
