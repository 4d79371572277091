package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sema-agent/sema/env"
)

// Run runs the hooks of s that match event and target, in parallel, and merges their
// answers in declaration order. in.HookEventName is set to event. It returns when every
// hook has ended: a command that outlives its timeout, or ctx, is killed with its
// process group, and so is whatever a command left running when it exited; a Func that
// outlives its timeout is abandoned (its goroutine ends when it returns) and counts as
// timed out.
func (s *Set) Run(ctx context.Context, r *Runner, event Event, target string, in Input) Result {
	list := s.Matching(event, target)
	if len(list) == 0 {
		return Result{}
	}
	if r == nil {
		r = &Runner{}
	}
	in.HookEventName = event
	stdin, err := json.Marshal(in)
	if err != nil {
		// Only a ToolInput or ToolResponse that is not JSON gets here.
		res := Result{Ran: len(list)}
		for _, h := range list {
			res.Failures = append(res.Failures, Failure{Hook: h, Why: "could not be given its input: " + err.Error()})
		}
		return res
	}
	answers := make([]answer, len(list))
	if len(list) == 1 {
		answers[0] = r.run(ctx, list[0], event, in, stdin)
	} else {
		var wg sync.WaitGroup
		for i, h := range list {
			wg.Go(func() { answers[i] = r.run(ctx, h, event, in, stdin) })
		}
		wg.Wait()
	}
	return merge(event, list, answers)
}

// answer is what one hook said.
type answer struct {
	// failure is set for a hook that failed; nothing else counts then.
	failure *Failure
	// blocked is exit code 2, with stderr as the reason.
	blocked bool
	stderr  string
	// plain is an exit-0 stdout that is not JSON.
	plain string
	// out is the JSON answer of an exit-0 command or a Func.
	out    Output
	hasOut bool
}

func (r *Runner) run(ctx context.Context, h Hook, event Event, in Input, stdin []byte) answer {
	timeout := h.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	if h.Func != nil {
		return runFunc(ctx, h, event, in, timeout)
	}
	return r.command(ctx, h, event, stdin, timeout)
}

func failed(h Hook, timedOut bool, format string, args ...any) answer {
	return answer{failure: &Failure{Hook: h, Why: fmt.Sprintf(format, args...), TimedOut: timedOut}}
}

// command runs a command hook: /bin/sh -c in the project directory, the input on stdin,
// confined by Wrap, killed with its group at the timeout and after it exits.
func (r *Runner) command(ctx context.Context, h Hook, event Event, stdin []byte, timeout time.Duration) answer {
	if r.Exec == nil {
		return failed(h, false, "could not run: this environment runs no programs")
	}
	limit := r.OutputCap
	if limit <= 0 {
		limit = DefaultOutputCap
	}
	stdout, stderr := &capped{max: limit}, &capped{max: limit}
	environ := make([]string, 0, len(r.Env)+2)
	environ = append(environ, r.Env...)
	environ = append(environ, "CLAUDE_PROJECT_DIR="+r.ProjectDir, "SEMA_PROJECT_DIR="+r.ProjectDir)
	req := env.ExecRequest{
		Argv: []string{"/bin/sh", "-c", h.Command},
		Dir:  r.ProjectDir,
		Env:  environ,
		// The rest of sema's environment goes through the host's rule: no key, no
		// credential-shaped variable, unless passed through.
		Passthrough: r.EnvPassthrough,
		Stdin:       bytes.NewReader(stdin),
		Stdout:      stdout,
		Stderr:      stderr,
	}
	if r.Wrap != nil {
		var err error
		if req, err = r.Wrap(req); err != nil {
			return failed(h, false, "could not be confined by the sandbox: %v", err)
		}
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p, err := r.Exec.Start(tctx, req)
	if err != nil {
		return failed(h, false, "could not start: %v", err)
	}
	exited := make(chan struct{})
	var st env.ExitStatus
	var werr error
	go func() {
		st, werr = p.Wait()
		close(exited)
	}()
	var stopped error
	select {
	case <-exited:
	case <-tctx.Done():
		stopped = tctx.Err()
		p.Signal(syscall.SIGKILL)
		<-exited
	}
	// What the hook left running in its group goes with it: a hook is one answer, not a
	// way to start daemons.
	p.Signal(syscall.SIGKILL)
	p.Close()
	switch {
	case stopped != nil && ctx.Err() != nil:
		return failed(h, false, "was stopped: the run ended while it ran")
	case stopped != nil:
		return failed(h, true, "timed out after %v and was killed with its process group", timeout)
	case werr != nil:
		return failed(h, false, "could not be waited for: %v", werr)
	case st.Signal != 0:
		return failed(h, false, "was killed by signal %v%s", st.Signal, tail(stderr))
	case st.Code == 2:
		return answer{blocked: true, stderr: strings.TrimSpace(stderr.String())}
	case st.Code != 0:
		return failed(h, false, "exited with status %d%s", st.Code, tail(stderr))
	}
	if stdout.over {
		return failed(h, false, "printed more than %d bytes on stdout", limit)
	}
	return stdoutAnswer(h, event, stdout.String())
}

// stdoutAnswer reads the stdout of a command that exited 0: JSON when it begins with
// "{" (and then it must be the protocol's), plain text otherwise.
func stdoutAnswer(h Hook, event Event, stdout string) answer {
	text := strings.TrimSpace(stdout)
	if !strings.HasPrefix(text, "{") {
		return answer{plain: text}
	}
	var o Output
	if err := json.Unmarshal([]byte(text), &o); err != nil {
		return failed(h, false, "printed JSON that is not the hooks protocol's: %v", err)
	}
	if err := o.check(event); err != nil {
		return failed(h, false, "answered %v", err)
	}
	return answer{out: o, hasOut: true}
}

// tail is ": " and the first line of a failed command's stderr, for its failure.
func tail(stderr *capped) string {
	s := strings.TrimSpace(stderr.String())
	if s == "" {
		return ""
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return ": " + s
}

// runFunc calls a Go hook with the timeout on its context; a panic is its failure.
func runFunc(ctx context.Context, h Hook, event Event, in Input, timeout time.Duration) answer {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan answer, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				done <- failed(h, false, "panicked: %v", v)
			}
		}()
		o, err := h.Func(tctx, in)
		switch {
		case err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			done <- failed(h, true, "timed out after %v", timeout)
		case err != nil:
			done <- failed(h, false, "failed: %v", err)
		default:
			if err := o.check(event); err != nil {
				done <- failed(h, false, "answered %v", err)
				return
			}
			done <- answer{out: o, hasOut: true}
		}
	}()
	select {
	case a := <-done:
		return a
	case <-tctx.Done():
		if ctx.Err() != nil {
			return failed(h, false, "was stopped: the run ended while it ran")
		}
		return failed(h, true, "timed out after %v and was abandoned", timeout)
	}
}

