package shell

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/internal/gate"
	"github.com/sema-agent/sema/permission"
)

// readonlySecret is the secret the hostile bash_readonly tests plant.
const readonlySecret = "SEMA-SECRET-90d2e5"

// plainBashHome runs cmd with an unguarded bash in dir, with a home and git configuration of
// the test's own, and returns what it printed: the calibration of a hostile command.
func plainBashHome(t *testing.T, dir, home, cmd string) string {
	t.Helper()
	c := exec.Command("bash", "--noprofile", "--norc", "-c", cmd)
	c.Dir = dir
	c.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_PAGER=cat", "LC_ALL=C"}, gitTestEnv...)
	c.Env = append(c.Env, "GIT_CONFIG_GLOBAL="+filepath.Join(home, "gitconfig"))
	out, _ := c.CombinedOutput()
	return string(out)
}

// TestReadonlyRefusesDeniedAndHardLinkedReads: bash_readonly refuses every command that
// would print a file a Read deny rule covers — named, walked, globbed or taken from git's
// object store — and every command naming a hard-linked file, and runs none of them.
func TestReadonlyRefusesDeniedAndHardLinkedReads(t *testing.T) {
	t.Parallel()
	needGit(t)
	ctx := context.Background()
	root, outside, home := tempDir(t), tempDir(t), tempDir(t)
	put := func(rel, content string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put("secrets/key", "token="+readonlySecret+"-v1\n")
	put("id.pem", readonlySecret+"\n")
	put(".env", "PASSWORD="+readonlySecret+"\n")
	put("src/main.go", "package main\n")
	git(t, root, "init", "-q")
	git(t, root, "add", "-A")
	git(t, root, "commit", "-q", "-m", "one")
	put("secrets/key", "token="+readonlySecret+"-v2\n")
	git(t, root, "commit", "-q", "-am", "two")
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("token="+readonlySecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(outside, "secret.txt"), filepath.Join(root, "twin.txt")); err != nil {
		t.Skipf("hard links are not available here: %v", err)
	}

	h := env.NewHost()
	fc, err := fence.New(ctx, fence.Config{Env: h, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	rules, err := permission.ParseRules(nil, []string{"Read(./secrets/**)", "Read(*.pem)", "Read(./.env)"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gate.New(gate.Config{Modes: gate.FixedMode(permission.ModeDefault), Rules: rules, Resolver: gate.FenceResolver(fc)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Env: h, Fence: fc, ReadOnly: true, ScratchDir: t.TempDir(), ReadDenial: g.ReadDenial(gate.ScopeOf(ctx, fc, home))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	var ro = s.Tools()[0]
	if ro.Spec().Name != NameBashReadonly {
		t.Fatalf("the first tool is %s", ro.Spec().Name)
	}
	run := func(cmd string) (string, string, bool) {
		raw := []byte(`{"command":` + quoteJSON(cmd) + `}`)
		r := ro.Run(ctx, raw)
		return r.Code, r.TextOf(), r.IsError
	}
	tests := []struct {
		cmd  string
		code string // the refusal's code; "" for any refusal
	}{
		// Class 6: Read deny rules.
		{"cat secrets/key", fence.CodeDenied},
		{"cat src/../secrets/key", fence.CodeDenied},
		{"grep token secrets/key", fence.CodeDenied},
		{"head -n 3 id.pem", fence.CodeDenied},
		{"cat .env", fence.CodeDenied},
		{"grep -r SEMA-SECRET .", fence.CodeDenied},
		{"grep -rh SEMA-SECRET", fence.CodeDenied},
		{"cat secrets/*", ""},
		{"git show HEAD:secrets/key", fence.CodeDenied},
		{"git show HEAD~1:./id.pem", fence.CodeDenied},
		{"git show HEAD -- secrets", fence.CodeDenied},
		{"git show", fence.CodeDenied},
		{"git log -p", fence.CodeDenied},
		{"git log -p -- .", fence.CodeDenied},
		{"git diff HEAD~1", fence.CodeDenied},
		{"git diff HEAD~1 HEAD -- secrets/", fence.CodeDenied},
		// Class 7: hard links.
		{"cat twin.txt", fence.CodeHardLink},
		{"head -n 1 ./twin.txt", fence.CodeHardLink},
		{"grep token twin.txt", fence.CodeHardLink},
		{"cat src/../twin.txt", fence.CodeHardLink},
		{"cat " + filepath.Join(root, "twin.txt"), fence.CodeHardLink},
	}
	for _, tc := range tests {
		if out := plainBashHome(t, root, home, tc.cmd); !strings.Contains(out, readonlySecret) {
			t.Errorf("calibration: %q does not print the secret under plain bash:\n%s", tc.cmd, out)
			continue
		}
		code, text, isErr := run(tc.cmd)
		if !isErr || strings.Contains(text, readonlySecret) {
			t.Errorf("%q ran or leaked (code %q):\n%s", tc.cmd, code, text)
			continue
		}
		if tc.code != "" && code != tc.code {
			t.Errorf("%q: code %q (%s), want %s", tc.cmd, code, text, tc.code)
		}
	}
	// What the rules do not cover still runs.
	for _, cmd := range []string{"git show HEAD:src/main.go", "cat src/main.go"} {
		if code, text, isErr := run(cmd); isErr {
			t.Errorf("%q was refused (%s): %s", cmd, code, text)
		}
	}
}

// quoteJSON renders s as a JSON string.
func quoteJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
