package agent

import (
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/hooks"
	"github.com/sema-agent/sema/imagefit"
	"github.com/sema-agent/sema/mcp"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/pricing"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/tools"
	"github.com/sema-agent/sema/tools/files"
)

// TaskSpec is what the caller of one task declares (the task seat). Its zero value is
// not runnable: Root is required, and so is Prompt (or Images) except when Runner.Resume
// answers a parked question (config.root_invalid, config.prompt_missing).
type TaskSpec struct {
	// Prompt is the user's request.
	Prompt string
	// ShellLine is a shell command the person typed (the terminal's "!" line), run
	// instead of asking the model: the leg sends no model request, runs the line as one
	// Bash call (bash_readonly in a ReadOnly task) through the leg's whole path — the
	// permission fold, the hooks, the sandbox, file history, the protected paths — and
	// records what it printed in the transcript as a user entry the next leg's model
	// reads. Where the fold would ask, the person typing the line is that exact call's
	// approval; a deny still refuses it, and so does plan mode for a line not proven
	// read-only. A refused line runs nothing and ends the leg with status error and the
	// refusal's code. It goes without Prompt; with one, blank, with a NUL byte, with an
	// answer or with Resume.Continue it is refused (config.shell_line_invalid). Empty (the
	// default): the leg asks the model.
	ShellLine string
	// Images are attached to the prompt: sent after its text in the same user message,
	// and kept in the session's transcript like it. A path is read through the fence and
	// the Read deny rules; an image over the limits a model accepts goes through
	// Deps.ImageDownsampler. A refused image refuses the task before it starts. See Image.
	Images []Image
	// Root is the task root: an absolute directory that relative paths resolve against and
	// that every write must stay inside.
	Root string
	// Worktree names the git worktree Root is, for the manifest (Manifest.Worktree); nil
	// when the task does not run in one. It changes nothing else: the worktree is made
	// (package worktree) and made the root by the caller.
	Worktree *WorktreeRef
	// Model is the provider's model name ("claude-sonnet-4-5"). Empty lets the provider
	// choose its default.
	Model string
	// SystemPrompt replaces the built-in instructions (and Deps.SystemPrompt) for this
	// task: what sema says of how to work, its tools, git and safety, and the final
	// answer. The leg's own facts — the permission mode, the environment (roots, sandbox,
	// tools) — are still added after it. Empty (the default): the deployment's, else the
	// built-in instructions for the provider's family.
	SystemPrompt string
	// AppendSystemPrompt is added at the end of the system prompt.
	AppendSystemPrompt string
	// MaxTurns bounds the number of model responses; 0 means no bound.
	MaxTurns int
	// MaxTokens bounds each model response; 0 means the provider's default.
	MaxTokens int
	// MaxTokensTotal bounds the tokens the run may spend: every token its model responses
	// report (input, output, cache reads and writes), its child legs' included. The leg
	// stops with status budget_exceeded before a request whose estimated input would
	// carry the total past it. 0 (the default): no limit. Negative is refused
	// (config.max_tokens_total_invalid).
	MaxTokensTotal int64
	// MaxBudgetUSD bounds what the run may cost, in US dollars at the models' prices
	// (Deps.Prices, else package pricing's built-in table), its child legs included; the
	// leg stops with status budget_exceeded before a request whose estimated input would
	// carry the cost past it. A budget for a model without a price cannot be kept and is
	// refused (config.budget_unmeasurable), as are a negative, NaN or infinite one
	// (config.max_budget_invalid). 0 (the default): no budget.
	MaxBudgetUSD float64
	// FirmTokensTotal and FirmBudgetUSD mark MaxTokensTotal and MaxBudgetUSD as the
	// deployment's bounds rather than the task's own budget. A run that parks its
	// questions (OnAskPark) asks a person before passing its own budget (a budget
	// question, gate budget, that an answer with a higher limit continues); passing a
	// firm one ends it budget_exceeded, since nobody answering the task may lift it.
	// sema serve sets them for the bounds a tenant's policy puts on a task.
	FirmTokensTotal bool
	// FirmBudgetUSD: see FirmTokensTotal.
	FirmBudgetUSD bool
	// PermissionMode is one of default, acceptEdits, plan, auto, dontAsk,
	// bypassPermissions. Empty means the defaultMode of the root's .sema/settings.json,
	// else default — except on a resume (Resume set), where empty keeps the mode the
	// session recorded when its last leg ended (a steer during that leg included),
	// whatever the settings say; give a mode to change it. Runner.Resume reads the
	// checkpoint it answers instead, and an approved plan review leaves plan (see
	// Runner.Resume). The manifest's
	// permission_mode receipt shows which mode the leg requested. Any other word is
	// refused (config.permission_mode_invalid).
	PermissionMode permission.Mode
	// AllowedTools, DisallowedTools and AskTools are the task's permission rules in rule
	// syntax ("Read", "Bash(npm run test:*)", "Edit(src/**)"); an entry may hold several
	// rules separated by commas. A rule that does not parse is refused
	// (config.rule_invalid). Deny rules win over every layer's allow.
	AllowedTools, DisallowedTools, AskTools []string
	// AdditionalDirectories are extra write (and read) roots.
	AdditionalDirectories []string
	// AdditionalReadDirectories are extra read-only roots.
	AdditionalReadDirectories []string
	// ReadFace and WriteFace are the task seats of the containment faces: "roots",
	// "open", or empty (not declared). Any other value, "Open" included, is refused
	// (config.read_face_invalid / config.write_face_invalid).
	ReadFace, WriteFace fence.Face
	// ReadOnly mounts the read-only tools only (the command line's --read-only): no
	// write tools, and bash_readonly instead of Bash. Default false: every tool.
	ReadOnly bool
	// Sandbox is the task's sandbox seat: auto, on, off, or empty (the deployment's word,
	// else auto). A task may not turn off a sandbox the deployment turned on
	// (config.sandbox_loosened). See ShellOptions.Sandbox.
	Sandbox sandbox.Mode
	// SandboxNetwork is "on", "off" or empty (the deployment's word). A task may not turn
	// on a network the deployment turned off (config.sandbox_loosened).
	SandboxNetwork string
	// OnAsk says who answers a question only a person (or the host) may answer: see
	// OnAsk's constants. Empty (OnAskDefault): Deps.Approver when it is set, else the
	// question is answered no. Any other word is refused (config.on_ask_invalid).
	OnAsk OnAsk
	// Resume continues a stored session instead of starting a new one. Nil (the
	// default): the run creates a new session (kept in Deps.Store when there is one).
	Resume *Resume
	// SessionID is the id of the new session the run creates, for a host that hands the
	// id out before the run starts (sema serve answers a submitted task with it). It
	// must be a lowercase RFC 4122 UUID (config.session_id_invalid) and is refused with a
	// Resume, which names its session itself (config.session_id_invalid). An id the store
	// holds already is refused by the store (session.exists). Empty (the default): a
	// random one.
	SessionID string
	// Control, when set, lets the caller change the permission mode while the run is in
	// progress (Control.SetPermissionMode). Nil (the default): the mode stays as resolved.
	Control *Control
	// MCPServers are the task's MCP servers (the command line's --mcp-config); a server of
	// the same name as the deployment's or the workspace's replaces it. Default: none.
	MCPServers []mcp.Server
	// StrictMCPConfig mounts the task's MCPServers only: the deployment's and the
	// workspace's are not started (the command line's --strict-mcp-config). Default false.
	StrictMCPConfig bool
	// compactOnly marks the leg Runner.Compact runs: it runs no turn.
	compactOnly bool
	// Scratchpad is a directory the system prompt advertises as writable scratch space;
	// it is admitted as a write root only if it passes the fence's admission rules (it
	// must not be, or contain, a root), and created when missing.
	Scratchpad string
	// FileHistory is the task's switch of file-history recording: empty (the default:
	// as the deployment says), on, or off, which turns recording off for this run (its
	// manifest says disabled, and a rewind cannot return to its turns). On cannot turn on
	// what the deployment turned off or did not wire: the run goes on without recording,
	// with a history.capture_off notice naming the deployment's seat. Any other word is
	// refused (config.file_history_invalid). See FileHistoryCapture.
	FileHistory FileHistoryCapture
	// NoInstructions turns the instruction files off for this task (the command line's
	// --no-instructions): no AGENTS.md, CLAUDE.md or memory index is read, and the
	// manifest lists none. Default false: loaded, unless Deps.Instructions turned them
	// off (see InstructionOptions).
	NoInstructions bool
}

