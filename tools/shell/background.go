package shell

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/tools"
)

// task is one background task.
type task struct {
	seq         int
	id          string
	command     string
	description string
	started     time.Time
	pr          *proc
	out         *outFile
	path        string
	cwdFile     string // an adopted command's trap file, removed when it ends

	mu      sync.Mutex // serializes BashOutput reads and guards the fields below
	readOff int64
	killed  bool // stopped by KillShell or Shutdown before the shell exited
	done    chan struct{}
}

func (t *task) running() bool {
	select {
	case <-t.done:
		return false
	default:
		return true
	}
}

func (t *task) info() TaskInfo {
	return TaskInfo{ID: t.id, Command: t.command, Description: t.description, PID: t.pr.p.PID(), Started: t.started, OutputFile: t.path}
}

// kill stops the task's group and waits until the task has ended.
func (t *task) kill() {
	t.mu.Lock()
	select {
	case <-t.pr.exited:
	default:
		t.killed = true
	}
	t.mu.Unlock()
	select {
	case <-t.done:
		return
	default:
	}
	terminate(t.pr.p)
	<-t.done
}

// status describes how the task stands.
func (t *task) status() string {
	if t.running() {
		return "running (started " + time.Since(t.started).Round(time.Second).String() + " ago)"
	}
	t.mu.Lock()
	killed := t.killed
	t.mu.Unlock()
	if killed {
		return "killed"
	}
	return describeExit(t.pr.status)
}

func describeExit(st env.ExitStatus) string {
	if st.Signal != 0 {
		return fmt.Sprintf("ended by signal %d (%v)", int(st.Signal), st.Signal)
	}
	return fmt.Sprintf("exited with code %d", st.Code)
}

// watch waits for a task's shell, stops what it left in its group, delivers the output
// and marks the task ended.
func (s *Set) watch(t *task) {
	t.pr.settle()
	if t.cwdFile != "" {
		os.Remove(t.cwdFile)
	}
	close(t.done)
}

// runningLocked counts the tasks still running; s.mu is held.
func (s *Set) runningLocked() int {
	n := 0
	for _, t := range s.tasks {
		if t.running() {
			n++
		}
	}
	return n
}

// reserve promises a background slot to a call that is about to start a task, or
// refuses. A reservation is released by unreserve.
func (s *Set) reserve() *tools.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		r := closedResult()
		return &r
	}
	if s.runningLocked()+s.reserved >= s.maxBG {
		r := tools.Fail(CodeBackgroundLimit, "%d background tasks are already running, the most this session allows; wait for one to finish (BashOutput shows its status) or stop one with KillShell, then start this one again.", s.maxBG)
		return &r
	}
	s.reserved++
	s.calls.Add(1)
	return nil
}

func (s *Set) unreserve() {
	s.mu.Lock()
	s.reserved--
	s.mu.Unlock()
	s.calls.Done()
}

// registerLocked names and records a task; s.mu is held.
func (s *Set) registerLocked(pr *proc, out *outFile, path, command, description, cwdFile string) *task {
	s.taskSeq++
	t := &task{
		seq: s.taskSeq, id: fmt.Sprintf("bash_%d", s.taskSeq), command: command, description: description,
		started: time.Now(), pr: pr, out: out, path: path, cwdFile: cwdFile, done: make(chan struct{}),
	}
	s.tasks[t.id] = t
	return t
}

