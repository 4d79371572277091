package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/pricing"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/statedir"
)

// runOptions are the flags of `sema run` / `sema -p`.
type runOptions struct {
	cwd            string
	model          string
	baseURL        string
	permissionMode string
	allowedTools   []string
	disallowed     []string
	addDirs        []string
	addReadDirs    []string
	readOnly       bool
	maxTurns       int
	maxBudgetUSD   float64
	maxTokensTotal int64
	outputFormat   string
	resume         string
	continueLast   bool
	forkSession    bool
	onAsk          string
	inputFormat    string
	settings       string
	home           string
	appendSystem   string
	systemPrompt   string
	sandbox        string
	sandboxNetwork string
	// envPassthrough is --env-passthrough: variables commands inherit although the
	// environment rule holds them back.
	envPassthrough []string
	fileHistory    string
	noInstructions bool
	wait           bool
	mcpConfig      []string
	strictMCP      bool
	trustMCP       bool
	trustProject   bool
	claudeCompat   bool
	noClaudeCompat bool
	// settingSources is --setting-sources when given (nil: every layer).
	settingSources *string
	// answer is set by `sema approve`: the run resumes a parked question.
	answer *agent.Answer
	// verbose prints each tool call and its outcome (text output).
	verbose bool
	// stdinUse says whether piped stdin follows the prompt argument (promptOf).
	stdinUse stdinUse
	// sdk holds the flags only the Agent SDK protocol reads (sdkflags.go).
	sdk sdkOptions
	// claude holds Claude Code's flags that sema spells its own way (claudeflags.go).
	claude claudeOptions
}

