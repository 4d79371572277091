package agent

import (
	"context"
	"os"
	"runtime"
	"slices"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/internal/gate"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
)

// prepare runs the leg's phases in order: the door, the rules, the session to continue
// (with whether the leg may record file history into it, and the checkpoint a resume
// answers, read but not claimed), the mode, the fence, the permission gate, the session's
// new leg (with a rewind the spec asks for), the instruction files, the tools, the answer
// to a parked question, the manifest and the system prompt. Every refusal is a coded
// error, and a refusal after the session's leg started ends that leg. lk is set for a
// delegated child leg (see delegate).
func prepare(ctx context.Context, deps *Deps, spec TaskSpec, answer *Answer, emit func(Event), stop context.CancelCauseFunc, lk *link) (_ *leg, err error) {
	if err := validateSpec(deps, &spec, answer); err != nil {
		return nil, err
	}
	l := &leg{deps: deps, spec: spec, answer: answer, emit: emit, store: deps.Store, stop: stop, link: lk,
		wake: make(chan struct{}, 1), taskSlots: make(chan struct{}, deps.delegation().maxConcurrent())}
	l.budget = newBudget(spec, lk)
	l.askMu = new(sync.Mutex)
	if lk != nil {
		l.askMu = lk.parent.askMu
	}
	defer func() {
		if err != nil {
			// A refused leg frees the session it claimed at once, not when the lease expires.
			l.dropLease(ctx)
		}
	}()
	var rules permission.RuleSet
	var defaultMode permission.Mode
	if lk != nil {
		// A child works under its parent's rules, read once by the parent.
		rules, l.layered, l.settingsFiles = lk.parent.ruleSet, lk.parent.layered, lk.parent.settingsFiles
	} else if rules, defaultMode, err = l.rules(ctx); err != nil {
		return nil, err
	}
	l.ruleSet = rules
	if l.spec.Model == "" {
		// A settings file's model is the default of a task that names none; an alias
		// (model: opus) is the newest of its family the provider knows.
		l.spec.Model, _ = model.ResolveAlias(l.deps.Provider.Name(), l.layered.Model)
	}
	loaded, chain, err := l.loadSession(ctx)
	if err != nil {
		return nil, err
	}
	if err := l.resolveCapture(loaded); err != nil {
		return nil, err
	}
	if err := l.readCheckpoint(ctx); err != nil {
		return nil, err
	}
	var ceiling gate.Ceiling
	if lk != nil {
		// The parent's live controller: a steer of the parent reaches the child's next read.
		ceiling = lk.parent.modes
	}
	if err := l.prepareModes(l.modeFor(loaded, defaultMode), ceiling); err != nil {
		return nil, err
	}
	if err := l.prepareFence(ctx); err != nil {
		return nil, err
	}
	if err := l.prepareSandbox(); err != nil {
		return nil, err
	}
	if err := l.prepareHooks(); err != nil {
		return nil, err
	}
	if err := l.prepareGate(ctx, rules); err != nil {
		return nil, err
	}
	if err := l.prepareImages(ctx); err != nil {
		return nil, err
	}
	if err := l.openSession(ctx, loaded, chain); err != nil {
		return nil, err
	}
	l.prepareInstructions(ctx) // before the tools: the read tools report to it
	if err := l.prepareLeg(ctx); err != nil {
		l.stopMCP()
		l.removeHookTemp()
		l.endSweep()
		if l.shell != nil {
			l.shell.Close()
		}
		l.closeSession(ctx, sema.StatusError)
		return nil, err
	}
	l.manifest = l.buildManifest()
	l.manifest.Instructions = l.instructionFiles()
	l.system = systemPrompt(l)
	l.manifest.SystemPromptChars = len(l.system)
	return l, nil
}

