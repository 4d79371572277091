package shellchange

// The codes of the notices a Recorder and Recover give. Package agent declares the same
// codes for embedders (agent.CodeBashUncovered, …); a test there holds the two equal.
const (
	// CodeUncovered: files of the write roots the snapshot cannot cover.
	CodeUncovered = "history.bash_uncovered"
	// CodeUnrecorded: a change a command made could not be recorded.
	CodeUnrecorded = "history.bash_unrecorded"
	// CodeRecovered: what a killed process's command changed was recorded.
	CodeRecovered = "history.bash_recovered"
	// CodeRecoveryFailed: that record could not be made.
	CodeRecoveryFailed = "history.bash_recovery_failed"
	// CodeAfterFailed: what a command left in a file could not be recorded.
	CodeAfterFailed = "history.after_failed"
)