func addRunFlags(cmd *cobra.Command, o *runOptions) {
	f := cmd.Flags()
	f.StringVar(&o.cwd, "cwd", ".", "task root: the directory the task works in")
	f.StringVar(&o.model, "model", "", "an alias (sonnet, opus, haiku: the newest of the family), a model id (claude-…, gpt-…), or PROVIDER/MODEL: anthropic/…, openai/…, openai-compatible/… (default $SEMA_MODEL, else the settings files' model)")
	f.StringVar(&o.baseURL, "base-url", "", "base URL of an OpenAI-compatible server (Ollama, vLLM, llama.cpp, OpenRouter)")
	f.StringVar(&o.permissionMode, "permission-mode", "", "default|acceptEdits|plan|auto|dontAsk|bypassPermissions (default: the settings files' defaultMode, else default)")
	f.StringArrayVar(&o.allowedTools, "allowed-tools", nil, `rules that allow tool calls without asking: "Read,Edit(src/**)", "Bash(npm run test:*)"; repeatable`)
	f.StringArrayVar(&o.disallowed, "disallowed-tools", nil, `rules that deny tool calls in every mode: "WebFetch", "Bash(git push *)"; repeatable`)
	f.StringArrayVar(&o.addDirs, "add-dir", nil, "an additional writable (and readable) root; repeatable")
	f.StringArrayVar(&o.addReadDirs, "add-read-dir", nil, "an additional read-only root; repeatable")
	f.BoolVar(&o.readOnly, "read-only", false, "mount the read-only band: no write tools")
	f.IntVar(&o.maxTurns, "max-turns", 0, "stop after N model turns (0: no limit)")
	f.Float64Var(&o.maxBudgetUSD, "max-budget-usd", 0, "stop before a model request that would carry the run's cost past this many US dollars (0: no budget; the model needs a price)")
	f.Int64Var(&o.maxTokensTotal, "max-tokens-total", 0, "stop before a model request that would carry the run's tokens past N (0: no limit)")
	f.StringVar(&o.outputFormat, "output-format", "text", "text|json|stream-json")
	f.StringVarP(&o.resume, "resume", "r", "", "resume the session ID")
	f.BoolVarP(&o.continueLast, "continue", "c", false, "continue the newest session of this root")
	f.BoolVar(&o.forkSession, "fork-session", false, "with --resume/--continue, fork into a new session")
	f.BoolVar(&o.wait, "wait", false, "with --resume/--continue: if another run is continuing the session, wait for it to end instead of exiting 5 (session.busy)")
	f.StringVar(&o.onAsk, "on-ask", "", "who answers a permission question: deny|park|prompt (default: prompt on a terminal, else deny); prompt reads the answers from stdin")
	f.StringVar(&o.inputFormat, "input-format", "text", "text|stream-json: stream-json reads control lines from stdin while the run goes on (set_permission_mode)")
	f.StringVar(&o.sandbox, "sandbox", "", "auto|on|off: confine shell commands with the kernel (default: the settings files' sandbox.mode, else auto)")
	f.StringVar(&o.sandboxNetwork, "sandbox-network", "", "on|off: let sandboxed commands reach the network (default off, on under bypassPermissions)")
	f.StringArrayVar(&o.envPassthrough, "env-passthrough", nil, "a variable of sema's environment that commands, hooks and MCP servers inherit although it looks like a credential (NAME, or a prefix NAME_*); repeatable; the model provider's key is never passed")
	f.StringVar(&o.fileHistory, "file-history", "", "on|off: record what the run changes in files, for sema rewind (default on)")
	f.StringVar(&o.settings, "settings", "", "a settings file, or a JSON document, above ~/.sema/settings.json and the workspace's .sema/settings.json and .sema/settings.local.json (below the managed policy)")
	f.Func("setting-sources", "the settings layers to read, comma-separated: user,project,local (default all)", func(v string) error {
		o.settingSources = &v
		return nil
	})
	addClaudeFilesFlags(f, o)
	f.BoolVar(&o.trustProject, "trust-project", false, "apply the workspace's own settings in full — its hooks, allow rules, env, model and MCP servers (see sema trust)")
	f.StringArrayVar(&o.mcpConfig, "mcp-config", nil, `MCP servers to mount, as a file or inline JSON in Claude Code's format {"mcpServers":{...}}; repeatable`)
	f.BoolVar(&o.strictMCP, "strict-mcp-config", false, "mount only the --mcp-config servers: not the settings files' nor the workspace's .mcp.json")
	f.BoolVar(&o.trustMCP, "trust-project-mcp", false, "start the MCP servers the workspace declares itself (.mcp.json, .sema/settings.json); without it they are listed and not started")
	f.StringVar(&o.home, "home", "", "state directory (default $SEMA_HOME, else ~/.sema)")
	f.StringVar(&o.appendSystem, "append-system-prompt", "", "text added to the system prompt")
	f.StringVar(&o.systemPrompt, "system-prompt", "", "instructions that replace the built-in ones (the permission mode and the environment are still added)")
	f.BoolVar(&o.verbose, "verbose", false, "text output: print each tool call and its outcome on stderr (json and stream-json accept it and are unchanged)")
	f.BoolVar(&o.noInstructions, "no-instructions", false, "read no instruction files: ~/.sema/AGENTS.md, AGENTS.md and CLAUDE.md up to the task root and below it, .sema/AGENTS.md, their imports")
	addSDKFlags(cmd, o)
	addClaudeFlags(cmd, o)
}

var outputFormats = []string{"text", "json", "stream-json"}

func usageErr(err error) error { return &exitErr{code: exitUsage, err: err} }

