package agent

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/internal/mcpservers"
	"github.com/sema-agent/sema/internal/roster"
	"github.com/sema-agent/sema/internal/sandboxplan"
	"github.com/sema-agent/sema/mcp"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/tools"
)

// MCPOptions tune the MCP servers a leg mounts. The zero value (and a nil Deps.MCP) is
// the default of every field.
type MCPOptions struct {
	// Servers are the deployment's MCP servers (mcp.ParseConfig reads Claude Code's
	// mcpServers format). They join the workspace's (started only when TrustProject) and
	// are replaced by the task's of the same name. Default: none.
	Servers []mcp.Server
	// StartTimeout bounds a server's start (connection and first tool list); a server's
	// own startTimeoutMs wins. Zero: mcp.DefaultStartTimeout (30 s).
	StartTimeout time.Duration
	// CallTimeout bounds one tool call; a server's own callTimeoutMs wins. Zero:
	// mcp.DefaultCallTimeout (120 s).
	CallTimeout time.Duration
	// OutputLimit caps one call's text output, in tokens of four bytes; the rest is cut
	// with a note. Zero: mcp.DefaultOutputLimit (25,000).
	OutputLimit int
	// TrustProject starts the servers the workspace declares itself (the root's .mcp.json
	// and the mcpServers of its .sema/settings.json). Default false: they are listed in a
	// notice (mcp.project_untrusted) and not started, so that a cloned repository cannot
	// start programs by itself.
	TrustProject bool
	// ToolEffects declares the effect of MCP tools by name ("mcp__server__tool") or for a
	// whole server ("mcp__server"). A declared effect outranks a server's readOnlyHint:
	// the hint only counts for a tool nobody declared. Default: none (every MCP tool is
	// fail-closed, a write, unless its server hints it only reads).
	ToolEffects map[string]tools.Effect
}

func (d *Deps) mcpOptions() MCPOptions {
	if d.MCP == nil {
		return MCPOptions{}
	}
	return *d.MCP
}

// mcpMount is the MCP servers of a chain of legs: the root leg starts them, its children
// use them, and gen moves on whenever a server's tool list changed, so every leg's
// roster sees the new tools at its next call.
type mcpMount struct {
	m   *mcp.Mount
	gen atomic.Uint64
}

// mcpServers collects the servers the leg may start (mcpservers.Collect), and the
// workspace's that were held back for want of trust, for a status listing. The notice
// of the held-back ones names them and the switch that trusts them.
func (l *leg) mcpServers(ctx context.Context) (servers, untrusted []mcp.Server, err error) {
	return mcpservers.Collect(ctx, mcpservers.Input{
		Strict: l.spec.StrictMCPConfig, Trust: l.deps.mcpOptions().TrustProject,
		Root: l.fence.Root(), Read: l.deps.Env.ReadFile, Files: l.settingsFiles,
		Deployment: l.deps.mcpOptions().Servers, Task: l.spec.MCPServers, LookupEnv: os.LookupEnv,
		OnUntrusted: func(project []mcp.Server) {
			var names []string
			for _, s := range project {
				names = append(names, s.Name+" ("+s.Source+")")
			}
			l.notice(sema.Notice{Code: CodeMCPProjectUntrusted, Message: "the workspace declares MCP servers that were not started, because a workspace may not start programs by itself: " +
				strings.Join(names, ", ") + "; trust them with --trust-project-mcp (Deps.MCP.TrustProject)", Detail: map[string]any{"servers": names}})
		},
	})
}

// startMCP starts the leg's MCP servers; a child uses its parent's. A required server
// that fails refuses the run; another is a notice and the leg goes on without it.
func (l *leg) startMCP(ctx context.Context) error {
	if l.link != nil {
		l.mcp = l.link.parent.mcp
		return nil
	}
	servers, _, err := l.mcpServers(ctx)
	if err != nil || len(servers) == 0 {
		return err
	}
	return l.mountServers(ctx, servers)
}

// mountServers starts servers for the leg, confined as its shell commands are.
func (l *leg) mountServers(ctx context.Context, servers []mcp.Server) error {
	o := l.deps.mcpOptions()
	mm := &mcpMount{}
	opts := mcp.Options{
		Roots:          append(append([]string(nil), l.fence.WriteRoots()...), l.fence.ReadRoots()...),
		StartTimeout:   o.StartTimeout,
		CallTimeout:    o.CallTimeout,
		OutputLimit:    o.OutputLimit,
		Downsample:     l.deps.ImageDownsampler,
		Dir:            l.fence.Root(),
		EnvPassthrough: l.envPassthrough(),
		OnNotice:       l.notice,
		OnChange:       func() { mm.gen.Add(1) },
	}
	if l.sandbox != nil {
		opts.Wrap = l.mcpWrap()
	}
	m, err := mcp.Start(ctx, servers, opts)
	if err != nil {
		return err
	}
	mm.m = m
	l.mcp = mm
	return nil
}

