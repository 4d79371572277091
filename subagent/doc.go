// Package subagent defines the agent types a Task tool can delegate to: what each type
// is called, when the model should pick it, which tools and model its child leg gets,
// and the system prompt the child starts with. It runs nothing; the runner mounts the
// Task tool and runs the child legs.
//
// Definitions come, in rising precedence, from the built-in types (BuiltIns:
// general-purpose, Explore, Plan), a person's own ~/.claude/agents files (LoadUser, when
// the runner reads Claude Code's files), the agent files of the task root's
// .claude/agents and then .sema/agents directories (Load), and the deployment. NewCatalog layers them so
// that a later definition of a name replaces an earlier one; Lookup then answers the
// subagent_type the model passed.
//
// Agent files use Claude Code's format: front matter between two "---" lines, then the
// system prompt. The front matter is read by a small parser of the YAML this format
// uses (scalars, quoted scalars, "|" and ">" block scalars, flow and block lists), not a
// YAML library.
//
// # Invariants
//
//   - A definition is refused, never repaired: a bad name, a missing description, an
//     unknown permission mode, a tool list that is not a list of tool names, or YAML
//     the parser does not read is a *sema.Error with CodeDefinitionInvalid naming the
//     file, the line and what to change. Nothing is defaulted in its place.
//   - No key that narrows what an agent may do is dropped in silence. tools and
//     disallowedTools are read; hooks and isolation, which sema does not carry out,
//     refuse the file, because running the agent without them would give it more than
//     its author allowed; so do allowed-tools (a key of skills, not agents) and a
//     misspelling of a key that is read (permission_mode, Tools, tool). Other keys
//     (color, skills, maxTurns, …) are ignored.
//   - Every definition Parse returns passes Validate, and Validate holds deployment
//     definitions to the same rules.
//   - Load reads through the env.ExecutionEnv only, never the os package, so agent
//     files are read from the machine the task runs on.
package subagent