func runTask(ctx context.Context, o *runOptions, prompt string, stdin io.Reader, stdout, stderr io.Writer) error {
	if o.sandbox != "off" {
		// Finding what the kernel offers starts the sandbox helper once (a few ms); do it
		// while the settings, the provider and the session store are being opened.
		go sandbox.Probe()
	}
	if !slices.Contains(outputFormats, o.outputFormat) {
		return usageErr(sema.Errorf("config.output_format_invalid", "unknown output format %q; use text, json or stream-json", o.outputFormat))
	}
	if err := o.sdk.checkPrompted(stderr); err != nil {
		return err
	}
	if err := o.claude.apply(o); err != nil {
		return err
	}
	prog := newProgress(o.outputFormat, o.verbose, stderr)
	defer prog.stop()
	stderr = prog.writer(stderr)
	if o.outputFormat == "text" {
		ctx = model.WithRetryObserver(ctx, retryNotice(stderr))
	}
	lease, err := checkRunFlags(o)
	if err != nil {
		return err
	}
	if err := o.checkEnvPassthrough(); err != nil {
		return err
	}
	perms, err := resolvePermissions(o, prompt, stdin, stderr)
	if err != nil {
		return err
	}
	typed := prompt != "-" // a prompt read from stdin is data, never a custom command
	prompt, piped, err := readPromptStdin(prompt, o.stdinUse, stdin, stderr, stdinGrace)
	if err != nil {
		return err
	}
	run, err := prepareRun(o, perms, lease)
	if err != nil {
		return err
	}
	if err := extraDirsExist(run.root, o); err != nil {
		return err
	}
	commandModel := ""
	if typed {
		if prompt, commandModel, err = expandCommand(prompt, perms, run.root, run.trusted, stderr); err != nil {
			return err
		}
	}
	prompt = withPiped(prompt, piped) // after the expansion: piped text is data too
	provider, modelName, err := openProvider(run.modelRef(commandModel), o.baseURL)
	if err != nil {
		return usageErr(err)
	}
	if err := run.load(); err != nil {
		return err
	}
	deps, spec, err := run.task(provider, modelName)
	if err != nil {
		return err
	}
	spec.Prompt = prompt
	root := run.root
	// Opened once the command line's own checks passed: a run they refuse (a model that
	// cannot be opened, a settings file in error) makes no state directory.
	opening := openStateBeside(ctx, run.home)
	defer opening.close()
	if o.resume == "" && !o.continueLast {
		// A new session: its stores are needed only beside the leg's first request, so
		// the directory opens beside everything the leg prepares before that.
		if deps, err = opening.deferredSeats(deps); err != nil {
			return failed(err)
		}
	} else if _, err := o.sessionSeats(ctx, opening.wait, &deps, &spec); err != nil {
		return err
	}
	if spec.Resume != nil {
		spec.Resume.Wait = o.wait
		if o.permissionMode == "" {
			// A settings file's defaultMode is the default of a new session. A continued
			// one keeps the mode it recorded (an answer: the mode its checkpoint recorded,
			// or the exit of an approved plan), unless --permission-mode names another:
			// read as the caller's choice, a default would take a session out of plan —
			// a denied plan review included.
			spec.PermissionMode = ""
		}
	}
	steer := perms.steering(stdout)
	defer steer.stop()
	spec.Control = steer.control()
	steer.start(ctx)
	out := newPrinter(o.outputFormat, steer.writer(stdout), stderr)
	out.progress = prog
	return printRun(ctx, o, agent.New(deps), spec, steer, out, root)
}

