package main

import (
	"io"
	"os"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/settings"
)

// Codes of the command line's permission doors.
const (
	codeInputFormatInvalid = "config.input_format_invalid"
	codeStdinConflict      = "config.stdin_conflict"
)

// permissionSetup is what the permission flags, the settings files and the terminal
// resolve to for one run. The command line is the deployment: it reads the user's and
// the --settings files and the managed policy, and the runner reads the workspace's and
// folds the hierarchy (package settings).
type permissionSetup struct {
	// mode is the --permission-mode word; "" lets the settings files' defaultMode, else
	// default, decide.
	mode                permission.Mode
	allowed, disallowed []string
	// sandbox and network are the --sandbox and --sandbox-network words (the task's).
	sandbox sandbox.Mode
	network string
	// files are the user's and the --settings files, lowest layer first; managed is the
	// machine's managed policy.
	files   []settings.File
	managed *settings.File
	// sources are the workspace layers to read (nil: both); compat reads Claude Code's
	// files too.
	sources []settings.Layer
	compat  bool
	// home is the user's home directory ("" when unknown).
	home string
	// prompt reports that questions are put to a person at the terminal, park that they
	// park the run (--on-ask park); otherwise they are denied.
	prompt, park bool
	// steer reports --input-format stream-json: stdin carries control lines.
	steer  bool
	stdin  io.Reader
	stderr io.Writer
}

// resolvePermissions checks the permission flags against each other and against the
// way stdin is used, and loads the settings files. prompt is the task's prompt as given
// ("-": read from stdin). The --on-ask value has been checked already (deny, prompt or
// empty). Every refusal is a usage error naming what to change.
func resolvePermissions(o *runOptions, prompt string, stdin io.Reader, stderr io.Writer) (*permissionSetup, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		home = "" // no home: no user settings file
	}
	return resolvePermissionsIn(o, prompt, stdin, stderr, home, isTerminal(stdin))
}

// resolvePermissionsIn is resolvePermissions with the home directory and the terminal
// test given, so that tests never read the real home directory.
func resolvePermissionsIn(o *runOptions, prompt string, stdin io.Reader, stderr io.Writer, home string, tty bool) (*permissionSetup, error) {
	s := &permissionSetup{allowed: o.allowedTools, disallowed: o.disallowed, home: home, stdin: stdin, stderr: stderr}
	promptFromStdin := prompt == "-"
	switch o.inputFormat {
	case "", "text":
	case "stream-json":
		s.steer = true
		switch {
		case o.outputFormat != "stream-json":
			return nil, usageErr(sema.Errorf(codeInputFormatInvalid, "--input-format stream-json answers control lines on stdout between the run's events; add --output-format stream-json"))
		case promptFromStdin:
			return nil, usageErr(sema.Errorf(codeStdinConflict, "with --input-format stream-json stdin carries control lines; give the prompt as an argument instead of -"))
		case o.onAsk == "prompt":
			return nil, usageErr(sema.Errorf(codeStdinConflict, "with --input-format stream-json stdin carries control lines, so --on-ask prompt cannot read answers from it; use --on-ask deny"))
		}
	default:
		return nil, usageErr(sema.Errorf(codeInputFormatInvalid, "unknown input format %q; use text or stream-json", o.inputFormat))
	}
	if promptFromStdin && o.onAsk == "prompt" {
		return nil, usageErr(sema.Errorf(codeStdinConflict, "--on-ask prompt reads answers from stdin, which already carries the prompt (-); give the prompt as an argument"))
	}
	if o.permissionMode != "" {
		m, err := permission.ParseMode(o.permissionMode)
		if err != nil {
			return nil, usageErr(err)
		}
		s.mode = m
	}
	// The runner parses the flags' rules too; parsing them here refuses a bad rule before
	// a provider is opened, so the refusal is about the rule.
	if _, err := permission.RulesFromFlags(o.allowedTools, o.disallowed); err != nil {
		return nil, usageErr(err)
	}
	if o.sandbox != "" {
		m, err := sandbox.ParseMode(o.sandbox)
		if err != nil {
			return nil, usageErr(err)
		}
		s.sandbox = m
	}
	if o.sandboxNetwork != "" {
		if _, err := sandbox.ParseNetwork(o.sandboxNetwork); err != nil {
			return nil, usageErr(err)
		}
		s.network = o.sandboxNetwork
	}
	if err := s.loadSettings(o); err != nil {
		return nil, usageErr(err)
	}
	switch o.onAsk {
	case "prompt":
		s.prompt = true
	case "park":
		s.park = true
	case "":
		// As the familiar CLIs do: ask a person only when one is at the terminal and
		// stdin is free to carry the answers.
		s.prompt = tty && !promptFromStdin && !s.steer
	}
	return s, nil
}

// apply puts the resolved permissions into the run's deps and spec.
func (s *permissionSetup) apply(deps *agent.Deps, spec *agent.TaskSpec) {
	spec.PermissionMode = s.mode
	spec.AllowedTools = s.allowed
	spec.DisallowedTools = s.disallowed
	spec.Sandbox = s.sandbox
	spec.SandboxNetwork = s.network
	deps.Settings = &agent.SettingsOptions{Files: s.files, Managed: s.managed, Sources: s.sources, ClaudeCompat: s.compat}
	if s.home != "" {
		deps.Home = s.home
	}
	// --on-ask maps onto the task's OnAsk; prompt is an approver at the terminal.
	switch {
	case s.prompt:
		deps.Approver = newTermApprover(s.stdin, s.stderr, spec.Root)
		spec.OnAsk = agent.OnAskApprover
	case s.park:
		spec.OnAsk = agent.OnAskPark
	default:
		spec.OnAsk = agent.OnAskDeny
	}
}

// steering returns the control channel of a run started with --input-format
// stream-json, writing its answers to stdout; nil for any other run.
func (s *permissionSetup) steering(stdout io.Writer) *steering {
	if !s.steer {
		return nil
	}
	return newSteering(s.stdin, stdout)
}

// isTerminal reports whether r is a terminal, as stdin is when a person runs sema by
// hand: a character device other than the null device (CI systems and service managers
// often give a process /dev/null as its stdin, and nobody answers there).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}
