package subagent

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/permission"
)

// Definition is one agent type: what the model passes as subagent_type, and what the
// child leg it starts may do. A Definition is plain data; the runner turns it into a
// leg, clamping what it asks for (mode, tools) by what the parent leg has.
type Definition struct {
	// Name is the subagent_type the model passes ("general-purpose", "Explore",
	// "code-reviewer"). It matches NamePattern and is compared case-sensitively.
	Name string
	// Description says when to use the agent; the Task tool's description shows it to
	// the model, so it is written for the model that delegates.
	Description string
	// Tools names the tools the child may use. Nil means every tool the parent has (the
	// runner removes Task unless nesting is allowed); a non-nil Tools is never empty,
	// since an empty list would read as "all" to one reader and "none" to another.
	Tools []string
	// DisallowedTools names tools the child may not use even when Tools is nil or lists
	// them: Claude Code's disallowedTools, for an agent that keeps everything but a few.
	// Nil removes nothing.
	DisallowedTools []string
	// Model is the child's model: "" or "inherit" means the parent's; an alias (sonnet,
	// opus, haiku) is the newest model of that family the parent's provider knows
	// (model.ResolveAlias); anything else is passed to the provider as written.
	Model string
	// PermissionMode is the child's mode: "" inherits the parent's live mode; another
	// mode is clamped by the parent's live mode (the runner's job), so a definition can
	// narrow the parent's mode but never widen it.
	PermissionMode permission.Mode
	// ReadOnly mounts only the read-only tools among those Tools allows, as the Explore
	// and Plan types do. The runner applies it: only the runner knows each tool's effect.
	ReadOnly bool
	// Prompt is added to the child's system prompt: an agent file's body, trimmed.
	Prompt string
	// Source says where the definition came from: SourceBuiltIn, SourceDeployment, or
	// the path of the agent file. Messages about the definition name it.
	Source string
}

// Sources of definitions that are not files.
const (
	// SourceBuiltIn is the Source of the definitions BuiltIns returns.
	SourceBuiltIn = "built-in"
	// SourceDeployment is the Source a deployment gives the definitions it supplies.
	SourceDeployment = "deployment"
)

// The names of the built-in types, in the order BuiltIns returns them and Names lists
// them.
const (
	// NameGeneralPurpose is the built-in agent with every tool of the parent.
	NameGeneralPurpose = "general-purpose"
	// NameExplore is the built-in read-only search agent.
	NameExplore = "Explore"
	// NamePlan is the built-in read-only planning agent.
	NamePlan = "Plan"
)

// NamePattern is the form of an agent name: a letter or digit, then up to 63 letters,
// digits, '_', '.' or '-'. It keeps a name one word the model can pass back exactly.
const NamePattern = `^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`

