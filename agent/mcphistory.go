package agent

import (
	"context"
	"encoding/json"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/mcp"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/tools"
)

// runTool's last step. An MCP tool's work happens in its server, a process that may
// write the workspace as a Bash command may (a filesystem server, a code generator): its
// call is walked before and after like a command (bashChanges), so what it created,
// changed or deleted in the write roots is in file history at the call's turn, a rewind
// restores it, and what it did to protected paths without a person's approval is put
// back. Only a deployment's declaration that the tool reads (MCPOptions.ToolEffects)
// spares the walks; a server's own read-only hint is a claim, not a declaration.
func (l *leg) runObserved(ctx context.Context, t tools.Tool, name string, input json.RawMessage) tools.Result {
	if l.bashChanges == nil || !mcp.IsTool(t) {
		return t.Run(ctx, input)
	}
	if e, ok := l.declaredEffect(name); ok && e == tools.EffectRead {
		return t.Run(ctx, input)
	}
	rec := lazyBoundary{l.bashChanges}
	if _, err := rec.Before(ctx, false); err != nil {
		return tools.Fail(CodeBashUnrecorded, "The call was not run: the workspace could not be snapshotted for file history first (%s), and a change that cannot be undone is not made.", sema.MessageOf(err))
	}
	res := t.Run(ctx, input)
	for _, n := range rec.After(ctx) {
		res.Content = append(res.Content, model.TextBlock(n))
	}
	return res
}
