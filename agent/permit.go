package agent

import (
	"context"
	"encoding/json"

	"github.com/sema-agent/sema"
	fstools "github.com/sema-agent/sema/tools/fs"
)

// permitWrite is the write lane's permission station. Until approval seats exist, a
// write that would need a person's answer is refused: bypassPermissions writes freely,
// acceptEdits writes inside the write roots (the fence already keeps writes there), and
// every other mode — and any protected path outside bypassPermissions — is denied with a
// sentence saying how to allow it.
func (l *leg) permitWrite(_ context.Context, req fstools.PermissionRequest) error {
	var err *sema.Error
	switch {
	case l.mode == ModeBypassPermissions:
		return nil
	case req.Protected:
		err = sema.Errorf("permission.denied", "%s is a protected path (%s); writing it needs a person's approval, and no approver is available", req.Path, req.ProtectedReason)
	case l.mode == ModeAcceptEdits:
		return nil
	default:
		err = sema.Errorf("permission.denied", "writing %s needs approval in permission mode %s, and no approver is available; run with --permission-mode acceptEdits to allow edits inside the workspace", req.Path, l.mode)
	}
	input, _ := json.Marshal(map[string]string{"file_path": req.Path})
	l.deny(PermissionDenial{Tool: req.Tool, Input: json.RawMessage(input), Reason: err.Message, Code: err.Code})
	return err
}