// OnAsk is a task's choice of who answers a permission question that needs a person.
// The deployment provides the answerers (Deps.Approver, Deps.Store); the task picks.
type OnAsk string

const (
	// OnAskDefault: Deps.Approver when the deployment set one, else the question is
	// answered no (with a sentence saying which flag or rule would allow the call).
	OnAskDefault OnAsk = ""
	// OnAskApprover: Deps.Approver answers. Without one the run is refused
	// (config.approver_missing).
	OnAskApprover OnAsk = "approver"
	// OnAskPark: the question ends the leg with status awaiting_approval and a
	// checkpoint holding the exact pending call (TaskResult.Parked); Runner.Resume
	// answers it later, in any process. Needs Deps.Store (config.store_missing).
	OnAskPark OnAsk = "park"
	// OnAskDeny: every such question is answered no, even when Deps.Approver is set.
	OnAskDeny OnAsk = "deny"
)

// Resume says which stored session a run continues, and from where. Everything that
// only makes sense for a continued session lives here, so that a fork, a branch point or
// a file rewind cannot be asked for without the session they act on.
type Resume struct {
	// SessionID is the session to continue: a new leg appends to its transcript, with
	// the conversation so far replayed to the model. Required (an empty one is refused:
	// config.resume_invalid). Needs Deps.Store (config.store_missing). The session must
	// have been created in the same task root (session.root_mismatch).
	SessionID string
	// Fork continues in a new session that copies the transcript (up to At, when set)
	// and carries the file history; the original is left unchanged. Default false: the
	// leg appends to SessionID itself.
	Fork bool
	// At is the transcript entry the leg continues from: a new branch starts there and
	// the later entries are left out of the conversation. Empty (the default): the
	// session's head.
	At string
	// Files is what happens to the session's files before the leg's first turn. The
	// zero value (the default) leaves them as they are; see RewindFilesTo and
	// RestoreFilesAt. Either needs Deps.History (config.history_missing), and Deps.Env
	// must be a view of the filesystem the session was created on
	// (history.filesystem_mismatch; see history.FilesystemIdentity). A resume or fork on
	// another filesystem that asks no rewind runs without recording file history into
	// the session, with a history.filesystem_changed notice.
	Files FilesBefore
	// AcceptPartialRestore lets the Files rewind restore what it can when some files
	// are in conflict. Default false: anything short of a full restore refuses the run
	// (history.partial_restore). It goes with a Files rewind only; set without one it is
	// refused (config.rewind_invalid). The per-file ledger is in TaskResult.RewindNotes.
	AcceptPartialRestore bool
	// Continue lets the run go on without a new prompt: the model is asked again from
	// the transcript as it stands, calls a stopped leg left unanswered answered as not
	// run. It is for a host that restarts a run its crashed process left (sema serve);
	// a transcript that ends with the model's answer has nothing to continue, and the leg
	// ends completed with that answer and no turn. With Continue, Prompt may be empty;
	// a prompt given anyway is added as usual. Default false: a resume needs a prompt.
	Continue bool
	// Wait, when another run is continuing the session (it holds the session's lease),
	// waits for that run to end, for as long as ctx lasts. Default false: the run is
	// refused at once with session.busy, before anything is claimed or written. A fork
	// never waits: it writes a new session and only reads this one.
	Wait bool
}