// check refuses an answer the protocol does not have, so that a hook whose answer
// cannot be read never counts as one that said nothing.
func (o *Output) check(event Event) error {
	switch o.Decision {
	case "", "block", "approve":
	default:
		return fmt.Errorf(`decision %q; it is "block" or absent`, o.Decision)
	}
	hs := o.HookSpecificOutput
	if hs == nil {
		return nil
	}
	if hs.HookEventName != "" && hs.HookEventName != event {
		return fmt.Errorf("hookSpecificOutput for %s at a %s event", hs.HookEventName, event)
	}
	switch hs.PermissionDecision {
	case "", "allow", "deny", "ask":
	default:
		return fmt.Errorf(`permissionDecision %q; it is "allow", "deny" or "ask"`, hs.PermissionDecision)
	}
	if u := bytes.TrimSpace(hs.UpdatedInput); len(u) > 0 && !bytes.Equal(u, []byte("null")) && u[0] != '{' {
		return errors.New("an updatedInput that is not a JSON object")
	}
	return nil
}

// merge folds the answers of one event's hooks, in declaration order, into a Result.
func merge(event Event, list []Hook, answers []answer) Result {
	res := Result{Ran: len(list)}
	var block, stop []string
	rank := 0 // of res.Permission: 1 allow, 2 ask, 3 deny
	var permReasons []string
	permit := func(decision, reason string) {
		r := map[string]int{"allow": 1, "ask": 2, "deny": 3}[decision]
		switch {
		case r > rank:
			rank, res.Permission, permReasons = r, decision, nil
			fallthrough
		case r == rank:
			if reason != "" {
				permReasons = append(permReasons, reason)
			}
		}
	}
	var updated any
	for _, a := range answers {
		if a.failure != nil {
			res.Failures = append(res.Failures, *a.failure)
			continue
		}
		if a.blocked {
			res.Block = true
			reason := a.stderr
			if reason == "" {
				reason = "blocked by a hook (exit code 2) that gave no reason"
			}
			block = append(block, reason)
			if event == PreToolUse {
				permit("deny", reason)
			}
			continue
		}
		if a.plain != "" {
			if event == UserPromptSubmit || event == SessionStart {
				res.Context = append(res.Context, a.plain)
			} else {
				res.Messages = append(res.Messages, a.plain)
			}
		}
		if !a.hasOut {
			continue
		}
		o := a.out
		if o.Continue != nil && !*o.Continue {
			res.Stop = true
			if o.StopReason != "" {
				stop = append(stop, o.StopReason)
			}
		}
		if o.SystemMessage != "" {
			res.Messages = append(res.Messages, o.SystemMessage)
		}
		switch {
		case event == PreToolUse && o.Decision == "block":
			permit("deny", o.Reason)
		case event == PreToolUse && o.Decision == "approve":
			permit("allow", o.Reason)
		case o.Decision == "block":
			res.Block = true
			block = append(block, o.Reason)
		}
		hs := o.HookSpecificOutput
		if hs == nil {
			continue
		}
		if event == PreToolUse {
			if hs.PermissionDecision != "" {
				permit(hs.PermissionDecision, hs.PermissionDecisionReason)
			}
			if u := bytes.TrimSpace(hs.UpdatedInput); len(u) > 0 && !bytes.Equal(u, []byte("null")) {
				var v any
				if json.Unmarshal(u, &v) == nil {
					if updated == nil {
						updated, res.UpdatedInput = v, json.RawMessage(u)
					} else if !jsonEqual(updated, v) {
						res.Conflict = true
					}
				}
			}
		}
		if hs.AdditionalContext != "" {
			res.Context = append(res.Context, hs.AdditionalContext)
		}
	}
	res.BlockReason = strings.TrimSpace(strings.Join(block, "\n"))
	res.StopReason = strings.Join(stop, "\n")
	res.PermissionReason = strings.Join(permReasons, "\n")
	return res
}

