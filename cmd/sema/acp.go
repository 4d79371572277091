package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/acp"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/mcp"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/statedir"
	"github.com/sema-agent/sema/tui"
)

// newACPCmd is `sema acp`: sema as an agent of the Agent Client Protocol, which an
// editor launches and speaks to on stdin and stdout.
func newACPCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "acp",
		Short: "Be an editor's agent: speak the Agent Client Protocol (ACP) on stdin and stdout (Zed, JetBrains, Neovim, Emacs)",
		Long: `Be an editor's agent: speak the Agent Client Protocol (ACP, version 1) on stdin and stdout.

An editor starts sema acp and opens sessions in its project; every prompt is a leg of a
sema session (sema -p --resume ID and sema rewind ID work on it), the permission
questions are the editor's dialogs, and the editor's mode picker sets the permission
mode. The run flags (--model, --permission-mode, --settings, --mcp-config, --home, …)
apply to every session; the editor gives each session's directory. Everything that is
not the protocol goes to stderr. See docs/acp.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, name := range acpRefused {
				if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
					return usageErr(sema.Errorf(codeUsage, "sema acp takes no --%s: the editor opens and loads its sessions itself, in its own directory, and reads the protocol on stdout", name))
				}
			}
			if o.onAsk == "prompt" {
				return usageErr(sema.Errorf(codeUsage, "sema acp puts the permission questions to the editor; --on-ask prompt would read stdin, which carries the protocol (use deny or park, or leave it out)"))
			}
			return runACP(cmd.Context(), &o, stdin, stdout, stderr)
		},
	}
	addRunFlags(cmd, &o)
	for _, name := range acpRefused {
		cmd.Flags().MarkHidden(name) // refused when given, so not offered in the help
	}
	return cmd
}

// acpRefused are the run flags sema acp refuses: the editor names the sessions and their
// directories, and stdin and stdout carry the protocol.
var acpRefused = []string{"resume", "continue", "fork-session", "output-format", "input-format", "cwd"}

// runACP checks the command line once, opens the state directory, and serves the
// protocol until the editor closes stdin.
func runACP(ctx context.Context, o *runOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	if o.sandbox != "off" {
		go sandbox.Probe()
	}
	if err := o.claude.apply(o); err != nil {
		return err
	}
	lease, err := checkRunFlags(o)
	if err != nil {
		return err
	}
	if err := o.checkEnvPassthrough(); err != nil {
		return err
	}
	// The flags and the user's settings are read now, so a bad one is refused before
	// the editor sends anything, with the sentence on stderr.
	perms, err := resolvePermissions(o, "", strings.NewReader(""), stderr)
	if err != nil {
		return err
	}
	if _, err := mcpConfigs(o.mcpConfig); err != nil {
		return usageErr(err)
	}
	run, err := prepareRun(o, perms, lease)
	if err != nil {
		return err
	}
	st, err := openState(ctx, run.home)
	if err != nil {
		return failed(err)
	}
	defer st.Close()
	s := &acpServer{o: o, state: st, stderr: stderr}
	opts := acp.Options{
		Version: versionString,
		Open:    s.open,
		Rule:    tui.Rule,
		Bypass:  perms.mode == permission.ModeBypassPermissions,
		NewID:   newSessionID,
		Log:     stderr,
	}
	return acp.Serve(ctx, opts, stdin, stdout)
}

// acpServer opens the editor's sessions as the command line prepares a run.
type acpServer struct {
	o      *runOptions
	state  *statedir.Dir
	stderr io.Writer
}

// open prepares one session in the editor's directory: the flags' run with --cwd set
// to it and the editor's MCP servers mounted after the --mcp-config ones. A new
// session is created in the store at once, so its id is sema's session id from the
// first answer on (sema -p --resume ID, sema rewind ID); every prompt continues it.
func (s *acpServer) open(ctx context.Context, setup acp.SessionSetup) (*acp.Session, error) {
	o := *s.o
	o.cwd = setup.Cwd
	if err := rootDir(setup.Cwd); err != nil {
		return nil, unwrapExit(err)
	}
	lease, err := checkRunFlags(&o)
	if err != nil {
		return nil, unwrapExit(err)
	}
	perms, run, err := prepareInteractive(&o, strings.NewReader(""), s.stderr, lease)
	if err != nil {
		return nil, unwrapExit(err)
	}
	demo := run.modelRef("") == "" && os.Getenv("ANTHROPIC_API_KEY") == "" && os.Getenv("OPENAI_API_KEY") == ""
	var cleanup func()
	demoNote := ""
	if demo {
		if setup.Load {
			return nil, sema.Errorf(codeUsage, "no model is configured, so there is no session to continue; set ANTHROPIC_API_KEY or OPENAI_API_KEY, or start sema acp with --model")
		}
		// Nothing real could answer: the scripted demo runs in a workspace of its own,
		// which its script edits, never in the editor's project.
		dir, err := demoWorkspace()
		if err != nil {
			return nil, err
		}
		cleanup = func() { os.RemoveAll(dir) }
		o.cwd = dir
		if perms, run, err = prepareInteractive(&o, strings.NewReader(""), s.stderr, lease); err != nil {
			cleanup()
			return nil, unwrapExit(err)
		}
		demoNote = "DEMO: no model is configured (no ANTHROPIC_API_KEY or OPENAI_API_KEY is set and no --model was given), so a scripted demo answers, in a temporary workspace (" +
			run.root + "), whatever you type. Set a key in the editor's environment for sema, or add --model to its arguments, for a real model."
	}
	fail := func(err error) (*acp.Session, error) {
		if cleanup != nil {
			cleanup()
		}
		return nil, unwrapExit(err)
	}
	if err := extraDirsExist(run.root, &o); err != nil {
		return fail(err)
	}
	var provider model.Provider = scripted.New(demoScript())
	modelName := "scripted"
	if !demo {
		if provider, modelName, err = openProvider(run.modelRef(""), o.baseURL); err != nil {
			return fail(err)
		}
	}
	if err := run.load(); err != nil {
		return fail(err)
	}
	run.servers = withServers(run.servers, setup.MCPServers)
	deps, spec, err := run.task(provider, modelName)
	if err != nil {
		return fail(err)
	}
	deps = deps.WithStateDir(s.state)
	if !demo {
		// Text files are read and written through the editor when it serves them, so
		// the model sees its unsaved buffers. The demo's workspace is sema's own
		// scratch directory, not the editor's project: it stays on the disk.
		deps.Buffers = setup.Buffers
	}
	root, err := canonicalRoot(ctx, run.root)
	if err != nil {
		return fail(err)
	}
	if !setup.Load {
		_, err := deps.Store.Create(ctx, session.Session{ID: setup.ID, Root: root, FSID: history.FilesystemIdentity(env.NewHost()),
			Model: modelName, Mode: string(spec.PermissionMode)})
		if err != nil {
			return fail(err)
		}
	}
	spec.Resume = &agent.Resume{SessionID: setup.ID}
	if o.permissionMode == "" {
		spec.PermissionMode = "" // a continued session keeps its mode, as in runTask
	}
	// The editor answers the questions, unless --on-ask says they park or are denied.
	switch {
	case perms.park:
	case o.onAsk == "deny":
	default:
		deps.Approver, spec.OnAsk = setup.Approver, agent.OnAskApprover
	}
	local := localBackend(&o, deps, spec, run, perms)
	mode := perms.mode
	if mode == "" {
		// No --permission-mode: the settings files' defaultMode is the mode a new
		// session starts in, and the client is told that one.
		if rep, err := local.Permissions(ctx); err == nil {
			mode = rep.Mode
		}
	}
	return &acp.Session{Backend: local, Root: root, Mode: mode, Commands: local.Commands(),
		Store: deps.Store, Demo: demoNote, Close: func() error {
			if cleanup != nil {
				cleanup()
			}
			return nil
		}}, nil
}

// withServers mounts extra after servers, an extra server replacing one of its name,
// as a later --mcp-config does.
func withServers(servers, extra []mcp.Server) []mcp.Server {
	out := append([]mcp.Server(nil), servers...)
	for _, e := range extra {
		for i := 0; i < len(out); i++ {
			if out[i].Name == e.Name {
				out = append(out[:i], out[i+1:]...)
				i--
			}
		}
		out = append(out, e)
	}
	return out
}

// unwrapExit is the error inside a command-line exit: the editor reads the sentence,
// not the exit code.
func unwrapExit(err error) error {
	if e, ok := err.(*exitErr); ok && e.err != nil {
		return e.err
	}
	return err
}

// newSessionID mints a session id as the runner does: a lowercase RFC 4122 UUID.
func newSessionID() string {
	var b [16]byte
	if _, err := io.ReadFull(rand.Reader, b[:]); err != nil {
		panic(fmt.Sprintf("sema: no randomness for a session id: %v", err))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
