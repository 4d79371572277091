package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/commands"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/statedir"
	"github.com/sema-agent/sema/tui"
)

// probeAfter is how long after its start the interactive session probes the kernel's
// sandbox: after its first frame is drawn.
const probeAfter = 150 * time.Millisecond

// codeNoTerminal refuses the interactive session without a terminal to draw on.
const codeNoTerminal = "cli.no_terminal"

// interactiveTerminal reports whether a person is at the terminal: stdin and stdout are
// both terminals, so a bare `sema` opens the session instead of printing the help.
func interactiveTerminal(stdin io.Reader, stdout io.Writer) bool {
	out, ok := stdout.(*os.File)
	return ok && isTerminal(stdin) && isTerminal(out)
}

// runInteractive opens the terminal session in the task root: the run is prepared as
// `sema run` prepares it (the same flags, settings, trust, session store and resume),
// then every prompt the person types is a leg of one session, and the permission
// questions are dialogs on the screen. prompt, when set, is the first prompt.
func runInteractive(ctx context.Context, o *runOptions, prompt string, stdin io.Reader, stdout, stderr io.Writer) error {
	pick, err := checkInteractive(o, stdin, stdout)
	if err != nil {
		return err
	}
	if o.sandbox != "off" {
		// The probe starts this program again in namespaces of its own (and a spare
		// after it): on two cores that start competes with the first frame's (8 ms of
		// a 52 ms first frame, measured). A person's first prompt comes later than this
		// wait; one given on the command line probes at its leg's start, as Probe is
		// answered once per process.
		go func() {
			time.Sleep(probeAfter)
			sandbox.Probe()
		}()
	}
	if os.Getenv("GOGC") == "" {
		// The session holds its conversation rendered for as long as it runs, and a
		// streamed answer leaves much garbage: the heap grows to 1.5 times what is live
		// instead of twice (the GOGC default), 6–8 MiB less at the peak with a
		// 10,000-line answer. The cost, more collections, is a fraction of a
		// millisecond a frame (BENCHMARKS.md, "The terminal session").
		debug.SetGCPercent(50)
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
	perms, run, err := prepareInteractive(o, stdin, stderr, lease)
	if err != nil {
		return err
	}
	// No model is named anywhere and no key is set: nothing real could answer. The
	// scripted demo runs in a workspace of its own, which its script edits — unless a
	// session of this directory was asked for: that is refused below with what to set
	// (config.model_missing), rather than looked for in the demo's workspace.
	named := o.resume != "" || o.continueLast || pick
	demo := !named && run.modelRef("") == "" && os.Getenv("ANTHROPIC_API_KEY") == "" && os.Getenv("OPENAI_API_KEY") == ""
	if demo {
		dir, err := demoWorkspace()
		if err != nil {
			return &exitErr{code: exitError, err: err}
		}
		defer os.RemoveAll(dir)
		o.cwd = dir
		if perms, run, err = prepareInteractive(o, stdin, stderr, lease); err != nil {
			return err
		}
	}
	if err := extraDirsExist(run.root, o); err != nil {
		return err
	}
	var provider model.Provider = scripted.New(demoScript())
	modelName := "scripted"
	if !demo {
		if provider, modelName, err = openProvider(run.modelRef(""), o.baseURL); err != nil {
			return usageErr(err)
		}
	}
	if err := run.load(); err != nil {
		return err
	}
	deps, spec, err := run.task(provider, modelName)
	if err != nil {
		return err
	}
	opts := tui.Options{Model: modelName, Demo: demo, Mode: spec.PermissionMode, Sandbox: orWord(string(spec.Sandbox), "auto"),
		NoColor: os.Getenv("NO_COLOR") != "", Prompt: prompt, Resume: pick}
	if perms.prompt || o.onAsk == "" {
		// The person at the screen answers the questions (--on-ask deny or park keep
		// their meaning).
		opts.Approver = tui.NewApprover()
		deps.Approver, spec.OnAsk = opts.Approver, agent.OnAskApprover
	}
	if demo {
		opts.Welcome = "DEMO: no API key is set, so a scripted model replays a fixed conversation in a temporary workspace (" +
			run.root + "); type anything to start it. Set ANTHROPIC_API_KEY or OPENAI_API_KEY, or pass --model, for a real model."
	}
	historyHome := run.home
	if demo {
		historyHome = "" // the demo's prompts are about its throw-away workspace: not kept
	}
	opts.History, opts.Roots = promptHistory(historyHome, run.root, stderr), taskRoots(run.root, o.addDirs)
	if o.resume != "" || o.continueLast {
		// A session named on the command line is found before the screen opens: a
		// missing one is refused with no screen drawn.
		st, err := o.sessionSeats(ctx, homeOf(ctx, run), &deps, &spec)
		if err != nil {
			return err
		}
		defer st.Close()
		spec.Resume.Wait = o.wait
		if o.permissionMode == "" {
			spec.PermissionMode = "" // a continued session keeps its mode, as in runTask
		}
		late := newLateBackend() // built already: the wrapper only releases memory after a leg
		late.set(localBackend(o, deps, spec, run, perms), nil)
		opts.Backend = late
		return tui.Run(ctx, opts, stdin, stdout)
	}
	return runWithStateLate(ctx, o, opts, deps, spec, run, perms, stdin, stdout)
}

// homeOf opens run's state directory when called.
func homeOf(ctx context.Context, run *preparedRun) func() (*statedir.Dir, error) {
	return func() (*statedir.Dir, error) { return openState(ctx, run.home) }
}

// runWithStateLate runs the session while its state directory opens beside the first
// frame (opening it was most of the time to the first frame once the process had
// started). The screen's calls wait for it (lateBackend); a directory that cannot be
// opened ends the session with its error, as it refused the session before.
func runWithStateLate(parent context.Context, o *runOptions, opts tui.Options, deps agent.Deps, spec agent.TaskSpec, run *preparedRun, perms *permissionSetup, stdin io.Reader, stdout io.Writer) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	late := newLateBackend()
	var st *statedir.Dir
	opened := make(chan struct{})
	go func() {
		defer close(opened)
		var err error
		if st, err = o.sessionSeats(ctx, homeOf(ctx, run), &deps, &spec); err != nil {
			late.set(nil, err)
			cancel() // the screen closes and the error is said after it
			return
		}
		late.set(localBackend(o, deps, spec, run, perms), nil)
	}()
	opts.Backend = late
	err := tui.Run(ctx, opts, stdin, stdout)
	<-opened
	if st != nil {
		st.Close()
	}
	if late.err != nil && parent.Err() == nil {
		return late.err // the directory's error, not the screen's end it caused
	}
	return err
}