// FilesBefore is what a resumed run does to the session's files before its first turn:
// leave them (the zero value), return them to the start of a turn (RewindFilesTo), or
// return them to where they were at Resume.At (RestoreFilesAt). It is one value so that
// a run cannot ask for two places at once.
type FilesBefore struct {
	kind filesKind
	turn int
}

type filesKind int

const (
	filesKeep filesKind = iota
	filesRewind
	filesRestoreAt
)

// RewindFilesTo returns the session's files to the start of turn (turns are numbered
// from 1 across the session's legs; 0 is before the first turn) before the leg runs,
// as Runner.Rewind would. A negative turn is refused (config.rewind_invalid).
func RewindFilesTo(turn int) FilesBefore { return FilesBefore{kind: filesRewind, turn: turn} }

// RestoreFilesAt returns the files to where they were at Resume.At before the branch
// starts there. A Resume without At is refused (config.rewind_invalid).
func RestoreFilesAt() FilesBefore { return FilesBefore{kind: filesRestoreAt} }

// Turn returns the turn RewindFilesTo names, and whether f is such a rewind.
func (f FilesBefore) Turn() (int, bool) { return f.turn, f.kind == filesRewind }

// RestoresAt reports whether f is RestoreFilesAt.
func (f FilesBefore) RestoresAt() bool { return f.kind == filesRestoreAt }

