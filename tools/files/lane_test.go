package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env/envtest"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/tools"
)

const laneOrig = "alpha\nbeta\ngamma\n"

// codeInText finds a dotted code followed by a colon ("permission.denied: "), the shape
// of an *sema.Error's Error() inside a sentence: the code belongs in the Result's Code.
var codeInText = regexp.MustCompile(`\b(config|fs|permission|history|checkpoint|session|tool|sandbox|fence|model|run|shell|test)\.[a-z_]+: `)

// TestStationOrder refuses at each station in turn and checks that nothing was written
// and no later station ran: the file's bytes, the env's write count, and how many times
// each hook was called.
func TestStationOrder(t *testing.T) {
	t.Parallel()
	editBeta := map[string]any{"file_path": "f.txt", "old_string": "beta", "new_string": "BETA"}
	cases := []struct {
		name  string
		setup func(f *laneFix)
		tool  string
		input map[string]any
		code  string
		// hook calls expected: permission, before-write, track
		calls [3]int
	}{
		{name: "1 argument: same strings", tool: "Edit",
			input: map[string]any{"file_path": "f.txt", "old_string": "beta", "new_string": "beta"}, code: CodeEditNoop},
		{name: "1 argument: missing field", tool: "Write",
			input: map[string]any{"file_path": "f.txt"}, code: "tool.input_invalid"},
		{name: "1 argument: unknown field", tool: "Edit",
			input: map[string]any{"file_path": "f.txt", "old_string": "a", "new_string": "b", "replace": true}, code: "tool.input_invalid"},
		{name: "1 argument: old_string not found", tool: "Edit",
			input: map[string]any{"file_path": "f.txt", "old_string": "delta", "new_string": "x"}, code: CodeEditNotFound},
		{name: "2 containment: outside the root", tool: "Write",
			input: map[string]any{"file_path": "../escape.txt", "content": "x"}, code: fence.CodeNotInRoot},
		{name: "3 read-before-edit: not read", setup: func(f *laneFix) { f.rs.Forget(f.path("f.txt")) },
			tool: "Edit", input: editBeta, code: CodeNotRead},
		{name: "3 read-before-edit: changed", setup: func(f *laneFix) { f.put("f.txt", "alpha\nbeta\ndelta\n") },
			tool: "Edit", input: editBeta, code: CodeChangedSinceRead},
		{name: "4 permission", setup: func(f *laneFix) {
			f.rec.set(func(r *laneRec) {
				r.permFn = func(context.Context, PermissionRequest) error { return errors.New("the user said no") }
			})
		}, tool: "Edit", input: editBeta, code: tools.CodePermissionDenied, calls: [3]int{1, 0, 0}},
		{name: "4 permission with a code", setup: func(f *laneFix) {
			f.rec.set(func(r *laneRec) {
				r.permFn = func(context.Context, PermissionRequest) error {
					return sema.Errorf("permission.rule_denied", "Edit(f.txt) is denied")
				}
			})
		}, tool: "Edit", input: editBeta, code: "permission.rule_denied", calls: [3]int{1, 0, 0}},
		{name: "5 before-write", setup: func(f *laneFix) {
			f.rec.set(func(r *laneRec) {
				r.beforeFn = func(context.Context, BeforeWriteRequest) (BeforeWriteResult, error) {
					return BeforeWriteResult{Code: "deploy.no_betas", Reason: "no capital betas"}, nil
				}
			})
		}, tool: "Edit", input: editBeta, code: "deploy.no_betas", calls: [3]int{1, 1, 0}},
		{name: "5 before-write zero value refuses", setup: func(f *laneFix) {
			f.rec.set(func(r *laneRec) {
				r.beforeFn = func(context.Context, BeforeWriteRequest) (BeforeWriteResult, error) { return BeforeWriteResult{}, nil }
			})
		}, tool: "Edit", input: editBeta, code: CodeBeforeWriteRefused, calls: [3]int{1, 1, 0}},
		{name: "5b memory scan", setup: func(f *laneFix) {
			f.put("memory/notes.md", "keep\n")
			f.markRead("memory/notes.md")
		}, tool: "Write", input: map[string]any{"file_path": "memory/notes.md", "content": "key AKIAABCDEFGHIJKLMNOP\n"},
			code: CodeMemorySecret, calls: [3]int{1, 1, 0}},
		{name: "6 track refuses", setup: func(f *laneFix) {
			f.rec.set(func(r *laneRec) {
				r.trackFn = func(context.Context, TrackEditRequest) (TrackEditResult, error) {
					return TrackEditResult{Refusal: "history is not durable"}, nil
				}
			})
		}, tool: "Edit", input: editBeta, code: CodeHistoryUnprotected, calls: [3]int{1, 1, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newLaneFix(t)
			f.lc.MemoryDirs = []string{f.path("memory")}
			f.mount(f.rs)
			f.put("f.txt", laneOrig)
			f.markRead("f.txt")
			if c.setup != nil {
				c.setup(f)
			}
			before := map[string]string{"f.txt": f.bytes("f.txt"), "memory/notes.md": f.bytes("memory/notes.md")}

			r := f.call(c.tool, c.input)
			f.settle()
			wantCode(t, r, c.code)
			if m := codeInText.FindString(r.TextOf()); m != "" {
				t.Errorf("the answer's text holds a code (%q): %q", m, r.TextOf())
			}
			if r.EditedFile != "" {
				t.Errorf("EditedFile = %q on a refusal", r.EditedFile)
			}
			for rel, want := range before {
				if got := f.bytes(rel); got != want {
					t.Errorf("%s changed to %q by a refused call", rel, got)
				}
			}
			if _, err := os.Lstat(filepath.Join(filepath.Dir(f.root), "escape.txt")); err == nil {
				t.Errorf("a refused write landed outside the root")
			}
			if n := f.env.Calls(envtest.OpWriteFile); n != 0 {
				t.Errorf("env.WriteFile called %d times", n)
			}
			got := f.rec.counts()
			if [3]int{got[0], got[1], got[2]} != c.calls {
				t.Errorf("hook calls (permission, before-write, track) = %v, want %v", got[:3], c.calls)
			}
			if got[3] != 0 || got[4] != 0 {
				t.Errorf("annul called %d times, FileEdited %d times, on a refusal", got[3], got[4])
			}
		})
	}
}

