package agent

import (
	"path/filepath"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/tools"
)

// validateSpec is the door: it refuses a spec by name before anything runs.
func validateSpec(deps *Deps, spec *TaskSpec, answer *Answer) error {
	if deps.Provider == nil {
		return configError(CodeProviderMissing, "no model provider is configured; set Deps.Provider")
	}
	if err := validateEnvPassthrough(deps); err != nil {
		return err
	}
	if err := validateShellLine(deps, spec, answer); err != nil {
		return err
	}
	if strings.TrimSpace(spec.Prompt) == "" && spec.ShellLine == "" && len(spec.Images) == 0 && answer == nil && !spec.compactOnly && !spec.resume().Continue {
		return configError(CodePromptMissing, "the task has no prompt; give a prompt to run")
	}
	if answer != nil && (spec.sessionID() == "" || answer.CheckpointID == "") {
		return configError(CodeConfigAnswerInvalid, "an answer needs the session and the checkpoint it answers")
	}
	if spec.Resume != nil && spec.Resume.SessionID == "" {
		return configError(CodeResumeInvalid, "Resume needs the SessionID it continues from")
	}
	if spec.SessionID != "" {
		if spec.Resume != nil || answer != nil {
			return configError(CodeSessionIDInvalid, "SessionID names a new session; a resumed run continues Resume.SessionID, so leave SessionID empty")
		}
		if !isUUID(spec.SessionID) {
			return configError(CodeSessionIDInvalid, "SessionID %q is not a lowercase UUID (8-4-4-4-12 hex digits)", spec.SessionID)
		}
	}
	switch spec.OnAsk {
	case OnAskDefault, OnAskDeny, OnAskPark:
	case OnAskApprover:
		if deps.Approver == nil {
			return configError(CodeApproverMissing, "OnAsk is approver but no approver is configured; set Deps.Approver")
		}
	default:
		return configError(CodeOnAskInvalid, "unknown OnAsk %q; use approver, park or deny (or leave it empty)", spec.OnAsk)
	}
	if (answer != nil || spec.Resume != nil || spec.OnAsk == OnAskPark) && deps.Store == nil {
		return configError(CodeStoreMissing, "resuming, answering or parking needs a session store; set Deps.Store")
	}
	rs := spec.resume()
	if rs.Files.RestoresAt() && rs.At == "" {
		return configError(CodeRewindInvalid, "RestoreFilesAt restores the files to Resume.At; give At")
	}
	if turn, ok := rs.Files.Turn(); ok && turn < 0 {
		return configError(CodeRewindInvalid, "RewindFilesTo needs a turn of the session (0 or more), not %d", turn)
	}
	if rs.AcceptPartialRestore && rs.Files.Keeps() {
		return configError(CodeRewindInvalid, "AcceptPartialRestore says how a file rewind may end; Files asks for none")
	}
	if !rs.Files.Keeps() && deps.History == nil {
		return configError(CodeHistoryMissing, "rewinding files needs a file-history store; set Deps.History")
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
	if err := validateBudget(deps, spec); err != nil {
		return err
	}
	if spec.PermissionMode != "" {
		if _, err := permission.ParseMode(string(spec.PermissionMode)); err != nil {
			return err
		}
	}
	if err := validateDelegation(deps); err != nil {
		return err
	}
	if err := validateContext(deps); err != nil {
		return err
	}
	if err := validateWebFetch(deps); err != nil {
		return err
	}
	if err := validateInstructions(deps); err != nil {
		return err
	}
	// A seat the gate does not know would be read as another one than its author meant.
	for i, t := range deps.Tools {
		if t == nil {
			return sema.Errorf(tools.CodeSpecInvalid, "Deps.Tools[%d] is nil; mount tools, not nil", i)
		}
		if err := t.Spec().Validate(); err != nil {
			return err
		}
	}
	if err := validateFileHistory(deps, spec); err != nil {
		return err
	}
	return validateSandbox(deps, spec)
}

// isUUID reports whether s has the form of a session id a caller may choose: what
// newSessionID mints, in any version, lowercase.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}
