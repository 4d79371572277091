package agent

import (
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/internal/gate"
	"github.com/sema-agent/sema/tools"
	"github.com/sema-agent/sema/tools/files"
)

// buildRoster mounts the leg's tools.
func (l *leg) buildRoster() tools.Roster {
	l.seedReadState()
	cfg := files.Config{Env: l.deps.Env, Fence: l.fence, ReadState: l.readState, ImageDownsampler: l.deps.ImageDownsampler, Buffers: l.deps.Buffers}
	if l.gate != nil {
		// The walks of Glob, Grep and LS ask the gate's own matcher about every entry, so
		// a Read deny rule hides a path from a listing as it refuses a call naming it.
		cfg.Denied = l.gate.ReadDenial(l.scope).Denied
	}
	var r tools.Roster
	r = append(r, l.watchReads(files.ReadTools(cfg))...)
	l.laneTools = map[string]bool{}
	if !l.spec.ReadOnly {
		laneCfg := cfg
		if l.files != nil {
			laneCfg.Env = &writeEnv{ExecutionEnv: cfg.Env, l: l}
			if cfg.Buffers != nil {
				laneCfg.Buffers = &writeBuffers{Buffers: cfg.Buffers, l: l}
			}
		}
		lane := files.WriteTools(laneCfg, files.LaneConfig{MemoryDirs: admittedDirs(l.fence, fence.AdvertiserMemory), Hooks: files.Hooks{
			Permission:    l.permitWrite,
			BeforeWrite:   l.deps.hooks().BeforeWrite,
			TrackFileEdit: l.trackSeat(),
			FileEdited:    l.deps.hooks().OnFileEdited,
		}})
		for _, t := range lane {
			l.laneTools[t.Spec().Name] = true
		}
		r = append(r, lane...)
	}
	if l.shell != nil {
		r = append(r, l.shell.Tools()...)
	}
	if t := l.webFetchTool(); t != nil {
		r = append(r, t)
	}
	r = append(r, gate.NewEnterPlanMode(l.modes), gate.NewExitPlanMode(l.modes), &todoTool{l: l})
	if l.mayDelegate() && l.agents != nil {
		r = append(r, newTaskTool(l))
	}
	r = append(r, l.deps.Tools...)
	if l.link != nil {
		r = l.filterChildTools(r)
	}
	return r
}

// trackSeat is the write lane's first-touch history seat: the deployment's own, else the
// runner's file history when it is on, else none. A layer that turned file history off
// silences both.
func (l *leg) trackSeat() files.TrackFileEditHook {
	if l.deps.hooks().TrackFileEdit != nil {
		if l.capture.offBy != "" {
			return nil
		}
		return l.deps.hooks().TrackFileEdit
	}
	if l.files != nil {
		return l.trackFileEdit
	}
	return nil
}

// fileHistoryFact is the manifest's word for file history: on when the leg's writes
// meet a first-touch seat. A read-only leg has no write band, so nothing of it is
// recorded (it still marks its turns' boundaries, so a rewind can return to them).
func (l *leg) fileHistoryFact() string {
	if !l.spec.ReadOnly && l.trackSeat() != nil {
		return "on"
	}
	return "disabled"
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
