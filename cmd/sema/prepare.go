package main

import (
	"os"
	"path/filepath"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/mcp"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/pricing"
	"github.com/sema-agent/sema/statedir"
)

// preparedRun is what a run takes from its command line before its first turn: where
// it runs, what it may trust, and the parts of its Deps and TaskSpec that do not depend
// on the turn. `sema run` prepares one for its single turn; the SDK protocol prepares
// one for the whole session and builds every turn from it, so the two cannot drift
// apart on what a flag means.
type preparedRun struct {
	o     *runOptions
	perms *permissionSetup
	lease time.Duration
	// root is the task root (--cwd made absolute), home the state directory.
	root, home string
	// trusted says whether the workspace's own settings apply in full.
	trusted bool
	// prices and servers are read by load.
	prices  map[string]pricing.Price
	servers []mcp.Server
}

// prepareRun resolves the task root, the state directory and the workspace's trust.
func prepareRun(o *runOptions, perms *permissionSetup, lease time.Duration) (*preparedRun, error) {
	root, err := filepath.Abs(o.cwd)
	if err != nil {
		return nil, usageErr(sema.Errorf("config.root_invalid", "cannot resolve --cwd %q: %v", o.cwd, err))
	}
	home, err := stateDir(o.home)
	if err != nil {
		return nil, usageErr(err)
	}
	if fi, err := os.Stat(home); err == nil && !fi.IsDir() {
		// Said before anything is read from it (the trust record is the first).
		return nil, usageErr(sema.Errorf(statedir.CodeDirInvalid, "the state directory %s is a file, not a directory; pass --home DIR (or set SEMA_HOME) naming a directory sema may create", home).With("path", home))
	}
	trusted, err := workspaceTrusted(o, home, root)
	if err != nil {
		return nil, usageErr(err)
	}
	return &preparedRun{o: o, perms: perms, lease: lease, root: root, home: home, trusted: trusted}, nil
}

// modelRef is the model the run uses: --model, else the custom command's model, else
// $SEMA_MODEL, else the settings files'.
func (r *preparedRun) modelRef(commandModel string) string {
	for _, ref := range []string{r.o.model, commandModel, os.Getenv("SEMA_MODEL")} {
		if ref != "" {
			return ref
		}
	}
	return settingsModel(r.perms, r.root, r.trusted)
}

// load reads the price table of the state directory and the --mcp-config servers.
func (r *preparedRun) load() error {
	prices, err := loadPrices(r.home)
	if err != nil {
		return usageErr(err)
	}
	servers, err := mcpConfigs(r.o.mcpConfig)
	if err != nil {
		return usageErr(err)
	}
	r.prices, r.servers = prices, servers
	return nil
}

// task builds a turn's Deps and TaskSpec on provider's model: the command line's
// limits, roots and prompts, the permission setup, the trust and the lease. The slices
// it hands out are the turn's own, so a turn that appends to them leaves the next as it
// was. The prompt, the session stores and the resume are the caller's.
func (r *preparedRun) task(provider model.Provider, modelName string) (agent.Deps, agent.TaskSpec, error) {
	o := r.o
	deps := agent.Deps{Provider: provider, Prices: r.prices}
	spec := agent.TaskSpec{
		Root:                      r.root,
		Model:                     modelName,
		MaxTurns:                  o.maxTurns,
		MaxTokensTotal:            o.maxTokensTotal,
		MaxBudgetUSD:              o.maxBudgetUSD,
		AdditionalDirectories:     o.addDirs,
		AdditionalReadDirectories: o.addReadDirs,
		ReadOnly:                  o.readOnly,
		AppendSystemPrompt:        o.appendSystem,
		SystemPrompt:              o.systemPrompt,
		FileHistory:               agent.FileHistoryCapture(o.fileHistory),
		NoInstructions:            o.noInstructions,
		Worktree:                  o.claude.worktreeRef(),
	}
	r.perms.apply(&deps, &spec)
	if err := o.applyEnvPassthrough(&deps); err != nil {
		return agent.Deps{}, agent.TaskSpec{}, err
	}
	spec.AllowedTools = append([]string(nil), spec.AllowedTools...)
	spec.DisallowedTools = append(append([]string(nil), spec.DisallowedTools...), o.sdk.toolDenials()...)
	spec.MCPServers = append([]mcp.Server(nil), r.servers...)
	spec.StrictMCPConfig = o.strictMCP
	trustDeps(&deps, r.trusted, o.trustMCP)
	deps.SessionLease = r.lease
	return deps, spec, nil
}
