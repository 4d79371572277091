package mcp

import (
	"errors"
	"github.com/sema-agent/sema/env"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A stdio server starts in Options.Dir with Options.Env and its own Env on top, as
// Options.Wrap made them; a wrapper's refusal is the server's failure.
func TestStdioEnvironment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var wrapped [][]string
	srv := stdioServer(t, "x", "")
	srv.Env["BASE"] = "server"
	srv.Env["OWN"] = "own"
	opts := Options{
		Dir: dir,
		Env: []string{"BASE=options", "KEPT=kept", "HOME=/nowhere"},
		Wrap: func(req env.ExecRequest) (env.ExecRequest, error) {
			if req.Dir != dir {
				return req, errors.New("wrong directory")
			}
			wrapped = append(wrapped, req.Argv)
			req.Env = append(req.Env, "WRAPPED=yes")
			return req, nil
		},
	}
	m, _ := mount(t, []Server{srv}, opts)
	for name, want := range map[string]string{"BASE": "server", "OWN": "own", "KEPT": "kept", "WRAPPED": "yes", "USER": "<unset>"} {
		wantText(t, call(t, m, "mcp__x__getenv", `{"name":"`+name+`"}`), want)
	}
	wantText(t, call(t, m, "mcp__x__cwd", `{}`), dir)
	if len(wrapped) != 1 || wrapped[0][0] != srv.Command || !slices.Equal(wrapped[0][1:], srv.Args) {
		t.Fatalf("Wrap saw %q", wrapped)
	}

	refused := opts
	refused.Wrap = func(req env.ExecRequest) (env.ExecRequest, error) {
		return req, errors.New("no sandbox here")
	}
	m, log := mount(t, []Server{stdioServer(t, "y", "")}, refused)
	if n := log.await(t, CodeServerFailed); !strings.Contains(n.Message, "the wrapper refused to start it: no sandbox here") {
		t.Fatalf("notice %+v", n)
	}
	if st := m.Status(); st[0].State != StateFailed {
		t.Fatalf("status %+v", st)
	}
}

func TestLookPath(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	prog := filepath.Join(bin, "prog")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "plain"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, prog string
		env        []string
		dir        string
		want       string // "" = refused
	}{
		{"found in the server's PATH", "prog", []string{"PATH=/nonexistent:" + bin}, "", prog},
		{"the last PATH counts", "prog", []string{"PATH=" + bin, "PATH=/nonexistent"}, "", ""},
		{"relative PATH entries are skipped", "prog", []string{"PATH=."}, bin, ""},
		{"not executable", "plain", []string{"PATH=" + bin}, "", ""},
		{"no PATH", "prog", nil, "", ""},
		{"absolute", prog, nil, "", prog},
		{"relative to the directory", "./prog", nil, bin, filepath.Join(bin, "prog")},
		{"empty", "", []string{"PATH=" + bin}, "", ""},
	}
	for _, c := range cases {
		got, err := lookPath(c.prog, c.env, c.dir)
		if c.want == "" {
			if err == nil {
				t.Errorf("%s: found %q", c.name, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}

func TestMergeEnv(t *testing.T) {
	t.Parallel()
	got := mergeEnv([]string{"A=1", "B=2", "C=3", "B=4"}, env.Passthrough{}, map[string]string{"B": "x", "D": "y"})
	want := []string{"A=1", "C=3", "B=x", "D=y"}
	if !slices.Equal(got, want) {
		t.Fatalf("mergeEnv = %q, want %q", got, want)
	}
	if got := mergeEnv([]string{}, env.Passthrough{}, nil); len(got) != 0 {
		t.Fatalf("an empty base gave %q", got)
	}
}

// Close is harmless on a mount whose servers all failed.
func TestCloseAfterFailedStarts(t *testing.T) {
	t.Parallel()
	m, _ := mount(t, []Server{{Name: "a", Command: "sema-no-such-program"}}, Options{})
	if len(m.Tools()) != 0 {
		t.Fatal("tools of a failed server")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if st := m.Status(); st[0].State != StateFailed {
		t.Fatalf("status %+v", st)
	}
}
