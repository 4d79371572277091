package agent

import (
	"context"
	"encoding/json"
	"path/filepath"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/instructions"
	"github.com/sema-agent/sema/internal/instrfiles"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/tools"
)

// InstructionOptions configure the instruction files (package instructions): the user's
// ~/.sema/AGENTS.md, the AGENTS.md and CLAUDE.md files (and their .local.md variants)
// from the filesystem root down to the task root, the root's .sema/AGENTS.md, the files
// they import, and the memory directory's MEMORY.md index. The zero value (and a nil
// Deps.Instructions) loads them, capped at instructions.DefaultMaxChars.
type InstructionOptions struct {
	// Off turns the instruction files off for every task: none is read, the system
	// prompt has no section for them, and the manifest lists none. Default false.
	Off bool
	// MaxChars caps the text of the instruction files of one conversation (the system
	// prompt's and those loaded later), in characters. Zero (the default):
	// instructions.DefaultMaxChars (40,000). Negative is refused
	// (config.instructions_invalid).
	MaxChars int
}

// Codes of the instruction files as the runner uses them; the skips and the cap are
// announced with package instructions' own codes (instructions.CodeTruncated, …).
const (
	// CodeInstructionsInvalid: Deps.Instructions holds a value that cannot be meant (a
	// negative MaxChars).
	CodeInstructionsInvalid = "config.instructions_invalid"
	// CodeInstructionsLoaded is the notice of an instruction file loaded while the leg
	// runs: a tool read in a directory below the task root that has one (or an import
	// of such a file). Its detail names the file ("path") and the directory read in
	// ("dir"). The files loaded at the start are listed in Manifest.Instructions instead.
	CodeInstructionsLoaded = "instructions.loaded"
)

func (d *Deps) instructions() InstructionOptions {
	if d.Instructions == nil {
		return InstructionOptions{}
	}
	return *d.Instructions
}

// validateInstructions is the door's part for Deps.Instructions.
func validateInstructions(deps *Deps) error {
	if o := deps.instructions(); o.MaxChars < 0 {
		return configError(CodeInstructionsInvalid, "Deps.Instructions.MaxChars is %d; give a number of characters, or 0 for %d", o.MaxChars, instructions.DefaultMaxChars)
	}
	return nil
}

// prepareInstructions loads the leg's start files, unless a layer turned them off. A
// child leg begins with its parent's start files, not read again (its conversation is
// new, so the files below the root are loaded anew as it reads there).
func (l *leg) prepareInstructions(ctx context.Context) {
	if l.link != nil {
		if p := l.link.parent.instr; p != nil {
			l.instr = p.Fork(ctx)
		}
		return
	}
	if l.deps.instructions().Off || l.spec.NoInstructions {
		return
	}
	var readDenied func(tool, p string) bool
	if l.gate != nil {
		readDenied = l.gate.ReadDenial(l.scope).Denied
	}
	memory := ""
	if dirs := admittedDirs(l.fence, fence.AdvertiserMemory); len(dirs) > 0 {
		memory = dirs[0]
	}
	loader := instructions.New(instructions.Config{
		Env:       l.deps.Env,
		Root:      l.fence.Root(),
		Home:      l.home(),
		ReadRoots: l.fence.ReadRoots(),
		// What the Read tool may not read, an instruction file may not show.
		Denied: func(p string) bool {
			return l.fence.Denied(p) || readDenied != nil && readDenied("Read", p)
		},
		MemoryDir: memory,
		MaxChars:  l.deps.instructions().MaxChars,
		Claude:    l.layered.ClaudeCompat,
	})
	l.instr = instrfiles.New(ctx, loader)
	for _, n := range l.instr.Start().Notices {
		l.notice(n)
	}
}

// instructionFiles are the canonical paths of the files in the system prompt, for the
// manifest.
func (l *leg) instructionFiles() []string {
	if l.instr == nil {
		return nil
	}
	return l.instr.Paths()
}

// instructionsPrompt is the system prompt's part for the instruction files and the
// memory index; empty when they are off or there are none and no memory directory.
func instructionsPrompt(l *leg) string {
	if l.instr == nil {
		return ""
	}
	memory := ""
	if dirs := admittedDirs(l.fence, fence.AdvertiserMemory); len(dirs) > 0 {
		memory = dirs[0]
	}
	return l.instr.Prompt(memory)
}

// watchReads wraps the read tools so that a successful call tells the leg the
// directory it read in: the instruction files of a directory below the task root are
// loaded the first time a tool reads there. The tools are not changed; the leg
// notices the path of each call, as the call's input names it.
func (l *leg) watchReads(ts []tools.Tool) []tools.Tool {
	if l.instr == nil {
		return ts
	}
	out := make([]tools.Tool, len(ts))
	for i, t := range ts {
		out[i] = readWatch{Tool: t, l: l}
	}
	return out
}

// readWatch is a read tool whose successful calls are reported to the leg.
type readWatch struct {
	tools.Tool
	l *leg
}

// Run runs the tool, then loads the instruction files of the directory it read in.
func (w readWatch) Run(ctx context.Context, input json.RawMessage) tools.Result {
	res := w.Tool.Run(ctx, input)
	if !res.IsError && ctx.Err() == nil {
		w.l.readIn(ctx, w.Tool.Spec().Name, input)
	}
	return res
}

// readIn loads the instruction files below the task root down to the directory a read
// call named: Read's file's directory, LS's directory, Grep's directory (or its file's),
// Glob's directory with the static start of its pattern. A path the fence refuses,
// or one that does not exist, names no directory.
func (l *leg) readIn(ctx context.Context, tool string, input json.RawMessage) {
	spelled := instrfiles.ReadPath(tool, input)
	if spelled == "" {
		return
	}
	p, err := l.fence.Resolve(ctx, spelled, fence.Read)
	if err != nil || !p.Exists {
		return
	}
	dir := p.Canonical
	if fi, err := l.deps.Env.Stat(ctx, dir); err != nil {
		return
	} else if !fi.IsDir() {
		dir = filepath.Dir(dir)
	}
	set := l.instr.Enter(ctx, dir)
	for _, n := range set.Notices {
		l.notice(n)
	}
	for _, f := range set.Files {
		msg := "the instruction file " + f.Path + " was loaded: a tool read in " + dir
		if f.ImportedBy != "" {
			msg = "the instruction file " + f.Path + ", imported by " + f.ImportedBy + ", was loaded: a tool read in " + dir
		}
		l.notice(sema.Notice{Code: CodeInstructionsLoaded, Message: msg, Detail: map[string]any{"path": f.Path, "dir": dir}})
	}
}

// withReminders adds the instruction files loaded since the last request to the user
// message that answers the turn's tool calls (instrfiles.State.Reminders).
func (l *leg) withReminders(results []model.Block) []model.Block {
	if l.instr == nil {
		return results
	}
	return l.instr.Reminders(results)
}