// prepareFence resolves the leg's roots, faces, deny and protected sets, credential
// stores (the sandbox hides the same, from the same home and additions) and advertised
// directories, once.
func (l *leg) prepareFence(ctx context.Context) error {
	deps, spec := l.deps, l.spec
	f, err := fence.New(ctx, fence.Config{
		Env:                       deps.Env,
		Root:                      spec.Root,
		AdditionalDirectories:     append(slices.Clip(spec.AdditionalDirectories), l.layered.AdditionalDirectories...),
		AdditionalReadDirectories: spec.AdditionalReadDirectories,
		TaskReadFace:              faceSeat(spec.ReadFace),
		TaskWriteFace:             faceSeat(spec.WriteFace),
		DeploymentReadFace:        faceSeat(deps.policy().ReadFace),
		DeploymentWriteFace:       faceSeat(deps.policy().WriteFace),
		ReadOnlyMount:             spec.ReadOnly,
		OrgGoverned:               deps.policy().OrgGoverned,
		FullShellReachable:        l.fullShell(),
		ModeWriteFace:             gate.ModePolicyOf(l.modes.Current()).WriteFace,
		StateDir:                  deps.StateDir,
		DenyGlobs:                 deps.policy().DenyGlobs,
		Home:                      l.home(),
		RuntimeDir:                os.Getenv("XDG_RUNTIME_DIR"),
		Hidden:                    append(slices.Clip(deps.shell().SandboxHidden), l.layered.Sandbox.Hidden...),
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
	scope, screened := gate.ScreenExemptDirs(gate.ScopeOf(ctx, l.fence, l.home()))
	for _, n := range screened {
		l.notice(n)
	}
	l.scope = scope
	g, err := gate.New(gate.Config{
		Modes:    l.modes,
		Rules:    rules,
		Hooks:    l.gateHooks(),
		Resolver: gate.FenceResolver(l.fence),
		// The read-only answer of the fold and bash_readonly judge by one list.
		ReadOnlyAllow: l.deps.shell().ReadonlyAllow,
		// Only Bash's confinement counts: a read-only leg's commands write nothing anyway.
		Sandboxed: l.sandbox != nil,
	})
	l.gate = g
	return err
}

// gateHooks are the fold's PreToolUse seats: the deployment's permission.Hook callbacks,
// then the settings files' and Deps.Hooks.Events' hooks as one seat.
func (l *leg) gateHooks() []permission.Hook {
	hs := slices.Clip(l.deps.hooks().PreToolUse)
	if h := l.preToolUseHook(); h != nil {
		hs = append(hs, h)
	}
	return hs
}

// prepareLeg runs the phases after the session's leg started: file history and a
// requested rewind, the tools, and the answer to a parked question.
func (l *leg) prepareLeg(ctx context.Context) error {
	if l.capture.own() && l.deps.History != nil && l.deps.hooks().TrackFileEdit == nil && l.deps.Store != nil {
		l.files = history.NewFiles(l.deps.History, l.deps.Env)
	}
	// What a killed process's shell command changed is recorded before anything else
	// mints a boundary or rewinds: in the turn it ran in, as if its walk had finished.
	if err := l.recoverBashStages(ctx); err != nil {
		l.notice(sema.Notice{Code: CodeBashRecoveryFailed, Message: sema.MessageOf(err), Detail: map[string]any{"scope": l.historyScope}})
	}
	if err := l.rewindBeforeRun(ctx); err != nil {
		return err
	}
	if err := l.mountShell(); err != nil {
		return err
	}
	if l.link == nil {
		l.sweepTemps(ctx) // a child's parent swept the same roots
	}
	l.prepareAgents(ctx)
	if err := l.startMCP(ctx); err != nil {
		return err
	}
	l.roster = l.buildRoster()
	_, specs := l.toolsAndSpecs()
	for _, s := range specs {
		l.specTokens += int64(len(s.Name)+len(s.Description)+len(s.InputSchema))/4 + 1
	}
	l.keepRaisedBudget()
	if l.answer != nil {
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
		Tools:       l.tools().Names(),
		MCPServers:  l.mcpStatus(),
		Mode:        ModeReceipt{Requested: string(receipt.Requested), Effective: string(receipt.Effective), FoldedBy: string(receipt.FoldedBy)},
		FileHistory: l.fileHistoryFact(),
		Settings:    l.layered.Applied,
		ReadOnly:    l.spec.ReadOnly,
		Shell: ShellFacts{FullShell: l.shell != nil && !l.spec.ReadOnly, ReadOnlyShell: l.shell != nil && l.spec.ReadOnly, Sandbox: l.sandboxStatus,
			InFileHistory: l.bashChanges != nil, EnvHeld: l.envHeld().Held}.withHistoryCaps(),
		Worktree: l.spec.Worktree,
	}
}
