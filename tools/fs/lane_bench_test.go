package fs

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/env/envtest"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/tools"
)

// laneNoopHooks fills every seat with a hook that allows, so the benchmarks pay for each
// station.
func laneNoopHooks() Hooks {
	return Hooks{
		Permission:  func(context.Context, PermissionRequest) error { return nil },
		BeforeWrite: func(context.Context, BeforeWriteRequest) (BeforeWriteResult, error) { return BeforeWriteResult{OK: true}, nil },
		TrackFileEdit: func(context.Context, TrackEditRequest) (TrackEditResult, error) {
			return TrackEditResult{OK: true}, nil
		},
		FileEdited: func(FileEditedNotice) {},
	}
}

// laneBenchTools mounts the write tools on root through e, with the file at rel read.
func laneBenchTools(b *testing.B, e env.ExecutionEnv, root, rel string) (map[string]tools.Tool, *Lane) {
	b.Helper()
	ctx := context.Background()
	fc, err := fence.New(ctx, fence.Config{Env: e, Root: root})
	if err != nil {
		b.Fatal(err)
	}
	rs := NewReadState()
	key := filepath.Join(root, rel)
	data, err := e.ReadFile(ctx, key)
	if err != nil {
		b.Fatal(err)
	}
	rs.Record(key, ReadRecord{Size: int64(len(data)), Hash: contentHash(data)})
	ts := WriteTools(Config{Env: e, Fence: fc, ReadState: rs}, LaneConfig{Hooks: laneNoopHooks()})
	m := map[string]tools.Tool{}
	for _, t := range ts {
		m[t.Spec().Name] = t
	}
	return m, ts[0].(*writeTool).lane
}

func laneJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// BenchmarkEdit10MB is one Edit of one line in a 10 MB file, end to end on the host:
// fence resolution, the read-before-edit hash of 10 MB, the replacement, the diff
// snippet, every hook, the atomic write (temporary file, fsync, rename) on b.TempDir,
// and the read-state update.
func BenchmarkEdit10MB(b *testing.B) {
	root, _ := filepath.EvalSymlinks(b.TempDir())
	var sb strings.Builder
	for i := 0; sb.Len() < 10<<20; i++ {
		if i == 50000 {
			sb.WriteString("MARKER-A the line the benchmark edits\n")
		}
		sb.WriteString("line " + strconv.Itoa(i) + ": the quick brown fox jumps over the lazy dog, again and again and again\n")
	}
	if err := os.WriteFile(filepath.Join(root, "big.txt"), []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	ts, lane := laneBenchTools(b, env.NewHost(), root, "big.txt")
	inputs := []json.RawMessage{
		laneJSON(map[string]any{"file_path": "big.txt", "old_string": "MARKER-A", "new_string": "MARKER-B"}),
		laneJSON(map[string]any{"file_path": "big.txt", "old_string": "MARKER-B", "new_string": "MARKER-A"}),
	}
	ctx := context.Background()
	b.SetBytes(int64(sb.Len()))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if r := ts["Edit"].Run(ctx, inputs[i%2]); r.IsError {
			b.Fatal(r.TextOf())
		}
	}
	b.StopTimer()
	lane.observers.Wait()
}

// BenchmarkWrite1KB overwrites a 1 KB file on the host, end to end (fsync included).
func BenchmarkWrite1KB(b *testing.B) {
	root, _ := filepath.EvalSymlinks(b.TempDir())
	content := []string{strings.Repeat("a", 1023) + "\n", strings.Repeat("b", 1023) + "\n"}
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte(content[1]), 0o644); err != nil {
		b.Fatal(err)
	}
	ts, lane := laneBenchTools(b, env.NewHost(), root, "f.txt")
	inputs := []json.RawMessage{
		laneJSON(map[string]any{"file_path": "f.txt", "content": content[0]}),
		laneJSON(map[string]any{"file_path": "f.txt", "content": content[1]}),
	}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if r := ts["Write"].Run(ctx, inputs[i%2]); r.IsError {
			b.Fatal(r.TextOf())
		}
	}
	b.StopTimer()
	lane.observers.Wait()
}

// BenchmarkLaneOverhead measures the lane's own cost on an in-memory env, so no disk
// time hides it: an overwrite of a 1 KB file this session read, with every hook set to
// a no-op.
//   - stations: Lane.run alone (stations 2-9: the fence, the read-before-edit check with
//     its hash, the diff, four hooks, the re-check, the write, the read-state update);
//   - tool-call: the same through Write.Run, adding the strict JSON decoding of the input;
//   - cancellable-ctx: stations with a ctx that can end, where each hook runs on its own
//     goroutine so the lane can stop waiting for it (the case of a real run);
//   - env-floor: the env calls such a write cannot avoid (Lstat, ReadFile, WriteFile),
//     the part of "stations" that is the in-memory env's, not the lane's.
func BenchmarkLaneOverhead(b *testing.B) {
	content := []string{strings.Repeat("a", 1023) + "\n", strings.Repeat("b", 1023) + "\n"}
	setup := func(b *testing.B) (*envtest.Mem, map[string]tools.Tool, *Lane) {
		m := envtest.NewMem()
		if err := m.MkdirAll("/work/root", 0o755); err != nil {
			b.Fatal(err)
		}
		if err := m.WriteFile(context.Background(), "/work/root/f.txt", []byte(content[1]), 0o644); err != nil {
			b.Fatal(err)
		}
		ts, lane := laneBenchTools(b, m, "/work/root", "f.txt")
		return m, ts, lane
	}
	stations := func(b *testing.B, ctx context.Context) {
		_, _, lane := setup(b)
		muts := make([]mutation, 2)
		for i := range muts {
			text := content[i]
			muts[i] = mutation{tool: "Write", hook: HookWrite, spelled: "f.txt", apply: func(now current) (change, *tools.Result) {
				return change{text: keepFileStyle(now.text, text), summary: "updated", showDiff: true}, nil
			}}
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if r := lane.run(ctx, muts[i%2]); r.IsError {
				b.Fatal(r.TextOf())
			}
		}
		b.StopTimer()
		lane.observers.Wait()
	}
	b.Run("stations", func(b *testing.B) { stations(b, context.Background()) })
	b.Run("cancellable-ctx", func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stations(b, ctx)
	})
	b.Run("tool-call", func(b *testing.B) {
		_, ts, lane := setup(b)
		inputs := []json.RawMessage{
			laneJSON(map[string]any{"file_path": "f.txt", "content": content[0]}),
			laneJSON(map[string]any{"file_path": "f.txt", "content": content[1]}),
		}
		ctx := context.Background()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if r := ts["Write"].Run(ctx, inputs[i%2]); r.IsError {
				b.Fatal(r.TextOf())
			}
		}
		b.StopTimer()
		lane.observers.Wait()
	})
	b.Run("env-floor", func(b *testing.B) {
		m, _, _ := setup(b)
		ctx := context.Background()
		data := [][]byte{[]byte(content[0]), []byte(content[1])}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := m.Lstat(ctx, "/work/root/f.txt"); err != nil {
				b.Fatal(err)
			}
			if _, err := m.ReadFile(ctx, "/work/root/f.txt"); err != nil {
				b.Fatal(err)
			}
			if err := m.WriteFile(ctx, "/work/root/f.txt", data[i%2], 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
}
