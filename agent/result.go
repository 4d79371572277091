package agent

import (
	"encoding/json"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/history/treestate"
	"github.com/sema-agent/sema/mcp"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/settings"
)

// TaskResult is the outcome of one run.
type TaskResult struct {
	// SessionID is the session the leg ran in: a new one, the resumed one, or the fork
	// (Resume.Fork). Without Deps.Store it is a fresh id that no store keeps.
	SessionID string `json:"session_id"`
	// Status is how the leg ended: sema.StatusCompleted, StatusAwaitingApproval,
	// StatusMaxTurns, StatusBudgetExceeded, StatusError or StatusCancelled; never
	// StatusRunning. The session store records the same word on the leg.
	Status sema.Status `json:"status"`
	// Result is the model's final text.
	Result string `json:"result"`
	// Error is set when Status is error (a model failure, a broken stream) or cancelled.
	Error *sema.Error `json:"error,omitempty"`
	// NumTurns is the number of turns this leg ran (model responses it received).
	NumTurns int `json:"num_turns"`
	// FirstTurn and LastTurn are the session-wide numbers of the turns this leg ran:
	// turns are numbered from 1 across all the session's legs, so a resumed leg's
	// FirstTurn continues after the turns already in the transcript (and a fork keeps
	// the numbering of what it copied). Both are 0 when the leg ran no turn. A resume that
	// finishes a parked turn does not count it: that turn, and the approved call's edits,
	// belong to the leg that parked.
	FirstTurn int `json:"first_turn"`
	// LastTurn is the session-wide number of the leg's last turn (see FirstTurn), so
	// LastTurn-FirstTurn+1 is NumTurns. A rewind to a turn of this leg is
	// RewindSpec{ToTurn: n} or RewindFilesTo(n) with FirstTurn <= n <= LastTurn (to
	// undo the whole leg, n is FirstTurn).
	LastTurn int `json:"last_turn"`
	// Usage is the sum of the token counts of the leg's model responses, its child legs'
	// (Subagents) included.
	Usage model.Usage `json:"usage"`
	// DurationAPI is the time the leg's own model requests took, from sending each to its
	// response's end (the Agent SDKs' duration_api_ms).
	DurationAPI time.Duration `json:"-"`
	// TotalCostUSD is what the leg's model requests cost in US dollars, its child legs'
	// included, at the models' prices (Deps.Prices, else package pricing's built-in
	// table). Nil when a model that answered has no price: the cost is unknown, which is
	// not zero (the JSON says null). A leg that made no request cost 0.
	TotalCostUSD *float64 `json:"total_cost_usd"`
	// ModelUsage is Usage and the cost by model, as each response named its model (else
	// TaskSpec.Model), child legs included; Claude Code's modelUsage.
	ModelUsage map[string]ModelUsage `json:"modelUsage,omitempty"`
	// Todos is the session's todo list as the leg left it: the model's last TodoWrite,
	// of this leg or, for a resumed session, of an earlier one. A child leg's list is its
	// own, in its own session.
	Todos []Todo `json:"todos,omitempty"`
	// PermissionDenials lists every tool call the permission gate refused: the leg's own
	// and, once each child leg ended, its child legs' (Subagents), each of those marked with
	// the child it came from (PermissionDenial.Subagent).
	PermissionDenials []PermissionDenial `json:"permission_denials"`
	// Compactions are the compactions of the conversation the leg made, in order; Usage
	// includes their summary requests.
	Compactions []CompactionInfo `json:"compactions,omitempty"`
	// Subagents are the child legs this leg's Task calls ran, in the order they ended.
	Subagents []SubagentRun `json:"subagents,omitempty"`
	// EditedFiles lists the canonical paths the write tools changed — writes that landed —
	// in the order first edited, a child leg's included (Subagents says which child). A write that failed after it may have changed the file is
	// not listed; its tool result says the file may be partly changed.
	EditedFiles []string `json:"edited_files"`
	// BackgroundTasks lists the Bash background tasks still running when the leg ended
	// (only with Deps.Shell.KeepBackgroundTasks; otherwise they were stopped).
	BackgroundTasks []BackgroundTask `json:"background_tasks,omitempty"`
	// Checkpoint is the parked call. It is set if and only if Status is
	// sema.StatusAwaitingApproval: a Resume whose leg runs the answered call and goes on to
	// its end leaves it nil, and only a new question that needs a person sets it again.
	// Read it through Parked, which checks both.
	Checkpoint *CheckpointInfo `json:"checkpoint,omitempty"`
	// Answered is the parked call this leg answered, with its result: set on the result
	// of a Resume that got as far as running (or refusing) the call, whatever happened
	// after it. A leg whose model request fails after an approved call ran reports
	// status error, and Answered says the call ran and what it returned; the session
	// keeps both, so a plain resume continues from there.
	Answered *AnsweredCall `json:"answered,omitempty"`
	// RewindNotes is the per-file account of a file rewind that ran before the leg.
	RewindNotes []history.LedgerEntry `json:"rewind_notes,omitempty"`
	// Manifest is the leg's resolved facts, as the EventInit event carried them.
	Manifest Manifest `json:"manifest"`
	// Notices lists every notice of the leg, in the order given; each was also passed
	// to Deps.OnNotice, when set, as it happened.
	Notices []sema.Notice `json:"notices"`
	// Messages is the conversation as the leg left it: a resumed session's replayed
	// conversation first, then this leg's prompt, responses and tool results.
	Messages []model.Message `json:"-"`
}

