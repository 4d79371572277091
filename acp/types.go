package acp

import "encoding/json"

// ProtocolVersion is the version of the Agent Client Protocol this package speaks.
const ProtocolVersion = 1

// The protocol's methods, as the schema names them.
const (
	// MethodInitialize: the client's first request: versions and capabilities.
	MethodInitialize = "initialize"
	// MethodAuthenticate: a request sema refuses: it offers no authentication methods.
	MethodAuthenticate = "authenticate"
	// MethodSessionNew: opens a session.
	MethodSessionNew = "session/new"
	// MethodSessionLoad: continues a stored session, replaying its history first.
	MethodSessionLoad = "session/load"
	// MethodSessionPrompt: runs one prompt: one leg of the session.
	MethodSessionPrompt = "session/prompt"
	// MethodSessionSetMode: changes a session's permission mode.
	MethodSessionSetMode = "session/set_mode"
	// MethodSessionCancel: (a notification) cancels a session's running prompt.
	MethodSessionCancel = "session/cancel"
	// MethodSessionUpdate: (a notification to the client) reports what a session does.
	MethodSessionUpdate = "session/update"
	// MethodRequestPermission: (a request to the client) asks about a tool call.
	MethodRequestPermission = "session/request_permission"
	// MethodCancelRequest: (a notification) cancels one request by its id.
	MethodCancelRequest = "$/cancel_request"
	// MethodReadTextFile: (a request to the client) the text of a file as the editor
	// holds it; only when the client offers fs.readTextFile.
	MethodReadTextFile = "fs/read_text_file"
	// MethodWriteTextFile: (a request to the client) writes a file through the editor;
	// only when the client offers fs.writeTextFile.
	MethodWriteTextFile = "fs/write_text_file"
)

// The JSON-RPC 2.0 error codes the connection answers with.
const (
	// CodeParseError: the line is not JSON.
	CodeParseError = -32700
	// CodeInvalidRequest: the message is not a valid request, or not one the agent can take now.
	CodeInvalidRequest = -32600
	// CodeMethodNotFound: the agent does not offer the method.
	CodeMethodNotFound = -32601
	// CodeInvalidParams: the params do not fit the method, or name what cannot be done.
	CodeInvalidParams = -32602
	// CodeInternalError: the agent failed answering.
	CodeInternalError = -32603
	// CodeResourceNotFound is the protocol's code for a session (or other resource)
	// the agent does not know.
	CodeResourceNotFound = -32002
)

// Implementation names a side of the connection (clientInfo, agentInfo).
type Implementation struct {
	// Name is the program's name ("sema").
	Name string `json:"name"`
	// Title is the name a person reads; optional.
	Title string `json:"title,omitempty"`
	// Version is the program's version.
	Version string `json:"version"`
}

// InitializeRequest is the client's first request.
type InitializeRequest struct {
	// ProtocolVersion is the newest version the client speaks; required.
	ProtocolVersion *int `json:"protocolVersion"`
	// ClientCapabilities are what the client offers the agent.
	ClientCapabilities ClientCapabilities `json:"clientCapabilities"`
	// ClientInfo names the client; optional.
	ClientInfo *Implementation `json:"clientInfo,omitempty"`
}

// ClientCapabilities are what the client offers the agent.
type ClientCapabilities struct {
	// FS says which file requests the client serves (its editor buffers).
	FS FileSystemCapabilities `json:"fs"`
	// Terminal says the client runs commands in terminals of its own (terminal/*).
	Terminal bool `json:"terminal"`
}

// FileSystemCapabilities say whether the client serves fs/read_text_file and
// fs/write_text_file.
type FileSystemCapabilities struct {
	// ReadTextFile: the client serves fs/read_text_file.
	ReadTextFile bool `json:"readTextFile"`
	// WriteTextFile: the client serves fs/write_text_file.
	WriteTextFile bool `json:"writeTextFile"`
}

// ReadTextFileRequest asks the client for the text of a file (fs/read_text_file).
type ReadTextFileRequest struct {
	// SessionID is the session the read is for.
	SessionID string `json:"sessionId"`
	// Path is the file's absolute path.
	Path string `json:"path"`
	// Line is the 1-based line to start at; nil for the first.
	Line *int `json:"line,omitempty"`
	// Limit is how many lines to read; nil for all.
	Limit *int `json:"limit,omitempty"`
}

// ReadTextFileResponse is the client's answer to fs/read_text_file.
type ReadTextFileResponse struct {
	// Content is the text.
	Content *string `json:"content"`
}

