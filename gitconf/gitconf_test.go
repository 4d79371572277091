package gitconf

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/env"
)

func TestNamesPrograms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		config string
		want   string // a fragment of the answer; "" for none
	}{
		{"[core]\n\tbare = false\n\tfilemode = true\n", ""},
		{"[core]\n\tfsmonitor = false\n", ""},
		{"[core]\n\tfsmonitor = /x/mon\n", "core.fsmonitor"},
		{"[core] fsmonitor = true\n", "core.fsmonitor"},
		{"[diff \"img\"]\n\ttextconv = exif\n", "diff.img.textconv"},
		{"[Diff \"Img\"]\n\tTextConv = exif\n", "diff.Img.textconv"},
		{"[diff.img]\n\ttextconv = exif\n", "diff.img.textconv"},
		{"[diff]\n\texternal = \"x y\" ; comment\n", "`x y`"},
		{"[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n", "filter.lfs.clean"},
		{"[filter \"lfs\"]\n\trequired = true\n", ""},
		{"[pager]\n\tlog = false\n", ""},
		{"[pager]\n\tlog = sh -c x\n", "pager.log"},
		{"[alias]\n\tst = status\n", ""},
		{"[alias]\n\tx = !sh -c y\n", "alias.x"},
		{"[include]\n\tpath = other\n", "include"},
		{"[includeIf \"gitdir:/x/\"]\n\tpath = other\n", "include"},
		{"[credential]\n\thelper = store\n", "credential.helper"},
		{"[credential]\n\thelper =\n", ""},
		{"[core]\n\tsshCommand = ssh -i k\n", "core.sshcommand"},
		{"[uploadpack]\n\tpackObjectsHook = x\n", "packobjectshook"},
		{"[diff \"x\"]\n\tcommand = a\\\n b\n", "`a b`"},
		{"[core\n", "could not be parsed"},
		{"key = v\n", "could not be parsed"},
		{"[core]\n\tx = \"unterminated\n", "could not be parsed"},
	}
	for _, tc := range tests {
		dir := t.TempDir()
		dir, _ = filepath.EvalSymlinks(dir)
		if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".git", "config"), []byte(tc.config), 0o644); err != nil {
			t.Fatal(err)
		}
		got := Programs(context.Background(), env.NewHost(), dir)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("config %q: got %q, want %q", tc.config, got, tc.want)
		}
	}
}

// TestDiscovery: the repository is found from a subdirectory, through a .git file (a
// worktree's), and none outside any repository; submodule repositories count.
func TestDiscovery(t *testing.T) {
	t.Parallel()
	ctx, h := context.Background(), env.NewHost()
	base, _ := filepath.EvalSymlinks(t.TempDir())
	write := func(rel, content string) {
		p := filepath.Join(base, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := Programs(ctx, h, base); got != "" {
		t.Fatalf("no repository: %q", got)
	}
	write("main/.git/config", "[core]\n\tbare = false\n")
	write("main/src/deep/x", "")
	if got := Programs(ctx, h, filepath.Join(base, "main/src/deep")); got != "" {
		t.Fatalf("clean repository: %q", got)
	}
	write("main/.git/modules/sub/config", "[filter \"f\"]\n\tclean = x\n")
	if got := Programs(ctx, h, filepath.Join(base, "main/src")); !strings.Contains(got, "filter.f.clean") {
		t.Fatalf("submodule filter: %q", got)
	}
	write("wt/.git", "gitdir: ../store/worktrees/wt\n")
	write("store/worktrees/wt/commondir", "../..\n")
	write("store/config", "[diff]\n\texternal = d\n")
	if got := Programs(ctx, h, filepath.Join(base, "wt")); !strings.Contains(got, "diff.external") {
		t.Fatalf("worktree's common config: %q", got)
	}
}
