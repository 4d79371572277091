package shell

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/shellscan"
	"github.com/sema-agent/sema/tools"
)

// Tool names, as the model sees them.
const (
	NameBash         = "Bash"          // runs any command, in the foreground or the background
	NameBashReadonly = "bash_readonly" // runs only commands proven read-only inside the read roots
	NameBashOutput   = "BashOutput"    // reads a background task's new output and state
	NameKillShell    = "KillShell"     // stops a background task's process group
)

// Limits and defaults.
const (
	// DefaultTimeout is a command's timeout when the call names none.
	DefaultTimeout = 120 * time.Second
	// MaxTimeout is the longest timeout a call may ask for.
	MaxTimeout = 600 * time.Second
	// OutputKeep is how many characters an answer keeps from each end of a long output.
	OutputKeep = 15000
	// DefaultMaxBackground is how many background tasks may run at once by default.
	DefaultMaxBackground = 5
	// DefaultBackgroundOutputLimit caps a background task's output file by default.
	DefaultBackgroundOutputLimit = 8 << 20
	// KillGrace is how long a process group has between SIGTERM and SIGKILL.
	KillGrace = 2 * time.Second
)

// Codes of the shell tools' error results.
const (
	CodeTimeoutInvalid   = "shell.timeout_invalid"   // timeout outside 1..600000 ms
	CodeTimedOut         = "shell.timed_out"         // the command ran past its timeout and was killed
	CodeBackgroundLimit  = "shell.background_limit"  // too many background tasks are running
	CodeNotReadOnly      = "shell.not_read_only"     // bash_readonly could not prove the command read-only
	CodeTaskUnknown      = "shell.task_unknown"      // no background task has that id
	CodeFilterInvalid    = "shell.filter_invalid"    // BashOutput's filter is not a valid RE2 expression
	CodeStartFailed      = "shell.start_failed"      // the shell could not be started
	CodeClosed           = "shell.closed"            // the tool set was shut down
	CodeOutputUnreadable = "shell.output_unreadable" // a background task's output file cannot be read
)

// Codes of New's refusals.
const (
	CodeEnvMissing      = "config.env_missing"              // Config.Env is nil
	CodeEnvNotExecutor  = "config.env_not_executor"         // Config.Env does not implement env.Executor
	CodeFenceMissing    = "config.fence_missing"            // Config.Fence is nil
	CodeCoAuthorInvalid = "config.commit_co_author_invalid" // Config.CommitCoAuthor is not one line of "Name <email>"
	CodeScratchInvalid  = "config.shell_scratch_invalid"    // the scratch directory cannot be made in Config.ScratchDir
)

