package files

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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
		Permission: func(context.Context, PermissionRequest) error { return nil },
		BeforeWrite: func(context.Context, BeforeWriteRequest) (BeforeWriteResult, error) {
			return BeforeWriteResult{OK: true}, nil
		},
		TrackFileEdit: func(context.Context, TrackEditRequest) (TrackEditResult, error) {
			return TrackEditResult{OK: true}, nil
		},
		FileEdited: func(FileEditedNotice) {},
	}
}

// laneBenchTools mounts the write tools on root through e, with the file at rel read.
func laneBenchTools(b *testing.B, e env.ExecutionEnv, root, rel string) (map[string]tools.Tool, *lane) {
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

// laneCPU reports the process's CPU time per operation (user + system, every
// goroutine, the garbage collector included) as "cpu-ns/op". On a machine shared with
// other work, wall-clock ns/op includes time spent waiting for a core; CPU time does
// not, so it is the steadier measure of what the code itself costs. Call it at the
// start of the benchmark; the metric is reported when the benchmark ends.
func laneCPU(b *testing.B) {
	start := laneRusage()
	b.Cleanup(func() {
		if b.N > 0 {
			b.ReportMetric(float64(laneRusage()-start)/float64(b.N), "cpu-ns/op")
		}
	})
}

func laneRusage() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func laneJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// BenchmarkEdit10MB is one Edit of one line in a 10 MB file, end to end on the host:
// fence resolution, the read-before-edit read and hash of 10 MB, the replacement, the
// diff snippet, every hook (no-ops), the atomic write (temporary file, fsync, rename,
// directory fsync) on b.TempDir, and the read-state update. "env-floor" is what any
// edit of the file must pay in the same env: ReadFile and WriteFile of 10 MB.
func BenchmarkEdit10MB(b *testing.B) {
	root, _ := filepath.EvalSymlinks(b.TempDir())
	var sb strings.Builder
	for i := 0; sb.Len() < 10<<20; i++ {
		if i == 50000 {
			sb.WriteString("MARKER-A the line the benchmark edits\n")
		}
		sb.WriteString("line " + strconv.Itoa(i) + ": the quick brown fox jumps over the lazy dog, again and again and again\n")
	}
	path := filepath.Join(root, "big.txt")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("lane", func(b *testing.B) {
		ts, lane := laneBenchTools(b, env.NewHost(), root, "big.txt")
		inputs := []json.RawMessage{
			laneJSON(map[string]any{"file_path": "big.txt", "old_string": "MARKER-A", "new_string": "MARKER-B"}),
			laneJSON(map[string]any{"file_path": "big.txt", "old_string": "MARKER-B", "new_string": "MARKER-A"}),
		}
		// A previous run (-count) may have left the marker flipped.
		first := 0
		if cur, _ := os.ReadFile(path); strings.Contains(string(cur), "MARKER-B") {
			first = 1
		}
		b.SetBytes(int64(sb.Len()))
		b.ReportAllocs()
		laneCPU(b)
		for i := first; b.Loop(); i++ {
			if r := ts["Edit"].Run(ctx, inputs[i%2]); r.IsError {
				b.Fatal(r.TextOf())
			}
		}
		b.StopTimer()
		lane.observers.Wait()
	})
	b.Run("env-floor", func(b *testing.B) {
		h := env.NewHost()
		b.SetBytes(int64(sb.Len()))
		b.ReportAllocs()
		laneCPU(b)
		for b.Loop() {
			data, err := h.ReadFile(ctx, path)
			if err != nil {
				b.Fatal(err)
			}
			if err := h.WriteFile(ctx, path, data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkWrite1KB overwrites a 1 KB file on the host, end to end (fsync included).
// "env-floor" is the env's atomic WriteFile of the same bytes alone.
func BenchmarkWrite1KB(b *testing.B) {
	root, _ := filepath.EvalSymlinks(b.TempDir())
	content := []string{strings.Repeat("a", 1023) + "\n", strings.Repeat("b", 1023) + "\n"}
	path := filepath.Join(root, "f.txt")
	if err := os.WriteFile(path, []byte(content[1]), 0o644); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("lane", func(b *testing.B) {
		ts, lane := laneBenchTools(b, env.NewHost(), root, "f.txt")
		inputs := []json.RawMessage{
			laneJSON(map[string]any{"file_path": "f.txt", "content": content[0]}),
			laneJSON(map[string]any{"file_path": "f.txt", "content": content[1]}),
		}
		b.ReportAllocs()
		laneCPU(b)
		for i := 0; b.Loop(); i++ {
			if r := ts["Write"].Run(ctx, inputs[i%2]); r.IsError {
				b.Fatal(r.TextOf())
			}
		}
		b.StopTimer()
		lane.observers.Wait()
	})
	b.Run("env-floor", func(b *testing.B) {
		h := env.NewHost()
		data := [][]byte{[]byte(content[0]), []byte(content[1])}
		b.ReportAllocs()
		laneCPU(b)
		for i := 0; b.Loop(); i++ {
			if err := h.WriteFile(ctx, path, data[i%2], 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkLaneOverhead measures the lane's own cost on an in-memory env, so no disk
// time hides it: an overwrite of a 1 KB file this session read, with every hook set to
// a no-op.
//   - stations: the lane alone (stations 2-9: the fence, the read-before-edit check with
//     its hash, the diff, four hooks, the re-check, the write, the read-state update);
//   - tool-call: the same through Write.Run, adding the strict JSON decoding of the input;
//   - cancellable-ctx: stations with a ctx that can end, where each hook runs on its own
//     goroutine so the lane can stop waiting for it (the case of a real run);
//   - env-floor: the env calls such a write cannot avoid (Lstat, ReadFile, WriteFile),
//     the part of "stations" that is the in-memory env's, not the lane's.
func BenchmarkLaneOverhead(b *testing.B) {
	content := []string{strings.Repeat("a", 1023) + "\n", strings.Repeat("b", 1023) + "\n"}
	setup := func(b *testing.B) (*envtest.Mem, map[string]tools.Tool, *lane) {
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
		laneCPU(b)
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
		laneCPU(b)
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
		laneCPU(b)
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