// mcpWrap confines a stdio server's process as the leg's shell commands are confined
// (sandboxplan.MCPWrap); a server keeps the network unless a seat turned it off by name.
func (l *leg) mcpWrap() func(req env.ExecRequest) (env.ExecRequest, error) {
	network := l.spec.SandboxNetwork != "off" && l.deps.shell().SandboxNetwork != "off" && l.layered.Sandbox.Network != "off"
	return sandboxplan.MCPWrap(l.sandbox, l.fence, network, func(dir string) { l.mcpTemp = dir })
}

// MCPStatus starts the MCP servers a run of spec would mount — the workspace's, the
// deployment's and the task's, under the same trust, timeouts and sandbox — lists what
// each offers, and stops them. A workspace server the deployment does not trust is
// listed with State "untrusted" and not started. It is the command line's `sema mcp
// list`. only, when not empty, names the one server to start and list (`sema mcp get`);
// a name no layer configures is refused (mcp.config_invalid). Refusals are those of
// Run's door, and a required server that fails.
func (r *Runner) MCPStatus(ctx context.Context, spec TaskSpec, only string) ([]mcp.ServerStatus, error) {
	if spec.Prompt == "" {
		spec.Prompt = "(mcp status)"
	}
	deps := &r.deps
	if err := validateSpec(deps, &spec, nil); err != nil {
		return nil, err
	}
	l := &leg{deps: deps, spec: spec, emit: func(Event) {}, wake: make(chan struct{}, 1), askMu: new(sync.Mutex)}
	if _, _, err := l.rules(ctx); err != nil {
		return nil, err
	}
	if err := l.prepareModes(modeRequest{requested: spec.PermissionMode}, nil); err != nil {
		return nil, err
	}
	if err := l.prepareFence(ctx); err != nil {
		return nil, err
	}
	if err := l.prepareSandbox(); err != nil {
		return nil, err
	}
	servers, untrusted, err := l.mcpServers(ctx)
	if err != nil {
		return nil, err
	}
	if only != "" {
		other := func(s mcp.Server) bool { return s.Name != only }
		servers, untrusted = slices.DeleteFunc(servers, other), slices.DeleteFunc(untrusted, other)
		if len(servers)+len(untrusted) == 0 {
			return nil, sema.Errorf(mcp.CodeConfigInvalid, "no MCP server named %q is configured here; sema mcp list shows the names", only)
		}
	}
	if len(servers) > 0 {
		if err := l.mountServers(ctx, servers); err != nil {
			return nil, err
		}
		defer l.stopMCP()
	}
	out := l.mcpStatus()
	for _, s := range untrusted {
		out = append(out, mcp.ServerStatus{Name: s.Name, Source: s.Source, Type: s.Type, State: "untrusted",
			Error: "declared by the workspace; not started without --trust-project-mcp (Deps.MCP.TrustProject)"})
	}
	return out, nil
}

// stopMCP stops the servers a root leg started.
func (l *leg) stopMCP() {
	if l.link != nil || l.mcp == nil {
		return
	}
	if err := l.mcp.m.Close(); err != nil {
		l.notice(sema.Notice{Code: CodeMCPCloseFailed, Message: "the MCP servers could not all be stopped: " + err.Error()})
	}
	if l.mcpTemp != "" {
		sandbox.RemoveTempDir(l.mcpTemp)
	}
}

// mcpStatus is the manifest's list of the leg's MCP servers.
func (l *leg) mcpStatus() []mcp.ServerStatus {
	if l.mcp == nil {
		return nil
	}
	return l.mcp.m.Status()
}

// tools returns the leg's roster as it is now.
func (l *leg) tools() tools.Roster {
	r, _ := l.toolsAndSpecs()
	return r
}

// toolsAndSpecs returns the roster as it is now and the specs the model is offered
// (roster.Live): the tools built when the leg was prepared, then its MCP servers' tools
// as they are now.
func (l *leg) toolsAndSpecs() (tools.Roster, []model.ToolSpec) {
	var gen uint64
	if l.mcp != nil {
		gen = l.mcp.gen.Load()
	}
	return l.live.At(gen, l.mountedTools)
}

// mountedTools is every tool the leg mounts, in mounting order: its roster, then the MCP
// servers' tools its agent type allows.
func (l *leg) mountedTools() tools.Roster {
	all := append(tools.Roster(nil), l.roster...)
	if l.mcp == nil {
		return all
	}
	for _, t := range l.mcp.m.Tools() {
		if l.link != nil && !l.link.def.Allows(t.Spec().Name) {
			continue
		}
		if l.spec.ReadOnly && l.effectOf(t) != tools.EffectRead {
			// A read-only leg mounts what is declared to only read; a server's hint is a
			// claim, not a declaration.
			continue
		}
		all = append(all, t)
	}
	return all
}

// effectOf is a tool's effect as the runner reads it for concurrency: the deployment's
// declaration (MCPOptions.ToolEffects), else the tool's own.
func (l *leg) effectOf(t tools.Tool) tools.Effect {
	return roster.Effects(l.deps.mcpOptions().ToolEffects).Of(t)
}

// declaredEffect is the effect the deployment declares for a tool (MCPOptions.ToolEffects),
// by its name or its MCP server's.
func (l *leg) declaredEffect(name string) (tools.Effect, bool) {
	return roster.Effects(l.deps.mcpOptions().ToolEffects).Declared(name)
}
