package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sema-agent/sema"
)

// sdkOptions are the flags the Claude Agent SDKs pass that only the SDK protocol reads.
type sdkOptions struct {
	permissionPromptTool string
	includePartial       bool
	noPersistence        bool
	// tools is --tools: nil when not given, "default" for every built-in tool, else the
	// comma-separated built-in tools the model may call.
	tools *string
	// refused holds the flags given that sema does not implement, for a coded refusal.
	refused []string
	// ignored holds the flags given that only tune what sema has no knob for.
	ignored []string
}

// builtinTools are sema's built-in tools, for --tools.
var builtinTools = []string{"Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "Glob", "Grep", "LS", "Bash", "BashOutput",
	"KillShell", "WebFetch", "TodoWrite", "Task"}

// sdkFlagAliases are the SDKs' spellings of flags sema spells its own way.
var sdkFlagAliases = map[string]string{
	"allowedTools":    "allowed-tools",
	"disallowedTools": "disallowed-tools",
}

// addSDKFlags adds the flags the Agent SDKs pass: each works, or is refused by name
// when given (sdk.unsupported), or only tunes something sema has no knob for and is
// accepted with a note on stderr — none is an unknown flag.
func addSDKFlags(cmd *cobra.Command, o *runOptions) {
	f := cmd.Flags()
	f.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if canon, ok := sdkFlagAliases[name]; ok {
			name = canon
		}
		return pflag.NormalizedName(name)
	})
	if f.Lookup("verbose") == nil {
		f.Bool("verbose", false, "accepted for the Agent SDKs' launch line; stream-json output is always complete")
	}
	f.StringVar(&o.sdk.permissionPromptTool, "permission-prompt-tool", "", "stdio: put permission questions to the Agent SDK's canUseTool as can_use_tool control requests")
	f.BoolVar(&o.sdk.includePartial, "include-partial-messages", false, "with the SDK protocol, stream the model's text as stream_event lines")
	f.BoolVar(&o.sdk.noPersistence, "no-session-persistence", false, "keep the session in memory only: nothing is written to the state directory")
	f.Func("tools", "the built-in tools the model may call, comma-separated (default: all; empty: none)", func(v string) error {
		o.sdk.tools = &v
		return nil
	})
	accepted := func(name, usage string) {
		f.Func(name, usage, func(string) error { return nil })
		f.Lookup(name).NoOptDefVal = "true"
	}
	accepted("await-initialize", "accepted: sema always reads the SDK's initialize request before its first turn")
	accepted("allow-dangerously-skip-permissions", "accepted: sema lets a task run in bypassPermissions without it")
	ignoredFlag := func(name, usage string) {
		f.Func(name, usage, func(string) error {
			o.sdk.ignored = append(o.sdk.ignored, "--"+name)
			return nil
		})
	}
	for _, name := range []string{"max-thinking-tokens", "thinking", "thinking-display", "effort", "betas", "debug-file"} {
		ignoredFlag(name, "accepted from the Agent SDKs; sema has no such knob and ignores it (a note on stderr says so)")
	}
	for _, name := range []string{"debug", "include-hook-events"} {
		ignoredFlag(name, "accepted from the Agent SDKs and ignored (a note on stderr says so)")
		f.Lookup(name).NoOptDefVal = "true"
	}
	refusedFlag := func(name string, boolean bool) {
		f.Func(name, "not supported by sema: refused with sdk.unsupported", func(string) error {
			o.sdk.refused = append(o.sdk.refused, "--"+name)
			return nil
		})
		if boolean {
			f.Lookup(name).NoOptDefVal = "true"
		}
	}
	for _, name := range []string{"fallback-model", "session-id", "resume-session-at", "resume-drops-turn", "json-schema", "agent",
		"plugin-dir", "plugin-dir-no-mcp", "permission-prompts", "task-budget", "project-config-root", "channels",
		"managed-settings", "initialize-fields"} {
		refusedFlag(name, false)
	}
	for _, name := range []string{"session-mirror", "managed-settings-in-initialize"} {
		refusedFlag(name, true)
	}
	for _, name := range []string{"permission-prompt-tool", "include-partial-messages", "no-session-persistence", "tools",
		"await-initialize", "allow-dangerously-skip-permissions", "max-thinking-tokens", "thinking", "thinking-display", "effort",
		"betas", "debug-file", "debug", "include-hook-events", "fallback-model", "session-id", "resume-session-at",
		"resume-drops-turn", "json-schema", "agent", "plugin-dir", "plugin-dir-no-mcp", "permission-prompts", "task-budget",
		"project-config-root", "channels", "managed-settings", "initialize-fields", "session-mirror", "managed-settings-in-initialize"} {
		f.Lookup(name).Hidden = true
	}
}

// refuse refuses the flags given that sema does not implement, by name.
func (s *sdkOptions) refuse() error {
	if len(s.refused) > 0 {
		return usageErr(sema.Errorf(codeSDKUnsupported, "sema does not support %s yet; run without it", strings.Join(slices.Compact(s.refused), ", ")))
	}
	if s.tools != nil && *s.tools != "default" {
		for _, t := range splitList(*s.tools) {
			if !slices.Contains(builtinTools, t) {
				return usageErr(sema.Errorf(codeSDKUnsupported, "--tools names %q, which is not a built-in tool of sema; the built-in tools are %s", t, strings.Join(builtinTools, ", ")))
			}
		}
	}
	return nil
}

// toolDenials are the deny rules --tools means: every built-in tool it does not name.
// The model still sees the others' descriptions; every call of one is refused.
func (s *sdkOptions) toolDenials() []string {
	if s.tools == nil || *s.tools == "default" {
		return nil
	}
	keep := splitList(*s.tools)
	var deny []string
	for _, t := range builtinTools {
		if !slices.Contains(keep, t) {
			deny = append(deny, t)
		}
	}
	return deny
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// checkPrompted refuses, for a run with a prompt argument, the flags that belong to the
// SDK protocol, and notes the ones it ignores.
func (s *sdkOptions) checkPrompted(stderr io.Writer) error {
	if err := s.refuse(); err != nil {
		return err
	}
	if s.permissionPromptTool != "" && s.permissionPromptTool != "stdio" {
		// Claude Code's -p asks an MCP tool; sema's runs have their own ways to answer.
		return usageErr(sema.Errorf(codeSDKUnsupported, "--permission-prompt-tool %s (an MCP tool that answers permission questions) is not supported; "+
			"sema answers them with --on-ask prompt (at the terminal), --on-ask park (later, with sema approve), or a PreToolUse hook in the settings that decides (hooks.PreToolUse)", s.permissionPromptTool))
	}
	for flag, set := range map[string]bool{
		"--permission-prompt-tool":   s.permissionPromptTool != "",
		"--include-partial-messages": s.includePartial,
		"--no-session-persistence":   s.noPersistence,
	} {
		if set {
			return usageErr(sema.Errorf(codeSDKUnsupported, "%s belongs to the Agent SDK protocol (no prompt argument, --input-format and --output-format stream-json); run without it", flag))
		}
	}
	s.noteIgnored(stderr)
	return nil
}

// noteIgnored says on stderr which flags were accepted and have no effect.
func (s *sdkOptions) noteIgnored(stderr io.Writer) {
	if len(s.ignored) > 0 {
		fmt.Fprintf(stderr, "sema: note: %s accepted and ignored: sema has no such setting\n", strings.Join(slices.Compact(s.ignored), ", "))
	}
}
