package agent

// The codes the runner answers with: the Code of a *sema.Error returned by New's Runner
// methods or set in TaskResult.Error, of a notice (Deps.OnNotice, TaskResult.Notices),
// of a tool result or of a PermissionDenial. Codes another package owns are declared
// there and the runner uses them as they are: the fence's (fence.CodeRootInvalid, …),
// the permission package's (permission.CodeDenied, permission.CodeModeInvalid, …), the
// sandbox's, the session store's (session.CodeAlreadyClaimed, …), file history's, the
// tools' and the model providers'.

// Codes of the door: a spec or deps refused before anything runs (Run, Resume, Rewind).
const (
	// CodeProviderMissing: Deps.Provider is nil.
	CodeProviderMissing = "config.provider_missing"
	// CodePromptMissing: the spec has no prompt and answers no checkpoint.
	CodePromptMissing = "config.prompt_missing"
	// CodeConfigAnswerInvalid: an answer without the Resume.SessionID or the
	// CheckpointID it answers.
	CodeConfigAnswerInvalid = "config.answer_invalid"
	// CodeStoreMissing: resuming, answering, parking (OnAskPark) or rewinding without
	// Deps.Store.
	CodeStoreMissing = "config.store_missing"
	// CodeRewindInvalid: a file rewind without what it needs (RestoreFilesAt without
	// Resume.At, RewindFilesTo below 0, AcceptPartialRestore without a Files rewind, a
	// RewindSpec that rewinds nothing or names a negative turn).
	CodeRewindInvalid = "config.rewind_invalid"
	// CodeHistoryMissing: a file rewind without Deps.History.
	CodeHistoryMissing = "config.history_missing"
	// CodeResumeInvalid: a TaskSpec.Resume without the SessionID it continues.
	CodeResumeInvalid = "config.resume_invalid"
	// CodeSessionIDInvalid: a TaskSpec.SessionID that is not a lowercase UUID, or one
	// given with a Resume.
	CodeSessionIDInvalid = "config.session_id_invalid"
	// CodeOnAskInvalid: TaskSpec.OnAsk is not one of the OnAsk words.
	CodeOnAskInvalid = "config.on_ask_invalid"
	// CodeApproverMissing: TaskSpec.OnAsk is approver and Deps.Approver is nil.
	CodeApproverMissing = "config.approver_missing"
	// CodeMaxTurnsInvalid: a negative MaxTurns.
	CodeMaxTurnsInvalid = "config.max_turns_invalid"
	// CodeMaxTokensInvalid: a negative MaxTokens.
	CodeMaxTokensInvalid = "config.max_tokens_invalid"
	// CodeSettingsUnreadable: the task root's .sema/settings.json exists but cannot be
	// read.
	CodeSettingsUnreadable = "config.settings_unreadable"
	// CodeFileHistoryInvalid: Deps.FileHistoryCapture or TaskSpec.FileHistory is not one
	// of the FileHistoryCapture words.
	CodeFileHistoryInvalid = "config.file_history_invalid"
	// CodeFileHistoryPolicyInvalid: Deps.Policy.FileHistoryPolicy is not one of the
	// FileHistoryPolicy values (RefuseUnprotected, ProceedUnprotected).
	CodeFileHistoryPolicyInvalid = "config.file_history_policy_invalid"
	// CodeWebFetchInvalid: Deps.WebFetch holds a negative MaxBytes or Timeout.
	CodeWebFetchInvalid = "config.webfetch_invalid"
	// CodeShellLineInvalid: a TaskSpec.ShellLine that cannot run: given with a Prompt,
	// blank, holding a NUL byte, with an answer or Resume.Continue, or on an Env that
	// cannot run programs.
	CodeShellLineInvalid = "config.shell_line_invalid"
)

// Codes of a run's end and of steering it.
const (
	// CodeCancelled is TaskResult.Error's code when ctx ended the run (status cancelled).
	CodeCancelled = "run.cancelled"
	// CodeNotRunning: Control.SetPermissionMode was called before the run prepared its leg or after
	// it ended.
	CodeNotRunning = "run.not_running"
)

// Codes of sessions as the runner keeps them.
const (
	// CodeTranscriptCorrupt: a resumed session's transcript holds an entry the runner
	// cannot read.
	CodeTranscriptCorrupt = "session.transcript_corrupt"
	// CodeRootMismatch: a resume from another task root than the session's.
	CodeRootMismatch = "session.root_mismatch"
)