// Keeps reports whether f leaves the files as they are (the zero value).
func (f FilesBefore) Keeps() bool { return f.kind == filesKeep }

// sessionID is the session the spec continues, "" for a new one.
func (s *TaskSpec) sessionID() string {
	if s.Resume == nil {
		return ""
	}
	return s.Resume.SessionID
}

// resume is the spec's Resume, or its zero value for a new session, so that readers
// need no nil check.
func (s *TaskSpec) resume() Resume {
	if s.Resume == nil {
		return Resume{}
	}
	return *s.Resume
}

// Deps is what the embedding deployment configures once for every task (the deployment
// seat). Only Provider is required; every other field's zero value is a working default,
// written on the field. What few deployments change sits in three groups whose nil means
// every default of the group: Hooks, Policy and Shell.
//
// A Runner reads its Deps from every run at once and never writes to them, nor to the
// groups they point to: a host must not change them while a Runner built from them
// serves runs.
type Deps struct {
	// Provider answers model requests. Required (config.provider_missing).
	Provider model.Provider
	// Env is the machine the tools act on. Default: the host (env.NewHost()).
	Env env.ExecutionEnv
	// Store keeps sessions: transcripts, legs, parked approvals. Nil (the default): runs
	// keep no session and cannot be resumed or park. See statedir.Open for the default on
	// disk, and session.NewMemory for one in memory.
	Store session.Store
	// History keeps file history for rewind; it needs Store. Nil (the default): no file
	// history.
	History history.Store
	// FileHistoryCapture is the deployment's switch of file-history recording: empty
	// (the default: on when History and Store, or Hooks.TrackFileEdit, are set), on, or
	// off — which no task can turn back on. On without a history seat is refused
	// (config.history_missing, config.store_missing); any other word too
	// (config.file_history_invalid). See FileHistoryCapture.
	FileHistoryCapture FileHistoryCapture
	// StateDir is sema's own state directory (store, history). It is never readable or
	// writable by tools. Empty (the default): no state directory to protect.
	// Deps.WithStateDir fills it together with Store and History, so stores kept in a
	// directory never go without its protection.
	StateDir string
	// Approver answers the questions the fold asks (an interactive prompt, a host
	// callback), unless the task's OnAsk parks or denies them. Nil (the default): every
	// question a person would answer is denied, with a sentence saying which flag or rule
	// would allow it.
	Approver permission.Approver
	// Classifier answers questions in auto mode. Nil (the default): the built-in
	// classifier, which asks Provider with a short classification prompt. One that
	// implements permission.ClassifierArmer is armed before its first question, and a
	// failed arming leaves the leg without it; permission.NoClassifier wires none, so
	// auto runs as default (face_absent).
	Classifier permission.AutoClassifier
	// Tools are the deployment's own tools, mounted after the engine's on every leg
	// (tools.Func makes one of a function). The permission gate reads the seats each
	// declares on its tools.Spec — Effect (empty: exec, fail-closed), PermissionSeat,
	// PassthroughQuestion, ReadOnlyHint, RequiresUserInteraction — and a run whose tools
	// declare a seat the gate does not know is refused (tools.CodeSpecInvalid). Default:
	// none.
	Tools []tools.Tool
	// ImageDownsampler makes an image Read would show fit the limits a model accepts
	// (imagefit.MaxBytes, imagefit.MaxDimension), for image files and notebook
	// outputs alike. imagefit.NoDownsample turns downsampling off: an image over the limits
	// is then refused with fs.image_too_large, never sent as it is. Nil (the default):
	// the built-in imagefit.Downsample.
	ImageDownsampler imagefit.Downsampler
	// Buffers is the editor the run works in, when it serves the files it holds (an ACP
	// client's fs/read_text_file and fs/write_text_file): Read shows a text file as the
	// editor holds it, unsaved changes included, and Write, Edit and MultiEdit edit that
	// text and hand the result to the editor, which saves it. Paths, permissions, hooks
	// and file history are decided as without it, and rewind restores the files on the
	// disk. Nil (the default): every byte goes through Env. See files.Buffers.
	Buffers files.Buffers
	// OnNotice receives non-fatal announcements as they happen. Nil (the default): none
	// is delivered as it happens; they are all listed in the TaskResult either way.
	OnNotice func(sema.Notice)
	// Home is the user's home directory, for the delete guard and "~/" rules. Empty (the
	// default): os.UserHomeDir().
	Home string
	// MemoryDir is a directory the system prompt advertises for long-lived notes; it is
	// admitted as a write root only if it exists and passes the fence's admission rules.
	// Writes into it are scanned for secrets. Empty (the default): none.
	MemoryDir string
	// Now is the clock for the system prompt's date. Nil (the default): time.Now.
	Now func() time.Time
	// SessionLease is how long a leg's claim on its session (the lease that makes it the
	// session's one writer) lasts without renewal; the leg renews it every third of that
	// while it runs. A leg killed without releasing it blocks its session for at most this
	// long. Zero (the default): DefaultSessionLease.
	SessionLease time.Duration

	// Hooks are the deployment's callbacks into the write lane and the permission fold.
	// Nil (the default): none, and the runner's own file history.
	Hooks *Hooks
	// Policy is the deployment's permission and containment policy. Nil (the default):
	// no deployment rules or deny globs, faces not declared, every mode allowed, the
	// project's settings may only tighten, no organization governance, and edits file
	// history cannot protect are refused.
	Policy *Policy
	// Shell configures the shell tools and their sandbox. Nil (the default): the built-in
	// read-only allowlist, no co-author trailer, a timed-out command is killed,
	// background tasks stop with the leg, and the sandbox is auto with the network off.
	Shell *ShellOptions

	// Settings say which settings files a run reads besides the deployment's own: the
	// user's and the command line's files the deployment parsed, the managed policy, the
	// workspace's layers, Claude Code's files (see SettingsOptions). Nil (the default):
	// the task root's .sema/settings.json and .sema/settings.local.json only.
	Settings *SettingsOptions
	// MCP names the deployment's MCP servers and tunes them all: timeouts, the output
	// cap, trust of the workspace's servers, declared effects. Nil (the default): no
	// servers of the deployment's, 30 s to start, 120 s a call, 25,000 tokens of output,
	// the workspace's servers not started, no declared effects.
	MCP *MCPOptions
	// SystemPrompt replaces the built-in instructions for every task, as
	// TaskSpec.SystemPrompt does for one (which wins). Empty (the default): the built-in
	// instructions for the provider's family (Anthropic's models, or OpenAI's and
	// OpenAI-compatible servers').
	SystemPrompt string
	// Context says how the conversation is kept inside the model's context window. Nil
	// (the default): the window known for the model's family, compacted at 85% of it.
	Context *ContextOptions
	// Prices are the deployment's model prices in US dollars per million tokens, by model
	// or family name as package pricing matches them; an entry wins over the built-in
	// table's, and a model priced at zero is free (a local one). They make
	// TaskResult.TotalCostUSD known and TaskSpec.MaxBudgetUSD possible for models the
	// built-in table does not know. A negative, NaN or infinite price, or an empty name,
	// is refused (config.prices_invalid). Nil (the default): the built-in table only.
	Prices map[string]pricing.Price
	// Delegation configures the Task tool: the deployment's agent types, whether it is
	// mounted, how many of a turn's calls run at once, how deep delegation nests. Nil
	// (the default): the built-in and the workspace's agent types, mounted, 4 at once,
	// children do not delegate.
	Delegation *Delegation
	// WebFetch configures the WebFetch tool. Nil (the default): mounted on every leg,
	// answering from public http(s) pages (http upgraded to https) through the leg's
	// model, 10 MiB and 30 s at most a fetch.
	WebFetch *WebFetchOptions
	// Instructions configures the instruction files: the user's and the project's
	// AGENTS.md and CLAUDE.md, the files they import, and the memory directory's index,
	// shown to the model (see InstructionOptions). Nil (the default): loaded, capped at
	// 40,000 characters.
	Instructions *InstructionOptions
}

