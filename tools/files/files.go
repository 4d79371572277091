// Package files holds the workspace file tools the model uses: Read, Glob, Grep and LS (the
// read tools), and Write, Edit, MultiEdit and NotebookEdit with the write lane they share.
// Every path goes through the run's fence (package fence) and every byte through its env
// (package env). Tools answer with tools.Result values; they never judge permissions.
package files

import (
	"sync"
	"time"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
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
}

// DenyFunc reports whether a rule keeps the absolute path p from the named tool.
type DenyFunc func(tool, p string) bool

// ruleDenied asks cfg.Denied about p for tool.
func (c Config) ruleDenied(tool, p string) bool { return c.Denied != nil && c.Denied(tool, p) }

// ReadRecord is what a Read saw of a file.
type ReadRecord struct {
	// Size is the length in bytes of the whole file as read, even when Read showed
	// only part of it. A write refuses with fs.changed_since_read when the file's size
	// differs now.
	Size int64
	// ModTime is the file's modification time when it was read. It is kept for
	// display; the change check compares Size and Hash only.
	ModTime time.Time
	// Hash is the hex sha256 of the bytes read.
	Hash string
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

// ReadTools returns the read tools of a leg, in the order the model sees them: Read, Glob,
// Grep and LS. They share cfg: every path goes through cfg.Fence with the read face and
// every byte through cfg.Env; Read records what it read in cfg.ReadState.
func ReadTools(cfg Config) []tools.Tool {
	return []tools.Tool{&readTool{cfg}, &globTool{cfg}, &grepTool{cfg}, &lsTool{cfg}}
}