// startBackground starts a command as a background task.
func (s *Set) startBackground(ctx context.Context, in bashInput, dir, hooks string, timeout time.Duration, notes []string) tools.Result {
	if r := s.reserve(); r != nil {
		return *r
	}
	defer s.unreserve()
	if r := s.permit(ctx, PermissionRequest{Tool: NameBash, Command: in.Command, Description: in.Description, Dir: dir, Timeout: timeout, RunInBackground: true}); r != nil {
		return *r
	}
	if ctx.Err() != nil {
		return cancelledResult("The call was cancelled before the command started; nothing ran.")
	}
	_, snapNotes, refused := s.snapshotBefore(ctx, in.Command, true)
	if refused != nil {
		return *refused
	}
	notes = append(notes, snapNotes...)
	if err := s.ensureScratch(); err != nil {
		return tools.FromError(err, CodeStartFailed)
	}
	path := s.scratchFile("bg") + ".out"
	out, err := createOutFile(path, s.outCap)
	if err != nil {
		return tools.Fail(CodeStartFailed, "The background task could not be started: its output file cannot be created (%v).", err)
	}
	pr, err := s.spawn(ctx, dir, prelude("", hooks)+in.Command, nil, "", out)
	if err != nil {
		out.close()
		os.Remove(path)
		return tools.Fail(CodeStartFailed, "The shell could not be started: %v", err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		pr.stop()
		out.close()
		os.Remove(path)
		return closedResult()
	}
	t := s.registerLocked(pr, out, path, in.Command, in.Description, "")
	s.mu.Unlock()
	go s.watch(t)
	msg := fmt.Sprintf("Started %s in the background (process group %d). Read its output with BashOutput {\"bash_id\": %q}; stop it with KillShell {\"shell_id\": %q}.", t.id, pr.p.PID(), t.id, t.id)
	return tools.Text(withNotes(msg, notes))
}

// adopt turns a foreground command that ran past its timeout into a background task,
// when a slot is free. It returns the task and the output captured so far.
func (s *Set) adopt(pr *proc, out *sink, command, description, cwdFile string) (*task, string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.runningLocked()+s.reserved >= s.maxBG {
		return nil, "", false
	}
	path := s.scratchFile("bg") + ".out"
	f, err := createOutFile(path, s.outCap)
	if err != nil {
		return nil, "", false
	}
	text, shown := out.handOver(f)
	t := s.registerLocked(pr, f, path, command, description, cwdFile)
	// What the adopting answer shows is not new to the model.
	t.readOff = shown
	go s.watch(t)
	return t, text, true
}

func (s *Set) task(id string) (*task, *tools.Result) {
	s.mu.Lock()
	t := s.tasks[id]
	var ids []string
	if t == nil {
		for k := range s.tasks {
			ids = append(ids, k)
		}
	}
	s.mu.Unlock()
	if t != nil {
		return t, nil
	}
	known := "none was started in this session"
	if len(ids) > 0 {
		slices.Sort(ids)
		known = "the tasks of this session are " + strings.Join(ids, ", ")
	}
	r := tools.Fail(CodeTaskUnknown, "No background task is named %q; %s.", id, known)
	return nil, &r
}

// ---- BashOutput ----

type outputTool struct{ s *Set }

type outputInput struct {
	BashID string `json:"bash_id"`
	Filter string `json:"filter"`
}

const outputDescription = `Returns the output a background task (started with Bash and run_in_background, or moved to the background at its timeout) wrote since the last BashOutput call for it, and whether it is still running, exited with a code, or was killed.

- bash_id is the task's id, such as "bash_1".
- filter, optional, is a regular expression (RE2 syntax): only lines that match it are returned. Lines that do not match are discarded and will not be returned by a later call. While the task runs, a filtered read returns only complete lines.
- The answer keeps the first and last 15000 characters of the new output. A task's output is kept up to 8 MiB; beyond that it is dropped, and the answer says so.`

var outputSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "bash_id": {"type": "string", "description": "The id of the background task, such as bash_1."},
    "filter": {"type": "string", "description": "Optional regular expression (RE2): only matching lines are returned; the others are discarded."}
  },
  "required": ["bash_id"],
  "additionalProperties": false
}`)

func (t *outputTool) Spec() tools.Spec {
	return tools.Spec{Name: NameBashOutput, Description: outputDescription, InputSchema: outputSchema, Effect: tools.EffectRead}
}

func (t *outputTool) Run(ctx context.Context, input json.RawMessage) tools.Result {
	var in outputInput
	if err := tools.Decode(input, &in); err != nil {
		return tools.FromError(err, tools.CodeInputInvalid)
	}
	var re *regexp.Regexp
	if in.Filter != "" {
		var err error
		if re, err = regexp.Compile(in.Filter); err != nil {
			return tools.Fail(CodeFilterInvalid, "The filter %q is not a valid regular expression (RE2 syntax): %v", in.Filter, err)
		}
	}
	if ctx.Err() != nil {
		return cancelledResult("The call was cancelled; no output was read.")
	}
	if t.s.isClosed() {
		return closedResult()
	}
	task, bad := t.s.task(in.BashID)
	if bad != nil {
		return *bad
	}
	return task.read(re)
}

// read returns the task's new output and status. The status is taken before the output
// is read: a task seen ended has delivered all of its output.
func (t *task) read(re *regexp.Regexp) tools.Result {
	running := t.running()
	status := t.status()
	t.mu.Lock()
	defer t.mu.Unlock()
	written, dropped := t.out.state()
	data, err := t.out.readAt(t.readOff, written-t.readOff)
	if err != nil {
		return tools.Fail(CodeOutputUnreadable, "The output of %s cannot be read: %v", t.id, err)
	}
	if running && re != nil {
		// A line still being written is left for the next read, so the filter judges
		// whole lines only.
		data = data[:bytes.LastIndexByte(data, '\n')+1]
	}
	t.readOff += int64(len(data))
	if re != nil {
		var kept []byte
		for line := range bytes.Lines(data) {
			if re.Match(bytes.TrimSuffix(line, []byte("\n"))) {
				kept = append(kept, line...)
			}
		}
		data = kept
	}
	c := newCapture(OutputKeep)
	c.Write(data)
	body := strings.TrimRight(c.String(), "\n")
	if body == "" {
		body = "(no new output)"
	}
	notes := []string{"Status of " + t.id + ": " + status + "."}
	if dropped > 0 {
		notes = append(notes, fmt.Sprintf("The task's output passed the %d-byte limit of its output file; %d bytes after it were dropped.", t.out.limit, dropped))
	}
	return tools.Text(withNotes(body, notes))
}

// ---- KillShell ----

type killTool struct{ s *Set }

type killInput struct {
	ShellID string `json:"shell_id"`
}

const killDescription = `Stops a background task: its shell and every process in its process group get SIGTERM, and SIGKILL two seconds later if they have not ended. shell_id is the task's id, such as "bash_1". Stopping a task that already ended changes nothing.`

var killSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "shell_id": {"type": "string", "description": "The id of the background task to stop, such as bash_1."}
  },
  "required": ["shell_id"],
  "additionalProperties": false
}`)

func (t *killTool) Spec() tools.Spec {
	return tools.Spec{Name: NameKillShell, Description: killDescription, InputSchema: killSchema, Effect: tools.EffectExec}
}

func (t *killTool) Run(ctx context.Context, input json.RawMessage) tools.Result {
	var in killInput
	if err := tools.Decode(input, &in); err != nil {
		return tools.FromError(err, tools.CodeInputInvalid)
	}
	if ctx.Err() != nil {
		return cancelledResult("The call was cancelled; no task was stopped.")
	}
	task, bad := t.s.task(in.ShellID)
	if bad != nil {
		return *bad
	}
	if !task.running() {
		return tools.Text(fmt.Sprintf("%s had already ended (%s); nothing was stopped.", task.id, task.status()))
	}
	task.kill()
	return tools.Text(fmt.Sprintf("Stopped %s: %s.", task.id, task.status()))
}

func (s *Set) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func closedResult() tools.Result {
	return tools.Fail(CodeClosed, "The shell tools of this run have shut down; no command can be started.")
}

// withNotes appends notes to an answer's body, after a blank line.
func withNotes(body string, notes []string) string {
	if len(notes) == 0 {
		return body
	}
	return body + "\n\n" + strings.Join(notes, "\n")
}