// Hooks are the deployment's callbacks into the write lane and the permission fold. The
// zero value (and a nil Deps.Hooks) sets none.
type Hooks struct {
	// BeforeWrite is the deployment's content gate: it sees the final bytes of every write
	// and may refuse them. An error or a panic refuses (fails closed). Nil: no gate.
	BeforeWrite files.BeforeWriteHook
	// TrackFileEdit is the first-touch history seat, called before every write, unless a
	// layer turned file history off (Deps.FileHistoryCapture, TaskSpec.FileHistory). Nil:
	// the runner's own file history, when Deps.History is set.
	TrackFileEdit files.TrackFileEditHook
	// OnFileEdited observes every write that changed, or may have changed, a file. It
	// cannot refuse, is not awaited, and its panics are recovered. Nil: nobody observes.
	OnFileEdited files.FileEditedHook
	// PreToolUse hooks run in the permission fold after the deny rules: they may deny,
	// ask, or allow (optionally rewriting the input). They never override a rule. Nil:
	// none.
	PreToolUse []permission.Hook
	// Events are hooks of Claude Code's events, Go functions (hooks.Hook.Func) or
	// commands, run with the settings files' hooks and as they are (see package hooks and
	// docs/hooks-and-settings.md). A PreToolUse hook here is a seat of the permission
	// fold like PreToolUse above, and fails closed. A hook NewSet refuses refuses the run
	// (config.hooks_invalid). Nil: none.
	Events []hooks.Hook
}