// Parked returns the checkpoint the run stopped at and true when the run ended awaiting
// a person's answer (Status sema.StatusAwaitingApproval); otherwise nil and false. Check it
// after every Run and every Resume: answering a checkpoint does not end the session's
// questions — the resumed leg may park again at the next one, with a new checkpoint —
// and a leg that runs to its end has none. A nil r is not parked.
func (r *TaskResult) Parked() (*CheckpointInfo, bool) {
	if r == nil || r.Status != sema.StatusAwaitingApproval || r.Checkpoint == nil {
		return nil, false
	}
	return r.Checkpoint, true
}

// AnsweredCall is a parked call a person answered, as the resumed leg ran it.
type AnsweredCall struct {
	// CheckpointID names the answered checkpoint.
	CheckpointID string `json:"checkpoint_id"`
	// Tool is the call's tool.
	Tool string `json:"tool"`
	// Input is the arguments it ran with: the stored ones, or the approver's edit.
	Input json.RawMessage `json:"input"`
	// Allowed is the answer: true when the call ran, false when a person refused it.
	Allowed bool `json:"allowed"`
	// IsError marks a call that ran and failed, or a refused one.
	IsError bool `json:"is_error"`
	// Code is the result's code when IsError.
	Code string `json:"code,omitempty"`
	// Text is the result's text as the model sees it.
	Text string `json:"text"`
}

// BackgroundTask is a Bash task still running.
type BackgroundTask struct {
	// ID is the task's id as the model knew it ("bash_1", "bash_2", … per leg).
	ID string `json:"id"`
	// Command is the command text the task runs.
	Command string `json:"command"`
	// PID is the process id of the task's shell, which is also its process group id.
	PID int `json:"pid"`
	// Output is the path of the file the task's output goes to.
	Output string `json:"output_file"`
}

// PermissionDenial is one refused tool call.
type PermissionDenial struct {
	// Tool is the called tool's name.
	Tool string `json:"tool"`
	// ToolUseID is the model's id of the call, when the runner knows it.
	ToolUseID string `json:"tool_use_id,omitempty"`
	// Input is the call's JSON input ({} when the call had none).
	Input json.RawMessage `json:"input"`
	// Reason is the refusal's sentence, as the model saw it.
	Reason string `json:"reason"`
	// Code is permission.CodeDenied ("permission.denied"), or CodeDeniedByPerson when a
	// person answered a parked question no.
	Code string `json:"code"`
	// Subagent names the delegated child leg whose call this was (the parent's Task call,
	// the agent type, the child's session; Nested when it was the child's own child's); nil
	// for the leg's own calls. ToolUseID is then the child model's id of the call.
	Subagent *SubagentRef `json:"subagent,omitempty"`
}

// PermissionQuestion is a question the permission fold put to the leg's answerers
// (an EventPermission), with the seat that answered it and the answer.
type PermissionQuestion struct {
	// Tool is the called tool's name.
	Tool string `json:"tool"`
	// Input is the call's JSON input as it would run: a hook's rewrite included.
	Input json.RawMessage `json:"input"`
	// Message is the question's sentence.
	Message string `json:"message"`
	// Gate is the kind of question: permission.GateToolPermission or
	// permission.GatePlanReview.
	Gate string `json:"gate"`
	// PersonOnly marks a question only a person may answer (no rule or classifier).
	PersonOnly bool `json:"person_only,omitempty"`
	// AnsweredBy says who answered (the output's answered_by).
	AnsweredBy AnsweredBy `json:"answered_by"`
	// Behavior is the answer: permission.Allow, permission.Deny, or permission.Ask when
	// the question was parked and waits for a person (TaskResult.Parked).
	Behavior permission.Behavior `json:"behavior"`
}

