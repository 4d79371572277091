package agent

import (
	"context"
	"os"
	"sync"
	"sync/atomic"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/internal/boundary"
	"github.com/sema-agent/sema/internal/budget"
	"github.com/sema-agent/sema/internal/gate"
	"github.com/sema-agent/sema/internal/instrfiles"
	"github.com/sema-agent/sema/internal/later"
	"github.com/sema-agent/sema/internal/lease"
	"github.com/sema-agent/sema/internal/recorder"
	"github.com/sema-agent/sema/internal/roster"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/settings"
	"github.com/sema-agent/sema/subagent"
	"github.com/sema-agent/sema/tools"
	"github.com/sema-agent/sema/tools/files"
	"github.com/sema-agent/sema/tools/shell"
)

// leg is one prepared run. It lives for one call of Runner.Run.
type leg struct {
	deps *Deps
	spec TaskSpec
	// answer is the decision a resume brings for its parked question (Runner.Resume);
	// nil for any other leg.
	answer    *Answer
	emit      func(Event)
	sessionID string
	// store is the deployment's session store; nil runs the leg without a session.
	store session.Store
	legID string
	// lease is the leg's claim on its session (nil without a store); stop ends the leg's
	// context with a cause, which is how a lost lease stops the leg.
	lease *lease.Held
	stop  context.CancelCauseFunc
	// opening is set when a new session is stored beside the leg's first request
	// (openBeside): legID and lease are read only after opened.
	opening *later.Value[struct{}]
	// storedModes are the mode words the session's row held when the leg opened it (set
	// with legID): a leg that ends in them has nothing to store at its close.
	storedModes sessionModes

	// rec writes the leg's transcript (opened once the leg's session is); it fails
	// closed, so the stored chain stays a prefix that the next leg can complete.
	rec recorder.Recorder
	// resume is what the leg continues from: the replayed conversation of a resumed
	// session, and a parked turn if the chain ends at one.
	resume resumeState
	// approval is the answer a resumed leg executes for its parked call.
	approval *approval
	// budgetAnswer is the claimed answer to the budget question a resumed leg answers.
	budgetAnswer *budgetAnswer
	// parks is what the calls of the turn being dispatched left waiting for a person;
	// turnPark is the turn's first such call, once the dispatch ended.
	parks    parkSet
	turnPark *turnPark
	// checkpoint is the row answer answers, read once before the mode is resolved
	// (readCheckpoint) and claimed by prepareAnswer; nil for any other leg.
	checkpoint *session.Checkpoint
	// answered is the answered call and its result, for TaskResult.Answered.
	answered *AnsweredCall
	// approved is the call a person approved, running now: the fold allows exactly it.
	approved *runningCall
	// readState is what this leg's file tools have read, seeded from the session.
	readState *files.ReadState
	// storedReads is the read state as the session's transcript last stored it.
	storedReads map[string]files.ReadRecord
	// shell is the leg's shell tool set (nil when the env cannot run programs).
	shell *shell.Set
	// bashChanges records what Bash commands change for file history (nil when off).
	bashChanges *bashChanges
	// sandbox confines the leg's commands; nil when they run unconfined (sandboxStatus
	// says why).
	// stopSweep ends the leg's sweep of stale temporary files (sweepTemps).
	stopSweep     func()
	sandbox       *shell.Sandbox
	sandboxStatus sandbox.Status
	// layered is what the leg applies of the settings files (readSettings), and
	// settingsFiles the files themselves, lowest layer first.
	layered settings.Merged
	// hooks are the leg's command and Go hooks (nil: none); hookStop is set by a hook
	// that answered continue: false, and ends the leg after the step it ran in.
	hooks         *legHooks
	hookStop      atomic.Pointer[sema.Error]
	settingsFiles []settings.File
	// rewindNotes is the ledger of the rewind that ran before the leg.
	rewindNotes []history.LedgerEntry
	// files records first-touch history when the deployment wired a history store;
	// historyScope is the scope the records land in.
	files        *history.Files
	historyScope string
	// bound is the leg's file-history boundary of the current turn, minted at the turn's
	// first change of a file (ensureBoundary).
	bound boundary.Minter
	// capture is what the layers' switches and the session's filesystem left of
	// recording (resolveCapture).
	capture fileCapture
	// afters is the write lane's record of what it leaves in each file (see writeEnv).
	afters afterImages
	fence  *fence.Fence
	modes  *gate.ModeController
	gate   *gate.Gate
	scope  permission.Scope
	// classifier answers asks in auto mode; it counts its denials and falls back to
	// asking the approver after too many.
	classifier permission.AutoClassifier
	// face is the auto-mode face the leg armed from (nil: the built-in one), which its
	// children inherit when their deployment wires none.
	face   permission.AutoClassifier
	roster tools.Roster
	// laneTools are the tools whose permission question the write lane asks itself, at
	// its station 4, after containment and read-before-edit.
	laneTools map[string]bool
	// live is the roster as calls find it: roster, then the MCP servers' tools as they
	// are now (see toolsAndSpecs).
	live roster.Live
	// mcp is the MCP servers the leg's tools include (its root's, for a child); mcpTemp
	// is the private temp directory of the servers a root leg confined.
	mcp     *mcpMount
	mcpTemp string
	// hookTemp is the confined hooks' private temp directory (hooks.go); guarded by mu.
	hookTemp string
	system   string
	manifest Manifest

	// askMu serializes questions to the approver; a child shares its parent's, so a
	// person never sees two prompts at once.
	askMu *sync.Mutex

	// link is set on a delegated child leg: its parent and the Task call it answers.
	link *link
	// agents are the agent types the Task tool offers (nil when the leg does not delegate).
	agents *subagent.Catalog
	// taskSlots bounds the leg's Task calls running at once.
	taskSlots chan struct{}
	// turnsRun counts the turns this leg has run, for its children's turn budget.
	turnsRun atomic.Int64
	// apiTime sums the time of the leg's model requests (TaskResult.DurationAPI).
	apiTime atomic.Int64
	// wake signals the loop that events were queued while it waits for Task calls.
	wake chan struct{}
	// ruleSet is the leg's merged permission rules, which its children reuse.
	ruleSet permission.RuleSet

	mu sync.Mutex
	// transcript is the conversation so far, for the auto classifier.
	transcript []model.Message
	notices    []sema.Notice
	// pending holds events raised off the loop goroutine (notices, denials), emitted by the
	// loop at its next safe point so the stream is only ever written from one goroutine.
	pending []Event
	edited  []string
	denials []PermissionDenial
	// interrupting holds the calls whose refusal asked to stop the task
	// (ApprovalDecision.Interrupt), by tool_use id: the task stops once the call has
	// its result.
	interrupting map[string]bool
	// ctx is what the leg knows of its conversation's size; compactions are the
	// compactions it made; sideUsage is the usage of requests that were not turns (the
	// summaries); specTokens estimates the tool specs' share of every request.
	ctx         contextState
	compactions []CompactionInfo
	sideUsage   model.Usage
	specTokens  int64
	// subagents are the child legs this leg's Task calls ran; childUsage is their usage.
	subagents  []SubagentRun
	childUsage model.Usage
	// tallies are the leg's usage and cost by model, its children's included (under
	// their own lock); todoList is the session's todo list (see todos).
	tallies  budget.Tallies
	todoList []Todo

	// budget is what the leg may spend and has spent, its children's included.
	budget *budget.Pool

	// instr is the leg's instruction files; nil when they are off.
	instr *instrfiles.State
}

