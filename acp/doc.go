// Package acp is sema as an agent of the Agent Client Protocol (ACP, protocol version
// 1): JSON-RPC 2.0 over newline-delimited JSON, which an editor (Zed, JetBrains, the
// Neovim and Emacs plugins) speaks to an agent it launches as a subprocess.
//
// The package holds the protocol's types (written from the schema the official
// library, @agentclientprotocol/sdk, ships), the connection (Conn: requests both ways,
// notifications, every malformed line answered with a JSON-RPC error and the
// connection kept), and the agent side (Agent, Serve): initialize, session/new,
// session/load, session/prompt, session/set_mode, session/cancel, and the
// session/request_permission questions it puts to the client, and the fs/read_text_file
// and fs/write_text_file requests the file tools make through it when it serves them.
//
// It is a client of the runner like the terminal session: a session's prompts run
// through a Backend (the command line gives it tui.Local, one leg per prompt, each
// continuing the session), its permission questions reach the client through the
// session's permission.Approver, and its events become session/update notifications.
// Only cmd/sema imports it; the engine never does.
//
// What a client sees, and what is not done, is written in docs/acp.md.
package acp
