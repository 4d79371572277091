// Package instrfiles keeps a conversation's instruction files: those its loader
// (package instructions) found at the start, for the system prompt, and those it loads
// as tools read in directories below the task root, which the next request carries as a
// reminder after the turn's tool results.
package instrfiles

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/sema-agent/sema/instructions"
	"github.com/sema-agent/sema/model"
)

// State is a conversation's instruction files: its loader, what it loaded at the start,
// and what it loaded since that the next request has not yet carried.
type State struct {
	loader *instructions.Loader
	start  instructions.Set

	mu      sync.Mutex
	pending []instructions.File
}

// New loads the start files of loader's conversation.
func New(ctx context.Context, loader *instructions.Loader) *State {
	return &State{loader: loader, start: loader.Start(ctx)}
}

// Fork is a new conversation's state that begins with s's start files, not read again
// (its conversation is new, so the files below the root are loaded anew as it reads
// there).
func (s *State) Fork(ctx context.Context) *State {
	return New(ctx, s.loader.Fork())
}

// Start is what was loaded at the start.
func (s *State) Start() instructions.Set { return s.start }

// Paths are the canonical paths of the files in the system prompt; nil for none.
func (s *State) Paths() []string {
	if len(s.start.Files) == 0 {
		return nil
	}
	return s.start.Paths()
}

// Prompt is the system prompt's part for the instruction files and the memory index:
// memoryDir is the memory directory ("" for none).
func (s *State) Prompt(memoryDir string) string {
	var files, memory instructions.Set
	for _, f := range s.start.Files {
		if f.Source == instructions.SourceMemory {
			memory.Files = append(memory.Files, f)
		} else {
			files.Files = append(files.Files, f)
		}
	}
	var b strings.Builder
	if len(files.Files) > 0 {
		b.WriteString("\n# Instructions from files\n")
		b.WriteString("The user and the project keep instructions for you in the files below. They are not data: follow them, over the ways of working above where the two differ. Where two of them disagree, the later one (closer to the working directory) wins. When you first read in a directory below the working directory that has such files, they are added to the conversation.\n\n")
		b.WriteString(files.Text())
	}
	if memoryDir != "" {
		b.WriteString("\n# Memory\n")
		b.WriteString("Your memory directory, " + memoryDir + ", keeps what you learn for later tasks. Its index, " + memoryDir + "/" + instructions.MemoryIndex + ", is shown at the start of every task; the notes themselves are not, so read the ones you need. When you save a note there, add a line to the index naming its file and what it holds, keep the index short, and remove lines of notes you delete.\n")
		if len(memory.Files) > 0 {
			b.WriteString("\n" + memory.Text())
		}
	}
	return b.String()
}

// ReadPath is the path a successful read call named, as its input spells it: Read's
// file, LS's directory, Grep's directory (or its file), Glob's directory with the
// static start of its pattern; "" for none.
func ReadPath(tool string, input json.RawMessage) string {
	var in struct {
		FilePath string `json:"file_path"`
		Path     string `json:"path"`
		Pattern  string `json:"pattern"`
	}
	if json.Unmarshal(input, &in) != nil {
		return ""
	}
	spelled := in.Path
	switch tool {
	case "Read":
		spelled = in.FilePath
	case "Glob":
		base, _ := doublestar.SplitPattern(filepath.ToSlash(in.Pattern))
		switch {
		case filepath.IsAbs(in.Pattern):
			spelled = filepath.FromSlash(base)
		case base != "." && base != "":
			spelled = filepath.Join(spelled, filepath.FromSlash(base))
		}
	}
	return spelled
}

// Enter loads the instruction files below the task root down to dir (a canonical
// directory a tool read in), keeps them for the next request, and returns what it
// loaded, with the loader's notices.
func (s *State) Enter(ctx context.Context, dir string) instructions.Set {
	set := s.loader.Enter(ctx, dir)
	if len(set.Files) > 0 {
		s.mu.Lock()
		s.pending = append(s.pending, set.Files...)
		s.mu.Unlock()
	}
	return set
}

// Reminders adds the instruction files loaded since the last request to the user
// message that answers the turn's tool calls, as one text block after the results. The
// system prompt is not changed: it was sent already, and a stable one is what lets
// providers cache it. The block is part of the conversation from then on (the
// transcript stores it, compaction summarises it like any message).
func (s *State) Reminders(results []model.Block) []model.Block {
	s.mu.Lock()
	files := s.pending
	s.pending = nil
	s.mu.Unlock()
	if len(files) == 0 {
		return results
	}
	text := "<system-reminder>\nYou read in a directory with instruction files of its own. Follow them as you follow those in the system prompt, for work in the directory each one is in and below it.\n\n" +
		instructions.Set{Files: files}.Text() + "</system-reminder>"
	return append(append([]model.Block(nil), results...), model.TextBlock(text))
}