// TestWriteFaults maps every write failure to its proof: Annul receives the proof the
// errno allows, FileEdited fires exactly for the ambiguous ones, and EditedFile is set
// exactly then.
func TestWriteFaults(t *testing.T) {
	t.Parallel()
	const newText = "alpha\nBETA\ngamma\n"
	cases := []struct {
		name  string
		fault func(key string) envtest.Fault
		proof Proof
		errno string
		// file is what the file holds after the failure.
		file string
	}{
		{"EACCES", func(k string) envtest.Fault { return envtest.Errno(envtest.OpWriteFile, k, syscall.EACCES) }, ProofProven, "EACCES", laneOrig},
		{"EPERM", func(k string) envtest.Fault { return envtest.Errno(envtest.OpWriteFile, k, syscall.EPERM) }, ProofProven, "EPERM", laneOrig},
		{"EROFS", func(k string) envtest.Fault { return envtest.Errno(envtest.OpWriteFile, k, syscall.EROFS) }, ProofProven, "EROFS", laneOrig},
		{"ENOENT", func(k string) envtest.Fault { return envtest.Errno(envtest.OpWriteFile, k, syscall.ENOENT) }, ProofProven, "ENOENT", laneOrig},
		{"EEXIST", func(k string) envtest.Fault { return envtest.Errno(envtest.OpWriteFile, k, syscall.EEXIST) }, ProofProven, "EEXIST", laneOrig},
		{"EISDIR", func(k string) envtest.Fault { return envtest.Errno(envtest.OpWriteFile, k, syscall.EISDIR) }, ProofProven, "EISDIR", laneOrig},
		{"ELOOP", func(k string) envtest.Fault { return envtest.Errno(envtest.OpWriteFile, k, syscall.ELOOP) }, ProofProven, "ELOOP", laneOrig},
		{"ENOSPC after a partial write", func(k string) envtest.Fault { return envtest.PartialWrite(k, 7, syscall.ENOSPC) }, ProofVerify, "ENOSPC", newText[:7]},
		{"EIO", func(k string) envtest.Fault { return envtest.Errno(envtest.OpWriteFile, k, syscall.EIO) }, ProofVerify, "EIO", laneOrig},
		{"panic in env", func(k string) envtest.Fault { return envtest.PanicOn(envtest.OpWriteFile, k, "disk controller gone") }, ProofVerify, "", laneOrig},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newLaneFix(t)
			f.put("f.txt", laneOrig)
			f.markRead("f.txt")
			key := f.path("f.txt")
			f.env.Inject(c.fault(key))

			r := f.call("Edit", map[string]any{"file_path": "f.txt", "old_string": "beta", "new_string": "BETA"})
			f.settle()
			wantCode(t, r, CodeWriteFailed)
			if c.errno != "" && !strings.Contains(r.TextOf(), c.errno) {
				t.Errorf("answer %q does not name %s", r.TextOf(), c.errno)
			}
			if got := f.bytes("f.txt"); got != c.file {
				t.Errorf("file holds %q, want %q", got, c.file)
			}
			f.rec.mu.Lock()
			proofs, edited := f.rec.proofs, f.rec.edited
			f.rec.mu.Unlock()
			if len(proofs) != 1 || proofs[0] != c.proof {
				t.Errorf("annul proofs = %v, want [%s]", proofs, c.proof)
			}
			ambiguous := c.proof == ProofVerify
			if wantN := map[bool]int{true: 1, false: 0}[ambiguous]; len(edited) != wantN {
				t.Errorf("FileEdited fired %d times, want %d", len(edited), wantN)
			}
			if ambiguous && (edited[0] != FileEditedNotice{Tool: HookEdit, Path: "f.txt", Key: key}) {
				t.Errorf("FileEdited notice = %+v", edited[0])
			}
			if wantKey := map[bool]string{true: key}[ambiguous]; r.EditedFile != wantKey {
				t.Errorf("EditedFile = %q, want %q", r.EditedFile, wantKey)
			}
			if ambiguous {
				if !strings.Contains(r.TextOf(), "may be partly changed") {
					t.Errorf("ambiguous answer does not warn: %q", r.TextOf())
				}
			} else if !strings.Contains(r.TextOf(), "nothing was written") {
				t.Errorf("proven answer does not say nothing was written: %q", r.TextOf())
			}
		})
	}
}