// promptHistory opens the person's prompt history in the state directory, for the
// prompts of root; with no state directory it lives in memory. An unreadable file is
// said on stderr and the session goes on without it.
func promptHistory(home, root string, stderr io.Writer) *tui.History {
	path := ""
	if home != "" {
		path = filepath.Join(home, tui.HistoryFileName)
	}
	h, err := tui.OpenHistory(path, root)
	if err != nil {
		fmt.Fprintln(stderr, "sema:", err)
		h, _ = tui.OpenHistory("", root)
	}
	return h
}

// taskRoots are the roots @ completes paths under: the task root and each --add-dir
// (relative to the root, as the fence reads them).
func taskRoots(root string, addDirs []string) []string {
	roots := []string{root}
	for _, d := range addDirs {
		if !filepath.IsAbs(d) {
			d = filepath.Join(root, d)
		}
		roots = append(roots, filepath.Clean(d))
	}
	return roots
}

// prepareInteractive resolves the permissions and prepares the run as runTask does.
func prepareInteractive(o *runOptions, stdin io.Reader, stderr io.Writer, lease time.Duration) (*permissionSetup, *preparedRun, error) {
	perms, err := resolvePermissions(o, "", stdin, stderr)
	if err != nil {
		return nil, nil, err
	}
	run, err := prepareRun(o, perms, lease)
	if err != nil {
		return nil, nil, err
	}
	return perms, run, nil
}

// demoWorkspace writes the demo's files into a new temporary directory.
func demoWorkspace() (string, error) {
	dir, err := os.MkdirTemp("", "sema-demo-")
	if err != nil {
		return "", err
	}
	for name, body := range demoFiles {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	return dir, nil
}

// checkInteractive refuses what the interactive session cannot be (no terminal, a
// headless output format, two sessions named) and reports whether it opens with the
// picker of the directory's sessions (--resume with no id).
func checkInteractive(o *runOptions, stdin io.Reader, stdout io.Writer) (pick bool, err error) {
	if !interactiveTerminal(stdin, stdout) {
		return false, usageErr(sema.Errorf(codeNoTerminal, "the interactive session needs a terminal on stdin and stdout; run the prompt headless with sema -p PROMPT"))
	}
	if o.outputFormat != "text" || o.inputFormat != "text" {
		return false, usageErr(sema.Errorf(codeUsage, "--output-format and --input-format shape the headless output of sema -p; the interactive session draws on the terminal"))
	}
	pick = o.resume == resumePick
	if pick && o.continueLast {
		return false, usageErr(sema.Errorf(codeUsage, "--resume and --continue both name the session to continue; give one"))
	}
	if pick {
		o.resume = "" // no id: the session opens with the picker of this directory's sessions
	}
	return pick, nil
}

// localBackend is the session's back-end over an in-process runner of deps.
func localBackend(o *runOptions, deps agent.Deps, spec agent.TaskSpec, run *preparedRun, perms *permissionSetup) *tui.Local {
	local := tui.NewLocal(agent.New(deps), spec).WithStores(deps.Store, deps.History)
	// /model resolves a name as --model does and runs the later legs on it; the custom
	// commands expand as they do headless.
	local.SetModelOpener(func(ref string) (*agent.Runner, string, error) {
		p, name, err := openProvider(ref, o.baseURL)
		if err != nil {
			return nil, "", err
		}
		d := deps
		d.Provider = p
		return agent.New(d), name, nil
	})
	local.SetCommands(commands.Load(commands.Options{Root: run.root, Home: perms.home, ClaudeCompat: perms.compat}), run.trusted)
	return local
}
