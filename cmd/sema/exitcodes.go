package main

import (
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/session/sqlitedb"
	"github.com/sema-agent/sema/statedir"
)

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
//   - a fault of the state directory (storeFaults, anywhere in the chain): 1;
//   - a refused request — cli.usage, a config.* code, a session, checkpoint or turn
//     that is not there (missing) — by its outermost code: 2;
//   - anything else: fallback, the command's own answer for an error it did not expect
//     (1 where the work had started, 2 where `sema run` refuses a spec).
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
	code := sema.CodeOf(err)
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