// Config is what the shell tools of one leg share. The zero value of every optional
// field is its documented default.
type Config struct {
	// Env runs the commands and must implement env.Executor. Required.
	Env env.ExecutionEnv
	// Fence is the leg's containment: commands start in its task root, the working
	// directory carries only inside its read roots, and bash_readonly places every path
	// it reads inside them. Required.
	Fence *fence.Fence
	// ReadOnly mounts the read-only band: bash_readonly instead of Bash, BashOutput and
	// KillShell. Default false.
	ReadOnly bool
	// ReadonlyAllow replaces bash_readonly's allowlist (Deps.Shell.ReadonlyAllow); nil
	// means shellscan.DefaultReadOnlyAllow. The argument rules of shellscan.ReadOnly
	// hold for every list.
	ReadonlyAllow []string
	// CommitCoAuthor is "Name <email>" (one line, an address with an @): a `git commit`
	// run through Bash gets the trailer "Co-Authored-By: Name <email>". Empty (the
	// default): no trailer.
	CommitCoAuthor string
	// AutoBackgroundOnTimeout adopts an eligible foreground command that hits its own
	// timeout as a background task instead of killing it: no word `git` anywhere in it,
	// not `sleep` as its first word, and a free background slot. Default false: kill.
	AutoBackgroundOnTimeout bool
	// ScratchDir is the directory in which the set makes its own scratch directory
	// (background output, working-directory reports, the co-author hooks). It must be on
	// the machine the commands run on. Empty: os.TempDir().
	ScratchDir string
	// ExtraEnv holds NAME=value entries every command gets on top of the env's own (the
	// settings files' env); the shell's own variables (no pagers or prompts, the set's
	// token) win over them. Default: none.
	ExtraEnv []string
	// EnvPassthrough names variables of sema's environment every command inherits even
	// though the environment rule holds them back (a credential-shaped name or value,
	// an agent socket): exact names and NAME_* prefixes, see env.ParsePassthrough. A
	// provider's key is never passed (config.env_passthrough_refused). Default: none.
	EnvPassthrough []string
	// Shell is the bash to run. Empty: "bash", looked up on the env's PATH.
	Shell string
	// MaxBackground is how many background tasks may run at once. Zero: 5.
	MaxBackground int
	// BackgroundOutputLimit caps each background task's output file, in bytes. Zero: 8 MiB.
	BackgroundOutputLimit int64
	// Permission is the permission gate's seat, asked before a command starts. Nil
	// allows every command.
	Permission PermissionHook
	// Sandbox, when set, confines every command the set starts — Bash, its background
	// tasks, bash_readonly, and every process they start — to what the fence allows,
	// enforced by the kernel (package sandbox). The env must be the host's. Nil: commands
	// run unconfined, and the permission fold's analysis is the only wall.
	Sandbox *Sandbox
	// Changes, when set, records what Bash commands change in the write roots for file
	// history (see ChangeRecorder). Nil: Bash changes are not recorded.
	Changes ChangeRecorder
	// ReadDenial is the judgement of reads by deny rules (the agent hands in its
	// permission gate's): bash_readonly refuses a command naming a path a Read deny rule
	// covers, and one whose unnamed reads (a recursive search, git's object store) could
	// reach such a path. Nil knows no rules; the fence's deny set is judged regardless.
	ReadDenial ReadDenial
}

// ReadDenial judges reads by the deny rules of the permission layer, for bash_readonly:
// the set only reads and runs the command, the judge above it knows the rules. It must
// be safe for concurrent use.
type ReadDenial interface {
	// Denied reports whether a deny rule covering tool ("Read" for a shell command)
	// names the absolute path p.
	Denied(tool, p string) bool
	// ShellRisk names the first read of the script that could reach a denied path
	// although the command does not name it (a recursive search, a glob, git's object
	// store), or "" when there is none; place places the script's targets.
	ShellRisk(ctx context.Context, s *shellscan.Script, place shellscan.Placer) string
}

// PermissionRequest is what the permission gate sees of a command about to run.
type PermissionRequest struct {
	// Tool is Bash or bash_readonly.
	Tool string
	// Command is the command text exactly as it will run.
	Command string
	// Description is the call's own account of what the command does, as the model
	// wrote it; unverified, and empty when the model gave none.
	Description string
	// Dir is the directory the command starts in: relative paths in it are relative to Dir.
	Dir string
	// Timeout is the call's timeout, or DefaultTimeout when it named none.
	Timeout time.Duration
	// RunInBackground reports that Bash will start the command as a background task
	// instead of waiting for it.
	RunInBackground bool
	// ProvenReadOnly reports that bash_readonly proved the command read-only and placed
	// every path it reads inside the read roots.
	ProvenReadOnly bool
}

// PermissionHook answers whether a command may run: nil allows; an error refuses, with
// the code of its *sema.Error (permission.CodeDenied when it has none). A panic refuses
// with tools.CodePermissionFailed.
type PermissionHook func(ctx context.Context, req PermissionRequest) error