// notice records a notice, delivers it to the deployment's sink, and queues it for the
// event stream. It is safe to call from any goroutine.
func (l *leg) notice(n sema.Notice) {
	l.mu.Lock()
	l.notices = append(l.notices, n)
	l.mu.Unlock()
	l.enqueue(Event{Type: EventNotice, Notice: &n})
	if l.deps.OnNotice != nil {
		l.deps.OnNotice(n)
	}
}

// deny records a refused tool call and queues its permission event. It is safe to call
// from any goroutine.
func (l *leg) deny(d PermissionDenial) {
	l.mu.Lock()
	l.denials = append(l.denials, d)
	l.mu.Unlock()
	l.enqueue(Event{Type: EventPermission, Denial: &d})
}

// question queues the permission event of a question the fold put to the answerers.
// It is safe to call from any goroutine.
func (l *leg) question(q PermissionQuestion) {
	l.enqueue(Event{Type: EventPermission, Question: &q})
}

// flush emits queued events; only the loop goroutine calls it.
func (l *leg) flush(turn int) {
	l.mu.Lock()
	p := l.pending
	l.pending = nil
	l.mu.Unlock()
	for _, ev := range p {
		if ev.ParentToolUseID == "" {
			ev.Turn = turn // a child's event keeps its own turn
		}
		l.emit(ev)
	}
}

// home is the user's home directory for the delete guard and "~/" rules.
func (l *leg) home() string {
	if l.deps.Home != "" {
		return l.deps.Home
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return h
}