// TestFailureBeforeTheWrite covers failures inside station 7 that come before
// env.WriteFile: nothing touched the file, so the proof is proven whatever the errno.
func TestFailureBeforeTheWrite(t *testing.T) {
	t.Parallel()
	t.Run("mkdir of a parent fails with EIO", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		f.env.Inject(envtest.Errno(envtest.OpMkdir, f.path("new"), syscall.EIO))
		r := f.call("Write", map[string]any{"file_path": "new/f.txt", "content": "x"})
		f.settle()
		wantCode(t, r, CodeWriteFailed)
		if c := f.rec.counts(); c[3] != 1 || f.rec.proofs[0] != ProofProven || c[4] != 0 {
			t.Errorf("counts %v proofs %v: want one proven annul and no FileEdited", c, f.rec.proofs)
		}
		if r.EditedFile != "" || f.env.Calls(envtest.OpWriteFile) != 0 {
			t.Errorf("EditedFile %q, %d writes", r.EditedFile, f.env.Calls(envtest.OpWriteFile))
		}
	})
	t.Run("file changed while the permission was asked", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		f.put("f.txt", laneOrig)
		f.markRead("f.txt")
		f.rec.set(func(r *laneRec) {
			r.permFn = func(context.Context, PermissionRequest) error {
				f.put("f.txt", "someone else's longer text\n")
				return nil
			}
		})
		r := f.call("Edit", map[string]any{"file_path": "f.txt", "old_string": "beta", "new_string": "BETA"})
		f.settle()
		wantCode(t, r, CodeChangedSinceRead)
		if got := f.bytes("f.txt"); got != "someone else's longer text\n" {
			t.Errorf("the other writer's bytes were clobbered: %q", got)
		}
		if c := f.rec.counts(); c[3] != 1 || f.rec.proofs[0] != ProofProven || c[4] != 0 {
			t.Errorf("counts %v: want one proven annul and no FileEdited", c)
		}
	})
}

