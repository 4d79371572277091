package agent

import (
	"path/filepath"
	"strings"

	"github.com/sema-agent/sema/permission"
)

// validateSpec is the door: it refuses a spec by name before anything runs.
func validateSpec(deps *Deps, spec *TaskSpec) error {
	if deps.Provider == nil {
		return configError("config.provider_missing", "no model provider is configured; set Deps.Provider")
	}
	if strings.TrimSpace(spec.Prompt) == "" && spec.Answer == nil {
		return configError("config.prompt_missing", "the task has no prompt; give a prompt to run")
	}
	if spec.Answer != nil && (spec.SessionID == "" || spec.Answer.CheckpointID == "") {
		return configError("config.answer_invalid", "an answer needs the session and the checkpoint it answers")
	}
	if (spec.Answer != nil || spec.SessionID != "" || deps.Park) && deps.Store == nil {
		return configError("config.store_missing", "resuming, answering or parking needs a session store; set Deps.Store")
	}
	if spec.RewindFilesTo != nil && spec.RestoreFiles {
		return configError("config.rewind_conflict", "RewindFilesTo and RestoreFiles both say where the files go back to; give one")
	}
	if spec.RestoreFiles && spec.ResumeAt == "" {
		return configError("config.rewind_invalid", "RestoreFiles restores the files to ResumeAt; give ResumeAt")
	}
	if spec.RewindFilesTo != nil && (spec.SessionID == "" || *spec.RewindFilesTo < 0) {
		return configError("config.rewind_invalid", "RewindFilesTo needs the SessionID whose files to rewind and a turn of it (0 or more)")
	}
	if (spec.RewindFilesTo != nil || spec.RestoreFiles) && deps.History == nil {
		return configError("config.history_missing", "rewinding files needs a file-history store; set Deps.History")
	}
	if (spec.ForkSession || spec.ResumeAt != "") && spec.SessionID == "" {
		return configError("config.resume_invalid", "ForkSession and ResumeAt need the SessionID they continue from")
	}
	if spec.Root == "" || !filepath.IsAbs(spec.Root) {
		return configError("config.root_invalid", "the task root %q is not an absolute path; give an absolute directory", spec.Root)
	}
	if spec.MaxTurns < 0 {
		return configError("config.max_turns_invalid", "max turns is %d; give a positive number, or 0 for no limit", spec.MaxTurns)
	}
	if spec.MaxTokens < 0 {
		return configError("config.max_tokens_invalid", "max tokens is %d; give a positive number, or 0 for the provider's default", spec.MaxTokens)
	}
	if spec.PermissionMode != "" {
		if _, err := permission.ParseMode(string(spec.PermissionMode)); err != nil {
			return err
		}
	}
	return validateSandbox(deps, spec)
}