// The patterns are compiled on first use: NamePattern's bounded repeat makes it costly
// to compile at every start of the process, and most processes check no definition.
var (
	nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(NamePattern) })
	// toolRE admits tool names as tool specs spell them, MCP's mcp__server__tool
	// included; argument patterns ("Bash(git:*)") and wildcards belong to permission
	// rules, not to an agent's tool list.
	toolRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`) })
)

// BuiltIns returns the built-in agent types, general-purpose, Explore and Plan, in that
// order. Each call returns fresh values, so a caller may change them.
func BuiltIns() []Definition {
	return []Definition{
		{
			Name: NameGeneralPurpose,
			Description: "General-purpose agent for researching complex questions, searching for code " +
				"and carrying out multi-step tasks. Use it when a search may take several attempts, " +
				"or when a self-contained part of the work can be handed off whole.",
			Prompt: "You are a subagent: another agent has delegated one task to you. Do that task " +
				"and nothing beyond it. No one will answer questions while you work, so make " +
				"reasonable choices and say which ones you made.\n\n" +
				"Only your final message reaches the agent that delegated to you; it sees none of " +
				"your tool calls or earlier messages. End with a concise, self-contained report: " +
				"what you did, what you found (with file paths and line numbers where they " +
				"matter), what you changed, and what is left undone or uncertain.",
			Source: SourceBuiltIn,
		},
		{
			Name: NameExplore,
			Description: "Fast read-only agent for exploring a codebase: finding files by pattern, " +
				"searching code for keywords, answering questions about how the code works. It " +
				"cannot change anything.",
			// bash_readonly is tools/shell's NameBashReadonly, spelled out so that this package
			// does not import the shell tools to name one of them.
			Tools:    []string{"Read", "Glob", "Grep", "LS", "bash_readonly"},
			ReadOnly: true,
			Prompt: "You are a fast, read-only search agent. Find what the task asks for: Glob " +
				"for file names, Grep for contents, Read for files, bash_readonly for read-only " +
				"commands such as git log. Search broadly first, then narrow down; run " +
				"independent searches in parallel.\n\n" +
				"Never create, modify or delete anything, and never run a command that would.\n\n" +
				"Only your final message reaches the agent that delegated to you. Report your " +
				"findings concisely, citing each as path:line, and say plainly what you looked " +
				"for and did not find.",
			Source: SourceBuiltIn,
		},
		{
			Name: NamePlan,
			Description: "Read-only planning agent: researches the codebase and returns a " +
				"step-by-step implementation plan, without changing anything.",
			ReadOnly:       true,
			PermissionMode: permission.ModePlan,
			Prompt: "You are a planning agent. Research the codebase and produce an " +
				"implementation plan for the task; do not modify anything. Read the code the " +
				"change touches, its callers and its tests, and follow the conventions you " +
				"find.\n\n" +
				"Only your final message reaches the agent that delegated to you, and it is " +
				"the plan: the files to change (with path:line where it helps), the changes in " +
				"order, the tests to add or run, and the risks and open questions.",
			Source: SourceBuiltIn,
		},
	}
}

// builtInOrder is the order Names lists the built-in names in.
var builtInOrder = []string{NameGeneralPurpose, NameExplore, NamePlan}

// Allows reports whether the child may use the tool: it is not in DisallowedTools, and
// Tools is nil or names it. Names compare exactly. ReadOnly is not consulted; the
// runner, which knows each tool's effect, applies it.
func (d Definition) Allows(tool string) bool {
	if slices.Contains(d.DisallowedTools, tool) {
		return false
	}
	return d.Tools == nil || slices.Contains(d.Tools, tool)
}

// Validate checks a definition by the rules Parse holds agent files to: Name matches
// NamePattern, Description is not blank, Tools is nil or a non-empty list of tool
// names, DisallowedTools lists tool names, Model is one word, PermissionMode is "" or a
// mode, and the text is valid UTF-8. A deployment validates the definitions it supplies
// before it layers them into a Catalog. A refusal is a *sema.Error with
// CodeDefinitionInvalid.
func Validate(d Definition) error {
	if msg := checkDefinition(d); msg != "" {
		where := "agent definition"
		if d.Name != "" {
			where += " " + short(d.Name)
		}
		if d.Source != "" {
			where += " (" + d.Source + ")"
		}
		return sema.Errorf(CodeDefinitionInvalid, "%s: %s", where, msg).
			With("name", d.Name).With("source", d.Source)
	}
	return nil
}

// checkDefinition returns the first rule d breaks, as a sentence, or "".
func checkDefinition(d Definition) string {
	if msg := checkName(d.Name); msg != "" {
		return msg
	}
	if msg := checkDescription(d.Description); msg != "" {
		return msg
	}
	if d.Tools != nil && len(d.Tools) == 0 {
		return "Tools is empty but not nil; leave it nil to let the agent use every tool of the parent, or list the tools it may use"
	}
	for _, t := range d.Tools {
		if msg := checkTool("tools", t); msg != "" {
			return msg
		}
	}
	for _, t := range d.DisallowedTools {
		if msg := checkTool("disallowedTools", t); msg != "" {
			return msg
		}
	}
	if msg := checkModel(d.Model); msg != "" {
		return msg
	}
	if msg := checkMode(string(d.PermissionMode)); msg != "" {
		return msg
	}
	if !utf8.ValidString(d.Prompt) {
		return "the prompt is not valid UTF-8; write it as UTF-8"
	}
	return ""
}

func checkName(s string) string {
	if s == "" {
		return "name is missing; add a line such as \"name: code-reviewer\""
	}
	if !nameRE().MatchString(s) {
		return fmt.Sprintf("name %s is not an agent name; use 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit", short(s))
	}
	return ""
}

func checkDescription(s string) string {
	if strings.TrimSpace(s) == "" {
		return "description is missing; add one saying when to use the agent, for the model that delegates"
	}
	if !utf8.ValidString(s) {
		return "description is not valid UTF-8; write it as UTF-8"
	}
	return ""
}

func checkTool(field, s string) string {
	if !toolRE().MatchString(s) {
		return fmt.Sprintf("%s: %s is not a tool name; list tools by exact name, such as Read or mcp__server__tool (argument patterns and wildcards belong in permission rules)", field, short(s))
	}
	return ""
}

func checkModel(s string) string {
	if !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return fmt.Sprintf("model %s is not a model name; write one word, such as inherit or the provider's model id", short(s))
	}
	return ""
}

func checkMode(s string) string {
	if s == "" || permission.Mode(s).Valid() {
		return ""
	}
	words := make([]string, 0, 6)
	for _, m := range permission.Modes() {
		words = append(words, string(m))
	}
	return fmt.Sprintf("permissionMode %s is not a mode; use one of %s", short(s), strings.Join(words, ", "))
}