// Policy is the deployment's permission and containment policy. The zero value (and a
// nil Deps.Policy) is the default of every field.
type Policy struct {
	// Rules are the deployment's permission rules (see permission.ParseRules and
	// permission.LoadSettings). They merge with the task's and the root's
	// .sema/settings.json; a deny at any layer wins. Default: none.
	Rules permission.RuleSet
	// DenyGlobs are paths (doublestar globs over canonical paths) no tool may touch.
	// Default: none beyond the built-in protected set.
	DenyGlobs []string
	// ReadFace and WriteFace are the deployment seats of the containment faces, with the
	// task seats' values ("roots", "open", or empty: not declared, the default). A task
	// seat outranks them, except where governance or a read-only mount forbids opening
	// (see fence.ResolveFace).
	ReadFace, WriteFace fence.Face
	// DenyBypassPermissions and DenyAutoMode forbid those modes: a task asking for one
	// runs as default, with a notice and the fold in the manifest's receipt. Default
	// false: allowed.
	DenyBypassPermissions, DenyAutoMode bool
	// TrustProjectSettings lets the task root's .sema/settings.json grant permissions
	// (allow rules, a default mode). Default false: only that file's deny and ask rules
	// apply, so a cloned repository cannot grant itself permissions.
	TrustProjectSettings bool
	// OrgGoverned declares organization governance: the task seat may only tighten
	// faces. Default false.
	OrgGoverned bool
	// FileHistoryPolicy says what happens to an edit whose pre-image cannot be recorded
	// while file history is on. Default: RefuseUnprotected.
	FileHistoryPolicy FileHistoryPolicy
}

