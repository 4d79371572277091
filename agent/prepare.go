package agent

import (
	"context"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/tools"
	fstools "github.com/sema-agent/sema/tools/fs"
)

// leg is one prepared run. It lives for one call of Runner.Run.
type leg struct {
	deps      *Deps
	spec      TaskSpec
	emit      func(Event)
	sessionID string
	mode      string
	fence     *fence.Fence
	roster    tools.Roster
	specs     []model.ToolSpec
	system    string
	manifest  Manifest

	mu      sync.Mutex
	notices []sema.Notice
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
	if strings.TrimSpace(spec.Prompt) == "" {
		return configError("config.prompt_missing", "the task has no prompt; give a prompt to run")
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
	if spec.PermissionMode != "" && !slices.Contains(modes, spec.PermissionMode) {
		return configError("config.permission_mode_invalid", "unknown permission mode %q; use one of %s", spec.PermissionMode, strings.Join(modes, ", ")).
			With("mode", spec.PermissionMode)
	}
	return nil
}

func prepare(ctx context.Context, deps *Deps, spec TaskSpec, emit func(Event)) (*leg, error) {
	if err := validateSpec(deps, &spec); err != nil {
		return nil, err
	}
	l := &leg{deps: deps, spec: spec, emit: emit, sessionID: newSessionID(), mode: spec.PermissionMode}
	if l.mode == "" {
		l.mode = ModeDefault
	}
	var modeFace fence.Face
	if l.mode == ModeBypassPermissions {
		modeFace = fence.FaceOpen // the mode table's write face
	}
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
		ModeWriteFace:             modeFace,
		StateDir:                  deps.StateDir,
		DenyGlobs:                 deps.DenyGlobs,
		Scratchpad:                fence.AdvertisedSpec{Path: spec.Scratchpad},
		MemoryDir:                 fence.AdvertisedSpec{Path: deps.MemoryDir},
		OnNotice:                  l.notice,
	})
	if err != nil {
		return nil, err
	}
	l.fence = f
	l.roster = l.buildRoster()
	for _, t := range l.roster {
		l.specs = append(l.specs, t.Spec().ModelSpec())
	}
	l.manifest = Manifest{
		SessionID:   l.sessionID,
		Provider:    deps.Provider.Name(),
		Model:       spec.Model,
		Platform:    runtime.GOOS + "/" + runtime.GOARCH,
		Root:        f.Root(),
		WriteRoots:  f.WriteRoots(),
		ReadRoots:   f.ReadRoots(),
		ReadFace:    string(f.ReadFace()),
		WriteFace:   string(f.WriteFace()),
		Advertised:  advertisedOf(f),
		Tools:       l.roster.Names(),
		Mode:        ModeReceipt{Requested: l.mode, Effective: l.mode},
		FileHistory: "disabled",
		ReadOnly:    spec.HandsReadOnly,
	}
	l.system = systemPrompt(l)
	return l, nil
}

// buildRoster mounts the leg's tools.
func (l *leg) buildRoster() tools.Roster {
	cfg := fstools.Config{Env: l.deps.Env, Fence: l.fence, ReadState: fstools.NewReadState()}
	var r tools.Roster
	r = append(r, fstools.ReadTools(cfg)...)
	if !l.spec.HandsReadOnly {
		r = append(r, fstools.WriteTools(cfg, fstools.LaneConfig{MemoryDirs: admittedDirs(l.fence, fence.AdvertiserMemory), Hooks: fstools.Hooks{
			Permission:    l.permitWrite,
			BeforeWrite:   l.deps.BeforeWrite,
			TrackFileEdit: l.deps.TrackFileEdit,
			FileEdited:    l.deps.OnFileEdited,
		}})...)
	}
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
