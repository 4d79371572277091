// Package permission is the vocabulary an embedder uses to say which tool calls run:
//
//   - the permission modes (Mode, ParseMode) and the Receipt a mode question answers
//     with (what agent.Control.SetPermissionMode returns and the manifest records);
//   - rules (Rule, RuleSet, ParseRule, ParseRules, RulesFromFlags, SplitRuleList); the
//     settings files that carry them are package settings';
//   - the seats a host fills: PreToolUse hooks (Hook, HookDecision), the Approver that
//     answers questions for a person (ApprovalRequest, ApprovalDecision, ApproverFunc),
//     and the AutoClassifier of auto mode (ClassifyRequest);
//   - what a hook, approver or classifier sees: the Call, its Scope and PathTargets, and
//     the gate's Decision (Behavior, DecidedBy: the Layer that decided, Reason: its
//     sentence, the question's Gate);
//   - the codes of the errors and notices the engine reports on these matters.
//
// The engine that folds these layers into one decision per call lives in the module's
// internal packages. It reads, for each call: the deny rules; the PreToolUse hooks'
// denies and asks; the ask rules; the plan gate; the safety stations; a hook's allow and
// the allow rules; the mode's own answer; and last the ordinary question, else an
// allow. The first that decides ends the fold. What an embedder can rely on:
//
//   - A deny rule is never outranked: no hook, mode, rule, classifier or approver turns
//     a call a deny rule names into an allow. An approver's or a hook's rewrite of the
//     input meets the deny rules again.
//   - Questions of the plan gate and of the safety stations (the delete guard, protected
//     paths, writes or reads outside the roots) are person-only (Decision.PersonOnly):
//     no rule, hook allow, classifier or mode answers them. So is every call to a tool
//     that requires a person for every call (Call.RequiresUserInteraction), in every
//     mode, bypassPermissions included; a deny (a deny rule's, a hook's) still refuses it.
//   - Paths are compared by canonical components, never by string prefix. A deny or ask
//     path rule names a target when its spelled path or its canonical path matches; an
//     allow path rule must match both.
//   - Shell commands are judged by parse tree, segment by segment: an allow rule covers
//     a command only when every segment is allowed or read-only, and never a command in
//     which bash evaluates text as code; a deny or ask rule names a command when any
//     segment matches, looked at through wrappers and command runners (sudo, env,
//     xargs, bash -c, find -exec, …). Where the program cannot be known, a deny or ask
//     rule cannot clear the command, so it is asked about.
//   - The mode is read live on every call: a steer changes the next call's answer.
//   - A child leg never runs a mode more permissive than its parent's live mode
//     (plan < dontAsk < default < acceptEdits, auto < bypassPermissions); every fold is
//     announced once and visible in the Receipt.
package permission
