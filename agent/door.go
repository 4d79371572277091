package agent

import (
	"path/filepath"
	"strings"

	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/permission"
)

// validateSpec is the door: it refuses a spec by name before anything runs.
func validateSpec(deps *Deps, spec *TaskSpec) error {
	if deps.Provider == nil {
		return configError(CodeProviderMissing, "no model provider is configured; set Deps.Provider")
	}
	if strings.TrimSpace(spec.Prompt) == "" && spec.Answer == nil {
		return configError(CodePromptMissing, "the task has no prompt; give a prompt to run")
	}
	if spec.Answer != nil && (spec.SessionID == "" || spec.Answer.CheckpointID == "") {
		return configError(CodeConfigAnswerInvalid, "an answer needs the session and the checkpoint it answers")
	}
	if (spec.Answer != nil || spec.SessionID != "" || deps.Park) && deps.Store == nil {
		return configError(CodeStoreMissing, "resuming, answering or parking needs a session store; set Deps.Store")
	}
	if spec.RewindFilesTo != nil && spec.RestoreFiles {
		return configError(CodeRewindConflict, "RewindFilesTo and RestoreFiles both say where the files go back to; give one")
	}
	if spec.RestoreFiles && spec.ResumeAt == "" {
		return configError(CodeRewindInvalid, "RestoreFiles restores the files to ResumeAt; give ResumeAt")
	}
	if spec.RewindFilesTo != nil && (spec.SessionID == "" || *spec.RewindFilesTo < 0) {
		return configError(CodeRewindInvalid, "RewindFilesTo needs the SessionID whose files to rewind and a turn of it (0 or more)")
	}
	if (spec.RewindFilesTo != nil || spec.RestoreFiles) && deps.History == nil {
		return configError(CodeHistoryMissing, "rewinding files needs a file-history store; set Deps.History")
	}
	if (spec.ForkSession || spec.ResumeAt != "") && spec.SessionID == "" {
		return configError(CodeResumeInvalid, "ForkSession and ResumeAt need the SessionID they continue from")
	}
	if spec.Root == "" || !filepath.IsAbs(spec.Root) {
		return configError(fence.CodeRootInvalid, "the task root %q is not an absolute path; give an absolute directory", spec.Root)
	}
	if spec.MaxTurns < 0 {
		return configError(CodeMaxTurnsInvalid, "max turns is %d; give a positive number, or 0 for no limit", spec.MaxTurns)
	}
	if spec.MaxTokens < 0 {
		return configError(CodeMaxTokensInvalid, "max tokens is %d; give a positive number, or 0 for the provider's default", spec.MaxTokens)
	}
	if spec.PermissionMode != "" {
		if _, err := permission.ParseMode(string(spec.PermissionMode)); err != nil {
			return err
		}
	}
	return validateSandbox(deps, spec)
}