// TaskInfo describes a running background task.
type TaskInfo struct {
	// ID is the task's id, "bash_<n>" with n counting from 1 per tool set; the model
	// passes it to BashOutput and KillShell.
	ID string
	// Command is the command text the task runs.
	Command string
	// Description is the model's description of the command, possibly empty.
	Description string
	// PID is the process id of the task's shell, which is also its process group id.
	PID int
	// Started is when the task became a background task: when it started, or, for a
	// command moved to the background at its timeout, when it was moved.
	Started time.Time
	// OutputFile is the file the task's output goes to.
	OutputFile string
}

// Set is the shell tool set of one leg. It owns a scratch directory, the leg's working
// directory and its background tasks. Its methods are safe for concurrent use.
type Set struct {
	cfg     Config
	exec    env.Executor
	root    string
	shell   string
	allow   []string
	scratch string
	token   string       // carried by every command as SEMA_SHELL_SET (stale.go)
	confine *confinement // nil: commands run unconfined
	maxBG   int
	outCap  int64

	trailer     string
	scratchOnce sync.Once // makes the scratch directory (ensureScratch)
	scratchErr  error
	hooksOnce   sync.Once
	hooksDir    string
	hooksErr    error
	fileSeq     atomic.Uint64
	shutdownMu  sync.Mutex // serializes Shutdown
	shutdownRan bool

	mu       sync.Mutex
	cwd      string // canonical; "" means the task root
	closed   bool
	done     chan struct{}  // closed by Shutdown: in-flight foreground calls stop
	calls    sync.WaitGroup // foreground calls and background starts in flight
	tidying  sync.WaitGroup // removals of what ended commands' confinement left (spawn)
	taskSeq  int
	tasks    map[string]*task
	reserved int // background slots promised to calls still starting
}

var coAuthorRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[^<>\x00-\x1f]*[^<>\s\x00-\x1f] <[^<>\s]+@[^<>\s]+>$`)
})

// New builds the shell tool set of a leg and names its scratch directory, which the
// first command makes, after cleaning up, once per process, what dead processes left
// there (CleanStale). Refusals are
// *sema.Error: a missing env or fence, an env that cannot run programs
// (config.env_not_executor), a CommitCoAuthor that is not "Name <email>"
// (config.commit_co_author_invalid), a scratch directory that cannot be made.
func New(cfg Config) (*Set, error) {
	if cfg.Env == nil {
		return nil, sema.Errorf(CodeEnvMissing, "the shell tools need an env; set Config.Env")
	}
	ex, ok := cfg.Env.(env.Executor)
	if !ok {
		return nil, sema.Errorf(CodeEnvNotExecutor, "the env %q cannot run programs (it does not implement env.Executor); mount the shell tools only on an env that can", cfg.Env.Identity())
	}
	if cfg.Fence == nil {
		return nil, sema.Errorf(CodeFenceMissing, "the shell tools need the leg's fence; set Config.Fence")
	}
	if _, err := env.ParsePassthrough(cfg.EnvPassthrough, "Config.EnvPassthrough"); err != nil {
		return nil, err
	}
	s := &Set{
		cfg: cfg, exec: ex, root: cfg.Fence.Root(), shell: cfg.Shell, allow: cfg.ReadonlyAllow,
		maxBG: cfg.MaxBackground, outCap: cfg.BackgroundOutputLimit,
		done: make(chan struct{}), tasks: map[string]*task{},
	}
	if s.shell == "" {
		s.shell = "bash"
	}
	if s.maxBG <= 0 {
		s.maxBG = DefaultMaxBackground
	}
	if s.outCap <= 0 {
		s.outCap = DefaultBackgroundOutputLimit
	}
	if cfg.CommitCoAuthor != "" {
		if !coAuthorRE().MatchString(cfg.CommitCoAuthor) {
			return nil, sema.Errorf(CodeCoAuthorInvalid, "CommitCoAuthor %q is not of the form \"Name <email>\" on one line", cfg.CommitCoAuthor)
		}
		s.trailer = "Co-Authored-By: " + cfg.CommitCoAuthor
	}
	cleanStaleOnce(cfg.ScratchDir)
	token, err := newToken()
	if err != nil {
		return nil, sema.Errorf(CodeScratchInvalid, "the shell tools cannot name their scratch directory (%w)", err)
	}
	if cfg.Sandbox != nil && !cfg.Sandbox.Kernel.Available() {
		return nil, sema.Errorf(sandbox.CodeUnavailable, "commands cannot be confined on this machine: %s", cfg.Sandbox.Kernel.Reason)
	}
	base := cfg.ScratchDir
	if base == "" {
		base = os.TempDir()
	}
	if fi, err := os.Stat(base); err != nil || !fi.IsDir() {
		if err == nil {
			err = fmt.Errorf("not a directory")
		}
		return nil, sema.Errorf(CodeScratchInvalid, "the shell tools cannot make their scratch directory in %q (%w); set Config.ScratchDir to a writable directory", base, err)
	}
	// The directory is named now and made before the first command (ensureScratch): a
	// leg that runs none — most delegated children — makes nothing, and legs starting at
	// once do not queue on the temp directory's lock.
	s.scratch, s.token = filepath.Join(base, scratchPrefix+token[:20]), token
	if cfg.Sandbox != nil {
		s.confine = s.newConfinement(cfg.Sandbox)
	}
	return s, nil
}

// Tools returns the set's tools in the order the model sees them: Bash, BashOutput and
// KillShell, or bash_readonly alone when the set is read-only.
//
// Bash has tools.EffectExec. bash_readonly has tools.EffectRead: a call runs only after
// the command was proven read-only, so calls of it may run concurrently with other
// reads. BashOutput has EffectRead and KillShell EffectExec (it ends processes).
func (s *Set) Tools() []tools.Tool {
	if s.cfg.ReadOnly {
		return []tools.Tool{newReadonlyTool(s)}
	}
	return []tools.Tool{&bashTool{s: s, desc: fmt.Sprintf(bashDescription, s.maxBG)}, &outputTool{s}, &killTool{s}}
}

// ScratchDir is the set's own scratch directory. It is made before the set's first
// command, so it may not exist yet.
func (s *Set) ScratchDir() string { return s.scratch }

// StageDir is where the leg's change recorder keeps the pre-images of what commands
// change. It lies in the scratch directory, which confined commands may read (the
// co-author hooks, the git configuration), and is hidden from them: it holds copies of
// protected and multi-link files the commands themselves may not read.
func (s *Set) StageDir() string { return filepath.Join(s.scratch, "history-stage") }

// Running lists the background tasks still running, oldest first.
func (s *Set) Running() []TaskInfo {
	s.mu.Lock()
	var ts []*task
	for _, t := range s.tasks {
		ts = append(ts, t)
	}
	s.mu.Unlock()
	slices.SortFunc(ts, func(a, b *task) int { return a.seq - b.seq })
	var out []TaskInfo
	for _, t := range ts {
		if t.running() {
			out = append(out, t.info())
		}
	}
	return out
}

// Shutdown stops everything the set runs: in-flight foreground commands and every
// background task, each with the SIGTERM-then-SIGKILL sequence, and removes the scratch
// directory once they are gone. Later calls are refused with shell.closed. It returns
// ctx's error if ctx ends first; the processes are still being stopped then, and the
// scratch directory is kept. Calling it again waits again.
func (s *Set) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.done)
	}
	var ts []*task
	for _, t := range s.tasks {
		ts = append(ts, t)
	}
	s.mu.Unlock()

	all := make(chan struct{})
	go func() {
		var wg sync.WaitGroup
		for _, t := range ts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t.kill()
			}()
		}
		wg.Wait()
		s.calls.Wait()
		s.tidying.Wait()
		close(all)
	}()
	select {
	case <-all:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.shutdownMu.Lock()
	defer s.shutdownMu.Unlock()
	if !s.shutdownRan {
		s.shutdownRan = true
		for _, t := range ts {
			t.out.close()
		}
		// A spare readied for the next command holds the scratch directory (its view
		// and its cache layers' work directories): it goes first.
		env.EndPrimed(s.scratch)
		if s.confine != nil {
			sandbox.SweepCacheWorkWhenFree(s.confine.layer, 2*time.Second)
		}
		if err := os.RemoveAll(s.scratch); err != nil {
			return fmt.Errorf("shell: removing the scratch directory: %w", err)
		}
	}
	return nil
}

// Close is Shutdown without a deadline.
func (s *Set) Close() error { return s.Shutdown(context.Background()) }

// dir is the directory the next Bash command starts in.
func (s *Set) dir() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cwd == "" {
		return s.root
	}
	return s.cwd
}

// ensureScratch makes the scratch directory and its owner file, once, before the first
// command that needs them.
func (s *Set) ensureScratch() error {
	s.scratchOnce.Do(func() {
		if err := os.Mkdir(s.scratch, 0o700); err != nil {
			s.scratchErr = err
			return
		}
		if err := writeOwner(s.scratch, s.token); err != nil {
			os.RemoveAll(s.scratch)
			s.scratchErr = err
		}
	})
	if s.scratchErr != nil {
		return sema.Errorf(CodeScratchInvalid, "the shell tools cannot make their scratch directory %q (%v); set Config.ScratchDir to a writable directory", s.scratch, s.scratchErr)
	}
	return nil
}

// cwdFile names the file a Bash command's trap writes its final directory to: in the
// scratch directory, granted to that command alone — or, confined, in the commands'
// private temp directory, which they may write anyway, so that a leg's commands share
// one policy and a spare can build the next command's confinement ahead from it. Either
// way it is created afresh before the command (createCwdFile) and read without
// following a link (learnCwd).
func (s *Set) cwdFile() string {
	if s.confine != nil && !s.cfg.ReadOnly {
		return filepath.Join(s.confine.tmp, ".sema-cwd-"+fmt.Sprint(s.fileSeq.Add(1)))
	}
	return s.scratchFile("cwd")
}

// scratchFile names a fresh file in the scratch directory.
func (s *Set) scratchFile(prefix string) string {
	return s.scratch + "/" + prefix + "-" + fmt.Sprint(s.fileSeq.Add(1))
}

// permit asks the permission hook, containing its panics.
func (s *Set) permit(ctx context.Context, req PermissionRequest) (res *tools.Result) {
	h := s.cfg.Permission
	if h == nil {
		return nil
	}
	defer func() {
		if v := recover(); v != nil {
			r := tools.Fail(tools.CodePermissionFailed, "The command was not run: the permission check failed (%v).", v)
			res = &r
		}
	}()
	if err := h(ctx, req); err != nil {
		code, msg := tools.CodePermissionDenied, err.Error()
		var se *sema.Error
		if errors.As(err, &se) {
			code, msg = se.Code, se.Message
		}
		r := tools.Fail(code, "The command was not run: %s", msg)
		return &r
	}
	return nil
}

// parseTimeout reads the timeout field: absent is the default; anything else must be a
// whole number of milliseconds from 1 to MaxTimeout.
func parseTimeout(ms *float64) (time.Duration, *tools.Result) {
	if ms == nil {
		return DefaultTimeout, nil
	}
	v := *ms
	if !(v >= 1 && v <= float64(MaxTimeout/time.Millisecond)) {
		r := tools.Fail(CodeTimeoutInvalid, "timeout is %v ms; it must be between 1 and %d milliseconds (10 minutes). Leave it out for the default of %d ms, or use run_in_background for a longer command.",
			v, MaxTimeout/time.Millisecond, DefaultTimeout/time.Millisecond)
		return 0, &r
	}
	return time.Duration(v * float64(time.Millisecond)), nil
}

func cancelledResult(what string) tools.Result {
	return tools.Fail(tools.CodeCancelled, "%s", what)
}

// blank reports whether a command has nothing to run.
func blank(cmd string) bool { return strings.TrimSpace(cmd) == "" }
