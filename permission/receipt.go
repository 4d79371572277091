package permission

// FoldReason says why a leg's effective mode is not the word it requested.
type FoldReason string

const (
	// FoldOperatorDeny: the deployment denies the mode (bypassPermissions or auto).
	FoldOperatorDeny FoldReason = "operator_deny"
	// FoldFaceAbsent: auto was requested and no classifier is wired.
	FoldFaceAbsent FoldReason = "face_absent"
	// FoldInheritedCeiling: the request exceeds the parent leg's live mode.
	FoldInheritedCeiling FoldReason = "inherited_ceiling"
)

// CodeModeFolded is the notice announcing a fold, once per fold.
const CodeModeFolded = "permission.mode_folded"

// CodeAutoArmFailed refuses a steer to auto whose classifier could not be armed.
const CodeAutoArmFailed = "permission.auto_arm_failed"

// Receipt is the three-member answer every mode question gets: the manifest member, the
// steer's return value and the fold notice's detail share it.
type Receipt struct {
	// Requested is the word the caller asked for; "" when it declared nothing (a root
	// leg then runs as default, a child as its parent).
	Requested Mode `json:"requested,omitempty"`
	// Effective is the mode the leg runs as.
	Effective Mode `json:"effective"`
	// FoldedBy says why Effective is not Requested; "" when nothing folded.
	FoldedBy FoldReason `json:"folded_by,omitempty"`
}
