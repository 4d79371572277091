package fence

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/env"
)

// deepRel is a file ten directories below the root.
const deepRel = "d0/d1/d2/d3/d4/d5/d6/d7/d8/d9/file.go"

// BenchmarkResolve is the containment check of a file ten levels below the root on the
// host: one Lstat per component of the canonical path, every call, with no cache of
// resolved directories (see the package documentation for why).
func BenchmarkResolve(b *testing.B) {
	root := realTempDir(b)
	tree(b, root, deepRel)
	f, err := New(context.Background(), Config{Env: env.NewHost(), Root: root, StateDir: filepath.Join(root, ".sema-state")})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportMetric(float64(strings.Count(root+"/"+deepRel, "/")), "lstats/op")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Resolve(ctx, deepRel, Write); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLstatChain is the floor BenchmarkResolve stands on: the same Lstat calls,
// through the same env, with no judgment.
func BenchmarkLstatChain(b *testing.B) {
	root := realTempDir(b)
	tree(b, root, deepRel)
	full := root + "/" + deepRel
	var prefixes []string
	for i := 1; i < len(full); i++ {
		if full[i] == '/' {
			prefixes = append(prefixes, full[:i])
		}
	}
	prefixes = append(prefixes, full)
	e := env.NewHost()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range prefixes {
			if _, err := e.Lstat(ctx, p); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkResolveMemEnv is the fence's own cost: the same tree in memory, so no system
// call is made.
func BenchmarkResolveMemEnv(b *testing.B) {
	m := newMemEnv()
	root := "/home/user/src/project"
	cur := ""
	for _, n := range strings.Split(root[1:], "/") {
		cur += "/" + n
		m.dir(cur)
	}
	for _, n := range strings.Split(filepath.Dir(deepRel), "/") {
		cur += "/" + n
		m.dir(cur)
	}
	m.file(root + "/" + deepRel)
	f, err := New(context.Background(), Config{Env: m, Root: root, StateDir: "/home/user/.sema", DenyGlobs: []string{"**/*.pem"}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Resolve(ctx, deepRel, Write); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResolveWithCredentials is BenchmarkResolve with a home directory configured,
// as every leg has: each resolved path is also judged against every credential store
// (about a hundred places, each spelled and, behind a link, resolved).
func BenchmarkResolveWithCredentials(b *testing.B) {
	root := realTempDir(b)
	tree(b, root, deepRel)
	f, err := New(context.Background(), Config{Env: env.NewHost(), Root: root, Home: realTempDir(b), StateDir: filepath.Join(root, ".sema-state")})
	if err != nil {
		b.Fatal(err)
	}
	if len(f.CredentialPlaces()) < 50 {
		b.Fatalf("%d credential places: the benchmark judges too few", len(f.CredentialPlaces()))
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Resolve(ctx, deepRel, Write); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNewWithHome builds a fence with a home directory that holds a few of the
// credential stores — a developer's: .ssh, .config with two logins beneath it, .aws behind
// a link, and unrelated files — as every leg does once.
func BenchmarkNewWithHome(b *testing.B) {
	for _, extra := range []int{0, 300} {
		b.Run(fmt.Sprintf("entries=+%d", extra), func(b *testing.B) { benchNewWithHome(b, extra) })
	}
}

// benchNewWithHome is BenchmarkNewWithHome with extra more files in the home directory
// (a crowded one: every absent store is looked for in its listing).
func benchNewWithHome(b *testing.B, extra int) {
	root, home, dots := realTempDir(b), realTempDir(b), realTempDir(b)
	for i := range extra {
		if err := os.WriteFile(filepath.Join(home, fmt.Sprintf(".Tool%03d", i)), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, d := range []string{".ssh", ".config/gh", ".config/gcloud", ".config/nvim", ".local/share", ".cache", "src", "go"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	for _, f := range []string{".bashrc", ".profile", ".gitconfig", ".npmrc", ".bash_history"} {
		if err := os.WriteFile(filepath.Join(home, f), []byte("x"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.Symlink(dots, filepath.Join(home, ".aws")); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	cfg := Config{Env: env.NewHost(), Root: root, Home: home, StateDir: filepath.Join(root, ".sema-state")}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := New(ctx, cfg); err != nil {
			b.Fatal(err)
		}
	}
}
