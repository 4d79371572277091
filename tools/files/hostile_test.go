package files

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/internal/gate"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/tools"
)

// hostileMarker is the secret the hostile tests plant; it must never reach a result.
const hostileMarker = "SEMA-SECRET-7f3a9c"

func runTool(t *testing.T, tl tools.Tool, input any) tools.Result {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	return tl.Run(context.Background(), raw)
}

// TestReadDenyRulesHideFromWalks: a Read deny rule keeps denied files out of every walk
// of Glob, Grep and LS — neither their names nor their content reach a result — through
// the seam the agent wires (Config.Denied from the gate's ReadDenial).
func TestReadDenyRulesHideFromWalks(t *testing.T) {
	t.Parallel()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for rel, content := range map[string]string{
		"secrets/key":           "token=" + hostileMarker + "\n",
		"secrets/deeper/more":   hostileMarker + "\n",
		"id.pem":                hostileMarker + "\n",
		"nested/deep/cert.pem":  hostileMarker + "\n",
		".env":                  "PASSWORD=" + hostileMarker + "\n",
		"src/main.go":           "package main // MARK\n",
		"nested/deep/notes.txt": "MARK here\n",
	} {
		writeTestFile(t, filepath.Join(root, rel), content)
	}
	// A link inside an allowed directory to a denied file: a rule names both names.
	if err := os.Symlink(filepath.Join(root, "secrets", "key"), filepath.Join(root, "src", "alias")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fn, err := fence.New(ctx, fence.Config{Env: env.NewHost(), Root: root})
	if err != nil {
		t.Fatal(err)
	}
	rules, err := permission.ParseRules(nil, []string{"Read(./secrets/**)", "Read(*.pem)", "Read(./.env)"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gate.New(gate.Config{Modes: gate.FixedMode(permission.ModeBypassPermissions), Rules: rules, Resolver: gate.FenceResolver(fn)})
	if err != nil {
		t.Fatal(err)
	}
	scope := gate.ScopeOf(ctx, fn, "")
	cfg := Config{Env: env.NewHost(), Fence: fn, ReadState: NewReadState(), Denied: g.ReadDenial(scope).Denied}
	ts := map[string]tools.Tool{}
	for _, tl := range ReadTools(cfg) {
		ts[tl.Spec().Name] = tl
	}
	// Names a listing must not show either.
	deniedNames := []string{"secrets", "id.pem", "cert.pem", ".env"}
	tests := []struct {
		name  string
		tool  string
		input map[string]any
	}{
		{"grep content, default path", "Grep", map[string]any{"pattern": "SEMA-SECRET", "output_mode": "content"}},
		{"grep files, dot", "Grep", map[string]any{"pattern": "SEMA", "path": "."}},
		{"grep count, absolute root", "Grep", map[string]any{"pattern": "SECRET", "path": root, "output_mode": "count"}},
		{"grep content, pem glob", "Grep", map[string]any{"pattern": ".", "glob": "*.pem", "output_mode": "content"}},
		{"grep ignore case, everything", "Grep", map[string]any{"pattern": "sema-secret", "-i": true, "glob": "**/*", "output_mode": "content"}},
		{"grep below a directory holding a pem", "Grep", map[string]any{"pattern": "SEMA", "path": "nested", "output_mode": "content"}},
		{"grep multiline", "Grep", map[string]any{"pattern": "token=.*\\n?", "multiline": true, "output_mode": "content", "-C": 3}},
		{"grep through a link to a denied file", "Grep", map[string]any{"pattern": "SEMA", "path": "src", "output_mode": "content"}},
		{"grep dot-relative parent spelling", "Grep", map[string]any{"pattern": "SEMA", "path": "src/..", "output_mode": "content"}},
		{"glob everything", "Glob", map[string]any{"pattern": "**/*"}},
		{"glob the denied directory", "Glob", map[string]any{"pattern": "secrets/**"}},
		{"glob pems", "Glob", map[string]any{"pattern": "**/*.pem"}},
		{"glob dotfiles", "Glob", map[string]any{"pattern": ".e*"}},
		{"glob absolute", "Glob", map[string]any{"pattern": root + "/*"}},
		{"glob a link to a denied file", "Glob", map[string]any{"pattern": "src/*"}},
		{"ls root", "LS", map[string]any{"path": root}},
		{"ls nested", "LS", map[string]any{"path": "nested"}},
	}
	for _, tc := range tests {
		r := runTool(t, ts[tc.tool], tc.input)
		text := r.TextOf()
		if strings.Contains(text, hostileMarker) {
			t.Errorf("%s: the secret reached the result:\n%s", tc.name, text)
		}
		for _, n := range deniedNames {
			if strings.Contains(text, n) {
				t.Errorf("%s: the denied name %q reached the result:\n%s", tc.name, n, text)
			}
		}
	}
	// The walks still work: what no rule denies is found.
	if r := runTool(t, ts["Grep"], map[string]any{"pattern": "MARK", "output_mode": "files_with_matches"}); !strings.Contains(r.TextOf(), "main.go") || !strings.Contains(r.TextOf(), "notes.txt") {
		t.Errorf("the allowed files were not found: %s", r.TextOf())
	}
	// A call whose own path is denied is the gate's: denied in every mode.
	for _, in := range []string{`{"pattern":"x","path":"secrets"}`, `{"pattern":"x","path":"id.pem"}`} {
		c, err := g.Prepare(ctx, permission.Call{Tool: "Grep", Effect: tools.EffectRead, Input: json.RawMessage(in), Scope: scope})
		if err != nil {
			t.Fatal(err)
		}
		if d := g.Decide(ctx, c); d.Behavior != permission.Deny {
			t.Errorf("Grep %s: %+v, want deny", in, d)
		}
	}
}

// hardLinkFix is a task root holding hard links to files of a directory outside it.
type hardLinkFix struct {
	root, outside string
	cfg           Config
	read          map[string]tools.Tool
	write         map[string]tools.Tool
}

func newHardLinkFix(t *testing.T) *hardLinkFix {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fn, err := fence.New(context.Background(), fence.Config{Env: env.NewHost(), Root: root})
	if err != nil {
		t.Fatal(err)
	}
	f := &hardLinkFix{root: root, outside: outside, read: map[string]tools.Tool{}, write: map[string]tools.Tool{}}
	f.cfg = Config{Env: env.NewHost(), Fence: fn, ReadState: NewReadState()}
	for _, tl := range ReadTools(f.cfg) {
		f.read[tl.Spec().Name] = tl
	}
	for _, tl := range WriteTools(f.cfg, LaneConfig{}) {
		f.write[tl.Spec().Name] = tl
	}
	return f
}

// link writes content to the outside file name and links it into the root as rel.
func (f *hardLinkFix) link(t *testing.T, name, rel, content string) {
	t.Helper()
	out := filepath.Join(f.outside, name)
	writeTestFile(t, out, content)
	in := filepath.Join(f.root, rel)
	if err := os.MkdirAll(filepath.Dir(in), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(out, in); err != nil {
		t.Skipf("hard links are not available here: %v", err)
	}
}

// markRead records rel as read whole, as a Read made before the file got its second
// name would have.
func (f *hardLinkFix) markRead(t *testing.T, rel string) {
	t.Helper()
	p := filepath.Join(f.root, rel)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	f.cfg.ReadState.Record(p, ReadRecord{Size: int64(len(b)), ModTime: fi.ModTime(), Hash: contentHash(b)})
}

const hostileNotebook = `{"cells":[{"cell_type":"code","id":"c1","metadata":{},"source":["print('` + hostileMarker + `')"],"outputs":[],"execution_count":null}],"metadata":{},"nbformat":4,"nbformat_minor":5}`

// TestHardLinkedFilesAreNotRead: a file inside the root that is another name of a file
// outside it is never read for the model, by any tool that reads content, and a write
// never changes the outside file's bytes.
func TestHardLinkedFilesAreNotRead(t *testing.T) {
	t.Parallel()
	f := newHardLinkFix(t)
	f.link(t, "secret.txt", "twin.txt", "line one\ntoken="+hostileMarker+"\n")
	f.link(t, "secret.ipynb", "nb.ipynb", hostileNotebook)
	f.link(t, "deep.txt", "src/deep/twin2.txt", hostileMarker+"\n")
	writeTestFile(t, filepath.Join(f.root, "src", "plain.txt"), "nothing here\n")
	tests := []struct {
		name  string
		tool  string
		input map[string]any
		code  string // the refusal expected, "" when the answer may be a success without the secret
	}{
		{"read", "Read", map[string]any{"file_path": "twin.txt"}, CodeHardLink},
		{"read absolute", "Read", map[string]any{"file_path": filepath.Join(f.root, "twin.txt")}, CodeHardLink},
		{"read a window", "Read", map[string]any{"file_path": "twin.txt", "offset": 2, "limit": 1}, CodeHardLink},
		{"read through ..", "Read", map[string]any{"file_path": "src/../twin.txt"}, CodeHardLink},
		{"read nested", "Read", map[string]any{"file_path": "src/deep/twin2.txt"}, CodeHardLink},
		{"read notebook", "Read", map[string]any{"file_path": "nb.ipynb"}, CodeHardLink},
		{"grep the file", "Grep", map[string]any{"pattern": "token", "path": "twin.txt", "output_mode": "content"}, CodeHardLink},
		{"grep the tree, content", "Grep", map[string]any{"pattern": "SEMA", "output_mode": "content"}, ""},
		{"grep the tree, files", "Grep", map[string]any{"pattern": "SEMA", "path": "."}, ""},
		{"grep a subtree, count", "Grep", map[string]any{"pattern": "SEMA", "path": "src", "output_mode": "count"}, ""},
		{"grep with context", "Grep", map[string]any{"pattern": "line", "output_mode": "content", "-C": 5}, ""},
	}
	for _, tc := range tests {
		r := runTool(t, f.read[tc.tool], tc.input)
		text := r.TextOf()
		if strings.Contains(text, hostileMarker) {
			t.Errorf("%s: the outside file's content reached the result:\n%s", tc.name, text)
		}
		if tc.code != "" && r.Code != tc.code {
			t.Errorf("%s: code %q (%s), want %s", tc.name, r.Code, text, tc.code)
		}
	}
	if r := runTool(t, f.read["Grep"], map[string]any{"pattern": "SEMA", "path": "."}); !strings.Contains(r.TextOf(), "hard link") {
		t.Errorf("the tree search does not say it skipped hard-linked files: %s", r.TextOf())
	}

	// The write tools read the file they change (for read-before-edit and the diff):
	// that read is refused too, and the outside file keeps its bytes.
	f.markRead(t, "twin.txt")
	f.markRead(t, "nb.ipynb")
	writes := []struct {
		name, tool, outside string
		input               map[string]any
	}{
		{"edit", "Edit", "secret.txt", map[string]any{"file_path": "twin.txt", "old_string": "line one", "new_string": "changed"}},
		{"multiedit", "MultiEdit", "secret.txt", map[string]any{"file_path": "twin.txt", "edits": []map[string]any{{"old_string": "line one", "new_string": "changed"}}}},
		{"write", "Write", "secret.txt", map[string]any{"file_path": "twin.txt", "content": "overwritten\n"}},
		{"notebook edit", "NotebookEdit", "secret.ipynb", map[string]any{"notebook_path": "nb.ipynb", "cell_id": "c1", "new_source": "print(1)"}},
	}
	for _, tc := range writes {
		before, err := os.ReadFile(filepath.Join(f.outside, tc.outside))
		if err != nil {
			t.Fatal(err)
		}
		r := runTool(t, f.write[tc.tool], tc.input)
		if strings.Contains(r.TextOf(), hostileMarker) {
			t.Errorf("%s: the outside file's content reached the result:\n%s", tc.name, r.TextOf())
		}
		if r.Code != CodeHardLink {
			t.Errorf("%s: code %q (%s), want %s", tc.name, r.Code, r.TextOf(), CodeHardLink)
		}
		after, err := os.ReadFile(filepath.Join(f.outside, tc.outside))
		if err != nil {
			t.Fatal(err)
		}
		if string(after) != string(before) {
			t.Errorf("%s changed the outside file: %q", tc.name, after)
		}
	}
}

// TestWriteReplacesHardLinkedEntry: the env's write replaces the directory entry (a
// temporary file renamed over it), so writing a hard-linked name inside the root never
// changes the bytes of the other name.
func TestWriteReplacesHardLinkedEntry(t *testing.T) {
	t.Parallel()
	f := newHardLinkFix(t)
	f.link(t, "secret.txt", "twin.txt", hostileMarker+"\n")
	in := filepath.Join(f.root, "twin.txt")
	if err := env.NewHost().WriteFile(context.Background(), in, []byte("new bytes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(filepath.Join(f.outside, "secret.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != hostileMarker+"\n" {
		t.Errorf("the outside file changed: %q", out)
	}
	if b, _ := os.ReadFile(in); string(b) != "new bytes\n" {
		t.Errorf("the inside name holds %q", b)
	}
	// Now a single name again, it reads as usual.
	if r := runTool(t, f.read["Read"], map[string]any{"file_path": "twin.txt"}); r.IsError || !strings.Contains(r.TextOf(), "new bytes") {
		t.Errorf("the rewritten file does not read: %+v", r)
	}
}
