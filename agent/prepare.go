package agent

import (
	"context"
	"errors"
	iofs "io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/tools"
	"github.com/sema-agent/sema/tools/files"
	"github.com/sema-agent/sema/tools/shell"
)

// leg is one prepared run. It lives for one call of Runner.Run.
type leg struct {
	deps      *Deps
	spec      TaskSpec
	emit      func(Event)
	sessionID string
	// store is the deployment's session store; nil runs the leg without a session.
	store session.Store
	legID string
	// branchFrom is the entry the leg's first transcript entry follows (ResumeAt).
	branchFrom string
	// resume is what the leg continues from: the replayed conversation of a resumed
	// session, and a parked turn if the chain ends at one.
	resume resumeState
	// approval is the answer a resumed leg executes for its parked call.
	approval *approval
	// park is the first question of this leg that was parked.
	park *parkRequest
	// approved is the call a person approved, running now: the fold allows exactly it.
	approved *runningCall
	// readState is what this leg's file tools have read.
	readState *files.ReadState
	// shell is the leg's shell tool set (nil when the env cannot run programs).
	shell *shell.Set
	// sandbox confines the leg's commands; nil when they run unconfined (sandboxStatus
	// says why).
	sandbox       *shell.Sandbox
	sandboxStatus sandbox.Status
	// projectSandbox is what the root's .sema/settings.json says of the sandbox (only
	// what tightens it, unless the workspace is trusted).
	projectSandbox permission.SandboxSettings
	// rewindNotes is the ledger of the rewind that ran before the leg.
	rewindNotes []history.LedgerEntry
	// files records first-touch history when the deployment wired a history store;
	// historyScope is the scope the records land in.
	files        *history.Files
	historyScope string
	fence        *fence.Fence
	modes        *permission.ModeController
	gate         *permission.Gate
	scope        permission.Scope
	// classifier answers asks in auto mode; it counts its denials and falls back to
	// asking the approver after too many.
	classifier permission.AutoClassifier
	roster     tools.Roster
	// laneTools are the tools whose permission question the write lane asks itself, at
	// its station 4, after containment and read-before-edit.
	laneTools map[string]bool
	specs     []model.ToolSpec
	system    string
	manifest  Manifest

	askMu sync.Mutex // serializes questions to the approver

	mu sync.Mutex
	// transcript is the conversation so far, for the auto classifier.
	transcript []model.Message
	notices    []sema.Notice
	// pending holds events raised off the loop goroutine (notices, denials), emitted by the
	// loop at its next safe point so the stream is only ever written from one goroutine.
	pending []Event
	edited  []string
	denials []PermissionDenial
}

// validateSpec is the door: it refuses a spec by name before anything runs.
func validateSpec(deps *Deps, spec *TaskSpec) error {
	if deps.Provider == nil {
		return configError("config.provider_missing", "no model provider is configured; set Deps.Provider")
	}
	if strings.TrimSpace(spec.Prompt) == "" && spec.Answer == nil {
		return configError("config.prompt_missing", "the task has no prompt; give a prompt to run")
	}
	if spec.Answer != nil && (spec.SessionID == "" || spec.Answer.CheckpointID == "") {
		return configError("config.answer_invalid", "an answer needs the session and the checkpoint it answers")
	}
	if (spec.Answer != nil || spec.SessionID != "" || deps.Park) && deps.Store == nil {
		return configError("config.store_missing", "resuming, answering or parking needs a session store; set Deps.Store")
	}
	if spec.RewindFilesTo != nil && spec.RestoreFiles {
		return configError("config.rewind_conflict", "RewindFilesTo and RestoreFiles both say where the files go back to; give one")
	}
	if spec.RestoreFiles && spec.ResumeAt == "" {
		return configError("config.rewind_invalid", "RestoreFiles restores the files to ResumeAt; give ResumeAt")
	}
	if spec.RewindFilesTo != nil && (spec.SessionID == "" || *spec.RewindFilesTo < 0) {
		return configError("config.rewind_invalid", "RewindFilesTo needs the SessionID whose files to rewind and a turn of it (0 or more)")
	}
	if (spec.RewindFilesTo != nil || spec.RestoreFiles) && deps.History == nil {
		return configError("config.history_missing", "rewinding files needs a file-history store; set Deps.History")
	}
	if (spec.ForkSession || spec.ResumeAt != "") && spec.SessionID == "" {
		return configError("config.resume_invalid", "ForkSession and ResumeAt need the SessionID they continue from")
	}
	if spec.Root == "" || !filepath.IsAbs(spec.Root) {
		return configError("config.root_invalid", "the task root %q is not an absolute path; give an absolute directory", spec.Root)
	}
	if spec.MaxTurns < 0 {
		return configError("config.max_turns_invalid", "max turns is %d; give a positive number, or 0 for no limit", spec.MaxTurns)
	}
	if spec.MaxTokens < 0 {
		return configError("config.max_tokens_invalid", "max tokens is %d; give a positive number, or 0 for the provider's default", spec.MaxTokens)
	}
	if spec.PermissionMode != "" {
		if _, err := permission.ParseMode(string(spec.PermissionMode)); err != nil {
			return err
		}
	}
	return validateSandbox(deps, spec)
}

