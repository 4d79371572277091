package env

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"
)

// Executor is implemented by an ExecutionEnv that can run programs. It is optional: an
// env that only offers files (the in-memory and fault-injecting test envs) does not
// implement it, and a leg whose env is not an Executor has no full shell. The shell tools
// start every process through it, never through os/exec.
type Executor interface {
	// Start runs a program and returns without waiting for it. The program runs in a
	// process group of its own, so Process.Signal reaches everything it starts that
	// stays in that group. ctx bounds only the start: the program's life is not tied to
	// ctx, and the caller ends it with Process.Signal. Every started program must be
	// waited for (Process.Wait) and released (Process.Close).
	//
	// A program that cannot be started (no such file, not executable, a Dir that does
	// not exist) is an error and no process exists.
	Start(ctx context.Context, req ExecRequest) (Process, error)
}

// ExecRequest describes one program to run.
type ExecRequest struct {
	// Argv is the program and its arguments; Argv[0] is looked up in the env's PATH when
	// it contains no slash. Required.
	Argv []string
	// Dir is the absolute directory the program starts in. Required.
	Dir string
	// Env holds NAME=value entries set on top of the env's base environment (for the
	// host: this process's environment as Inherit leaves it — no provider key, no
	// credential-shaped name or value, no agent socket — with PWD set to Dir). A later
	// entry for a name replaces an earlier one and the base's. Env itself is not
	// judged: what a caller sets here it sets on purpose.
	Env []string
	// Passthrough names variables of the base environment the program inherits even
	// though the rule holds them back: exact names and NAME_* prefixes (see
	// ParsePassthrough, which refuses an invalid entry and any naming a provider's key).
	// Nil: none.
	Passthrough []string
	// Stdout and Stderr receive the program's output; nil discards it. When both are the
	// same writer the program gets ONE stream for both, so the writer sees the bytes
	// interleaved exactly as they were written. Writes happen on a goroutine of the env;
	// a writer's error is ignored and later output is discarded, so a failing writer
	// never blocks or kills the program.
	Stdout, Stderr io.Writer
	// Stdin is read by a goroutine of the env and written to the program's standard
	// input, which reaches end of file after it; nil gives an empty standard input. The
	// program need not read it: a program that exits (or whose group is killed) without
	// reading ends the writing, and the program's exit is reported without waiting for
	// it.
	Stdin io.Reader
	// Isolate asks for namespaces of the program's own. The zero value asks for none. An
	// Executor that cannot give what is asked refuses to start the program
	// (ErrIsolationUnsupported) rather than run it with less.
	Isolate Isolation
	// ReportsExit says the program reports how it ended before it exits, once nothing it
	// started is left, on the descriptor ExitReportEnv names (package sandbox's helper
	// does, as the init of a PID namespace). Wait then returns with that report, without
	// waiting for the program's own exit — the teardown of its namespaces — and the
	// group counts as gone. An Executor that offers no descriptor ignores it: the
	// program then reports nothing, and Wait waits for its exit.
	ReportsExit bool
	// PrimeKey names a series of starts that mostly share their prelude (a leg's shell
	// commands, confined by one policy): after such a start the host readies a spare
	// primed with its prelude for the next start of the series (see PrimeOn), until
	// EndPrimed(PrimeKey). "": no series. An Executor without spares ignores it.
	PrimeKey string
}

// ExitReportEnv names, in the environment of a program started with ReportsExit, the
// descriptor it writes its report on: "e" and the exit code, or "s" and the number of
// the signal that ended it — what its own exit would say.
const ExitReportEnv = "SEMA_ENV_EXIT_REPORT"

// Isolation names the kernel namespaces a program gets of its own. On the host (Linux)
// they are made when the program is started; a process without privilege gets a user
// namespace too, in which it keeps its own user and group ids and holds the capabilities
// it needs to set the others up (the program must drop them before it runs anything
// untrusted: package sandbox does).
type Isolation struct {
	// Mount: a mount namespace, so mounts the program makes are its own.
	Mount bool
	// Network: a network namespace with only a loopback interface (down until the
	// program brings it up).
	Network bool
	// PID: a PID namespace whose first process (its init) is the program: it sees only
	// the processes it starts, and when it ends the kernel kills every one of them.
	PID bool
}

// ErrIsolationUnsupported is Start's refusal when the Executor cannot make the
// namespaces an ExecRequest asks for.
var ErrIsolationUnsupported = errors.New("env: this executor cannot isolate a program in namespaces of its own")

// ExitStatus is how a program ended.
type ExitStatus struct {
	// Code is the exit code of a program that exited, and -1 for one a signal ended.
	Code int
	// Signal is the signal that ended the program, 0 when it exited by itself.
	Signal syscall.Signal
}

// Process is a started program.
type Process interface {
	// PID is the program's process id; on the host it is also its process group id.
	PID() int
	// Wait blocks until the program itself has exited and returns how it ended. It does
	// not wait for processes the program left running in its group, nor for their output.
	// It may be called any number of times, also concurrently; every call returns the
	// same answer.
	Wait() (ExitStatus, error)
	// Signal delivers sig to every process in the program's group. Signal 0 delivers
	// nothing and reports whether any live process remains (exited processes not yet
	// reaped by their parent do not count). When no live process remains the answer is
	// ErrProcessDone.
	Signal(sig syscall.Signal) error
	// Close delivers the output already written to the streams, then stops: when it
	// returns, nothing more is written to Stdout or Stderr, and output written later by
	// processes still holding the streams is discarded. It signals nothing. Call it after
	// Wait; calling it more than once is harmless.
	Close() error
}

// ErrProcessDone is Process.Signal's answer when no live process remains in the group. It
// is os.ErrProcessDone, so either name matches with errors.Is.
var ErrProcessDone = os.ErrProcessDone
