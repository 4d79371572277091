package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/mcp"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/sandbox"
)

// mcpOptions are the flags of `sema mcp list|get`: where the servers come from, as for
// `sema run`.
type mcpOptions struct {
	cwd, settings, outputFormat, sandbox string
	mcpConfig                            []string
	strict, trust, trustProject          bool
}

func newMCPCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "List the MCP servers a run here would mount, with their state and tools",
	}
	var o mcpOptions
	list := &cobra.Command{
		Use:   "list",
		Short: "Start every configured MCP server, list its state and tools, and stop it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return mcpList(cmd.Context(), &o, "", stdout)
		},
	}
	get := &cobra.Command{
		Use:   "get NAME",
		Short: "Start one configured MCP server and print its state and tools",
		Args:  exactlyOne("server name", "sema mcp get NAME (sema mcp list shows the names)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return mcpList(cmd.Context(), &o, args[0], stdout)
		},
	}
	for _, c := range []*cobra.Command{list, get} {
		f := c.Flags()
		f.StringVar(&o.cwd, "cwd", ".", "task root: where the workspace's .mcp.json and .sema/settings.json are read")
		f.StringArrayVar(&o.mcpConfig, "mcp-config", nil, "MCP servers as a file or inline JSON, as for sema run; repeatable")
		f.BoolVar(&o.strict, "strict-mcp-config", false, "only the --mcp-config servers")
		f.BoolVar(&o.trust, "trust-project-mcp", false, "start the servers the workspace declares itself")
		f.BoolVar(&o.trustProject, "trust-project", false, "apply the workspace's own settings in full, its MCP servers included, as for sema run (see sema trust)")
		f.StringVar(&o.settings, "settings", "", "a settings file, read with ~/.sema/settings.json")
		f.StringVar(&o.sandbox, "sandbox", "", "auto|on|off, as for sema run")
		f.StringVar(&o.outputFormat, "output-format", "text", "text|json")
	}
	cmd.AddCommand(list, get)
	return cmd
}

func mcpList(ctx context.Context, o *mcpOptions, only string, stdout io.Writer) error {
	if o.outputFormat != "text" && o.outputFormat != "json" {
		return usageErr(sema.Errorf("config.output_format_invalid", "unknown output format %q; use text or json", o.outputFormat))
	}
	root, err := filepath.Abs(o.cwd)
	if err != nil {
		return usageErr(sema.Errorf("config.root_invalid", "cannot resolve --cwd %q: %v", o.cwd, err))
	}
	home, _ := os.UserHomeDir()
	perms := &permissionSetup{home: home}
	if err := perms.loadSettings(&runOptions{settings: o.settings}); err != nil {
		return usageErr(err)
	}
	if o.sandbox != "" {
		if _, err := sandbox.ParseMode(o.sandbox); err != nil {
			return usageErr(err)
		}
	}
	task, err := mcpConfigs(o.mcpConfig)
	if err != nil {
		return usageErr(err)
	}
	state, err := stateDir("")
	if err != nil {
		return usageErr(err)
	}
	trusted, err := workspaceTrusted(&runOptions{trustProject: o.trustProject}, state, root)
	if err != nil {
		return usageErr(err)
	}
	// No model is asked anything: the runner needs a provider only by contract.
	deps := agent.Deps{Provider: scripted.New(scripted.Script{}), Settings: &agent.SettingsOptions{Files: perms.files, Managed: perms.managed},
		Shell: &agent.ShellOptions{Sandbox: sandbox.Mode(o.sandbox)}}
	trustDeps(&deps, trusted, o.trust)
	spec := agent.TaskSpec{Root: root, MCPServers: task, StrictMCPConfig: o.strict}
	status, err := agent.New(deps).MCPStatus(ctx, spec, only)
	if sema.IsCode(err, mcp.CodeConfigInvalid) {
		return usageErr(err)
	}
	if err != nil {
		return &exitErr{code: exitError, err: err}
	}
	return printMCP(stdout, o.outputFormat, status)
}

// printMCP prints server states as `sema mcp list` does.
func printMCP(stdout io.Writer, format string, status []mcp.ServerStatus) error {
	status = slices.Clone(status)
	for i := range status {
		status[i].Error = cliWords(status[i].Error)
	}
	if format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(map[string]any{"servers": nonNil(status)})
	}
	if len(status) == 0 {
		fmt.Fprintln(stdout, "no MCP servers are configured here (.mcp.json, the settings files' mcpServers, --mcp-config)")
		return nil
	}
	for _, s := range status {
		fmt.Fprintf(stdout, "%s  %s  %s  (%s)\n", sanitize(s.Name), s.State, sanitize(s.Type), sanitize(s.Source))
		if s.Error != "" {
			fmt.Fprintf(stdout, "    %s\n", sanitize(firstLine(s.Error, 300)))
		}
		if len(s.Tools) > 0 {
			fmt.Fprintf(stdout, "    tools: %s\n", sanitize(strings.Join(s.Tools, ", ")))
		}
	}
	return nil
}
