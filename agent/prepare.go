package agent

import (
	"context"
	"runtime"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/internal/gate"
	"github.com/sema-agent/sema/permission"
)

// prepare runs the leg's phases in order: the door, the rules, the session to continue
// (with whether the leg may record file history into it, and the checkpoint a resume
// answers, read but not claimed), the mode, the fence, the permission gate, the session's
// new leg (with a rewind the spec asks for), the tools, the answer to a parked question,
// the manifest and the system prompt. Every refusal is a coded error, and a refusal
// after the session's leg started ends that leg.
func prepare(ctx context.Context, deps *Deps, spec TaskSpec, answer *Answer, emit func(Event), stop context.CancelCauseFunc) (_ *leg, err error) {
	if err := validateSpec(deps, &spec, answer); err != nil {
		return nil, err
	}
	l := &leg{deps: deps, spec: spec, answer: answer, emit: emit, store: deps.Store, stop: stop}
	defer func() {
		if err != nil {
			// A refused leg frees the session it claimed at once, not when the lease expires.
			l.dropLease(ctx)
		}
	}()
	rules, defaultMode, err := l.rules(ctx)
	if err != nil {
		return nil, err
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
	if err := l.prepareModes(l.modeFor(loaded, defaultMode)); err != nil {
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
		l.endSweep()
		if l.shell != nil {
			l.shell.Close()
		}
		l.closeSession(ctx, sema.StatusError)
		return nil, err
	}
	l.manifest = l.buildManifest()
	l.system = systemPrompt(l)
	return l, nil
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
		DeploymentReadFace:        faceSeat(deps.policy().ReadFace),
		DeploymentWriteFace:       faceSeat(deps.policy().WriteFace),
		ReadOnlyMount:             spec.ReadOnly,
		OrgGoverned:               deps.policy().OrgGoverned,
		FullShellReachable:        l.fullShell(),
		ModeWriteFace:             gate.ModePolicyOf(l.modes.Current()).WriteFace,
		StateDir:                  deps.StateDir,
		DenyGlobs:                 deps.policy().DenyGlobs,
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
		Hooks:    l.deps.hooks().PreToolUse,
		Resolver: gate.FenceResolver(l.fence),
		// The read-only answer of the fold and bash_readonly judge by one list.
		ReadOnlyAllow: l.deps.shell().ReadonlyAllow,
		// Only Bash's confinement counts: a read-only leg's commands write nothing anyway.
		Sandboxed: l.sandbox != nil,
	})
	l.gate = g
	return err
}

// prepareLeg runs the phases after the session's leg started: file history and a
// requested rewind, the tools, and the answer to a parked question.
func (l *leg) prepareLeg(ctx context.Context) error {
	if l.capture.own() && l.deps.History != nil && l.deps.hooks().TrackFileEdit == nil && l.deps.Store != nil {
		l.files = history.NewFiles(l.deps.History, l.deps.Env)
	}
	if err := l.rewindBeforeRun(ctx); err != nil {
		return err
	}
	if err := l.mountShell(); err != nil {
		return err
	}
	l.sweepTemps(ctx)
	l.roster = l.buildRoster()
	for _, t := range l.roster {
		l.specs = append(l.specs, t.Spec().ModelSpec())
	}
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
		Tools:       l.roster.Names(),
		Mode:        ModeReceipt{Requested: string(receipt.Requested), Effective: string(receipt.Effective), FoldedBy: string(receipt.FoldedBy)},
		FileHistory: l.fileHistoryFact(),
		ReadOnly:    l.spec.ReadOnly,
		Shell: ShellFacts{FullShell: l.shell != nil && !l.spec.ReadOnly, ReadOnlyShell: l.shell != nil && l.spec.ReadOnly, Sandbox: l.sandboxStatus,
			InFileHistory: l.bashChanges != nil}.withHistoryCaps(),
	}
}