// WriteTextFileRequest asks the client to write a file (fs/write_text_file); the
// answer is null.
type WriteTextFileRequest struct {
	// SessionID is the session the write is for.
	SessionID string `json:"sessionId"`
	// Path is the file's absolute path.
	Path string `json:"path"`
	// Content is the file's whole new text.
	Content string `json:"content"`
}

// InitializeResponse is the agent's answer to initialize.
type InitializeResponse struct {
	// ProtocolVersion is the version the agent speaks (ProtocolVersion).
	ProtocolVersion int `json:"protocolVersion"`
	// AgentCapabilities are what the agent offers.
	AgentCapabilities AgentCapabilities `json:"agentCapabilities"`
	// AgentInfo names the agent.
	AgentInfo Implementation `json:"agentInfo"`
	// AuthMethods are the ways to authenticate: none for sema, which reads the model
	// provider's key from its environment.
	AuthMethods []AuthMethod `json:"authMethods"`
}

// AuthMethod is one way the client may authenticate; sema offers none.
type AuthMethod struct {
	// ID is what authenticate names.
	ID string `json:"id"`
	// Name is what the client shows.
	Name string `json:"name"`
	// Description says more; optional.
	Description string `json:"description,omitempty"`
}

// AgentCapabilities are what the agent offers the client.
type AgentCapabilities struct {
	// LoadSession: session/load continues a stored session.
	LoadSession bool `json:"loadSession"`
	// PromptCapabilities are the content a prompt may carry.
	PromptCapabilities PromptCapabilities `json:"promptCapabilities"`
	// MCPCapabilities are the MCP transports the agent connects to.
	MCPCapabilities MCPCapabilities `json:"mcpCapabilities"`
}

// PromptCapabilities say which content blocks a prompt may carry besides text and
// resource links.
type PromptCapabilities struct {
	// Image: image blocks.
	Image bool `json:"image"`
	// Audio: audio blocks.
	Audio bool `json:"audio"`
	// EmbeddedContext: resource blocks carrying a file's contents.
	EmbeddedContext bool `json:"embeddedContext"`
}

// MCPCapabilities say which MCP transports besides stdio the agent connects to.
type MCPCapabilities struct {
	// HTTP: streamable HTTP servers.
	HTTP bool `json:"http"`
	// SSE: servers over server-sent events.
	SSE bool `json:"sse"`
}

// MCPServer is an MCP server the client asks the session to mount: stdio (Command),
// http or sse (Type and URL).
type MCPServer struct {
	// Type is http or sse; empty (or stdio) for a program the agent starts.
	Type string `json:"type,omitempty"`
	// Name names the server (its tools are mcp__NAME__tool).
	Name string `json:"name"`
	// Command is a stdio server's program.
	Command string `json:"command,omitempty"`
	// Args are the program's arguments.
	Args []string `json:"args,omitempty"`
	// Env are variables set for the program.
	Env []NameValue `json:"env,omitempty"`
	// URL is an http or sse server's endpoint.
	URL string `json:"url,omitempty"`
	// Headers are sent with every request to an http or sse server.
	Headers []NameValue `json:"headers,omitempty"`
}

// NameValue is an environment variable or an HTTP header.
type NameValue struct {
	// Name is the variable's or header's name.
	Name string `json:"name"`
	// Value is its value.
	Value string `json:"value"`
}

// NewSessionRequest opens a session in Cwd.
type NewSessionRequest struct {
	// Cwd is the absolute directory the session works in: its task root.
	Cwd *string `json:"cwd"`
	// MCPServers are the client's MCP servers for the session.
	MCPServers []MCPServer `json:"mcpServers"`
}

// NewSessionResponse names the new session and its modes.
type NewSessionResponse struct {
	// SessionID is sema's session id.
	SessionID string `json:"sessionId"`
	// Modes are the permission modes the client may pick.
	Modes *SessionModeState `json:"modes,omitempty"`
}

// LoadSessionRequest continues a stored session.
type LoadSessionRequest struct {
	// SessionID is the stored session's id.
	SessionID string `json:"sessionId"`
	// Cwd is the session's directory; it must be the one the session works in.
	Cwd *string `json:"cwd"`
	// MCPServers are the client's MCP servers for the session.
	MCPServers []MCPServer `json:"mcpServers"`
}

// LoadSessionResponse is sent after the replay of the session's history.
type LoadSessionResponse struct {
	// Modes are the permission modes the client may pick.
	Modes *SessionModeState `json:"modes,omitempty"`
}

// SessionModeState is the modes a session offers and the one in force.
type SessionModeState struct {
	// CurrentModeID is the mode in force.
	CurrentModeID string `json:"currentModeId"`
	// AvailableModes are the modes the client may pick.
	AvailableModes []SessionMode `json:"availableModes"`
}

