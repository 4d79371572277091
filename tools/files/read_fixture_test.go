package files

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/tools"
)

// readFix is the read tools of one session over a temporary task root on the host.
type readFix struct {
	t     *testing.T
	root  string
	env   env.ExecutionEnv
	fence *fence.Fence
	rs    *ReadState
	tools map[string]tools.Tool
}

// newReadFix builds the fixture; configure may change the fence config (roots, deny set).
func newReadFix(t *testing.T, configure ...func(*fence.Config)) *readFix {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return newReadFixAt(t, env.NewHost(), root, configure...)
}

func newReadFixAt(t *testing.T, e env.ExecutionEnv, root string, configure ...func(*fence.Config)) *readFix {
	t.Helper()
	fc := fence.Config{Env: e, Root: root}
	for _, c := range configure {
		c(&fc)
	}
	fn, err := fence.New(context.Background(), fc)
	if err != nil {
		t.Fatal(err)
	}
	f := &readFix{t: t, root: root, env: e, fence: fn, rs: NewReadState(), tools: map[string]tools.Tool{}}
	for _, tl := range ReadTools(Config{Env: e, Fence: fn, ReadState: f.rs}) {
		f.tools[tl.Spec().Name] = tl
	}
	return f
}

func (f *readFix) path(rel string) string { return filepath.Join(f.root, filepath.FromSlash(rel)) }

// put writes files (rel path -> content) behind the tools' back.
func (f *readFix) put(files map[string]string) {
	f.t.Helper()
	for rel, content := range files {
		writeTestFile(f.t, f.path(rel), content)
	}
}

func writeTestFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// age sets the modification time of rel to base minus n minutes.
func (f *readFix) age(rel string, n int) {
	f.t.Helper()
	ts := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC).Add(-time.Duration(n) * time.Minute)
	if err := os.Chtimes(f.path(rel), ts, ts); err != nil {
		f.t.Fatal(err)
	}
}

func (f *readFix) symlink(target, rel string) {
	f.t.Helper()
	p := f.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		f.t.Fatal(err)
	}
}

// run calls tool name with input (a JSON string, or any value to marshal).
func (f *readFix) run(name string, input any) tools.Result {
	f.t.Helper()
	raw, ok := input.(string)
	if !ok {
		b, err := json.Marshal(input)
		if err != nil {
			f.t.Fatal(err)
		}
		raw = string(b)
	}
	tl := f.tools[name]
	if tl == nil {
		f.t.Fatalf("no tool %s", name)
	}
	return tl.Run(context.Background(), json.RawMessage(raw))
}

// ok runs the tool and fails the test on an error result; it returns the text.
func (f *readFix) ok(name string, input any) string {
	f.t.Helper()
	r := f.run(name, input)
	if r.IsError {
		f.t.Fatalf("%s(%v) failed: %s: %s", name, input, r.Code, r.TextOf())
	}
	return r.TextOf()
}

// fails runs the tool and checks the error code; it returns the text.
func (f *readFix) fails(name string, input any, code string) string {
	f.t.Helper()
	r := f.run(name, input)
	if !r.IsError || r.Code != code {
		f.t.Fatalf("%s(%v) = error %v code %q (%s), want code %q", name, input, r.IsError, r.Code, r.TextOf(), code)
	}
	return r.TextOf()
}

// rel rewrites the fixture root out of text, so expectations read "<root>/a.go".
func (f *readFix) rel(text string) string { return strings.ReplaceAll(text, f.root, "<root>") }

func imageBlocks(r tools.Result) []model.Block {
	var out []model.Block
	for _, b := range r.Content {
		if b.Kind == model.KindImage {
			out = append(out, b)
		}
	}
	return out
}