// projectSettingsPath is where a workspace keeps its own permission settings.
const projectSettingsPath = ".sema/settings.json"

// rules merges the permission rules of every layer: the deployment's, the project's
// settings file, and the task's. A rule that does not parse refuses the spec.
func (l *leg) rules(ctx context.Context) (permission.RuleSet, permission.Mode, error) {
	task, err := permission.RulesFromFlags(l.spec.AllowedTools, l.spec.DisallowedTools)
	if err != nil {
		return permission.RuleSet{}, "", err
	}
	ask, err := permission.ParseRules(nil, nil, splitRules(l.spec.AskTools))
	if err != nil {
		return permission.RuleSet{}, "", err
	}
	proj, err := l.projectSettings(ctx)
	if err != nil {
		return permission.RuleSet{}, "", err
	}
	merged := l.deps.Rules.Merge(task, ask, proj.Rules)
	return merged, proj.DefaultMode, nil
}

// projectSettings reads the root's .sema/settings.json through the env. Its deny and ask
// rules always apply; its allow rules and its defaultMode only when the deployment trusts
// the workspace (Deps.TrustProjectSettings), because a cloned repository must not be able
// to grant itself permissions.
func (l *leg) projectSettings(ctx context.Context) (permission.Settings, error) {
	path := filepath.Join(l.spec.Root, projectSettingsPath)
	data, err := l.deps.Env.ReadFile(ctx, path)
	if errors.Is(err, iofs.ErrNotExist) {
		return permission.Settings{}, nil
	}
	if err != nil {
		return permission.Settings{}, configError("config.settings_unreadable", "cannot read %s: %v", path, err)
	}
	st, err := permission.ParseSettings(data, path)
	if err != nil {
		return permission.Settings{}, err
	}
	l.projectSandbox = st.Sandbox
	if !l.deps.TrustProjectSettings {
		// What an untrusted workspace may say of the sandbox is what tightens it.
		l.projectSandbox = permission.SandboxSettings{Hidden: st.Sandbox.Hidden}
		if st.Sandbox.Mode == sandbox.ModeOn {
			l.projectSandbox.Mode = sandbox.ModeOn
		}
		if st.Sandbox.Network == "off" {
			l.projectSandbox.Network = "off"
		}
		if len(st.Rules.Allow) > 0 || st.DefaultMode != "" {
			l.notice(sema.Notice{Code: "config.project_settings_untrusted", Message: path + " grants permissions (allow rules or a default mode), which apply only when the deployment trusts the workspace; its deny and ask rules apply",
				Detail: map[string]any{"path": path}})
		}
		st.Rules.Allow = nil
		st.DefaultMode = ""
	}
	return st, nil
}

func splitRules(list []string) []string {
	var out []string
	for _, e := range list {
		out = append(out, permission.SplitRuleList(e)...)
	}
	return out
}

// prepare runs the leg's phases in order: the door, the rules and the mode, the fence,
// the permission gate, the session (with a rewind the spec asks for), the tools, the
// answer to a parked question, the manifest and the system prompt. Every refusal is a
// coded error, and a refusal after the session's leg started ends that leg.
func prepare(ctx context.Context, deps *Deps, spec TaskSpec, emit func(Event)) (*leg, error) {
	if err := validateSpec(deps, &spec); err != nil {
		return nil, err
	}
	l := &leg{deps: deps, spec: spec, emit: emit, store: deps.Store}
	rules, defaultMode, err := l.rules(ctx)
	if err != nil {
		return nil, err
	}
	loaded, chain, err := l.loadSession(ctx)
	if err != nil {
		return nil, err
	}
	requested, prePlan := requestedMode(spec, loaded, defaultMode)
	if err := l.prepareModes(requested, prePlan); err != nil {
		return nil, err
	}
	if err := l.prepareFence(ctx); err != nil {
		return nil, err
	}
	if err := l.prepareSandbox(); err != nil {
		return nil, err
	}
	if err := l.prepareGate(ctx, rules); err != nil {
		return nil, err
	}
	if err := l.openSession(ctx, loaded, chain); err != nil {
		return nil, err
	}
	if err := l.prepareLeg(ctx); err != nil {
		if l.shell != nil {
			l.shell.Close()
		}
		l.closeSession(ctx, StatusError)
		return nil, err
	}
	l.manifest = l.buildManifest()
	l.system = systemPrompt(l)
	return l, nil
}