// TestHooksFailClosed makes the BeforeWrite and TrackFileEdit hooks panic, error, and
// block past the call's cancellation: every one refuses with nothing written.
func TestHooksFailClosed(t *testing.T) {
	t.Parallel()
	type hookFn = func(ctx context.Context, entered chan<- struct{}, release <-chan struct{}) error
	behaviours := map[string]hookFn{
		"panic": func(context.Context, chan<- struct{}, <-chan struct{}) error { panic("hook bug") },
		"error": func(context.Context, chan<- struct{}, <-chan struct{}) error { return errors.New("store offline") },
		"block past ctx": func(_ context.Context, entered chan<- struct{}, release <-chan struct{}) error {
			close(entered)
			<-release // ignores ctx on purpose: a hook that hangs
			return nil
		},
	}
	for name, fn := range behaviours {
		for _, station := range []string{"before-write", "track"} {
			t.Run(station+"/"+name, func(t *testing.T) {
				t.Parallel()
				f := newLaneFix(t)
				f.put("f.txt", laneOrig)
				f.markRead("f.txt")
				entered, release := make(chan struct{}), make(chan struct{})
				defer close(release)
				lateAnnul := make(chan Proof, 1)
				f.rec.set(func(r *laneRec) {
					if station == "before-write" {
						r.beforeFn = func(ctx context.Context, _ BeforeWriteRequest) (BeforeWriteResult, error) {
							return BeforeWriteResult{OK: true}, fn(ctx, entered, release)
						}
						return
					}
					r.trackFn = func(ctx context.Context, _ TrackEditRequest) (TrackEditResult, error) {
						err := fn(ctx, entered, release)
						return TrackEditResult{OK: true, Annul: func(_ context.Context, p Proof) { lateAnnul <- p }}, err
					}
				})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if name == "block past ctx" {
					go func() { <-entered; cancel() }()
				}
				r := f.callCtx(ctx, "Edit", map[string]any{"file_path": "f.txt", "old_string": "beta", "new_string": "BETA"})
				f.settle()
				want := map[string]string{"before-write": CodeBeforeWriteFailed, "track": CodeHistoryTrackFailed}[station]
				wantCode(t, r, want)
				if got := f.bytes("f.txt"); got != laneOrig {
					t.Errorf("file changed to %q", got)
				}
				if f.env.Calls(envtest.OpWriteFile) != 0 || f.rec.counts()[4] != 0 {
					t.Errorf("a failed hook let the write or FileEdited happen")
				}
				if station == "track" && name != "panic" {
					// A record minted by a failing hook is retracted: nothing was written.
					if name == "block past ctx" {
						release <- struct{}{}
					}
					select {
					case p := <-lateAnnul:
						if p != ProofProven {
							t.Errorf("late annul proof = %s, want proven", p)
						}
					case <-time.After(10 * time.Second):
						t.Fatal("the Annul of a failed track hook was never called")
					}
				}
			})
		}
	}
}

