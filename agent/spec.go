package agent

import (
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/tools"
	fstools "github.com/sema-agent/sema/tools/fs"
)

// TaskSpec is what the caller of one task declares (the task seat). Its zero value is
// not runnable: Prompt and Root are required.
type TaskSpec struct {
	// Prompt is the user's request.
	Prompt string
	// Root is the task root: an absolute directory that relative paths resolve against and
	// that every write must stay inside.
	Root string
	// Model is the provider's model name ("claude-sonnet-4-5"). Empty lets the provider
	// choose its default.
	Model string
	// AppendSystemPrompt is added after the built-in system prompt.
	AppendSystemPrompt string
	// MaxTurns bounds the number of model responses; 0 means no bound.
	MaxTurns int
	// MaxTokens bounds each model response; 0 means the provider's default.
	MaxTokens int
	// PermissionMode is one of default, acceptEdits, plan, auto, dontAsk,
	// bypassPermissions. Empty means default. Any other word is refused
	// (config.permission_mode_invalid).
	PermissionMode string
	// AdditionalDirectories are extra write (and read) roots.
	AdditionalDirectories []string
	// AdditionalReadDirectories are extra read-only roots.
	AdditionalReadDirectories []string
	// ReadFace and WriteFace are the task seats of the containment faces: "roots",
	// "open", or empty (not declared). Any other value, "Open" included, is refused
	// (config.read_face_invalid / config.write_face_invalid).
	ReadFace, WriteFace fence.Face
	// HandsReadOnly mounts the read-only band: no write tools.
	HandsReadOnly bool
	// Scratchpad is a directory the system prompt advertises as writable scratch space;
	// it is admitted as a write root only if it passes the fence's admission rules (it
	// must not be, or contain, a root), and created when missing.
	Scratchpad string
}

// Deps is what the embedding deployment configures once for every task (the deployment
// seat). Only Provider is required.
type Deps struct {
	// Provider answers model requests. Required.
	Provider model.Provider
	// Env is the machine the tools act on. Default: the host (env.NewHost()).
	Env env.ExecutionEnv
	// OnNotice receives non-fatal announcements as they happen. May be nil; notices are
	// also listed in the TaskResult.
	OnNotice func(sema.Notice)
	// Now is the clock for the system prompt's date. Default: time.Now.
	Now func() time.Time
	// ReadFace and WriteFace are the deployment seats of the containment faces, with the
	// task seats' values. A task seat outranks them, except where governance or a
	// read-only mount forbids opening (see fence.ResolveFace).
	ReadFace, WriteFace fence.Face
	// StateDir is sema's own state directory (store, history). It is never readable or
	// writable by tools. Empty: no state directory to protect.
	StateDir string
	// DenyGlobs are paths (doublestar globs over canonical paths) no tool may touch.
	DenyGlobs []string
	// MemoryDir is a directory the system prompt advertises for long-lived notes; it is
	// admitted as a write root only if it exists and passes the fence's admission rules.
	// Writes into it are scanned for secrets.
	MemoryDir string
	// Tools are the deployment's own tools, mounted after the engine's on every leg. Their
	// declared Effect is what the permission gate reasons about.
	Tools []tools.Tool
	// BeforeWrite is the deployment's content gate: it sees the final bytes of every write
	// and may refuse them. An error or a panic refuses (fails closed).
	BeforeWrite fstools.BeforeWriteHook
	// TrackFileEdit is the first-touch history seat, called before every write. Nil: the
	// runner's own file history, when a store is configured.
	TrackFileEdit fstools.TrackFileEditHook
	// OnFileEdited observes every write that changed, or may have changed, a file. It cannot
	// refuse, is not awaited, and its panics are recovered.
	OnFileEdited fstools.FileEditedHook
	// OrgGoverned declares organization governance: the task seat may only tighten faces.
	OrgGoverned bool
}

// Permission modes.
const (
	ModeDefault           = "default"
	ModeAcceptEdits       = "acceptEdits"
	ModePlan              = "plan"
	ModeAuto              = "auto"
	ModeDontAsk           = "dontAsk"
	ModeBypassPermissions = "bypassPermissions"
)

var modes = []string{ModeDefault, ModeAcceptEdits, ModePlan, ModeAuto, ModeDontAsk, ModeBypassPermissions}
