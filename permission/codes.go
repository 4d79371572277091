package permission

// Codes the engine reports on this package's behalf: in a refusal, a tool result or a
// notice. A host branches on them; the sentences beside them are for people.

// CodeInputUnjudgeable refuses a call whose input the gate cannot read.
const CodeInputUnjudgeable = "permission.input_unjudgeable"

// CodeExemptDirSwallowsRoot announces an exempt directory the write gate ignores because
// it equals or contains a fence root.
const CodeExemptDirSwallowsRoot = "permission.exempt_dir_swallows_root"

// Codes of the plan tools' error results.
const (
	// CodeNotInPlanMode: ExitPlanMode was called while the leg is not in plan mode.
	CodeNotInPlanMode = "permission.not_in_plan_mode"
	// CodePlanSteerFailed: the mode could not be moved.
	CodePlanSteerFailed = "permission.plan_steer_failed"
)