// TestLateTrackKeepsFileLocked: after a track hook outlived its call, the next write
// of the same file waits until that hook answered and its record was annulled.
func TestLateTrackKeepsFileLocked(t *testing.T) {
	t.Parallel()
	f := newLaneFix(t)
	f.put("f.txt", laneOrig)
	f.markRead("f.txt")
	entered, release := make(chan struct{}), make(chan struct{})
	var annulled sync.WaitGroup
	annulled.Add(1)
	var order []string
	var mu sync.Mutex
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	first := true
	f.rec.set(func(r *laneRec) {
		r.trackFn = func(ctx context.Context, _ TrackEditRequest) (TrackEditResult, error) {
			if first {
				first = false
				close(entered)
				<-release
				return TrackEditResult{OK: true, Annul: func(context.Context, Proof) { note("annul"); annulled.Done() }}, nil
			}
			note("second track")
			return TrackEditResult{OK: true}, nil
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-entered; cancel() }()
	wantCode(t, f.callCtx(ctx, "Edit", map[string]any{"file_path": "f.txt", "old_string": "beta", "new_string": "BETA"}), CodeHistoryTrackFailed)

	second := make(chan tools.Result, 1)
	go func() {
		second <- f.call("Edit", map[string]any{"file_path": "f.txt", "old_string": "beta", "new_string": "B2"})
	}()
	waitLockWaiters(t, lockKey(f.env, f.path("f.txt")), 2)
	close(release)
	wantCode(t, <-second, "")
	annulled.Wait()
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(order, ",") != "annul,second track" {
		t.Fatalf("order = %v: the second write ran before the late record was annulled", order)
	}
}

// waitLockWaiters waits until n holders or waiters share the lane lock of key.
func waitLockWaiters(t *testing.T, key lockID, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		laneLocks.mu.Lock()
		l := laneLocks.m[key]
		refs := 0
		if l != nil {
			refs = l.refs
		}
		laneLocks.mu.Unlock()
		if refs >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("lock %q never had %d holders or waiters (has %d)", key, n, refs)
		}
		runtime.Gosched()
	}
}

func TestFileEditedPanicDoesNotChangeAnswer(t *testing.T) {
	t.Parallel()
	f := newLaneFix(t)
	f.rec.set(func(r *laneRec) { r.editedFn = func(FileEditedNotice) { panic("observer bug") } })
	r := f.call("Write", map[string]any{"file_path": "new.txt", "content": "hi\n"})
	f.settle()
	wantCode(t, r, "")
	if r.EditedFile != f.path("new.txt") || f.bytes("new.txt") != "hi\n" {
		t.Fatalf("EditedFile %q, file %q", r.EditedFile, f.bytes("new.txt"))
	}
	if c := f.rec.counts(); c[4] != 1 {
		t.Fatalf("FileEdited called %d times, want 1", c[4])
	}
}

// TestFileEditedNotAwaited: an observer that blocks does not hold the answer back.
func TestFileEditedNotAwaited(t *testing.T) {
	t.Parallel()
	f := newLaneFix(t)
	release := make(chan struct{})
	f.rec.set(func(r *laneRec) { r.editedFn = func(FileEditedNotice) { <-release } })
	wantCode(t, f.call("Write", map[string]any{"file_path": "new.txt", "content": "hi\n"}), "")
	close(release)
	f.settle()
}

func TestHookRequests(t *testing.T) {
	t.Parallel()
	f := newLaneFix(t)
	f.put("f.txt", laneOrig)
	f.markRead("f.txt")
	r := f.call("MultiEdit", map[string]any{"file_path": "./f.txt", "edits": []map[string]any{
		{"old_string": "alpha", "new_string": "ALPHA"}, {"old_string": "gamma", "new_string": "GAMMA"}}})
	f.settle()
	wantCode(t, r, "")
	key := f.path("f.txt")
	want := "ALPHA\nbeta\nGAMMA\n"
	f.rec.mu.Lock()
	defer f.rec.mu.Unlock()
	p := f.rec.perm[0]
	if p.Tool != "MultiEdit" || p.Path != "./f.txt" || p.Key != key || !p.Exists || p.Content != want ||
		!strings.Contains(p.Diff, "-alpha\n+ALPHA") || !strings.Contains(p.Diff, "-gamma\n+GAMMA") {
		t.Errorf("permission request = %+v", p)
	}
	if b := f.rec.before[0]; (b != BeforeWriteRequest{Tool: HookEdit, Path: "./f.txt", Key: key, Content: want}) {
		t.Errorf("before-write request = %+v", b)
	}
	if tr := f.rec.track[0]; (tr != TrackEditRequest{Tool: HookEdit, Path: "./f.txt", Key: key}) {
		t.Errorf("track request = %+v", tr)
	}
	if e := f.rec.edited; len(e) != 1 || (e[0] != FileEditedNotice{Tool: HookEdit, Path: "./f.txt", Key: key}) {
		t.Errorf("edited = %+v", e)
	}
}