// checkRunFlags refuses, by name, flags that contradict each other or name no value
// sema knows, before anything is opened, and returns the session lease the environment
// sets.
func checkRunFlags(o *runOptions) (time.Duration, error) {
	if err := refuseResumePick(o); err != nil {
		return 0, err
	}
	if o.resume != "" && o.continueLast {
		return 0, usageErr(sema.Errorf(codeUsage, "--resume and --continue both name the session to continue; give one"))
	}
	if o.forkSession && o.resume == "" && !o.continueLast {
		return 0, usageErr(sema.Errorf(codeUsage, "--fork-session needs --resume ID or --continue"))
	}
	if o.wait && o.resume == "" && !o.continueLast {
		return 0, usageErr(sema.Errorf(codeUsage, "--wait needs --resume ID or --continue: only a session that exists can be busy"))
	}
	lease, err := sessionLease()
	if err != nil {
		return 0, usageErr(err)
	}
	// The limits are the library's to judge too; judged here, a bad one is named before
	// the model is looked for, as every other flag is.
	switch {
	case o.maxTurns < 0:
		return 0, usageErr(sema.Errorf(agent.CodeMaxTurnsInvalid, "--max-turns is %d; give a positive number, or 0 for no limit", o.maxTurns))
	case o.maxTokensTotal < 0:
		return 0, usageErr(sema.Errorf(agent.CodeTokensTotalInvalid, "--max-tokens-total is %d; give a positive number, or 0 for no limit", o.maxTokensTotal))
	case o.maxBudgetUSD < 0 || math.IsNaN(o.maxBudgetUSD) || math.IsInf(o.maxBudgetUSD, 0):
		return 0, usageErr(sema.Errorf(agent.CodeBudgetInvalid, "--max-budget-usd is %v; give a positive amount of US dollars, or 0 for no budget", o.maxBudgetUSD))
	}
	switch o.onAsk {
	case "", "deny", "prompt", "park":
	default:
		return 0, usageErr(sema.Errorf(agent.CodeOnAskInvalid, "unknown --on-ask value %q; use deny, park or prompt", o.onAsk))
	}
	switch agent.FileHistoryCapture(o.fileHistory) {
	case agent.FileHistoryDefault, agent.FileHistoryOn, agent.FileHistoryOff:
	default:
		return 0, usageErr(sema.Errorf(agent.CodeFileHistoryInvalid, "unknown --file-history value %q; use on or off", o.fileHistory))
	}
	return lease, nil
}

// printRun runs (or resumes, with --answer) the leg and prints its events as they
// come; its error is the process's exit.
func printRun(ctx context.Context, o *runOptions, runner *agent.Runner, spec agent.TaskSpec, steer *steering, out *printer, root string) error {
	events := runner.Events(ctx, spec)
	if o.answer != nil {
		events = runner.ResumeEvents(ctx, spec, *o.answer)
	}
	var res *agent.TaskResult
	for ev, err := range events {
		if err != nil {
			e := &exitErr{code: exitCode(err, exitUsage), err: wayOut(err, ""), refusal: true}
			if o.answer != nil && sema.IsCode(err, session.CodeAlreadyClaimed) {
				e.hint = nextStep(ctx, err, o.resume, root)
			}
			return e
		}
		steer.print(out, ev)
		if ev.Type == agent.EventResult {
			res = ev.Result
		}
	}
	err := exitFor(res)
	if ee, ok := err.(*exitErr); ok && ee.code == exitError && res.SessionID != "" {
		ee.hint = continueHint(ctx, res)
	}
	return err
}

// continueHint tells a person how to go on after a leg that failed or was cancelled.
// The transcript holds every turn that finished (and an answered call with its result),
// so a resume continues from there; after a model failure or a cancellation that is
// all there is to it.
func continueHint(ctx context.Context, res *agent.TaskResult) string {
	cmd := continueCommand(ctx, res.SessionID, res.Manifest.Root)
	if res.Error != nil && (strings.HasPrefix(res.Error.Code, "model.") || res.Error.Code == agent.CodeCancelled) {
		return "the session is intact; continue it with: " + cmd
	}
	return "continue the session with: " + cmd
}

// nextStep is the hint of a refused second answer: answer the question the session
// waits at now, or continue the session.
func nextStep(ctx context.Context, err error, sessionID, root string) string {
	var se *sema.Error
	if errors.As(err, &se) {
		if open, ok := se.Detail["open_checkpoint"].(string); ok && open != "" {
			return fmt.Sprintf("answer the open question with: sema approve %s --checkpoint %s --allow|--deny", sessionID, open)
		}
	}
	return "continue the session with: " + continueCommand(ctx, sessionID, root)
}

// continueCommand is the command line that resumes session id. It names the session's
// root when this process runs elsewhere, since a resume must run in its session's root.
func continueCommand(ctx context.Context, id, root string) string {
	cmd := "sema run --resume " + id
	if here, err := canonicalRoot(ctx, "."); root != "" && (err != nil || here != root) {
		cmd += " --cwd " + shellQuote(root)
	}
	return cmd + ` "…"`
}

