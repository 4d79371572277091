// Package mcp mounts the tools of MCP (Model Context Protocol) servers. This part of it
// reads the servers a configuration declares, in Claude Code's mcpServers format
// (ParseConfig, Server.Expand), and names their tools for the model (ToolName).
//
// # Invariants
//
//   - A configuration is never guessed at: anything ParseConfig or Expand cannot read
//     exactly is refused with CodeConfigInvalid, naming the file, the server and what
//     to change.
//   - Every tool is named mcp__SERVER__TOOL within the providers' 64 bytes (ToolName),
//     so no server can shadow an engine tool or another server's.
package mcp
