package acp

import "encoding/json"

// ProtocolVersion is the version of the Agent Client Protocol this package speaks.
const ProtocolVersion = 1

// The protocol's methods, as the schema names them.
const (
	MethodInitialize        = "initialize"
	MethodAuthenticate      = "authenticate"
	MethodSessionNew        = "session/new"
	MethodSessionLoad       = "session/load"
	MethodSessionPrompt     = "session/prompt"
	MethodSessionSetMode    = "session/set_mode"
	MethodSessionCancel     = "session/cancel"
	MethodSessionUpdate     = "session/update"
	MethodRequestPermission = "session/request_permission"
	MethodCancelRequest     = "$/cancel_request"
)

// The JSON-RPC 2.0 error codes the connection answers with.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeResourceNotFound is the protocol's code for a session (or other resource)
	// the agent does not know.
	CodeResourceNotFound = -32002
)

// Implementation names a side of the connection (clientInfo, agentInfo).
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// InitializeRequest is the client's first request.
type InitializeRequest struct {
	ProtocolVersion    *int               `json:"protocolVersion"`
	ClientCapabilities ClientCapabilities `json:"clientCapabilities"`
	ClientInfo         *Implementation    `json:"clientInfo,omitempty"`
}

// ClientCapabilities are what the client offers the agent.
type ClientCapabilities struct {
	FS       FileSystemCapabilities `json:"fs"`
	Terminal bool                   `json:"terminal"`
}

// FileSystemCapabilities say whether the client serves fs/read_text_file and
// fs/write_text_file.
type FileSystemCapabilities struct {
	ReadTextFile  bool `json:"readTextFile"`
	WriteTextFile bool `json:"writeTextFile"`
}

// InitializeResponse is the agent's answer to initialize.
type InitializeResponse struct {
	ProtocolVersion   int               `json:"protocolVersion"`
	AgentCapabilities AgentCapabilities `json:"agentCapabilities"`
	AgentInfo         Implementation    `json:"agentInfo"`
	AuthMethods       []AuthMethod      `json:"authMethods"`
}

// AuthMethod is one way the client may authenticate; sema offers none.
type AuthMethod struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// AgentCapabilities are what the agent offers the client.
type AgentCapabilities struct {
	LoadSession        bool               `json:"loadSession"`
	PromptCapabilities PromptCapabilities `json:"promptCapabilities"`
	MCPCapabilities    MCPCapabilities    `json:"mcpCapabilities"`
}

// PromptCapabilities say which content blocks a prompt may carry besides text and
// resource links.
type PromptCapabilities struct {
	Image           bool `json:"image"`
	Audio           bool `json:"audio"`
	EmbeddedContext bool `json:"embeddedContext"`
}

// MCPCapabilities say which MCP transports besides stdio the agent connects to.
type MCPCapabilities struct {
	HTTP bool `json:"http"`
	SSE  bool `json:"sse"`
}

// MCPServer is an MCP server the client asks the session to mount: stdio (Command),
// http or sse (Type and URL).
type MCPServer struct {
	Type    string      `json:"type,omitempty"`
	Name    string      `json:"name"`
	Command string      `json:"command,omitempty"`
	Args    []string    `json:"args,omitempty"`
	Env     []NameValue `json:"env,omitempty"`
	URL     string      `json:"url,omitempty"`
	Headers []NameValue `json:"headers,omitempty"`
}

// NameValue is an environment variable or an HTTP header.
type NameValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// NewSessionRequest opens a session in Cwd.
type NewSessionRequest struct {
	Cwd        *string     `json:"cwd"`
	MCPServers []MCPServer `json:"mcpServers"`
}

// NewSessionResponse names the new session and its modes.
type NewSessionResponse struct {
	SessionID string            `json:"sessionId"`
	Modes     *SessionModeState `json:"modes,omitempty"`
}

// LoadSessionRequest continues a stored session.
type LoadSessionRequest struct {
	SessionID  string      `json:"sessionId"`
	Cwd        *string     `json:"cwd"`
	MCPServers []MCPServer `json:"mcpServers"`
}

// LoadSessionResponse is sent after the replay of the session's history.
type LoadSessionResponse struct {
	Modes *SessionModeState `json:"modes,omitempty"`
}

// SessionModeState is the modes a session offers and the one in force.
type SessionModeState struct {
	CurrentModeID  string        `json:"currentModeId"`
	AvailableModes []SessionMode `json:"availableModes"`
}

// SessionMode is one permission mode, as the client lists it.
type SessionMode struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// PromptRequest is one prompt: the user's content blocks.
type PromptRequest struct {
	SessionID string         `json:"sessionId"`
	Prompt    []ContentBlock `json:"prompt"`
}

// PromptResponse says why the prompt's turn ended.
type PromptResponse struct {
	StopReason string `json:"stopReason"`
}

// The stop reasons of a prompt.
const (
	StopEndTurn         = "end_turn"
	StopMaxTokens       = "max_tokens"
	StopMaxTurnRequests = "max_turn_requests"
	StopRefusal         = "refusal"
	StopCancelled       = "cancelled"
)