// Codes of parking a question and answering it (Runner.Resume).
const (
	// CodeParkFailed is TaskResult.Error's code when a question could not be stored as
	// a checkpoint (status error).
	CodeParkFailed = "checkpoint.park_failed"
	// CodeConfigRefused: a resume's re-supplied configuration was refused before the
	// checkpoint was claimed; the original code is in the detail's "code".
	CodeConfigRefused = "checkpoint.config_refused"
	// CodeStale: the checkpoint is no longer where its session stopped (the session
	// moved on, or the parked tool is not mounted).
	CodeStale = "checkpoint.stale"
	// CodeEditDenied: Answer.UpdatedInput is refused by the deny rules.
	CodeEditDenied = "checkpoint.edit_denied"
	// CodeAnswerInvalid: the answer does not fit its checkpoint (another session's, or
	// an edited input that is not JSON).
	CodeAnswerInvalid = "checkpoint.answer_invalid"
	// CodeTampered: the stored arguments no longer match their recorded sha256.
	CodeTampered = "checkpoint.tampered"
)

// Codes of tool results and permission denials the runner itself gives.
const (
	// CodeDeniedByPerson: a person answered a parked question no (Answer.Allow false).
	CodeDeniedByPerson = "permission.denied_by_user"
	// CodeEditedWriteUnsupported: an approver or hook edited the input of a write the
	// lane had already computed; the write is refused rather than run unreviewed.
	CodeEditedWriteUnsupported = "permission.edited_write_unsupported"
)

// Codes of notices: the run goes on.
const (
	// CodeProjectSettingsUntrusted: the root's .sema/settings.json grants permissions,
	// which apply only with Deps.Policy.TrustProjectSettings; its deny and ask rules apply.
	CodeProjectSettingsUntrusted = "config.project_settings_untrusted"
	// CodeArmingFailed: the auto-mode classifier could not be armed.
	CodeArmingFailed = "permission.arming_failed"
	// CodeSessionRecordFailed: as TaskResult.Error's code (status error), a transcript
	// entry could not be stored and the leg stopped before any further tool ran; as a
	// notice, a leg's end, the session's mode or its lease's release could not be stored.
	CodeSessionRecordFailed = "session.record_failed"
	// CodeBoundaryFailed: a turn's file-history boundary could not be stored.
	CodeBoundaryFailed = "history.boundary_failed"
	// CodeAnnulFailed: the history record of a failed write could not be retracted.
	CodeAnnulFailed = "history.annul_failed"
	// CodeCarryFailed: a fork could not carry its parent's file history.
	CodeCarryFailed = "history.carry_failed"
	// CodeCaptureOff: the task asked for file history (TaskSpec.FileHistory on) and the
	// deployment turned it off or wires no store; the run goes on without recording, and
	// the detail's "layer" and "seat" say who decided.
	CodeCaptureOff = "history.capture_off"
	// CodeFilesystemChanged: a resumed (or forked) session was recorded on another
	// filesystem than the run's env, so the run records no file history into it; the
	// detail holds both identities ("recorded", "current").
	CodeFilesystemChanged = "history.filesystem_changed"
	// CodeAfterFailed: what a write left (or was about to leave) in a file could not be
	// recorded; a later rewind will count the file as changed outside the agent (a
	// conflict) rather than overwrite it.
	CodeAfterFailed = "history.after_failed"
	// CodeShellShutdownFailed: background tasks could not all be stopped at the leg's
	// end.
	CodeShellShutdownFailed = "shell.shutdown_failed"
	// CodeStaleTempsRemoved: temporary files an interrupted atomic write had left in the
	// write roots were removed at the leg's start; the notice lists them.
	CodeStaleTempsRemoved = "fs.stale_temps_removed"
)

// Codes of the file history of Bash changes (notices).
const (
	// CodeBashUncovered: files of the write roots the snapshot of Bash changes cannot
	// cover — over the size cap, unreadable, or past the file-count cap — so a Bash
	// change to them cannot be undone; the notice lists them.
	CodeBashUncovered = "history.bash_uncovered"
	// CodeBashUnrecorded: a change a Bash command made could not be recorded (the store
	// failed, or the file's pre-image was never kept); the notice lists the files.
	CodeBashUnrecorded = "history.bash_unrecorded"
	// CodeBashRecovered: what a shell command changed before its process was killed was
	// found in its durable snapshot and recorded for rewind, at the start of the next
	// run or rewind of the session (detail: paths, turns).
	CodeBashRecovered = "history.bash_recovered"
	// CodeBashRecoveryFailed: that record could not be made (the store failed, the
	// snapshot is damaged); the snapshot is kept for the next attempt, and a rewind
	// refuses rather than restore from an incomplete history.
	CodeBashRecoveryFailed = "history.bash_recovery_failed"
)

