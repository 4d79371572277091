package fence

import (
	"context"
	"os"
	"slices"
	"syscall"
	"testing"

	"github.com/sema-agent/sema/env"
)

func TestAdvertisedDirs(t *testing.T) {
	t.Parallel()
	type want struct {
		admitted  bool
		reason    string
		canonical string // "" = do not check
		created   bool
	}
	tests := []struct {
		name string
		// setup builds the tree under base and returns the config to judge.
		setup func(t *testing.T, base string) Config
		kind  Advertiser
		want  want
	}{
		{
			name: "existing scratchpad outside the root",
			setup: func(t *testing.T, base string) Config {
				tree(t, base, "scratch/")
				return Config{Scratchpad: AdvertisedSpec{Path: base + "/scratch"}}
			},
			kind: AdvertiserScratchpad, want: want{admitted: true, canonical: "/scratch"},
		},
		{
			name: "missing scratchpad is created",
			setup: func(t *testing.T, base string) Config {
				return Config{Scratchpad: AdvertisedSpec{Path: base + "/tmp/run-1/scratch"}}
			},
			kind: AdvertiserScratchpad, want: want{admitted: true, canonical: "/tmp/run-1/scratch", created: true},
		},
		{
			name: "scratchpad inside the root",
			setup: func(t *testing.T, base string) Config {
				return Config{Scratchpad: AdvertisedSpec{Path: base + "/root/.scratch"}}
			},
			kind: AdvertiserScratchpad, want: want{admitted: true, canonical: "/root/.scratch", created: true},
		},
		{
			name: "scratchpad linked to the task root",
			setup: func(t *testing.T, base string) Config {
				tree(t, base, "scratch -> root")
				return Config{Scratchpad: AdvertisedSpec{Path: base + "/scratch"}}
			},
			kind: AdvertiserScratchpad, want: want{reason: SkipSwallowsRoot},
		},
		{
			name: "scratchpad linked to /",
			setup: func(t *testing.T, base string) Config {
				tree(t, base, "scratch -> /")
				return Config{Scratchpad: AdvertisedSpec{Path: base + "/scratch"}}
			},
			kind: AdvertiserScratchpad, want: want{reason: SkipSwallowsRoot},
		},
		{
			name: "scratchpad that is the root's parent",
			setup: func(t *testing.T, base string) Config {
				return Config{Scratchpad: AdvertisedSpec{Path: base}}
			},
			kind: AdvertiserScratchpad, want: want{reason: SkipSwallowsRoot},
		},
		{
			name: "scratchpad swallowing an additional read root",
			setup: func(t *testing.T, base string) Config {
				tree(t, base, "shared/docs/")
				return Config{Scratchpad: AdvertisedSpec{Path: base + "/shared"}, AdditionalReadDirectories: []string{base + "/shared/docs"}}
			},
			kind: AdvertiserScratchpad, want: want{reason: SkipSwallowsRoot},
		},
		{
			name: "memory directory containing the root",
			setup: func(t *testing.T, base string) Config {
				return Config{MemoryDir: AdvertisedSpec{Path: base}}
			},
			kind: AdvertiserMemory, want: want{reason: SkipSwallowsRoot},
		},
		{
			name: "memory directory admitted",
			setup: func(t *testing.T, base string) Config {
				tree(t, base, "mem/")
				return Config{MemoryDir: AdvertisedSpec{Path: base + "/mem", ExpectCanonical: base + "/mem/"}}
			},
			kind: AdvertiserMemory, want: want{admitted: true, canonical: "/mem"},
		},
		{
			name: "missing memory directory is not created",
			setup: func(t *testing.T, base string) Config {
				return Config{MemoryDir: AdvertisedSpec{Path: base + "/mem"}}
			},
			kind: AdvertiserMemory, want: want{reason: SkipNotFound},
		},
		{
			name: "expected spelling differs",
			setup: func(t *testing.T, base string) Config {
				tree(t, base, "real/mem/", "memlink -> real/mem")
				return Config{MemoryDir: AdvertisedSpec{Path: base + "/memlink", ExpectCanonical: base + "/memlink"}}
			},
			kind: AdvertiserMemory, want: want{reason: SkipCanonicalMismatch},
		},
		{
			name: "relative scratchpad",
			setup: func(t *testing.T, base string) Config {
				return Config{Scratchpad: AdvertisedSpec{Path: "scratch"}}
			},
			kind: AdvertiserScratchpad, want: want{reason: SkipNotAbsolute},
		},
		{
			name: "dangling scratchpad link",
			setup: func(t *testing.T, base string) Config {
				tree(t, base, "scratch -> nowhere")
				return Config{Scratchpad: AdvertisedSpec{Path: base + "/scratch"}}
			},
			kind: AdvertiserScratchpad, want: want{reason: SkipUnresolvable},
		},
		{
			name: "scratchpad is a file",
			setup: func(t *testing.T, base string) Config {
				tree(t, base, "scratch")
				return Config{Scratchpad: AdvertisedSpec{Path: base + "/scratch"}}
			},
			kind: AdvertiserScratchpad, want: want{reason: SkipNotDirectory},
		},
		{
			name: "scratchpad in the state directory",
			setup: func(t *testing.T, base string) Config {
				tree(t, base, "state/scratch/")
				return Config{Scratchpad: AdvertisedSpec{Path: base + "/state/scratch"}, StateDir: base + "/state"}
			},
			kind: AdvertiserScratchpad, want: want{reason: SkipDenied},
		},
		{
			name: "scratchpad linked into .git",
			setup: func(t *testing.T, base string) Config {
				tree(t, base, "root/.git/hooks/", "root/.scratch -> .git/hooks")
				return Config{Scratchpad: AdvertisedSpec{Path: base + "/root/.scratch"}}
			},
			kind: AdvertiserScratchpad, want: want{reason: SkipProtected},
		},
		{
			name: "not asked",
			setup: func(t *testing.T, base string) Config {
				return Config{}
			},
			kind: AdvertiserScratchpad, want: want{reason: SkipNotAsked},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := realTempDir(t)
			tree(t, base, "root/")
			cfg := tc.setup(t, base)
			var ns notices
			cfg.Env, cfg.Root, cfg.OnNotice = env.NewHost(), base+"/root", ns.sink
			f := newFence(t, cfg)
			admitted, reason := f.VerdictOf(tc.kind)
			if admitted != tc.want.admitted || reason != tc.want.reason {
				t.Fatalf("VerdictOf = %v, %q; want %v, %q (notices %+v)", admitted, reason, tc.want.admitted, tc.want.reason, ns.list)
			}
			skips := ns.withCode(CodeAdvertisedDirSkipped)
			var dir AdvertisedDir
			for _, a := range f.Advertised() {
				if a.Kind == tc.kind {
					dir = a
				}
			}
			switch {
			case tc.want.reason == SkipNotAsked:
				if len(f.Advertised()) != 0 || len(skips) != 0 {
					t.Errorf("nothing was advertised, yet: %+v %+v", f.Advertised(), skips)
				}
			case !admitted:
				if len(skips) != 1 || skips[0].Detail["reason"] != tc.want.reason || skips[0].Detail["advertiser"] != string(tc.kind) {
					t.Errorf("skip notices %+v; want one with reason %q", skips, tc.want.reason)
				}
				if slices.Contains(f.WriteRoots(), dir.Canonical) && dir.Canonical != "" && dir.Canonical != f.Root() {
					t.Errorf("a skipped directory is a write root: %v", f.WriteRoots())
				}
			default:
				if len(skips) != 0 {
					t.Errorf("admitted, yet announced as skipped: %+v", skips)
				}
				want := base + tc.want.canonical
				if dir.Canonical != want || dir.Created != tc.want.created || !dir.Admitted {
					t.Errorf("Advertised() = %+v; want canonical %q created=%v", dir, want, tc.want.created)
				}
				if !slices.Contains(f.WriteRoots(), want) || !slices.Contains(f.ReadRoots(), want) {
					t.Errorf("admitted %q is not a root: write %v read %v", want, f.WriteRoots(), f.ReadRoots())
				}
				p, err := f.Resolve(context.Background(), want+"/notes.md", Write)
				if err != nil || p.Root != want {
					t.Errorf("write inside the admitted directory: %+v, %v", p, err)
				}
				if tc.want.created {
					fi, err := os.Lstat(want + "/" + ScratchpadMarker)
					if err != nil || !fi.Mode().IsRegular() {
						t.Errorf("marker: %v, %v", fi, err)
					}
				}
			}
		})
	}
}