// AnsweredBy names who answered a permission question.
type AnsweredBy string

const (
	// AnsweredByApprover is Deps.Approver: a host's callback, or a person at a prompt (the
	// command line's --on-ask prompt is an approver).
	AnsweredByApprover AnsweredBy = "approver"
	// AnsweredByClassifier is the auto-mode classifier (Deps.Classifier or the default one).
	AnsweredByClassifier AnsweredBy = "classifier"
	// AnsweredByPark is parking (TaskSpec.OnAsk park): the question ends the leg and waits in
	// a checkpoint for a person's answer.
	AnsweredByPark AnsweredBy = "park"
	// AnsweredByNone means nobody was there to ask: dontAsk mode, or no approver. The
	// question was answered no.
	AnsweredByNone AnsweredBy = "none"
)

// Manifest is the run's resolved facts, fixed when the leg is prepared.
type Manifest struct {
	// SessionID is the session the leg runs in (TaskResult.SessionID).
	SessionID string `json:"session_id"`
	// Provider is Deps.Provider's name.
	Provider string `json:"provider"`
	// Model is TaskSpec.Model as given; "" when the provider chooses.
	Model string `json:"model"`
	// Platform is the operating system and architecture of the process that runs the
	// leg, as GOOS/GOARCH ("linux/amd64").
	Platform string `json:"platform"`
	// Root is the canonical task root.
	Root string `json:"root"`
	// WriteRoots are the canonical write roots: the task root first, then the
	// additional directories, then the admitted advertised directories.
	WriteRoots []string `json:"write_roots"`
	// ReadRoots are the canonical read roots: the write roots, then the read-only ones.
	ReadRoots []string `json:"read_roots"`
	// ReadFace is the resolved read face, "roots" or "open" (fence.Face).
	ReadFace string `json:"read_face"`
	// WriteFace is the resolved write face, "roots" or "open" (fence.Face).
	WriteFace string `json:"write_face"`
	// Advertised lists the scratchpad and memory directories with their verdicts.
	Advertised []AdvertisedDir `json:"advertised_dirs,omitempty"`
	// Tools names the tools mounted on the leg, the engine's first, then Deps.Tools.
	Tools []string `json:"tools"`
	// Mode records the permission mode the leg requested and the one it runs as.
	Mode ModeReceipt `json:"permission_mode"`
	// FileHistory is "on" when the leg's edits are recorded for rewind, else
	// "disabled": no history seat is wired, a layer turned recording off
	// (Deps.FileHistoryCapture, TaskSpec.FileHistory), the resumed session's history
	// lives on another filesystem, or the leg is read-only (it has no write tools).
	FileHistory string `json:"file_history"`
	// ReadOnly is TaskSpec.ReadOnly: only the read-only tools are mounted.
	ReadOnly bool `json:"read_only"`
	// MCPServers are the MCP servers the leg mounted (or tried to), with their state and
	// their tools' names; empty when none was configured.
	MCPServers []mcp.ServerStatus `json:"mcp_servers,omitempty"`
	// Instructions are the instruction files in the system prompt (see
	// InstructionOptions), canonical paths in the order loaded: the user's, those from
	// the filesystem root down to the task root, the root's .sema/AGENTS.md, each
	// followed by its imports, and the memory index. A file loaded later, when a tool
	// first reads in its directory, is announced by an instructions.loaded notice.
	Instructions []string `json:"instructions,omitempty"`
	// Settings are the settings files the leg read, lowest layer first, with what of
	// each applied: a workspace file the operator does not trust applies only what
	// tightens, and its entry names what it left out and why.
	Settings []settings.Applied `json:"settings,omitempty"`
	// SystemPromptChars is the size of the leg's system prompt in bytes (four to a token,
	// about): what every request of the leg carries before the conversation.
	SystemPromptChars int `json:"system_prompt_chars"`
	// Shell says which shell is mounted and whether the kernel confines its commands.
	Shell ShellFacts `json:"shell"`
	// Worktree names the git worktree the task root is, when the task runs in one
	// (TaskSpec.Worktree).
	Worktree *WorktreeRef `json:"worktree,omitempty"`
}