// SessionMode is one permission mode, as the client lists it.
type SessionMode struct {
	// ID is the permission mode's word (default, acceptEdits, plan, …).
	ID string `json:"id"`
	// Name is what the client shows.
	Name string `json:"name"`
	// Description says what the mode lets the agent do.
	Description string `json:"description,omitempty"`
}

// PromptRequest is one prompt: the user's content blocks.
type PromptRequest struct {
	// SessionID is the session the prompt continues.
	SessionID string `json:"sessionId"`
	// Prompt is the user's message.
	Prompt []ContentBlock `json:"prompt"`
}

// PromptResponse says why the prompt's turn ended.
type PromptResponse struct {
	// StopReason is one of the Stop constants.
	StopReason string `json:"stopReason"`
}

// The stop reasons of a prompt.
const (
	// StopEndTurn: the model answered.
	StopEndTurn = "end_turn"
	// StopMaxTokens: a response, or the leg's token or cost budget, reached its limit.
	StopMaxTokens = "max_tokens"
	// StopMaxTurnRequests: the leg reached its turn limit (--max-turns).
	StopMaxTurnRequests = "max_turn_requests"
	// StopRefusal: the model refused.
	StopRefusal = "refusal"
	// StopCancelled: the client cancelled the prompt.
	StopCancelled = "cancelled"
)

// SessionIDParams are the params of the requests and notifications that only name a
// session (session/cancel).
type SessionIDParams struct {
	// SessionID names the session.
	SessionID string `json:"sessionId"`
}

// SetModeRequest changes a session's mode.
type SetModeRequest struct {
	// SessionID names the session.
	SessionID string `json:"sessionId"`
	// ModeID is one of the modes the session offers.
	ModeID string `json:"modeId"`
}

// ContentBlock is one block of a prompt or a message: text, image, audio,
// resource_link or resource (embedded).
type ContentBlock struct {
	// Type says which fields are set.
	Type string `json:"type"`
	// Text is a text block's text.
	Text string `json:"text,omitempty"`
	// Data is an image's or audio's bytes, in base64.
	Data string `json:"data,omitempty"`
	// MIMEType is an image's or audio's type.
	MIMEType string `json:"mimeType,omitempty"`
	// URI is a resource link's address.
	URI string `json:"uri,omitempty"`
	// Name is a resource link's name.
	Name string `json:"name,omitempty"`
	// Resource is an embedded resource's contents.
	Resource *EmbeddedResource `json:"resource,omitempty"`
}

// EmbeddedResource is a resource's contents carried in the prompt: text, or a blob.
type EmbeddedResource struct {
	// URI is where the contents came from (a file:// URI for an editor buffer).
	URI string `json:"uri"`
	// MIMEType is the contents' type; optional.
	MIMEType string `json:"mimeType,omitempty"`
	// Text is a text resource's contents.
	Text *string `json:"text,omitempty"`
	// Blob is a binary resource's contents, in base64.
	Blob *string `json:"blob,omitempty"`
}

// TextBlock is a text content block.
func TextBlock(s string) ContentBlock { return ContentBlock{Type: "text", Text: s} }

// SessionNotification is the params of session/update.
type SessionNotification struct {
	// SessionID names the session.
	SessionID string `json:"sessionId"`
	// Update is what happened.
	Update SessionUpdate `json:"update"`
}

// SessionUpdate is one update of a session; SessionUpdate (the member) says which
// fields are set. As a permission request's toolCall it is a tool call update
// without that member.
type SessionUpdate struct {
	// SessionUpdate is the kind of update (the Update constants).
	SessionUpdate string `json:"sessionUpdate,omitempty"`
	// Content is a message chunk's block (user_message_chunk, agent_message_chunk,
	// agent_thought_chunk: a *ContentBlock), or a tool call's content
	// ([]ToolCallContent).
	Content any `json:"content,omitempty"`
	// ToolCallID names a tool call (the model's id of the call).
	ToolCallID string `json:"toolCallId,omitempty"`
	// Title is a tool call in one line.
	Title string `json:"title,omitempty"`
	// Kind is a tool call's kind: read, edit, delete, move, search, execute, think,
	// fetch or other.
	Kind string `json:"kind,omitempty"`
	// Status is a tool call's status (the Status constants).
	Status string `json:"status,omitempty"`
	// Locations are the files a tool call acts on.
	Locations []ToolCallLocation `json:"locations,omitempty"`
	// RawInput is a tool call's input as the model wrote it.
	RawInput json.RawMessage `json:"rawInput,omitempty"`
	// Entries is a plan's items.
	Entries *[]PlanEntry `json:"entries,omitempty"`
	// AvailableCommands are the commands of an available_commands_update.
	AvailableCommands *[]AvailableCommand `json:"availableCommands,omitempty"`
	// CurrentModeID is a current_mode_update's mode.
	CurrentModeID string `json:"currentModeId,omitempty"`
}