// Something planted between the fence's steps is never written through and never
// admitted.
func TestScratchpadMaterializeRaces(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		plant func(t *testing.T, base, created string)
	}{
		{"marker planted as a link to an outside file", func(t *testing.T, base, created string) {
			if err := os.Symlink(base+"/outside/victim", created+"/"+ScratchpadMarker); err != nil {
				t.Fatal(err)
			}
		}},
		{"marker planted as a file", func(t *testing.T, base, created string) {
			if err := os.WriteFile(created+"/"+ScratchpadMarker, []byte("planted"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"directory swapped for a link to the root", func(t *testing.T, base, created string) {
			if err := os.Remove(created); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(base+"/root", created); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := realTempDir(t)
			tree(t, base, "root/", "outside/victim")
			e := &hookEnv{ExecutionEnv: env.NewHost()}
			e.afterMkdir = func(p string) {
				if p == base+"/scratch" {
					tc.plant(t, base, p)
				}
			}
			var ns notices
			f := newFence(t, Config{Env: e, Root: base + "/root", Scratchpad: AdvertisedSpec{Path: base + "/scratch"}, OnNotice: ns.sink})
			if ok, reason := f.VerdictOf(AdvertiserScratchpad); ok || reason != SkipMaterializeFailed {
				t.Errorf("VerdictOf = %v, %q; want skipped %q", ok, reason, SkipMaterializeFailed)
			}
			if got, _ := os.ReadFile(base + "/outside/victim"); string(got) != base+"/outside/victim" {
				t.Errorf("the planted link was written through: %q", got)
			}
			if len(f.WriteRoots()) != 1 {
				t.Errorf("write roots grew: %v", f.WriteRoots())
			}
			if len(ns.withCode(CodeAdvertisedDirSkipped)) != 1 {
				t.Errorf("notices: %v", ns.codes())
			}
		})
	}
}

func TestScratchpadMaterializeFails(t *testing.T) {
	t.Parallel()
	base := realTempDir(t)
	tree(t, base, "root/")
	e := &hookEnv{ExecutionEnv: env.NewHost(), fail: map[string]error{"mkdir " + base + "/scratch": syscall.EROFS}}
	f := newFence(t, Config{Env: e, Root: base + "/root", Scratchpad: AdvertisedSpec{Path: base + "/scratch/x"}})
	if ok, reason := f.VerdictOf(AdvertiserScratchpad); ok || reason != SkipMaterializeFailed {
		t.Errorf("VerdictOf = %v, %q", ok, reason)
	}
}

// Both advertisers are judged against the same roots whatever their order, and one
// advertised directory may hold the other.
func TestAdvertisedBoth(t *testing.T) {
	t.Parallel()
	base := realTempDir(t)
	tree(t, base, "root/", "scratch/mem/")
	f := newFence(t, Config{Root: base + "/root",
		Scratchpad: AdvertisedSpec{Path: base + "/scratch"},
		MemoryDir:  AdvertisedSpec{Path: base + "/scratch/mem"}})
	for _, k := range []Advertiser{AdvertiserScratchpad, AdvertiserMemory} {
		if ok, reason := f.VerdictOf(k); !ok {
			t.Errorf("%s skipped: %s", k, reason)
		}
	}
	if got := f.WriteRoots(); !slices.Equal(got, []string{base + "/root", base + "/scratch", base + "/scratch/mem"}) {
		t.Errorf("write roots %v", got)
	}
	if a := f.Advertised(); len(a) != 2 || a[0].Kind != AdvertiserScratchpad || a[1].Kind != AdvertiserMemory {
		t.Errorf("Advertised() = %+v", a)
	}
}

func TestSwallows(t *testing.T) {
	t.Parallel()
	roots := []string{"/w/proj", "/w/extra/docs"}
	tests := []struct {
		dir  string
		root string
		ok   bool
	}{
		{"/w/proj", "/w/proj", true},
		{"/w", "/w/proj", true},
		{"/", "/w/proj", true},
		{"/w/extra", "/w/extra/docs", true},
		{"/w/proj/scratch", "", false},
		{"/w/proj-scratch", "", false},
		{"/tmp/scratch", "", false},
		{"/w/pro", "", false},
	}
	for _, tc := range tests {
		r, ok := Swallows(tc.dir, roots)
		if r != tc.root || ok != tc.ok {
			t.Errorf("Swallows(%q) = %q, %v; want %q, %v", tc.dir, r, ok, tc.root, tc.ok)
		}
	}
}