// WorktreeRef names a git worktree a task runs in (package worktree makes them): what
// the manifest reports of it. The engine does nothing with it but report it; the root
// is what contains the task.
type WorktreeRef struct {
	// Name is the worktree's name.
	Name string `json:"name"`
	// Branch is its branch.
	Branch string `json:"branch"`
	// Repo is the main checkout it belongs to.
	Repo string `json:"repo"`
}

// ShellFacts are the manifest's shell notes.
type ShellFacts struct {
	// FullShell reports that Bash is mounted (it feeds the fence's face resolution).
	FullShell bool `json:"full_shell"`
	// ReadOnlyShell reports that bash_readonly is mounted instead.
	ReadOnlyShell bool `json:"read_only_shell"`
	// Sandbox says whether the kernel confines every command (sandboxed), at which
	// Landlock level, with which namespaces and network, and why not where it does not.
	Sandbox sandbox.Status `json:"sandbox"`
	// InFileHistory reports that what Bash commands change in the write roots is recorded
	// for rewind (file history is on and Bash is mounted): a snapshot before each command
	// not proved read-only, a walk after it, a first-touch record per file created,
	// changed or deleted. A background task's changes are recorded at the next snapshot
	// (the next Bash call or turn boundary).
	InFileHistory bool `json:"in_file_history"`
	// HistoryMaxFileSize is, when InFileHistory, the size cap in bytes: a Bash change to a
	// larger file cannot be rewound, and such files are listed in a notice.
	HistoryMaxFileSize int64 `json:"history_max_file_size,omitempty"`
	// HistoryMaxFiles is, when InFileHistory, how many files one snapshot walk covers;
	// the files past it are listed in a notice.
	HistoryMaxFiles int `json:"history_max_files,omitempty"`
	// EnvHeld names the variables of sema's environment that commands, hooks and MCP
	// servers do not inherit (env.Inherit; the env.scrubbed notice says the same), sorted.
	EnvHeld []string `json:"env_held,omitempty"`
}

// withHistoryCaps fills in the caps of the snapshot of Bash changes when it is on.
func (f ShellFacts) withHistoryCaps() ShellFacts {
	if f.InFileHistory {
		f.HistoryMaxFileSize, f.HistoryMaxFiles = treestate.DefaultMaxFileSize, treestate.DefaultMaxFiles
	}
	return f
}

// AdvertisedDir is a writable directory the prompt may advertise, with its verdict.
type AdvertisedDir struct {
	// Kind says who advertises the directory: "scratchpad" (TaskSpec.Scratchpad) or
	// "memory" (Deps.MemoryDir).
	Kind string `json:"kind"`
	// Path is the directory as given.
	Path string `json:"path"`
	// Admitted reports that the directory is a write root, so the prompt advertises it.
	Admitted bool `json:"admitted"`
	// Reason is the fence's skip reason when the directory was not admitted.
	Reason string `json:"reason,omitempty"`
}

// ModeReceipt records how the leg's permission mode was resolved (permission.Receipt
// as the manifest writes it).
type ModeReceipt struct {
	// Requested is the mode word the leg asked for; "" when none was declared.
	Requested string `json:"requested"`
	// Effective is the mode the leg runs as.
	Effective string `json:"effective"`
	// FoldedBy says why Effective is not Requested (a permission.FoldReason); "" when
	// nothing folded.
	FoldedBy string `json:"folded_by,omitempty"`
}

// EventType names an event of the stream.
type EventType string

const (
	// EventInit carries the manifest, once, before the first model call.
	EventInit EventType = "system/init"
	// EventText carries a piece of the model's text as it streams.
	EventText EventType = "text"
	// EventAssistant carries one complete model response.
	EventAssistant EventType = "assistant"
	// EventToolUse announces a tool call about to run.
	EventToolUse EventType = "tool_use"
	// EventToolResult carries a tool call's answer.
	EventToolResult EventType = "tool_result"
	// EventPermission carries a permission decision that refused or asked: Denial when
	// a call was refused (whoever refused it), Question when the fold put a question to
	// the leg's answerers (with who answered and how). A question that was answered no
	// is followed by its Denial; a parked question has no Denial.
	EventPermission EventType = "permission"
	// EventNotice carries a notice.
	EventNotice EventType = "notice"
	// EventSubagentStart announces a child leg a Task call started (Subagent, with the
	// child's session).
	EventSubagentStart EventType = "subagent_start"
	// EventSubagentEnd carries how a child leg ended (Subagent: status, turns, usage,
	// edits).
	EventSubagentEnd EventType = "subagent_end"
	// EventCompaction reports a compaction of the conversation (Compaction).
	EventCompaction EventType = "compaction"
	// EventTodos carries the session's todo list after each TodoWrite changed it (Todos).
	EventTodos EventType = "todos"
	// EventResult carries the TaskResult; it is always the last event.
	EventResult EventType = "result"
)

