package main

import (
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/session/sqlitedb"
	"github.com/sema-agent/sema/statedir"
)

// codeUnexpected names, in a JSON result, an error that came without a code: a failure
// nobody foresaw, which is not a refused command line (cli.usage).
const codeUnexpected = "internal.uncoded"

// storeFaults are the codes of a state directory sema cannot use: the person fixes the
// directory (or names another), not the command line. They exit 1 from every command,
// whatever wraps them.
var storeFaults = []string{
	sqlitedb.CodeCorrupt,
	sqlitedb.CodeReadOnly,
	sqlitedb.CodeLocked,
	sqlitedb.CodeSchemaTooNew,
	sqlitedb.CodeClosed,
	statedir.CodeOpenFailed,
	agent.CodeTranscriptCorrupt,
	// What the machine could not give (disk space, file descriptors, memory): the
	// person fixes the host, not the command line.
	sema.CodeDiskFull,
	sema.CodeFDExhausted,
	sema.CodeNoMemory,
}

// missing are the codes of a command line that names what the store does not hold: a
// session, a checkpoint, a turn. Like any other refused request they exit 2.
var missing = []string{
	session.CodeNotFound,
	session.CodeCheckpointNotFound,
	history.CodeTurnInvalid,
	history.CodeBoundaryNotFound,
}

// exitCode is the exit code of the contract for err, the one table every subcommand
// reads, so that one kind of error exits the same way from `sema run`, `sema sessions`,
// `sema rewind` and `sema approve`:
//
//   - session.busy (anywhere in the chain): 5;
//   - a fault of the state directory or of the host (storeFaults, anywhere in the
//     chain, or an errno of the host's limits under any code — see hostCoded): 1;
//   - a refused request — cli.usage, a config.* code, a session, checkpoint or turn
//     that is not there (missing) — by its outermost code: 2;
//   - an error without a code: 1 — a refusal always has one, so this is a failure
//     nobody foresaw, never the command line's fault;
//   - anything else: fallback, the command's own answer for a coded error it did not
//     expect (1 where the work had started, 2 where `sema run` refuses a spec).
func exitCode(err error, fallback int) int {
	if err == nil {
		return exitOK
	}
	if sema.IsCode(err, session.CodeBusy) {
		return exitBusy
	}
	for _, c := range storeFaults {
		if sema.IsCode(err, c) {
			return exitError
		}
	}
	if sema.HostFault(err, "") != nil {
		return exitError
	}
	code := sema.CodeOf(err)
	if code == "" {
		return exitError
	}
	if code == codeUsage || strings.HasPrefix(code, "config.") {
		return exitUsage
	}
	for _, c := range missing {
		if code == c {
			return exitUsage
		}
	}
	return fallback
}

// failed reports err from a command that printed nothing on stdout for it: the exit
// code is exitCode's (fallback 1), and a program that asked for JSON finds the refusal
// object on stdout, as it does for every refused command line.
func failed(err error) error {
	return &exitErr{code: exitCode(err, exitError), err: err, refusal: true}
}

// hostCoded gives an error caused by the host's limits (ENOSPC, EMFILE, ENOMEM under
// any code, as a file read at startup wraps them) the host's code, keeping its words:
// "config.settings_unreadable" for a file that could not be opened for want of a
// descriptor would send the person to a file with nothing wrong in it. Any other error
// is returned as it is.
func hostCoded(err error) error {
	hf := sema.HostFault(err, "")
	if hf == nil || sema.IsHostCode(sema.CodeOf(err)) {
		return err
	}
	return &sema.Error{Code: hf.Code, Message: sema.MessageOf(err) + "; " + hostAdvice[hf.Code], Err: err}
}

var hostAdvice = map[string]string{
	sema.CodeDiskFull:    "the disk is full: free space and run again",
	sema.CodeFDExhausted: "the process ran out of file descriptors: raise the limit (ulimit -n) and run again",
	sema.CodeNoMemory:    "the machine gave no more memory: free memory and run again",
}
