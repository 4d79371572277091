package sandbox

import "context"

type approvalKey struct{}

// WithApproval marks ctx as the context of a call a person approved — that exact call.
// Its command may write the protected paths the policy otherwise keeps read-only.
func WithApproval(ctx context.Context) context.Context {
	return context.WithValue(ctx, approvalKey{}, true)
}

// Approved reports whether ctx is that of a call a person approved.
func Approved(ctx context.Context) bool {
	ok, _ := ctx.Value(approvalKey{}).(bool)
	return ok
}