// Event is one item of a run's stream. Which fields are set depends on Type.
type Event struct {
	// Type says what the event carries.
	Type EventType
	// Turn is the 1-based turn the event belongs to (0 before the first turn).
	Turn int
	// Manifest is set on EventInit.
	Manifest *Manifest
	// Text is set on EventText: the next piece of the model's text.
	Text string
	// Message is set on EventAssistant: the complete model response.
	Message *model.Message
	// Response is set on EventAssistant: the provider's response — the model that
	// answered, why the response ended, its token usage — with the same Content.
	Response *model.Response
	// ToolUse is set on EventToolUse.
	ToolUse *ToolUse
	// ToolResult is set on EventToolResult.
	ToolResult *ToolResult
	// Denial is set on an EventPermission for a refused call.
	Denial *PermissionDenial
	// Question is set on an EventPermission for a question put to the leg's answerers.
	Question *PermissionQuestion
	// Notice is set on EventNotice.
	Notice *sema.Notice
	// Result is set on EventResult.
	Result *TaskResult
	// Compaction is set on EventCompaction.
	Compaction *CompactionInfo
	// Subagent is set on EventSubagentStart and EventSubagentEnd.
	Subagent *SubagentRun
	// Todos is set on EventTodos: the whole list, as TodoWrite left it.
	Todos []Todo
	// ParentToolUseID is set on the events of a delegated child leg, forwarded into its
	// parent's stream: the id of the parent's Task call the child answers. Its Turn is
	// the child's. Empty for the leg's own events.
	ParentToolUseID string
}

// SubagentRun is one child leg a Task call ran (or resumed).
type SubagentRun struct {
	// ToolUseID is the id of the parent's Task call.
	ToolUseID string `json:"tool_use_id"`
	// Type is the agent type (the call's subagent_type).
	Type string `json:"type"`
	// Description is the call's description.
	Description string `json:"description,omitempty"`
	// SessionID is the child's session: a child of the parent's session in the same
	// store (session.Session.ParentID), empty when the child could not start.
	SessionID string `json:"session_id"`
	// Status is how the child's leg ended (running on EventSubagentStart).
	Status sema.Status `json:"status"`
	// NumTurns is the number of turns the child's leg ran.
	NumTurns int `json:"num_turns"`
	// Usage is the child's usage, its own children's included; the parent's
	// TaskResult.Usage includes it.
	Usage model.Usage `json:"usage"`
	// EditedFiles are the files the child's writes changed; the parent's
	// TaskResult.EditedFiles lists them too.
	EditedFiles []string `json:"edited_files,omitempty"`
}

// SubagentRef names the delegated child leg a parked question belongs to.
type SubagentRef struct {
	// SessionID is the child's session.
	SessionID string `json:"session_id"`
	// ToolUseID is the parent's Task call that waits for the child.
	ToolUseID string `json:"tool_use_id"`
	// Type is the child's agent type.
	Type string `json:"type"`
	// Description is the Task call's description.
	Description string `json:"description,omitempty"`
	// Nested is set when the question is the child's own child's (nested delegation).
	Nested *SubagentRef `json:"nested,omitempty"`
}

// ToolUse is a tool call as the model made it.
type ToolUse struct {
	// ID is the model's id for the call; the call's ToolResult carries the same.
	ID string
	// Name is the called tool's name.
	Name string
	// Input is the call's JSON input as the model wrote it.
	Input json.RawMessage
}

// ToolResult is a tool call's answer as the model sees it.
type ToolResult struct {
	// ID is the id of the call it answers (ToolUse.ID).
	ID string
	// Name is the called tool's name.
	Name string
	// IsError marks a failure the model should see and correct.
	IsError bool
	// Code is the stable code of an error result; empty on success.
	Code string
	// Text is the result's text content, concatenated; images are left out.
	Text string
}