// TestContainment tries to write out of the root through .., absolute paths and links.
func TestContainment(t *testing.T) {
	t.Parallel()
	f := newLaneFix(t)
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "victim.txt"), []byte("safe"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.put("real.txt", "inside\n")
	f.put("sub/keep", "")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(f.path("real.txt"), f.path("link.txt")))
	must(os.Symlink(filepath.Join(outside, "victim.txt"), f.path("out.txt")))
	must(os.Symlink(outside, f.path("outdir")))
	must(os.Symlink(filepath.Join(outside, "nothing-here"), f.path("dangling.txt")))

	refused := []struct{ path, code string }{
		{"../" + filepath.Base(outside) + "/victim.txt", fence.CodeNotInRoot},
		{filepath.Join(outside, "victim.txt"), fence.CodeNotInRoot},
		{"sub/../../escape.txt", fence.CodeNotInRoot},
		{"out.txt", fence.CodeNotInRoot},
		{"outdir/victim.txt", fence.CodeNotInRoot},
		{"outdir/new.txt", fence.CodeNotInRoot},
		{"dangling.txt", fence.CodeUnresolvable},
	}
	for _, c := range refused {
		r := f.call("Write", map[string]any{"file_path": c.path, "content": "pwned"})
		wantCode(t, r, c.code)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "victim.txt")); string(b) != "safe" {
		t.Fatalf("outside file changed: %q", b)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Fatalf("something was created outside the root: %v", ents)
	}

	// A link inside the root to a file inside the root writes the target, keeps the link.
	f.markRead("link.txt")
	r := f.call("Write", map[string]any{"file_path": "link.txt", "content": "through the link\n"})
	wantCode(t, r, "")
	if r.EditedFile != f.path("real.txt") {
		t.Fatalf("EditedFile = %q, want the canonical target", r.EditedFile)
	}
	if fi, err := os.Lstat(f.path("link.txt")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced by a file: %v %v", fi, err)
	}
	if got := f.bytes("real.txt"); got != "through the link\n" {
		t.Fatalf("target holds %q", got)
	}
}

