package agent

import (
	"encoding/json"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/sandbox"
)

// TaskResult is the outcome of one run.
type TaskResult struct {
	SessionID string      `json:"session_id"`
	Status    sema.Status `json:"status"`
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
	// LastTurn-FirstTurn+1 is NumTurns; a rewind to a turn of this leg is
	// RewindSpec{ToTurn: n} or RewindFilesTo(n) with FirstTurn <= n <= LastTurn (to
	// undo the whole leg, n is FirstTurn).
	FirstTurn int         `json:"first_turn"`
	LastTurn  int         `json:"last_turn"`
	Usage     model.Usage `json:"usage"`
	// PermissionDenials lists every tool call the permission gate refused.
	PermissionDenials []PermissionDenial `json:"permission_denials"`
	// EditedFiles lists the canonical paths the write tools changed (or may have changed),
	// in the order first edited.
	EditedFiles []string `json:"edited_files"`
	// BackgroundTasks lists the Bash background tasks still running when the leg ended
	// (only with Deps.Shell.KeepBackgroundTasks; otherwise they were stopped).
	BackgroundTasks []BackgroundTask `json:"background_tasks,omitempty"`
	// Checkpoint is the parked call. It is set if and only if Status is
	// sema.StatusAwaitingApproval: a Resume whose leg runs the answered call and goes on to
	// its end leaves it nil, and only a new question that needs a person sets it again.
	// Read it through Parked, which checks both.
	Checkpoint *CheckpointInfo `json:"checkpoint,omitempty"`
	// RewindNotes is the per-file account of a file rewind that ran before the leg.
	RewindNotes []history.LedgerEntry `json:"rewind_notes,omitempty"`
	Manifest    Manifest              `json:"manifest"`
	Notices     []sema.Notice         `json:"notices"`
	// Messages is the leg's transcript, the prompt first.
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

// BackgroundTask is a Bash task still running.
type BackgroundTask struct {
	ID      string `json:"id"`
	Command string `json:"command"`
	PID     int    `json:"pid"`
	Output  string `json:"output_file"`
}

// PermissionDenial is one refused tool call.
type PermissionDenial struct {
	Tool   string `json:"tool"`
	Input  any    `json:"input"`
	Reason string `json:"reason"`
	Code   string `json:"code"`
}

// PermissionQuestion is a question the permission fold put to the leg's answerers
// (an EventPermission), with the seat that answered it and the answer.
type PermissionQuestion struct {
	// Tool and Input are the call as it would run (a hook's rewrite included).
	Tool  string          `json:"tool"`
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
	SessionID string `json:"session_id"`
	Provider  string `json:"provider"`
	Model     string `json:"model"`
	Platform  string `json:"platform"`
	Root      string `json:"root"`
	// WriteRoots and ReadRoots are canonical.
	WriteRoots []string `json:"write_roots"`
	ReadRoots  []string `json:"read_roots"`
	ReadFace   string   `json:"read_face"`
	WriteFace  string   `json:"write_face"`
	// Advertised lists the scratchpad and memory directories with their verdicts.
	Advertised []AdvertisedDir `json:"advertised_dirs,omitempty"`
	Tools      []string        `json:"tools"`
	Mode       ModeReceipt     `json:"permission_mode"`
	// FileHistory is "on" when edits are recorded for rewind, else "disabled".
	FileHistory string `json:"file_history"`
	ReadOnly    bool   `json:"read_only"`
	// Shell says which shell is mounted and whether the kernel confines its commands.
	Shell ShellFacts `json:"shell"`
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
	// InFileHistory is false: changes made by shell commands are not recorded for
	// rewind.
	InFileHistory bool `json:"in_file_history"`
}

// AdvertisedDir is a writable directory the prompt may advertise, with its verdict.
type AdvertisedDir struct {
	Kind     string `json:"kind"`
	Path     string `json:"path"`
	Admitted bool   `json:"admitted"`
	Reason   string `json:"reason,omitempty"`
}

// ModeReceipt records how the leg's permission mode was resolved.
type ModeReceipt struct {
	Requested string `json:"requested"`
	Effective string `json:"effective"`
	FoldedBy  string `json:"folded_by,omitempty"`
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
	// EventResult carries the TaskResult; it is always the last event.
	EventResult EventType = "result"
)

// Event is one item of a run's stream. Which fields are set depends on Type.
type Event struct {
	Type EventType
	// Turn is the 1-based turn the event belongs to (0 before the first turn).
	Turn       int
	Manifest   *Manifest
	Text       string
	Message    *model.Message
	ToolUse    *ToolUse
	ToolResult *ToolResult
	Denial     *PermissionDenial
	Question   *PermissionQuestion
	Notice     *sema.Notice
	Result     *TaskResult
}

// ToolUse is a tool call as the model made it.
type ToolUse struct {
	ID    string
	Name  string
	Input []byte
}

// ToolResult is a tool call's answer as the model sees it.
type ToolResult struct {
	ID      string
	Name    string
	IsError bool
	Code    string
	Text    string
}
