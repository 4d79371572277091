// Package mcp mounts the tools of MCP (Model Context Protocol) servers as tools.Tool
// values, through the official Go SDK (github.com/modelcontextprotocol/go-sdk). It
// reads servers in Claude Code's mcpServers format (ParseConfig, Server.Expand),
// starts them (Start: stdio programs, streamable HTTP, SSE), and keeps their tools
// current as the servers change them (Mount.Tools).
//
// # Invariants
//
//   - A server's tools never state a permission of their own: every one sits in the
//     passthrough seat with no declared effect, so the permission gate treats it
//     fail-closed and asks for it in every mode but bypassPermissions. What a server
//     says of a tool (readOnlyHint, a _meta requiresUserInteraction) is carried as the
//     claim it is (tools.Spec.ReadOnlyHint, RequiresUserInteraction), never as a
//     declaration. The package runs calls; it never judges them.
//   - Every tool is named mcp__SERVER__TOOL (ToolName), so no server can shadow an
//     engine tool or another server's, and every name is unique in a mount.
//   - Every call answers with a tools.Result, also when the server is slow, gone,
//     crashed or hostile: a coded error Result, never a panic or a hang beyond the
//     call's timeout.
//   - What a server sends is bounded: one message to Options.MessageLimit bytes as it
//     is read, the text of one Result to Options.OutputLimit tokens, its images to 20
//     and each to the limits a model accepts, a tool's description to 2 KiB and its schema to 64 KiB,
//     a listing to 500 tools, and re-listings after list_changed to one at a time, at
//     most ten a second.
//   - A stdio server runs in a process group of its own, and nothing of the group
//     outlives Close or the server's own exit; on Linux the server itself is killed
//     when this process dies, however it dies.
//   - A configuration is never guessed at: anything ParseConfig, Expand or Start cannot
//     read exactly is refused with CodeConfigInvalid, naming the file, the server and
//     what to change.
package mcp
