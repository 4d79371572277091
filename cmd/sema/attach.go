package main

import (
	"context"
	"io"
	"net/url"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/tui"
)

// The refusals of sema attach before it draws.
const (
	codeAttachURL   = "cli.attach_url"   // the service's address is not an http(s) URL
	codeAttachToken = "cli.attach_token" // no tenant token was given
)

// tokenEnv names the environment variable a tenant token is read from when --token is
// not given (the token `sema serve token create` printed).
const tokenEnv = "SEMA_TOKEN"

type attachOptions struct {
	token, cwd, model, mode string
}

func newAttachCmd(stdin io.Reader, stdout io.Writer) *cobra.Command {
	var o attachOptions
	cmd := &cobra.Command{
		Use:   "attach [flags] URL [SESSION]",
		Short: "Open the interactive session on a running sema serve: a new session, or SESSION continued",
		Long: "Open the interactive session on a running sema serve (URL, e.g. http://127.0.0.1:7777): each prompt is a task " +
			"of one session on the service, and its parked questions are the screen's dialogs. The tenant token comes from --token or " +
			tokenEnv + ". See docs/terminal.md.",
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErr(sema.Errorf(codeAttachURL, "name the service to attach to: sema attach URL [SESSION], e.g. sema attach http://127.0.0.1:7777"))
			}
			session := ""
			if len(args) == 2 {
				session = args[1]
			}
			return runAttach(cmd.Context(), &o, args[0], session, stdin, stdout)
		},
	}
	cmd.Flags().StringVar(&o.token, "token", "", "the tenant token (default: $"+tokenEnv+")")
	cmd.Flags().StringVar(&o.cwd, "cwd", "", "the task root on the service's machine, inside the tenant's base (default: the current directory; with SESSION, the session's root)")
	cmd.Flags().StringVar(&o.model, "model", "", "the model of the tasks, as sema run's --model")
	cmd.Flags().StringVar(&o.mode, "permission-mode", "", "the permission mode of the first task: default, acceptEdits, plan, dontAsk or bypassPermissions")
	return cmd
}

// runAttach checks the address, the token and the terminal, asks the service for the
// session (or the tenant's sessions, which proves the token) so a wrong token or id is
// refused before the screen opens, and opens the screen over tui.Remote.
func runAttach(ctx context.Context, o *attachOptions, addr, session string, stdin io.Reader, stdout io.Writer) error {
	u, err := url.Parse(addr)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageErr(sema.Errorf(codeAttachURL, "%q is not the address of a sema serve; give its http(s) URL, e.g. http://127.0.0.1:7777", addr))
	}
	token := o.token
	if token == "" {
		token = os.Getenv(tokenEnv)
	}
	if token == "" {
		return usageErr(sema.Errorf(codeAttachToken, "sema attach needs a tenant token: pass --token or set %s (sema serve token create prints one)", tokenEnv))
	}
	if !interactiveTerminal(stdin, stdout) {
		return usageErr(sema.Errorf(codeNoTerminal, "sema attach draws the session on a terminal; it needs one on stdin and stdout (the API answers programs: see docs/service.md)"))
	}
	c := client.New(addr, token)
	spec := client.TaskSpec{Cwd: o.cwd, Model: o.model, PermissionMode: o.mode, Resume: session}
	modelName := o.model
	if session != "" {
		t, err := c.Session(ctx, session, 0)
		if err != nil {
			return &exitErr{code: exitError, err: err}
		}
		if spec.Cwd == "" {
			spec.Cwd = t.Session.Root
		}
		if modelName == "" {
			modelName = t.Session.Model
		}
	} else if _, err := c.Sessions(ctx); err != nil {
		return &exitErr{code: exitError, err: err}
	}
	if spec.Cwd == "" {
		if spec.Cwd, err = os.Getwd(); err != nil {
			return &exitErr{code: exitError, err: err}
		}
	} else if !filepath.IsAbs(spec.Cwd) {
		if spec.Cwd, err = filepath.Abs(spec.Cwd); err != nil {
			return &exitErr{code: exitError, err: err}
		}
	}
	approver := tui.NewApprover()
	hist, _ := tui.OpenHistory("", spec.Cwd) // the prompts of a remote session are kept in memory only
	opts := tui.Options{
		Backend: tui.NewRemote(c, spec, approver), Approver: approver, Model: modelName,
		Mode: permission.Mode(o.mode), NoColor: os.Getenv("NO_COLOR") != "", History: hist,
	}
	return tui.Run(ctx, opts, stdin, stdout)
}
