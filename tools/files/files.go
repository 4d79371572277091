// Package files holds the workspace file tools the model uses: Read, Glob, Grep and LS (the
// read tools), and Write, Edit, MultiEdit and NotebookEdit with the write lane they share.
// Every path goes through the run's fence (package fence) and every byte through its env
// (package env). Tools answer with tools.Result values; they never judge permissions.
package files

import (
	"slices"
	"sync"
	"time"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/imagefit"
	"github.com/sema-agent/sema/tools"
)

// Config is what the file tools of one leg share.
type Config struct {
	// Env is the env every byte is read and written through. Required: the tools do
	// not check for nil.
	Env env.ExecutionEnv
	// Fence judges every path a tool touches: the read face for the read tools, the
	// write face for the write lane. Required, like Env.
	Fence *fence.Fence
	// ReadState records what this session read; the write lane checks it. Required.
	ReadState *ReadState
	// Denied reports whether the permission rules keep the absolute path p from the
	// tool (a Read deny rule such as Read(./secrets/**) or Read(*.pem)). The gate judges
	// the path a call names; a walk (Glob, Grep, LS) meets paths no call named, so it
	// asks this for every entry and leaves the denied ones out, names and content alike.
	// The agent hands in the gate's own judgement (gate.Gate.ReadDenial), so there
	// is one. Nil: no rule denies anything.
	Denied DenyFunc
	// ImageDownsampler makes an image Read would show (a file, or a notebook's image
	// output) fit the limits a model accepts, when it is over them;
	// imagefit.NoDownsample turns downsampling off, and such an image is then refused.
	// Nil: imagefit.Downsample, the built-in one.
	ImageDownsampler imagefit.Downsampler
	// Buffers is the editor the session runs in, when it serves the files it holds (an
	// ACP client's fs capabilities): Read takes a text file's content from it, and
	// Write, Edit and MultiEdit read and write text files through it, after every
	// check made as without it. Nil: every byte goes through Env.
	Buffers Buffers
}

// DenyFunc reports whether a rule keeps the absolute path p from the named tool.
type DenyFunc func(tool, p string) bool

// ruleDenied asks cfg.Denied about p for tool.
func (c Config) ruleDenied(tool, p string) bool { return c.Denied != nil && c.Denied(tool, p) }

// ReadRecord is what a Read saw of a file. The runner stores it with the session, so a
// later leg of the session knows what the model read; the JSON names are that stored form.
type ReadRecord struct {
	// Size is the length in bytes of the whole file as read, even when Read showed
	// only part of it. A write refuses with fs.changed_since_read when the file's size
	// differs now.
	Size int64 `json:"size"`
	// ModTime is the file's modification time when it was read. It is kept for
	// display; the change check compares Size and Hash only.
	ModTime time.Time `json:"mod_time,omitzero"`
	// Hash is the hex sha256 of the bytes read.
	Hash string `json:"hash"`
	// Ranges are the lines the model was shown of this content, merged and in order;
	// empty when it saw the whole file (a whole read, an image or notebook, or the
	// content it wrote itself). They are a record for people and hosts: the change
	// check does not read them.
	Ranges []LineRange `json:"ranges,omitempty"`
}

// LineRange is a span of 1-based lines, both ends included.
type LineRange struct {
	// From is the first line shown.
	From int `json:"from"`
	// To is the last line shown.
	To int `json:"to"`
}

// Equal reports whether r and o record the same read: the same size, hash, time and
// ranges.
func (r ReadRecord) Equal(o ReadRecord) bool {
	return r.Size == o.Size && r.Hash == o.Hash && r.ModTime.Equal(o.ModTime) && slices.Equal(r.Ranges, o.Ranges)
}

// ReadState is the set of files a session has read, keyed by canonical path. It is safe
// for concurrent use.
type ReadState struct {
	mu sync.Mutex
	m  map[string]ReadRecord
}

// NewReadState returns an empty ReadState.
func NewReadState() *ReadState { return &ReadState{m: map[string]ReadRecord{}} }

// Record notes that the file at canonical path was read as rec.
func (s *ReadState) Record(path string, rec ReadRecord) {
	s.mu.Lock()
	s.m[path] = rec
	s.mu.Unlock()
}

// recordPart notes a read of lines from..to of content rec describes. A part of the
// same content read before widens the ranges; a part of other content replaces them.
// A whole read (an earlier record without ranges) stays whole.
func (s *ReadState) recordPart(path string, rec ReadRecord, from, to int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ranges []LineRange
	if prev, ok := s.m[path]; ok && prev.Size == rec.Size && prev.Hash == rec.Hash {
		if len(prev.Ranges) == 0 {
			s.m[path] = ReadRecord{Size: rec.Size, ModTime: rec.ModTime, Hash: rec.Hash}
			return
		}
		ranges = prev.Ranges
	}
	rec.Ranges = mergeRange(ranges, LineRange{From: from, To: to})
	s.m[path] = rec
}

// mergeRange adds r to the ordered, disjoint ranges rs, joining what overlaps or
// touches.
func mergeRange(rs []LineRange, r LineRange) []LineRange {
	out := make([]LineRange, 0, len(rs)+1)
	for _, x := range rs {
		switch {
		case x.To+1 < r.From:
			out = append(out, x)
		case r.To+1 < x.From:
			out = append(out, r)
			r = x
		default:
			r = LineRange{From: min(r.From, x.From), To: max(r.To, x.To)}
		}
	}
	return append(out, r)
}

// Lookup returns the record for canonical path.
func (s *ReadState) Lookup(path string) (ReadRecord, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.m[path]
	return r, ok
}

// Forget drops the record for canonical path (a rewind changed the file).
func (s *ReadState) Forget(path string) {
	s.mu.Lock()
	delete(s.m, path)
	s.mu.Unlock()
}

// Snapshot returns a copy of every record, keyed by canonical path: what the runner
// stores with the session so a later leg starts from it.
func (s *ReadState) Snapshot() map[string]ReadRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]ReadRecord, len(s.m))
	for k, v := range s.m {
		out[k] = v
	}
	return out
}

// ReadTools returns the read tools of a leg, in the order the model sees them: Read, Glob,
// Grep and LS. They share cfg: every path goes through cfg.Fence with the read face and
// every byte through cfg.Env; Read records what it read in cfg.ReadState.
func ReadTools(cfg Config) []tools.Tool {
	return []tools.Tool{&readTool{cfg}, &globTool{cfg}, &grepTool{cfg}, &lsTool{cfg}}
}
