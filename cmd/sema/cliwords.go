package main

import (
	"errors"
	"slices"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
)

// cliPhrases translate what the library says in its own words — the Go fields a program
// embedding it sets (Deps.MCP.TrustProject, TaskSpec.PermissionMode) — into the words of
// the command line: the flags and settings keys a person sets. The library keeps its
// words (its readers write Go); the command line translates every message it prints.
// Longer phrases come first: a parenthesis that only repeats in Go what the sentence
// already says with a flag is dropped whole.
var cliPhrases = [][2]string{
	{" (Deps.MCP.TrustProject)", ""},
	{", or Deps.Policy.TrustProjectSettings)", ")"},
	{"Deps.Prices; for the command line, ", ""},
	{"sandbox.sharedCaches (Deps.Shell.SandboxSharedCaches)", "sandbox.sharedCaches in the settings"},
	{"Deps.Shell.SandboxSharedCaches asked", "the settings' sandbox.sharedCaches asked"},
	{"A deployment turns it on with Deps.Shell.SandboxNetwork, the command line with --sandbox-network on.", "Turn it on with --sandbox-network on."},
	{"(Deps.Shell.SandboxNetwork off)", "(the managed policy's sandbox.network off)"},
	{"(Deps.Shell.Sandbox on)", "(the managed policy's sandbox.mode on)"},
	{"leave TaskSpec.Sandbox empty or on", "leave --sandbox out or give on"},
	{"the settings files' hooks / Deps.Hooks.Events", "the settings files' hooks"},
	{"TaskSpec.AllowedTools / DisallowedTools / AskTools", "--allowed-tools, --disallowed-tools or the settings' permissions rules"},
	{"TaskSpec.Sandbox / SandboxNetwork", "--sandbox, --sandbox-network"},
	{"TaskSpec.FileHistory / Deps.FileHistoryCapture", "--file-history"},
	{"TaskSpec.Resume.Files / Deps.Env", "sema rewind"},
	{"in AdditionalDirectories", "in --add-dir or the settings' permissions.additionalDirectories"},
	{"in AdditionalReadDirectories", "in --add-read-dir"},
	{"TaskSpec.PermissionMode", "--permission-mode"},
	{"TaskSpec.SandboxNetwork", "--sandbox-network"},
	{"TaskSpec.Sandbox", "--sandbox"},
	{"TaskSpec.MaxTurns", "--max-turns"},
	{"TaskSpec.MaxBudgetUSD", "--max-budget-usd"},
	{"TaskSpec.MaxTokensTotal", "--max-tokens-total"},
	{"TaskSpec.OnAsk", "--on-ask"},
	{"TaskSpec.Root", "--cwd"},
	{"TaskSpec.Model", "--model"},
	{"TaskSpec.FileHistory", "--file-history"},
	{"TaskSpec.Resume.Files", "sema rewind"},
	{"TaskSpec.Resume", "--resume"},
	{"TaskSpec.ReadFace", "the read face (--add-read-dir, the settings)"},
	{"TaskSpec.WriteFace", "the write face (--add-dir, the settings)"},
	{"Deps.Policy.ReadFace", "the managed policy's read face"},
	{"Deps.Policy.WriteFace", "the managed policy's write face"},
	{"Deps.Policy.DenyGlobs", "the managed policy's deny globs"},
	{"Deps.Shell.EnvPassthrough", "--env-passthrough"},
	{"Deps.Hooks.Events", "the settings' hooks"},
	{"Deps.Prices", "prices.json in the state directory"},
	{"Deps.StateDir", "the state directory (--home)"},
	{"AdditionalDirectories", "--add-dir"},
	{"AdditionalReadDirectories", "--add-read-dir"},
}

// cliWords is s in the command line's words (cliPhrases).
func cliWords(s string) string {
	for _, p := range cliPhrases {
		if strings.Contains(s, p[0]) {
			s = strings.ReplaceAll(s, p[0], p[1])
		}
	}
	return s
}

// cliError is err with the message of its outermost *sema.Error in the command line's
// words; the code, the detail and the cause are kept. Any other error is unchanged.
func cliError(err error) error {
	var se *sema.Error
	if err == nil || !errors.As(err, &se) {
		return err
	}
	if words := cliWords(se.Message); words != se.Message {
		c := *se
		c.Message = words
		if se == err {
			return &c
		}
		return &sema.Error{Code: c.Code, Message: c.Message, Detail: c.Detail, Err: err}
	}
	return err
}

// cliEvent is ev with every message a person reads in the command line's words: a
// notice's, a denial's reason, and the result's error and notices. ev's own values
// are not changed (the run may hold them).
func cliEvent(ev agent.Event) agent.Event {
	if ev.Notice != nil {
		n := *ev.Notice
		n.Message = cliWords(n.Message)
		ev.Notice = &n
	}
	if ev.Denial != nil {
		d := *ev.Denial
		d.Reason = cliWords(d.Reason)
		ev.Denial = &d
	}
	if ev.Manifest != nil {
		m := cliManifest(*ev.Manifest)
		ev.Manifest = &m
	}
	if ev.Result != nil {
		r := *ev.Result
		r.Manifest = cliManifest(r.Manifest)
		if r.Error != nil {
			e := *r.Error
			e.Message = cliWords(e.Message)
			r.Error = &e
		}
		r.Notices = slices.Clone(r.Notices)
		for i := range r.Notices {
			r.Notices[i].Message = cliWords(r.Notices[i].Message)
		}
		ev.Result = &r
	}
	return ev
}

// cliManifest is m with its MCP servers' errors in the command line's words.
func cliManifest(m agent.Manifest) agent.Manifest {
	m.MCPServers = slices.Clone(m.MCPServers)
	for i := range m.MCPServers {
		m.MCPServers[i].Error = cliWords(m.MCPServers[i].Error)
	}
	return m
}