// The kinds of session update.
const (
	// UpdateUserMessage: a piece of the user's message (a session/load replay).
	UpdateUserMessage = "user_message_chunk"
	// UpdateAgentMessage: a piece of the model's answer.
	UpdateAgentMessage = "agent_message_chunk"
	// UpdateAgentThought: a piece of the model's thinking.
	UpdateAgentThought = "agent_thought_chunk"
	// UpdateToolCall: a tool call, announced.
	UpdateToolCall = "tool_call"
	// UpdateToolCallUpdate: a tool call's progress and outcome.
	UpdateToolCallUpdate = "tool_call_update"
	// UpdatePlan: the todo list as the model last wrote it.
	UpdatePlan = "plan"
	// UpdateAvailableCommands: the custom commands a prompt may invoke.
	UpdateAvailableCommands = "available_commands_update"
	// UpdateCurrentMode: the permission mode in force.
	UpdateCurrentMode = "current_mode_update"
)

// The statuses of a tool call.
const (
	// StatusPending: announced, not started (or waiting for permission).
	StatusPending = "pending"
	// StatusInProgress: allowed and running.
	StatusInProgress = "in_progress"
	// StatusCompleted: ended.
	StatusCompleted = "completed"
	// StatusFailed: refused, or ended with an error.
	StatusFailed = "failed"
)

// ToolCallLocation is a file a tool call acts on, for the client to follow.
type ToolCallLocation struct {
	// Path is the file's absolute path.
	Path string `json:"path"`
	// Line is the 1-based line the call starts at, when it names one.
	Line *int `json:"line,omitempty"`
}

// ToolCallContent is what a tool call produced: content (a block), or a diff.
type ToolCallContent struct {
	// Type is content or diff.
	Type string `json:"type"`
	// Content is a content item's block.
	Content *ContentBlock `json:"content,omitempty"`
	// Path is a diff's file, absolute.
	Path string `json:"path,omitempty"`
	// OldText is the file before the call; nil for a file the call created.
	OldText *string `json:"oldText,omitempty"`
	// NewText is the file after the call.
	NewText *string `json:"newText,omitempty"`
}

// PlanEntry is one item of the agent's plan (the todo list).
type PlanEntry struct {
	// Content says what is to be done.
	Content string `json:"content"`
	// Priority is high, medium or low; sema's todo items have none, so medium.
	Priority string `json:"priority"`
	// Status is pending, in_progress or completed.
	Status string `json:"status"`
}

// AvailableCommand is a command the user may invoke as /name.
type AvailableCommand struct {
	// Name is the command's name, without the slash.
	Name string `json:"name"`
	// Description says what it does.
	Description string `json:"description"`
	// Input hints at its arguments; nil for a command that takes none.
	Input *CommandInput `json:"input,omitempty"`
}

// CommandInput hints at a command's arguments.
type CommandInput struct {
	// Hint is shown where the arguments go.
	Hint string `json:"hint"`
}

// RequestPermissionRequest asks the client to choose among options for a tool call.
type RequestPermissionRequest struct {
	// SessionID names the session.
	SessionID string `json:"sessionId"`
	// ToolCall is the call asked about.
	ToolCall SessionUpdate `json:"toolCall"`
	// Options are the choices.
	Options []PermissionOption `json:"options"`
}

// PermissionOption is one choice of a permission request.
type PermissionOption struct {
	// OptionID is what the client answers with.
	OptionID string `json:"optionId"`
	// Name is what the client shows.
	Name string `json:"name"`
	// Kind is allow_once, allow_always, reject_once or reject_always.
	Kind string `json:"kind"`
}

// The kinds of permission option.
const (
	// OptionAllowOnce: run this call.
	OptionAllowOnce = "allow_once"
	// OptionAllowAlways: run this call and the calls its rule covers, for the session.
	OptionAllowAlways = "allow_always"
	// OptionRejectOnce: do not run this call.
	OptionRejectOnce = "reject_once"
	// OptionRejectAlways: do not run this call nor the calls its rule covers, for the session.
	OptionRejectAlways = "reject_always"
)

// RequestPermissionResponse is the client's choice.
type RequestPermissionResponse struct {
	// Outcome is selected (with the option) or cancelled.
	Outcome PermissionOutcome `json:"outcome"`
}

// PermissionOutcome is how a permission request ended.
type PermissionOutcome struct {
	// Outcome is selected or cancelled (the prompt was cancelled).
	Outcome string `json:"outcome"`
	// OptionID is the option selected.
	OptionID string `json:"optionId,omitempty"`
}