// SessionIDParams are the params of the requests and notifications that only name a
// session (session/cancel).
type SessionIDParams struct {
	SessionID string `json:"sessionId"`
}

// SetModeRequest changes a session's mode.
type SetModeRequest struct {
	SessionID string `json:"sessionId"`
	ModeID    string `json:"modeId"`
}

// ContentBlock is one block of a prompt or a message: text, image, audio,
// resource_link or resource (embedded).
type ContentBlock struct {
	Type string `json:"type"`
	// Text is a text block's text.
	Text string `json:"text,omitempty"`
	// Data and MIMEType are an image's or audio's.
	Data     string `json:"data,omitempty"`
	MIMEType string `json:"mimeType,omitempty"`
	// URI and Name are a resource link's.
	URI  string `json:"uri,omitempty"`
	Name string `json:"name,omitempty"`
	// Resource is an embedded resource's contents.
	Resource *EmbeddedResource `json:"resource,omitempty"`
}

// EmbeddedResource is a resource's contents carried in the prompt: text, or a blob.
type EmbeddedResource struct {
	URI      string  `json:"uri"`
	MIMEType string  `json:"mimeType,omitempty"`
	Text     *string `json:"text,omitempty"`
	Blob     *string `json:"blob,omitempty"`
}

// TextBlock is a text content block.
func TextBlock(s string) ContentBlock { return ContentBlock{Type: "text", Text: s} }

// SessionNotification is the params of session/update.
type SessionNotification struct {
	SessionID string        `json:"sessionId"`
	Update    SessionUpdate `json:"update"`
}

// SessionUpdate is one update of a session; SessionUpdate (the member) says which
// fields are set.
type SessionUpdate struct {
	SessionUpdate string `json:"sessionUpdate,omitempty"`
	// Content is a message chunk's block (user_message_chunk, agent_message_chunk,
	// agent_thought_chunk: a *ContentBlock), or a tool call's content
	// ([]ToolCallContent).
	Content any `json:"content,omitempty"`
	// The tool call's fields (tool_call, tool_call_update).
	ToolCallID string             `json:"toolCallId,omitempty"`
	Title      string             `json:"title,omitempty"`
	Kind       string             `json:"kind,omitempty"`
	Status     string             `json:"status,omitempty"`
	Locations  []ToolCallLocation `json:"locations,omitempty"`
	RawInput   json.RawMessage    `json:"rawInput,omitempty"`
	// Entries is a plan's.
	Entries *[]PlanEntry `json:"entries,omitempty"`
	// AvailableCommands is available_commands_update's.
	AvailableCommands *[]AvailableCommand `json:"availableCommands,omitempty"`
	// CurrentModeID is current_mode_update's.
	CurrentModeID string `json:"currentModeId,omitempty"`
}

// The kinds of session update.
const (
	UpdateUserMessage       = "user_message_chunk"
	UpdateAgentMessage      = "agent_message_chunk"
	UpdateAgentThought      = "agent_thought_chunk"
	UpdateToolCall          = "tool_call"
	UpdateToolCallUpdate    = "tool_call_update"
	UpdatePlan              = "plan"
	UpdateAvailableCommands = "available_commands_update"
	UpdateCurrentMode       = "current_mode_update"
)

// The statuses of a tool call.
const (
	StatusPending    = "pending"
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
)

// ToolCallLocation is a file a tool call acts on, for the client to follow.
type ToolCallLocation struct {
	Path string `json:"path"`
	Line *int   `json:"line,omitempty"`
}

// ToolCallContent is what a tool call produced: content (a block), or a diff.
type ToolCallContent struct {
	Type    string        `json:"type"`
	Content *ContentBlock `json:"content,omitempty"`
	Path    string        `json:"path,omitempty"`
	OldText *string       `json:"oldText,omitempty"`
	NewText *string       `json:"newText,omitempty"`
}

// PlanEntry is one item of the agent's plan (the todo list).
type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority"`
	Status   string `json:"status"`
}

// AvailableCommand is a command the user may invoke as /name.
type AvailableCommand struct {
	Name        string        `json:"name"`
	Description string        `json:"description"`
	Input       *CommandInput `json:"input,omitempty"`
}

// CommandInput hints at a command's arguments.
type CommandInput struct {
	Hint string `json:"hint"`
}

// RequestPermissionRequest asks the client to choose among options for a tool call.
type RequestPermissionRequest struct {
	SessionID string             `json:"sessionId"`
	ToolCall  SessionUpdate      `json:"toolCall"`
	Options   []PermissionOption `json:"options"`
}

// PermissionOption is one choice of a permission request.
type PermissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

// The kinds of permission option.
const (
	OptionAllowOnce    = "allow_once"
	OptionAllowAlways  = "allow_always"
	OptionRejectOnce   = "reject_once"
	OptionRejectAlways = "reject_always"
)

// RequestPermissionResponse is the client's choice.
type RequestPermissionResponse struct {
	Outcome struct {
		Outcome  string `json:"outcome"`
		OptionID string `json:"optionId"`
	} `json:"outcome"`
}