// shellQuote quotes s for a POSIX shell when it holds anything but plain path characters.
func shellQuote(s string) string {
	plain := s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+,:@%", r))
	}) < 0
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// exitFor maps a result's status to the exit code of the contract.
func exitFor(res *agent.TaskResult) error {
	switch res.Status {
	case sema.StatusCompleted:
		return nil
	case sema.StatusAwaitingApproval:
		return &exitErr{code: exitAwaiting}
	case sema.StatusMaxTurns:
		return &exitErr{code: exitMaxTurns}
	case sema.StatusBudgetExceeded:
		return &exitErr{code: exitBudget}
	default:
		var err error = sema.Errorf("run.failed", "the run ended with status %s", res.Status)
		if res.Error != nil {
			err = wayOut(res.Error, "") // a store's refusal names its way out, as at start
		}
		return &exitErr{code: exitError, err: err}
	}
}

// sessionLease reads $SEMA_SESSION_LEASE, how long a run's claim on its session lasts
// without renewal (a Go duration, "30s"); empty means the library's default. It bounds
// how long a session stays busy after the run continuing it was killed.
func sessionLease() (time.Duration, error) {
	v := os.Getenv("SEMA_SESSION_LEASE")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, sema.Errorf("config.session_lease_invalid", "SEMA_SESSION_LEASE=%q is not a positive duration such as 30s", v)
	}
	return d, nil
}

// loadPrices reads home's prices.json when it exists; nil without one.
func loadPrices(home string) (map[string]pricing.Price, error) { return pricing.LoadDir(home) }

// stateDir resolves --home, $SEMA_HOME, then ~/.sema (statedir.Resolve).
func stateDir(flag string) (string, error) { return statedir.Resolve(flag) }

// codeAddDirInvalid refuses an --add-dir or --add-read-dir that is not an existing
// directory.
const codeAddDirInvalid = "config.add_dir_invalid"

// extraDirsExist refuses an --add-dir or --add-read-dir that names no directory. The
// library skips such a root with a notice, which suits a settings file shared across
// machines; on the command line the person just typed the path, and a run that goes on
// without the directory they asked for is a run they did not ask for. A relative path
// is relative to the task root, as the library reads it.
func extraDirsExist(root string, o *runOptions) error {
	for _, seat := range []struct {
		flag string
		dirs []string
	}{{"--add-dir", o.addDirs}, {"--add-read-dir", o.addReadDirs}} {
		for _, d := range seat.dirs {
			abs := d
			if !filepath.IsAbs(abs) {
				abs = filepath.Join(root, d)
			}
			fi, err := os.Stat(abs)
			switch {
			case err != nil && errors.Is(err, os.ErrNotExist):
				return usageErr(sema.Errorf(codeAddDirInvalid, "%s %s: no such directory (%s); give a directory that exists (a relative path is relative to the task root, --cwd)", seat.flag, d, abs).With("path", d))
			case err != nil:
				return usageErr(sema.Errorf(codeAddDirInvalid, "%s %s cannot be used: %w", seat.flag, d, err).With("path", d))
			case !fi.IsDir():
				return usageErr(sema.Errorf(codeAddDirInvalid, "%s %s is a file, not a directory; give the directory to add", seat.flag, d).With("path", d))
			}
		}
	}
	return nil
}

// retryNotice is the text output's model.WithRetryObserver: a line on stderr for each
// model request sent again, so that a run waiting out an overloaded API says so instead
// of looking hung. Providers call it from the goroutine of each agent; the lines are
// written one at a time.
func retryNotice(stderr io.Writer) func(model.Retry) {
	var mu sync.Mutex
	return func(r model.Retry) {
		why := r.Reason
		if r.Status != 0 {
			why = fmt.Sprintf("HTTP %d", r.Status)
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stderr, "sema: retrying the model request in %s (%s)\n", waitText(r.Wait), why)
	}
}

// waitText spells a retry's wait as a person reads it: whole seconds, tenths below ten.
func waitText(d time.Duration) string {
	if d >= 10*time.Second {
		return d.Round(time.Second).String()
	}
	return d.Round(100 * time.Millisecond).String()
}
