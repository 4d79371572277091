// Package gate is the permission engine the runner drives: the mode table, the mode
// controller and its plan tools, the arbitration fold, the answering of asks (approver
// and auto classifier), and the judgement of reads the tools ask again. It speaks the
// vocabulary of package gate (modes, rules, calls, decisions, hooks, approvers),
// which is what an embedder configures; nothing here is needed to embed sema. Shell
// command text is analyzed by package shellscan; rules are compiled by rulematch.
//
// # The fold
//
// Gate.Decide reduces the layers of a leg's permissions to one Decision (allow, deny or
// ask, with a Reason and a sentence). The first station that decides ends the fold:
//
//  1. deny rules → deny, in every mode (bypassPermissions included); a shell command
//     that touches the fence's deny set is refused here too; while a Bash command deny
//     rule is in force, a command that may run a program its text does not show is a
//     person-only question (never an allow; refused where nobody can answer);
//  2. PreToolUse hooks: deny → deny; ask → ask; allow (with an optional rewrite of the
//     input) is remembered and the fold goes on with the rewrite, which meets the deny
//     rules again. A hook's error or panic denies (fail closed);
//  3. ask rules → ask; while a Bash command ask rule is in force, so is a command that may
//     run a program its text does not show;
//  4. the plan gate (plan mode): a covered write outside the exempt directories, or a
//     call to a tool the engine does not define that is not read-only, is the mode's
//     own question (Reason mode); ExitPlanMode is the plan_review question;
//  5. the safety stations: the delete guard in every mode (removing "/", the home
//     directory, a root, or an ancestor of one, or a removal that cannot be placed);
//     outside bypassPermissions also protected paths, writes outside the write roots or
//     that cannot be placed, and reads outside the read roots;
//  6. a hook's allow → allow; allow rules → allow;
//  7. the mode's own answer: bypassPermissions → allow; acceptEdits → a covered write
//     inside the write roots, and a shell command made only of plain file commands whose
//     every target is placed inside the write roots; any mode → a read-only tool and a
//     shell command the analyzer proves read-only whose reads are inside the read roots;
//  8. the ordinary question → ask: a covered write, a shell command, an unstated call
//     under a mode whose unstated answer is ask; otherwise allow.
//
// A call to a tool that requires a person for every call (Call.RequiresUserInteraction)
// leaves the fold as a person-only question whatever station answered it, unless that
// answer is a deny.
//
// An ask is answered by AnswerAsk (Gate.Answer): dontAsk refuses it; auto's classifier
// answers it unless it is person-only; otherwise the Approver; with no approver it is
// refused with a sentence saying how to allow the call.
//
// # Invariants
//
//   - A deny rule is never outranked: no hook, mode, rule, classifier or approver turns
//     a call a deny rule names into an allow. An approver's or a hook's rewrite of the
//     input meets the deny rules again.
//   - Questions of stations 4 and 5 are person-only (Decision.PersonOnly): no rule, hook
//     allow, classifier or mode answers them. So is every call to a tool that requires a
//     person for every call, in every mode, bypassPermissions included.
//   - A tool's read-only claim (Call.ReadOnlyHint) counts only where nobody declared its
//     effect (Call.EffectDefaulted), and only for the plan gate's question.
//   - Paths are compared by canonical components (fence.Contains), never by string
//     prefix. A deny or ask path rule names a target when its spelled path or its
//     canonical path matches; an allow path rule must match both.
//   - Shell commands are judged by parse tree, segment by segment. A prefix or exact
//     rule never matches across &&, ||, ;, |, |&, &, newlines, a substitution or a
//     redirection: an allow covers a command only when every segment is allowed or
//     read-only, while a deny or ask names it when any segment — looked at through its
//     wrappers (sudo, env, xargs, …) and by the base name of its command word — matches.
//     A command that cannot be parsed is never allowed by a rule or a mode.
//   - An allow rule names words, never code: a command in which bash evaluates text as
//     code (shellscan.Script.EvaluatesCode — substitutions, arithmetic over variables,
//     ${x@P}, printf -v a[$(…)], [[ x -eq y ]], …) is not allowed by any prefix or exact
//     rule. The read-only analyzer and acceptEdits' file-command reading ask the same
//     judgement.
//   - A deny or ask rule reaches through indirection (shellscan.Segment.Follow): `bash -c`
//     and `sh -c` at any depth, eval, trap, env -S, find -exec/-execdir/-ok/-okdir,
//     xargs, the wrappers (sudo, timeout, nice, nohup, command, builtin, exec, time,
//     stdbuf) and every command runner shellscan models (su -c, runuser, doas, watch,
//     script -c, chroot, setsid, flock, nsenter, unshare, ionice, chrt, taskset,
//     systemd-run, strace, valgrind, gdb --args, fakeroot, parallel, …). Where the program
//     cannot be known ($x, $(…), "${cmd}", an unreadable wrapper or runner option, a shell
//     fed a file or standard input, gdb, ssh, tmux, at, crontab, an interpreter given code
//     inline such as python -c or perl -e, hidden code), the rule cannot clear the
//     command, so it is asked about. An interpreter or build tool running a program file
//     (python x.py, make) is outside: a rule names commands the text shows.
//   - The delete guard and the boundary stations judge the targets of every command Follow
//     reaches too (nestedTargets), placed where the runner runs them: relative paths behind
//     su -l or sudo -i, and every path behind chroot, unshare or ssh, cannot be placed.
//   - The mode is read live from the ModeController on every call: a steer changes the
//     next call's answer without rebuilding anything.
//   - A child leg never runs a mode more permissive than its parent's live mode
//     (plan < dontAsk < default < acceptEdits, auto < bypassPermissions); every fold is
//     announced once and visible in the Receipt.
package gate