// jsonEqual compares two decoded JSON values: objects by members, whatever their order.
func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a) // maps marshal with sorted keys
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// capped keeps the first max bytes written to it and notes that more came. The env
// writes to it from one goroutine and Close waits for that goroutine, so reading after
// Close needs no lock.
type capped struct {
	max  int
	buf  bytes.Buffer
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room < len(p) {
		c.over = true
		if room > 0 {
			c.buf.Write(p[:room])
		}
		return len(p), nil
	}
	c.buf.Write(p)
	return len(p), nil
}

func (c *capped) String() string { return c.buf.String() }

// MarshalJSON writes the input as Claude Code sends it for in.HookEventName: the common
// fields, and the event's own — stop_hook_active is present (false or true) for Stop
// and SubagentStop, custom_instructions (maybe empty) for PreCompact.
func (in Input) MarshalJSON() ([]byte, error) {
	type wire struct {
		SessionID          string          `json:"session_id"`
		TranscriptPath     string          `json:"transcript_path,omitempty"`
		Cwd                string          `json:"cwd"`
		PermissionMode     string          `json:"permission_mode,omitempty"`
		HookEventName      Event           `json:"hook_event_name"`
		ToolName           string          `json:"tool_name,omitempty"`
		ToolInput          json.RawMessage `json:"tool_input,omitempty"`
		ToolResponse       json.RawMessage `json:"tool_response,omitempty"`
		ToolUseID          string          `json:"tool_use_id,omitempty"`
		Error              string          `json:"error,omitempty"`
		Prompt             *string         `json:"prompt,omitempty"`
		StopHookActive     *bool           `json:"stop_hook_active,omitempty"`
		Source             string          `json:"source,omitempty"`
		Reason             string          `json:"reason,omitempty"`
		Trigger            string          `json:"trigger,omitempty"`
		CustomInstructions *string         `json:"custom_instructions,omitempty"`
		Message            string          `json:"message,omitempty"`
		NotificationType   string          `json:"notification_type,omitempty"`
		AgentID            string          `json:"agent_id,omitempty"`
		AgentType          string          `json:"agent_type,omitempty"`
	}
	w := wire{
		SessionID: in.SessionID, TranscriptPath: in.TranscriptPath, Cwd: in.Cwd, PermissionMode: in.PermissionMode,
		HookEventName: in.HookEventName, ToolName: in.ToolName, ToolInput: in.ToolInput, ToolResponse: in.ToolResponse,
		ToolUseID: in.ToolUseID, Error: in.Error, Source: in.Source, Reason: in.Reason, Trigger: in.Trigger,
		Message: in.Message, NotificationType: in.NotificationType, AgentID: in.AgentID, AgentType: in.AgentType,
	}
	switch in.HookEventName {
	case UserPromptSubmit:
		w.Prompt = &in.Prompt
	case Stop, SubagentStop:
		w.StopHookActive = &in.StopHookActive
	case PreCompact:
		w.CustomInstructions = &in.CustomInstructions
	}
	return json.Marshal(w)
}