// requestedMode is the mode word the leg asks for: the spec's, else the word a resumed
// session recorded, else the settings' default mode. The pre-plan word comes from the
// session.
func requestedMode(spec TaskSpec, loaded *session.Session, defaultMode permission.Mode) (requested, prePlan permission.Mode) {
	requested = spec.PermissionMode
	if loaded != nil {
		prePlan = permission.Mode(loaded.PrePlanMode)
		if requested == "" {
			requested = permission.Mode(loaded.Mode)
		}
	}
	if requested == "" {
		requested = defaultMode
	}
	return requested, prePlan
}

// prepareFence resolves the leg's roots, faces, deny and protected sets and advertised
// directories, once.
func (l *leg) prepareFence(ctx context.Context) error {
	deps, spec := l.deps, l.spec
	f, err := fence.New(ctx, fence.Config{
		Env:                       deps.Env,
		Root:                      spec.Root,
		AdditionalDirectories:     spec.AdditionalDirectories,
		AdditionalReadDirectories: spec.AdditionalReadDirectories,
		TaskReadFace:              faceSeat(spec.ReadFace),
		TaskWriteFace:             faceSeat(spec.WriteFace),
		DeploymentReadFace:        faceSeat(deps.ReadFace),
		DeploymentWriteFace:       faceSeat(deps.WriteFace),
		ReadOnlyMount:             spec.HandsReadOnly,
		OrgGoverned:               deps.OrgGoverned,
		FullShellReachable:        l.fullShell(),
		ModeWriteFace:             permission.ModePolicyOf(l.modes.Current()).WriteFace,
		StateDir:                  deps.StateDir,
		DenyGlobs:                 deps.DenyGlobs,
		Scratchpad:                fence.AdvertisedSpec{Path: spec.Scratchpad},
		MemoryDir:                 fence.AdvertisedSpec{Path: deps.MemoryDir},
		OnNotice:                  l.notice,
	})
	if err != nil {
		return err
	}
	l.fence = f
	return nil
}

// prepareGate builds the permission gate over the fence's scope.
func (l *leg) prepareGate(ctx context.Context, rules permission.RuleSet) error {
	scope, screened := permission.ScreenExemptDirs(permission.ScopeOf(ctx, l.fence, l.home()))
	for _, n := range screened {
		l.notice(n)
	}
	l.scope = scope
	g, err := permission.NewGate(permission.GateConfig{
		Modes:    l.modes,
		Rules:    rules,
		Hooks:    l.deps.PreToolUse,
		Resolver: permission.FenceResolver(l.fence),
		// Only Bash's confinement counts: a read-only leg's commands write nothing anyway.
		Sandboxed: l.sandbox != nil,
	})
	l.gate = g
	return err
}

// prepareLeg runs the phases after the session's leg started: file history and a
// requested rewind, the tools, and the answer to a parked question.
func (l *leg) prepareLeg(ctx context.Context) error {
	if l.deps.History != nil && l.deps.TrackFileEdit == nil && l.deps.Store != nil {
		l.files = history.NewFiles(l.deps.History, l.deps.Env)
	}
	if err := l.rewindBeforeRun(ctx); err != nil {
		return err
	}
	if err := l.mountShell(); err != nil {
		return err
	}
	l.roster = l.buildRoster()
	for _, t := range l.roster {
		l.specs = append(l.specs, t.Spec().ModelSpec())
	}
	if l.spec.Answer != nil {
		return l.prepareAnswer(ctx)
	}
	return nil
}

// buildManifest records the leg's resolved facts.
func (l *leg) buildManifest() Manifest {
	f, receipt := l.fence, l.modes.Receipt()
	return Manifest{
		SessionID:   l.sessionID,
		Provider:    l.deps.Provider.Name(),
		Model:       l.spec.Model,
		Platform:    runtime.GOOS + "/" + runtime.GOARCH,
		Root:        f.Root(),
		WriteRoots:  f.WriteRoots(),
		ReadRoots:   f.ReadRoots(),
		ReadFace:    string(f.ReadFace()),
		WriteFace:   string(f.WriteFace()),
		Advertised:  advertisedOf(f),
		Tools:       l.roster.Names(),
		Mode:        ModeReceipt{Requested: string(receipt.Requested), Effective: string(receipt.Effective), FoldedBy: string(receipt.FoldedBy)},
		FileHistory: l.fileHistoryFact(),
		ReadOnly:    l.spec.HandsReadOnly,
		Shell:       ShellFacts{FullShell: l.shell != nil && !l.spec.HandsReadOnly, ReadOnlyShell: l.shell != nil && l.spec.HandsReadOnly, Sandbox: l.sandboxStatus},
	}
}