func TestReadBeforeEdit(t *testing.T) {
	t.Parallel()
	t.Run("new file needs no read", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		wantCode(t, f.call("Write", map[string]any{"file_path": "a/b/new.txt", "content": "x"}), "")
		if f.bytes("a/b/new.txt") != "x" {
			t.Fatal("parents not created")
		}
	})
	t.Run("overwrite needs a read", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		f.put("f.txt", laneOrig)
		wantCode(t, f.call("Write", map[string]any{"file_path": "f.txt", "content": "x"}), CodeNotRead)
		f.markRead("f.txt")
		wantCode(t, f.call("Write", map[string]any{"file_path": "f.txt", "content": "x"}), "")
	})
	t.Run("same size, other bytes", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		f.put("f.txt", laneOrig)
		f.markRead("f.txt")
		f.put("f.txt", strings.ToUpper(laneOrig))
		wantCode(t, f.call("Edit", map[string]any{"file_path": "f.txt", "old_string": "BETA", "new_string": "b"}), CodeChangedSinceRead)
	})
	t.Run("touched but unchanged bytes still match", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		f.put("f.txt", laneOrig)
		f.markRead("f.txt")
		later := time.Now().Add(time.Hour)
		if err := os.Chtimes(f.path("f.txt"), later, later); err != nil {
			t.Fatal(err)
		}
		wantCode(t, f.call("Edit", map[string]any{"file_path": "f.txt", "old_string": "beta", "new_string": "b"}), "")
	})
	t.Run("consecutive edits need no new read", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		f.put("f.txt", laneOrig)
		f.markRead("f.txt")
		for _, w := range []string{"one", "two", "three"} {
			wantCode(t, f.call("Edit", map[string]any{"file_path": "f.txt", "old_string": "beta", "new_string": w}), "")
			wantCode(t, f.call("Edit", map[string]any{"file_path": "f.txt", "old_string": w, "new_string": "beta"}), "")
		}
		wantCode(t, f.call("Write", map[string]any{"file_path": "f.txt", "content": "done\n"}), "")
		if f.bytes("f.txt") != "done\n" {
			t.Fatalf("file = %q", f.bytes("f.txt"))
		}
	})
	t.Run("too large to load", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		f.lc.MaxFileBytes = 10
		f.mount(f.rs)
		f.put("big.txt", "eleven byte")
		f.markRead("big.txt")
		wantCode(t, f.call("Edit", map[string]any{"file_path": "big.txt", "old_string": "byte", "new_string": "b"}), CodeFileTooLarge)
		if f.env.Calls(envtest.OpOpen) != 0 {
			t.Fatal("the lane read a file it should refuse by its size")
		}
	})
	t.Run("directory", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		f.put("d/x", "")
		wantCode(t, f.call("Write", map[string]any{"file_path": "d", "content": "x"}), CodeIsDirectory)
	})
}

// TestConcurrentSessions: two sessions read the same file and edit it at the same time.
// The second edit waits for the first, finds the file changed, and is refused.
func TestConcurrentSessions(t *testing.T) {
	t.Parallel()
	a := newLaneFix(t)
	a.put("f.txt", "count: 0\n")
	b := a.session()
	a.markRead("f.txt")
	b.markRead("f.txt")
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	a.rec.set(func(r *laneRec) {
		r.permFn = func(context.Context, PermissionRequest) error {
			once.Do(func() { close(entered); <-release })
			return nil
		}
	})
	ra := make(chan tools.Result, 1)
	go func() {
		ra <- a.call("Edit", map[string]any{"file_path": "f.txt", "old_string": "count: 0", "new_string": "count: A"})
	}()
	<-entered
	rb := make(chan tools.Result, 1)
	go func() {
		rb <- b.call("Edit", map[string]any{"file_path": "f.txt", "old_string": "count: 0", "new_string": "count: B"})
	}()
	// B is now waiting for the file's lock, not inside its own stations.
	waitLockWaiters(t, lockKey(a.env, a.path("f.txt")), 2)
	close(release)
	wantCode(t, <-ra, "")
	wantCode(t, <-rb, CodeChangedSinceRead)
	if got := a.bytes("f.txt"); got != "count: A\n" {
		t.Fatalf("file = %q", got)
	}
}