// Codes of the context window: compaction.
const (
	// CodeContextInvalid: Deps.Context holds a negative window or a threshold outside
	// 0.1–0.99.
	CodeContextInvalid = "config.context_invalid"
	// CodeCompactionFailed: the conversation could not be compacted (the summary request
	// failed); the transcript is as it was and the leg ended (TaskResult.Error).
	CodeCompactionFailed = "context.compaction_failed"
	// CodeCompacted: the conversation was compacted (a notice, with the tokens before and
	// after).
	CodeCompacted = "context.compacted"
	// CodeCompactParked: Runner.Compact of a session that waits at a parked question; answer
	// it first.
	CodeCompactParked = "context.compact_parked"
)

// Codes of delegation: the Task tool and the child legs it runs.
const (
	// CodeDelegationInvalid: Deps.Delegation holds a negative bound, or a definition in
	// Deps.Delegation.Agents is refused (its own code, subagent.definition_invalid, is in the detail).
	CodeDelegationInvalid = "config.delegation_invalid"
	// CodeSubagentFailed: a Task call's child leg could not start, or ended in error, was
	// cancelled or reached its turn limit before finishing (a tool result).
	CodeSubagentFailed = "subagent.failed"
	// CodeSubagentBudget: a Task call when the leg has no turns, tokens or dollars left to
	// give a child, or a child that stopped at the budget it was given (a tool result).
	CodeSubagentBudget = "subagent.budget_exhausted"
	// CodeSubagentProblem: an agent definition file of the task root could not be used
	// (a notice naming the file; the other definitions load).
	CodeSubagentProblem = "subagent.definition_skipped"
	// CodeMCPProjectUntrusted: the workspace declares MCP servers (.mcp.json, its
	// settings' mcpServers) that were not started because the deployment does not trust
	// them (a notice listing them).
	CodeMCPProjectUntrusted = "mcp.project_untrusted"
	// CodeMCPCloseFailed: the leg's MCP servers could not all be stopped (a notice).
	CodeMCPCloseFailed = "mcp.close_failed"
	// CodeDelegatedSession: Resume or a conversation Rewind named a delegated child's
	// session; a child is continued through its parent, whose Task call it answers.
	CodeDelegatedSession = "session.delegated"
)

// Codes of the todo list (TodoWrite's tool results), each naming the refused item.
const (
	// CodeTodoContentEmpty: an item has no content.
	CodeTodoContentEmpty = "todo.content_empty"
	// CodeTodoStatusInvalid: an item's status is not pending, in_progress or completed.
	CodeTodoStatusInvalid = "todo.status_invalid"
	// CodeTodoActiveFormEmpty: an item has no activeForm.
	CodeTodoActiveFormEmpty = "todo.active_form_empty"
	// CodeTodoIDDuplicate: two items share an id.
	CodeTodoIDDuplicate = "todo.id_duplicate"
)

// Codes of budgets: what a run may spend (TaskSpec.MaxBudgetUSD, TaskSpec.MaxTokensTotal).
const (
	// CodeBudgetInvalid: TaskSpec.MaxBudgetUSD is negative, NaN or infinite.
	CodeBudgetInvalid = "config.max_budget_invalid"
	// CodeTokensTotalInvalid: TaskSpec.MaxTokensTotal is negative.
	CodeTokensTotalInvalid = "config.max_tokens_total_invalid"
	// CodeBudgetUnmeasurable: a cost budget (TaskSpec.MaxBudgetUSD) for a model without a
	// price (neither Deps.Prices nor the built-in table knows it, or TaskSpec.Model is
	// empty), whose spending could not be measured against it.
	CodeBudgetUnmeasurable = "config.budget_unmeasurable"
	// CodeBudgetExceeded: the leg stopped before a request that would pass a budget (a
	// notice, with status budget_exceeded; the detail says which budget, its limit, what
	// was spent and the request's estimate).
	CodeBudgetExceeded = "budget.exceeded"
	// CodeBudgetRaiseInvalid: an answer to a budget question (gate budget) allows without
	// a raise, raises a limit to no more than is spent, leaves the passed limit as it was,
	// or brings a raise to a question that is not about the budget. The question stays
	// open.
	CodeBudgetRaiseInvalid = "budget.raise_invalid"
)
