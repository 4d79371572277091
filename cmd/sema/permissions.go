package main

import (
	"errors"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/mcp"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/sandbox"
)

// Codes of the command line's permission doors.
const (
	codeInputFormatInvalid = "config.input_format_invalid"
	codeStdinConflict      = "config.stdin_conflict"
)

// userSettingsPath is the user's own settings file, under the home directory.
const userSettingsPath = ".sema/settings.json"

// permissionSetup is what the permission flags, the settings files and the terminal
// resolve to for one run. The command line is the deployment: the settings files'
// rules are deployment rules (Deps.Policy.Rules), the flags' rules are the task's.
type permissionSetup struct {
	// mode is the requested mode: the flag, else the --settings file's defaultMode, else
	// the user file's; "" when none names one (the runner then reads the project's
	// settings, else runs default).
	mode                permission.Mode
	allowed, disallowed []string
	// rules are the settings files' rules, --settings first.
	rules permission.RuleSet
	// sandbox is the sandbox as the flags and the settings files say: the flag's word,
	// else the first file's that names one; the files' lists together.
	sandbox permission.SandboxSettings
	// mcpServers are the settings files' MCP servers (the operator's: the deployment's
	// layer), the first file's where two name the same server.
	mcpServers []mcp.Server
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
		s.sandbox.Mode = m
	}
	if o.sandboxNetwork != "" {
		if _, err := sandbox.ParseNetwork(o.sandboxNetwork); err != nil {
			return nil, usageErr(err)
		}
		s.sandbox.Network = o.sandboxNetwork
	}
	if err := s.loadSettings(o.settings); err != nil {
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

// loadSettings reads the --settings file (when given) and the user's settings file
// (when it exists), in that order of precedence: the first defaultMode wins unless the
// flag named a mode, and the rules of both apply.
func (s *permissionSetup) loadSettings(flagFile string) error {
	type file struct {
		path     string
		optional bool
	}
	var files []file
	if flagFile != "" {
		files = append(files, file{path: flagFile})
	}
	if s.home != "" {
		files = append(files, file{path: filepath.Join(s.home, userSettingsPath), optional: true})
	}
	for _, f := range files {
		st, err := permission.LoadSettings(f.path)
		if f.optional && errors.Is(err, iofs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		s.rules = s.rules.Merge(st.Rules)
		if s.mode == "" {
			s.mode = st.DefaultMode
		}
		sb := &s.sandbox
		if sb.Mode == "" {
			sb.Mode = st.Sandbox.Mode
		}
		if sb.Network == "" {
			sb.Network = st.Sandbox.Network
		}
		if len(st.MCPServers) > 0 {
			servers, err := mcp.ParseConfig(mcpDocument(st.MCPServers), f.path)
			if err != nil {
				return err
			}
			for _, srv := range servers {
				// As with defaultMode, the first file that names a server wins.
				if !slices.ContainsFunc(s.mcpServers, func(x mcp.Server) bool { return x.Name == srv.Name }) {
					s.mcpServers = append(s.mcpServers, srv)
				}
			}
		}
		sb.Writable = append(sb.Writable, st.Sandbox.Writable...)
		sb.Readable = append(sb.Readable, st.Sandbox.Readable...)
		sb.Hidden = append(sb.Hidden, st.Sandbox.Hidden...)
	}
	return nil
}

// apply puts the resolved permissions into the run's deps and spec. The project's
// .sema/settings.json is trusted: the operator chose to run in this directory, as
// with the familiar agent CLIs.
func (s *permissionSetup) apply(deps *agent.Deps, spec *agent.TaskSpec) {
	spec.PermissionMode = s.mode
	spec.AllowedTools = s.allowed
	spec.DisallowedTools = s.disallowed
	// The groups are copied, never written through: deps may share them with others.
	var policy agent.Policy
	if deps.Policy != nil {
		policy = *deps.Policy
	}
	policy.Rules = policy.Rules.Merge(s.rules)
	policy.TrustProjectSettings = true
	deps.Policy = &policy
	var sh agent.ShellOptions
	if deps.Shell != nil {
		sh = *deps.Shell
	}
	sh.Sandbox = s.sandbox.Mode
	sh.SandboxNetwork = s.sandbox.Network
	sh.SandboxWritable = s.sandbox.Writable
	sh.SandboxReadable = s.sandbox.Readable
	sh.SandboxHidden = s.sandbox.Hidden
	deps.Shell = &sh
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
