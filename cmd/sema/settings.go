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
// managed policy. The workspace's files are the runner's to read.
func (s *permissionSetup) loadSettings(o *runOptions) error {
	s.compat = o.claudeCompat
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
		if !containsLayer(src, settings.User) {
			// The user's files are left out; the home directory still serves "~/".
			return s.loadFlagAndManaged(o.settings)
		}
	}
	if err := s.loadUser(); err != nil {
		return err
	}
	return s.loadFlagAndManaged(o.settings)
}

func containsLayer(list []settings.Layer, l settings.Layer) bool {
	for _, x := range list {
		if x == l {
			return true
		}
	}
	return false
}

// loadUser reads ~/.sema/settings.json and, with the compatibility switch (the flag, or
// the user's own claudeCompat key), ~/.claude/settings.json below it.
func (s *permissionSetup) loadUser() error {
	if s.home == "" {
		return nil
	}
	own, err := loadOptional(filepath.Join(s.home, settings.UserFile), settings.User)
	if err != nil {
		return err
	}
	if s.compat || own != nil && own.ClaudeCompat {
		claude, err := loadOptional(filepath.Join(s.home, ".claude", "settings.json"), settings.User)
		if err != nil {
			return err
		}
		if claude != nil {
			s.files = append(s.files, *claude)
		}
	}
	if own != nil {
		s.files = append(s.files, *own)
		s.compat = s.compat || own.ClaudeCompat
	}
	return nil
}

// loadFlagAndManaged reads --settings (a file, or a JSON document when it begins with
// "{") and the managed policy.
func (s *permissionSetup) loadFlagAndManaged(flag string) error {
	if flag != "" {
		var f settings.File
		var err error
		if strings.HasPrefix(strings.TrimSpace(flag), "{") {
			f, err = settings.Parse([]byte(flag), "", settings.Flag)
		} else {
			f, err = settings.Load(flag, settings.Flag)
		}
		if err != nil {
			return err
		}
		s.files = append(s.files, f)
		s.compat = s.compat || f.ClaudeCompat
	}
	paths := []string{managedFiles.sema}
	if s.compat {
		paths = append(paths, managedFiles.claude)
	}
	for _, p := range paths {
		m, err := loadOptional(p, settings.Managed)
		if err != nil {
			return err
		}
		if m != nil {
			s.managed = m
			break
		}
	}
	return nil
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