// ShellOptions configure the shell tools (Bash, bash_readonly, background tasks) and the
// kernel sandbox their commands run in. The zero value (and a nil Deps.Shell) is the
// default of every field.
type ShellOptions struct {
	// ReadonlyAllow replaces the read-only shell's allowlist (bash_readonly, and the
	// "read-only Bash needs no question" answer). Nil: the built-in list.
	ReadonlyAllow []string
	// CommitCoAuthor, "Name <email>", adds a Co-Authored-By trailer to commits made
	// through Bash. Empty (the default): none.
	CommitCoAuthor string
	// AutoBackgroundOnTimeout moves an eligible foreground Bash command that reaches its
	// timeout to the background instead of killing it (no git anywhere in it, not a
	// leading sleep). Default false: the command is killed.
	AutoBackgroundOnTimeout bool
	// KeepBackgroundTasks leaves background tasks running when the leg ends; they are
	// listed in TaskResult.BackgroundTasks. Default false: they are stopped.
	KeepBackgroundTasks bool
	// Sandbox says whether shell commands run confined by the kernel (package sandbox):
	// every Bash and bash_readonly command, its background tasks and everything they
	// start write only inside the write roots, the private temp directory and the
	// toolchain caches, read only the read roots, the system and the toolchains, never
	// the state directory or a credential store, and reach no network. auto (also the
	// empty word, the default): where the kernel can, with a sandbox.off notice where it
	// cannot. on: a kernel that cannot refuses the run (sandbox.unavailable). off: the
	// permission fold's analysis is the only wall. The manifest's shell.sandbox says
	// which. Any other word is refused (config.sandbox_invalid).
	Sandbox sandbox.Mode
	// SandboxNetwork is "on" or "off"; empty (the default): off, except for a leg that
	// starts in bypassPermissions. bash_readonly never has the network.
	SandboxNetwork string
	// SandboxWritable, SandboxReadable and SandboxHidden extend the sandbox's policy:
	// more places to write (a shared cache), to read (a toolchain in an unusual place),
	// and to hide even inside the roots (beyond sandbox.DefaultCredentialStores; the
	// file tools refuse them too). "~/" is the home directory; SandboxHidden entries may
	// be relative to it. Default: none.
	SandboxWritable, SandboxReadable, SandboxHidden []string
	// SandboxSockets are unix sockets outside the write roots commands may connect to (a
	// database's, a container daemon's), absolute or "~/": each is granted while it is a
	// socket. Default: none — no socket outside the write roots and the temp directory.
	SandboxSockets []string
	// SandboxSharedCaches lets commands write the toolchain caches (Go's build and module
	// caches, npm's, pip's, yarn's, pnpm's, cargo's, Maven's, Gradle's) as they are: a
	// command can then change what later builds outside the sandbox use. Default false:
	// commands read the caches through and write into a private layer per leg. A managed
	// policy's sandbox.sharedCaches false refuses it (config.sandbox_loosened).
	SandboxSharedCaches bool
	// EnvPassthrough names variables of this process's environment that commands, hooks
	// and stdio MCP servers inherit although the environment rule holds them back
	// (env.Inherit: credential-shaped names and values, agent sockets): exact names and
	// NAME_* prefixes. The settings files' envPassthrough adds to it. An invalid entry is
	// refused (config.env_passthrough_invalid), and so is one naming a model provider's
	// key variable (config.env_passthrough_refused): that one is never passed. Default:
	// none.
	EnvPassthrough []string
}

// hooks, policy and shell return a group by value, its zero value for a nil pointer, so
// that readers need no nil check and nothing is ever written into the caller's Deps.
func (d *Deps) hooks() Hooks {
	if d.Hooks == nil {
		return Hooks{}
	}
	return *d.Hooks
}

func (d *Deps) policy() Policy {
	if d.Policy == nil {
		return Policy{}
	}
	return *d.Policy
}

func (d *Deps) shell() ShellOptions {
	if d.Shell == nil {
		return ShellOptions{}
	}
	return *d.Shell
}

// FileHistoryPolicy is the deployment's answer for an edit that file history cannot
// protect.
type FileHistoryPolicy int

const (
	// RefuseUnprotected refuses the edit: the tool result's code is
	// files.CodeHistoryUnprotected (history.unprotected), and nothing changes that could
	// not be rewound. The default.
	RefuseUnprotected FileHistoryPolicy = iota
	// ProceedUnprotected lets the edit go on, with a notice of the same code.
	ProceedUnprotected
)
