// Package shell holds the shell tools of a leg: Bash (with background tasks read by
// BashOutput and stopped by KillShell) for an ordinary leg, and bash_readonly for the
// read-only band. Commands run through the leg's env (env.Executor), never os/exec, and
// command text is understood only through package shellscan.
//
// # Invariants
//
//   - Every command runs as `bash --noprofile --norc -p -c`: no startup file, no $BASH_ENV,
//     no function imported from the environment, so a name in the command means the
//     program of that name. Standard input is empty.
//   - Every command runs in a process group of its own, and no process of that group
//     outlives the call that owns it: when the shell exits, when its timeout passes, when
//     the call's context ends, when KillShell stops it, or when the set shuts down, the
//     whole group gets SIGTERM (and SIGCONT, so a stopped process can act on it), and
//     SIGKILL two seconds later if any process of it is still alive. A process that
//     leaves its group (setsid, a daemon's double fork) is still below the command's
//     reaper on the host (or in its PID namespace, confined), which ends it the same way
//     once the shell has exited; a background task owns its group until the task ends.
//     The groups die with the process that runs the set, even when it is killed with
//     SIGKILL: the host env kills them then, and the reapers what left them
//     (env.Host.Start), and should that fail too, the next set made in the same scratch
//     parent kills what a dead process left in its groups and removes its scratch
//     directory (CleanStale).
//   - Output is one stream: stdout and stderr share a pipe, so the answer shows them
//     interleaved as written. A foreground answer keeps the first and the last 15,000
//     characters and names how many were elided between them. A background task's output
//     goes to a file in the set's scratch directory, capped (8 MiB by default); what is
//     dropped beyond the cap is counted and announced.
//   - The command text is run as written. The set adds only its own lines in front of it:
//     the EXIT trap that reports the final working directory and, with CommitCoAuthor, the
//     git configuration that adds the co-author trailer (see below).
//   - The working directory carries from one Bash call of a leg to the next only while it
//     is a directory inside the read roots; otherwise the next call starts in the task
//     root and the answer says so. The directory is learned from `pwd -P`, written by an
//     EXIT trap to a file in the scratch directory, never from the command's output. A
//     command that replaces the shell (exec) or removes the trap leaves the directory
//     unchanged. Environment variables never carry.
//   - bash_readonly runs a command only when shellscan.ReadOnly proves it read-only and
//     every path it could read lies inside the read roots (see the tool's description
//     for the rules); anything it cannot prove is refused, never guessed.
//   - Every call answers with a tools.Result; a failure the model should see is an error
//     Result with a stable code, never a panic or a Go error.
//
// # The co-author trailer
//
// With Config.CommitCoAuthor set, a Bash command that has a `git commit` segment (found by
// shellscan, through wrappers) runs with the git configuration core.hooksPath pointing at
// a hooks directory of the set, passed through git's GIT_CONFIG_COUNT environment
// variables (appended after any the environment already holds). Every hook there runs the
// repository's own hook of the same name, found as git would find it without the
// override; prepare-commit-msg then adds the trailer with `git interpret-trailers
// --if-exists addIfDifferent`. prepare-commit-msg runs also under --no-verify, so the
// trailer is added to every commit made with a message, amend included, and never twice;
// merge and squash messages are left alone. The user's message is otherwise untouched.
// Not covered: commits made by a program the command runs (a script calling git commit),
// a command that sets GIT_CONFIG_COUNT itself, and git older than 2.31.
//
// # Background tasks
//
// run_in_background, and the adoption of a timed-out command under
// AutoBackgroundOnTimeout, start a task named bash_1, bash_2, … At most MaxBackground
// (default 5) run at once. Shutdown stops every task the set still runs; Running lists
// them for a runner that keeps them past the leg.
package shell