// TestConcurrentSessionsStress runs many competing increments from two sessions; with
// serialized read-check-write, no increment is lost.
func TestConcurrentSessionsStress(t *testing.T) {
	t.Parallel()
	a := newLaneFix(t, func(lc *LaneConfig) { lc.Hooks = Hooks{} })
	a.put("n.txt", "0")
	sessions := []*laneFix{a, a.session()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for w := range 6 {
		s := sessions[w%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				for {
					cur := s.markRead("n.txt")
					n, _ := strconv.Atoi(cur)
					r := s.call("Edit", map[string]any{"file_path": "n.txt", "old_string": cur, "new_string": strconv.Itoa(n + 1)})
					if !r.IsError {
						mu.Lock()
						wins++
						mu.Unlock()
						break
					}
					if r.Code != CodeChangedSinceRead && r.Code != CodeEditNotFound {
						t.Errorf("unexpected refusal %s: %s", r.Code, r.TextOf())
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if got := a.bytes("n.txt"); got != strconv.Itoa(wins) || wins != 60 {
		t.Fatalf("counter = %s after %d successful increments (want 60)", got, wins)
	}
}

func TestCancelledBeforeStart(t *testing.T) {
	t.Parallel()
	f := newLaneFix(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	wantCode(t, f.callCtx(ctx, "Write", map[string]any{"file_path": "x.txt", "content": "x"}), "tool.cancelled")
	if f.bytes("x.txt") != "<missing>" || f.rec.counts() != [5]int{} {
		t.Fatal("a cancelled call did something")
	}
}

func TestProofOf(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		want Proof
	}{
		{&os.PathError{Op: "write", Path: "/x", Err: syscall.EACCES}, ProofProven},
		{&os.PathError{Op: "write", Path: "/x", Err: syscall.ENOSPC}, ProofVerify},
		{context.Canceled, ProofVerify},
		{errors.New("no errno"), ProofVerify},
		{syscall.EROFS, ProofProven},
		{&os.LinkError{Op: "rename", Old: "a", New: "b", Err: syscall.EXDEV}, ProofVerify},
	}
	for _, c := range cases {
		if got := proofOf(c.err); got != c.want {
			t.Errorf("proofOf(%v) = %s, want %s", c.err, got, c.want)
		}
	}
	if got := errnoName(&os.PathError{Err: syscall.Errno(200)}); got != "errno 200" {
		t.Errorf("errnoName of an unnamed errno = %q", got)
	}
}

// TestAnnulNeverBlocksTheAnswer: an Annul that panics or hangs changes neither the
// answer nor its arrival; a hanging one keeps the file locked until it returns.
func TestAnnulNeverBlocksTheAnswer(t *testing.T) {
	t.Parallel()
	t.Run("panics", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		f.rec.set(func(r *laneRec) {
			r.trackFn = func(context.Context, TrackEditRequest) (TrackEditResult, error) {
				return TrackEditResult{OK: true, Annul: func(context.Context, Proof) { panic("history bug") }}, nil
			}
		})
		f.env.Inject(envtest.Errno(envtest.OpWriteFile, f.path("x.txt"), syscall.EROFS))
		r := f.call("Write", map[string]any{"file_path": "x.txt", "content": "x"})
		wantCode(t, r, CodeWriteFailed)
		if !strings.Contains(r.TextOf(), "EROFS") {
			t.Fatalf("the write's own error is not the answer: %q", r.TextOf())
		}
	})
	t.Run("hangs", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		f.lc.AnnulWait = time.Millisecond
		f.mount(f.rs)
		release := make(chan struct{})
		var gotCtxDeadline bool
		f.rec.set(func(r *laneRec) {
			r.trackFn = func(context.Context, TrackEditRequest) (TrackEditResult, error) {
				return TrackEditResult{OK: true, Annul: func(ctx context.Context, _ Proof) {
					_, gotCtxDeadline = ctx.Deadline()
					<-release
				}}, nil
			}
		})
		remove := f.env.Inject(envtest.Errno(envtest.OpWriteFile, f.path("x.txt"), syscall.EACCES))
		wantCode(t, f.call("Write", map[string]any{"file_path": "x.txt", "content": "x"}), CodeWriteFailed)
		remove()
		f.rec.set(func(r *laneRec) { r.trackFn = nil })
		second := make(chan tools.Result, 1)
		go func() { second <- f.call("Write", map[string]any{"file_path": "x.txt", "content": "y"}) }()
		waitLockWaiters(t, lockKey(f.env, f.path("x.txt")), 2)
		if got := f.bytes("x.txt"); got != "<missing>" {
			t.Fatalf("a write ran while the Annul still held the file: %q", got)
		}
		close(release)
		wantCode(t, <-second, "")
		if !gotCtxDeadline {
			t.Fatal("the Annul's ctx has no deadline")
		}
	})
}