// prepareModes builds the leg's mode controller and binds the deployment's arming facts:
// denied modes fold to default, and auto arms the classifier.
func (l *leg) prepareModes(requested, prePlan permission.Mode) error {
	ctrl, err := permission.NewModeController(requested, nil, permission.ControllerOptions{OnNotice: l.notice, PrePlanMode: prePlan})
	if err != nil {
		return err
	}
	base := l.deps.Classifier
	if base == nil {
		base = &permission.ModelClassifier{Provider: l.deps.Provider, Model: l.spec.Model}
	}
	l.classifier = permission.TrackDenials(base)
	ctrl.BindArming(permission.Arming{
		DenyBypass: l.deps.DenyBypassPermissions,
		DenyAuto:   l.deps.DenyAutoMode,
		ArmAuto: func(context.Context) (permission.AutoClassifier, error) {
			return l.classifier, nil
		},
		OnArmFault: func(err error) {
			l.notice(sema.Notice{Code: "permission.arming_failed", Message: "the auto-mode classifier could not be armed: " + err.Error()})
		},
	})
	l.modes = ctrl
	return nil
}

// home is the user's home directory for the delete guard and "~/" rules.
func (l *leg) home() string {
	if l.deps.Home != "" {
		return l.deps.Home
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return h
}

// buildRoster mounts the leg's tools.
func (l *leg) buildRoster() tools.Roster {
	l.readState = files.NewReadState()
	if p := l.resume.parked; p != nil {
		// The parked call was checked against what the earlier leg had read; carry that,
		// so an approved edit runs if (and only if) the file is still as it was read.
		for path, rec := range p.ReadState {
			l.readState.Record(path, rec)
		}
	}
	cfg := files.Config{Env: l.deps.Env, Fence: l.fence, ReadState: l.readState}
	if l.gate != nil {
		// The walks of Glob, Grep and LS ask the gate's own matcher about every entry, so
		// a Read deny rule hides a path from a listing as it refuses a call naming it.
		cfg.Denied = l.gate.ReadDenial(l.scope).Denied
	}
	var r tools.Roster
	r = append(r, files.ReadTools(cfg)...)
	l.laneTools = map[string]bool{}
	if !l.spec.HandsReadOnly {
		lane := files.WriteTools(cfg, files.LaneConfig{MemoryDirs: admittedDirs(l.fence, fence.AdvertiserMemory), Hooks: files.Hooks{
			Permission:    l.permitWrite,
			BeforeWrite:   l.deps.BeforeWrite,
			TrackFileEdit: l.trackSeat(),
			FileEdited:    l.deps.OnFileEdited,
		}})
		for _, t := range lane {
			l.laneTools[t.Spec().Name] = true
		}
		r = append(r, lane...)
	}
	if l.shell != nil {
		r = append(r, l.shell.Tools()...)
	}
	r = append(r, permission.NewEnterPlanMode(l.modes), permission.NewExitPlanMode(l.modes))
	r = append(r, l.deps.Tools...)
	return r
}

// faceSeat turns a seat's value into the fence's raw form: nil when nothing was declared.
func faceSeat(f fence.Face) *string {
	if f == "" {
		return nil
	}
	s := string(f)
	return &s
}

func advertisedOf(f *fence.Fence) []AdvertisedDir {
	var out []AdvertisedDir
	for _, d := range f.Advertised() {
		out = append(out, AdvertisedDir{Kind: string(d.Kind), Path: d.Path, Admitted: d.Admitted, Reason: d.Reason})
	}
	return out
}

// admittedDirs returns the canonical paths of the admitted advertised directories of a kind.
func admittedDirs(f *fence.Fence, kind fence.Advertiser) []string {
	var out []string
	for _, d := range f.Advertised() {
		if d.Admitted && d.Kind == kind {
			out = append(out, d.Canonical)
		}
	}
	return out
}

// notice records a notice, delivers it to the deployment's sink, and queues it for the
// event stream. It is safe to call from any goroutine.
func (l *leg) notice(n sema.Notice) {
	l.mu.Lock()
	l.notices = append(l.notices, n)
	l.pending = append(l.pending, Event{Type: EventNotice, Notice: &n})
	l.mu.Unlock()
	if l.deps.OnNotice != nil {
		l.deps.OnNotice(n)
	}
}

// deny records a refused tool call and queues its permission event. It is safe to call
// from any goroutine.
func (l *leg) deny(d PermissionDenial) {
	l.mu.Lock()
	l.denials = append(l.denials, d)
	l.pending = append(l.pending, Event{Type: EventPermission, Denial: &d})
	l.mu.Unlock()
}

// flush emits queued events; only the loop goroutine calls it.
func (l *leg) flush(turn int) {
	l.mu.Lock()
	p := l.pending
	l.pending = nil
	l.mu.Unlock()
	for _, ev := range p {
		ev.Turn = turn
		l.emit(ev)
	}
}

// trackSeat is the write lane's first-touch history seat: the deployment's own, else the
// runner's file history when it is on, else none.
func (l *leg) trackSeat() files.TrackFileEditHook {
	if l.deps.TrackFileEdit != nil {
		return l.deps.TrackFileEdit
	}
	if l.files != nil {
		return l.trackFileEdit
	}
	return nil
}

// fileHistoryFact is the manifest's word for file history.
func (l *leg) fileHistoryFact() string {
	if l.deps.TrackFileEdit != nil || l.files != nil {
		return "on"
	}
	return "disabled"
}

// rewindBeforeRun applies the spec's file rewind (RewindFilesTo, or RestoreFiles to
// ResumeAt) before the leg's first turn.
func (l *leg) rewindBeforeRun(ctx context.Context) error {
	turn := -1
	switch {
	case l.spec.RewindFilesTo != nil:
		turn = *l.spec.RewindFilesTo
	case l.spec.RestoreFiles:
		turn = l.resume.turns + 1 // the branch starts before the turn after ResumeAt
	}
	if turn < 0 {
		return nil
	}
	files := history.NewFiles(l.deps.History, l.deps.Env)
	ledger, err := files.Rewind(ctx, l.historyScope, turn, history.RewindOptions{AcceptPartialRestore: l.spec.AcceptPartialRestore, SessionID: l.sessionID})
	l.rewindNotes = ledger.Entries
	return err
}

// fullShell reports whether Bash will be mounted: the env can run programs and the leg
// is not read-only. The fence reads it (a bash-less leg keeps its faces at roots).
func (l *leg) fullShell() bool {
	_, ok := l.deps.Env.(env.Executor)
	return ok && !l.spec.HandsReadOnly
}

// mountShell builds the leg's shell tools when the env can run programs: Bash with its
// background tasks, or bash_readonly for a read-only leg. The permission fold judges
// every command in the dispatcher, like every other call that is not a file write.
func (l *leg) mountShell() error {
	if _, ok := l.deps.Env.(env.Executor); !ok {
		return nil
	}
	set, err := shell.New(shell.Config{
		Env:                     l.deps.Env,
		Fence:                   l.fence,
		ReadOnly:                l.spec.HandsReadOnly,
		ReadonlyAllow:           l.deps.BashReadonlyAllow,
		CommitCoAuthor:          l.deps.CommitCoAuthor,
		AutoBackgroundOnTimeout: l.deps.AutoBackgroundOnTimeout,
		Sandbox:                 l.sandbox,
		ReadDenial:              l.readDenial(),
	})
	if err != nil {
		return err
	}
	l.shell = set
	return nil
}

// readDenial is the gate's judgement of reads for the leg's scope; the zero value when
// no gate was built.
func (l *leg) readDenial() permission.ReadDenial {
	if l.gate == nil {
		return permission.ReadDenial{}
	}
	return l.gate.ReadDenial(l.scope)
}

// stopShell ends the leg's shell: background tasks are stopped unless the deployment
// keeps them, in which case the running ones are reported.
func (l *leg) stopShell(ctx context.Context) []BackgroundTask {
	if l.shell == nil {
		return nil
	}
	if l.deps.KeepBackgroundTasks {
		var out []BackgroundTask
		for _, t := range l.shell.Running() {
			out = append(out, BackgroundTask{ID: t.ID, Command: t.Command, PID: t.PID, Output: t.OutputFile})
		}
		return out
	}
	if err := l.shell.Shutdown(context.WithoutCancel(ctx)); err != nil {
		l.notice(sema.Notice{Code: "shell.shutdown_failed", Message: "background tasks could not all be stopped: " + err.Error()})
	}
	return nil
}
