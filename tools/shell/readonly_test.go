package shell

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/shellscan/shellscantest"
)

func newReadonlyFix(t *testing.T, configure ...func(*Config)) *fix {
	t.Helper()
	return newFix(t, append([]func(*Config){func(c *Config) { c.ReadOnly = true }}, configure...)...)
}

func (f *fix) readonly(command string) (string, string) {
	f.t.Helper()
	r := f.call(context.Background(), NameBashReadonly, map[string]any{"command": command})
	return r.Code, r.TextOf()
}

func TestReadonlyRefuses(t *testing.T) {
	t.Parallel()
	f := newReadonlyFix(t)
	outside := tempDir(t)
	if err := os.WriteFile(outside+"/secret", []byte("s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.put("a.txt", "hello\n")
	f.put("list", outside+"/secret\x00")
	if err := os.Symlink(outside+"/secret", f.path("link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, f.path("dirlink")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		command string
		code    string
		reason  string // a fragment of the answer
	}{
		{"redirect to a file", "ls > out", CodeNotReadOnly, "redirection"},
		{"append redirect", "echo x >> a.txt", CodeNotReadOnly, "redirection"},
		{"command substitution", "echo $(ls)", CodeNotReadOnly, "substitution"},
		{"rm", "rm a.txt", CodeNotReadOnly, "`rm` is not on the read-only allowlist"},
		{"find -delete", "find . -delete", CodeNotReadOnly, "-delete"},
		{"sed not allowed", "sed -i s/a/b/ a.txt", CodeNotReadOnly, "sed"},
		{"git write subcommand", "git commit -m x", CodeNotReadOnly, "git commit"},
		{"cd", "cd .. && ls", CodeNotReadOnly, "cd"},
		{"background", "ls &", CodeNotReadOnly, ""},
		{"parse error", "cat 'a.txt", CodeNotReadOnly, "does not parse"},
		{"absolute path outside", "cat " + outside + "/secret", fence.CodeNotInRoot, "outside the read roots"},
		{"relative path outside", "cat ../" + outside[strings.LastIndex(outside, "/")+1:] + "/secret", fence.CodeNotInRoot, ""},
		{"input redirect outside", "wc -l < " + outside + "/secret", fence.CodeNotInRoot, ""},
		{"link leading outside", "cat link", fence.CodeNotInRoot, ""},
		{"directory link leading outside", "ls dirlink/", fence.CodeNotInRoot, ""},
		{"option value outside", "grep --exclude-from=" + outside + "/secret x a.txt", fence.CodeNotInRoot, ""},
		{"argument outside even for echo", "echo " + outside, fence.CodeNotInRoot, ""},
		{"variable", "cat $HOME/x", CodeNotReadOnly, "expanded"},
		{"glob", "cat *.txt", CodeNotReadOnly, "expanded"},
		{"tilde", "ls ~", CodeNotReadOnly, "expanded"},
		{"grep -R follows links", "grep -R x .", CodeNotReadOnly, "symbolic links"},
		{"grep -rR cluster", "grep -nR x .", CodeNotReadOnly, "symbolic links"},
		{"grep long abbreviation", "grep --dereference x .", CodeNotReadOnly, "symbolic links"},
		{"rg --follow", "rg --follow x", CodeNotReadOnly, "symbolic links"},
		{"find -L", "find -L . -name x", CodeNotReadOnly, "symbolic links"},
		{"find -follow", "find . -follow -name x", CodeNotReadOnly, "symbolic links"},
		{"du -L", "du -sL .", CodeNotReadOnly, "symbolic links"},
		{"diff -r", "diff -ru a b", CodeNotReadOnly, "symbolic links"},
		{"files0-from", "wc --files0-from=list", CodeNotReadOnly, "list of file names"},
		{"files0-from abbreviated", "wc --files0=list", CodeNotReadOnly, "list of file names"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, text := f.readonly(tc.command)
			if code != tc.code {
				t.Fatalf("code %q, want %q: %s", code, tc.code, text)
			}
			if !strings.Contains(text, tc.reason) || !strings.HasPrefix(text, "bash_readonly did not run the command") {
				t.Fatalf("answer %q lacks %q", text, tc.reason)
			}
		})
	}
	if _, err := os.Stat(f.path("out")); !os.IsNotExist(err) {
		t.Fatalf("a refused redirect wrote its file: %v", err)
	}
	if b, _ := os.ReadFile(f.path("a.txt")); string(b) != "hello\n" {
		t.Fatalf("a.txt changed: %q", b)
	}
}

func TestReadonlyRuns(t *testing.T) {
	needGit(t)
	t.Parallel()
	f := newReadonlyFix(t)
	f.put("src/a.go", "package a // needle\n")
	f.put("notes.txt", "one\ntwo\n")
	git(t, f.root, "init", "-q", "-b", "main")
	git(t, f.root, "add", "notes.txt")
	git(t, f.root, "commit", "-q", "-m", "notes")
	// Same bytes, new timestamps: a status that may write refreshes the index now.
	f.put("notes.txt", "one\ntwo\n")
	index, err := os.Stat(f.path(".git/index"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		command string
		want    string
	}{
		{"ls", "notes.txt\nsrc"},
		{"grep -r needle .", "./src/a.go:package a // needle"},
		{"grep -rn --include='*.go' needle src", "src/a.go:1:package a // needle"},
		{"cat notes.txt | wc -l", "2"},
		{"git status --short", "?? src/"},
		{"git log --format=%s", "notes"},
		{"head -n 1 notes.txt && pwd", "one\n" + f.root},
		{"ls missing 2>/dev/null; echo after", "after"},
		{"grep nothing notes.txt", "(no output)\n\nThe command exited with code 1."},
	}
	for _, tc := range tests {
		t.Run(tc.command, func(t *testing.T) {
			code, text := f.readonly(tc.command)
			if code != "" {
				t.Fatalf("refused with %s: %s", code, text)
			}
			if text != tc.want {
				t.Fatalf("answer %q, want %q", text, tc.want)
			}
		})
	}
	after, err := os.Stat(f.path(".git/index"))
	if err != nil {
		t.Fatal(err)
	}
	if !after.ModTime().Equal(index.ModTime()) {
		t.Error("git status rewrote the index in the read-only band")
	}
}

func TestReadonlyAllowOverride(t *testing.T) {
	t.Parallel()
	f := newReadonlyFix(t, func(c *Config) { c.ReadonlyAllow = []string{"cat"} })
	f.put("a.txt", "a\n")
	if code, text := f.readonly("cat a.txt"); code != "" || text != "a" {
		t.Fatalf("cat: %s %s", code, text)
	}
	if code, text := f.readonly("ls"); code != CodeNotReadOnly || !strings.Contains(text, "allowlist") {
		t.Fatalf("ls under a list without it: %s %s", code, text)
	}
}

func TestReadonlyPermissionRequest(t *testing.T) {
	t.Parallel()
	var got []PermissionRequest
	f := newReadonlyFix(t, func(c *Config) {
		c.Permission = func(ctx context.Context, req PermissionRequest) error {
			got = append(got, req)
			return nil
		}
	})
	f.readonly("rm x")
	if len(got) != 0 {
		t.Fatal("a refused command reached the permission hook")
	}
	f.readonly("ls")
	if len(got) != 1 || got[0].Tool != NameBashReadonly || !got[0].ProvenReadOnly || got[0].Dir != f.root {
		t.Fatalf("requests %+v", got)
	}
}

func TestReadonlyDescriptionNamesTheList(t *testing.T) {
	t.Parallel()
	def := newReadonlyFix(t).set.Tools()[0].Spec().Description
	if !strings.Contains(def, "ls, cat, head") || !strings.Contains(def, "git status, git log") {
		t.Fatalf("default list not described: %s", def)
	}
	custom := newReadonlyFix(t, func(c *Config) { c.ReadonlyAllow = []string{"cat", "git log"} }).set.Tools()[0].Spec().Description
	if !strings.Contains(custom, "Allowed commands: cat, git log.") {
		t.Fatalf("custom list not described: %s", custom)
	}
}

// TestReadonlyRecursiveDenySet: a recursive reader over a directory that could hold files
// of the deny set is refused; the same command runs when the deny set is empty there.
func TestReadonlyRecursiveDenySet(t *testing.T) {
	t.Parallel()
	withDeny := func(cfg fence.Config) func(*Config) {
		return func(c *Config) {
			cfg.Env, cfg.Root = c.Env, c.Fence.Root()
			if cfg.StateDir != "" {
				cfg.StateDir = cfg.Root + "/" + cfg.StateDir
			}
			fc, err := fence.New(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			c.Fence = fc
		}
	}
	plain := newReadonlyFix(t)
	globbed := newReadonlyFix(t, withDeny(fence.Config{DenyGlobs: []string{".env"}}))
	stated := newReadonlyFix(t, withDeny(fence.Config{StateDir: ".sema-state"}))
	for _, f := range []*fix{plain, globbed, stated} {
		f.put(".env", "secret=1\n")
		f.put("README.md", "secret readme\n")
		f.put("src/main.go", "package main\n")
		f.put(".sema-state/sema.db", "secret db\n")
	}
	tests := []struct {
		name    string
		f       *fix
		command string
		refused bool
	}{
		{"grep -r with no deny set", plain, "grep -r secret .", false},
		{"rg with no deny set", plain, "rg secret", false},
		{"grep -r over a deny glob", globbed, "grep -r secret .", true},
		{"grep -r on the implicit cwd", globbed, "grep -rn secret", true},
		{"grep -d recurse", globbed, "grep -d recurse secret src", true},
		{"find over a deny glob", globbed, "find . -name x", true},
		{"ls -R over a deny glob", globbed, "ls -R src", true},
		{"du over a deny glob", globbed, "du -s", true},
		{"rg on a file", globbed, "rg secret README.md", false},
		{"cat a file", globbed, "cat README.md", false},
		{"plain ls", globbed, "ls", false},
		{"rg with the state dir inside the root", stated, "rg secret", true},
		{"rg beside the state dir", stated, "rg package src", false},
		{"cat with the state dir inside the root", stated, "cat README.md", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, text := tc.f.readonly(tc.command)
			if tc.refused {
				if code != fence.CodeDenied || !strings.Contains(text, "search a narrower directory") || strings.Contains(text, "secret=1") || strings.Contains(text, "secret db") {
					t.Fatalf("%q: code %q: %s; want a deny-set refusal", tc.command, code, text)
				}
				return
			}
			if code != "" {
				t.Fatalf("%q was refused: %s: %s", tc.command, code, text)
			}
		})
	}
}

// TestReadonlyLexerHostile: bash_readonly refuses text bash reads differently from the
// analyzer, and nothing runs — also under an allowlist that names the program bash would run.
func TestReadonlyLexerHostile(t *testing.T) {
	t.Parallel()
	for _, tc := range shellscantest.LexerHostile {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			if !shellscantest.BashCreatesMarker(t, tc.Cmd) {
				t.Fatalf("calibration: bash did not create the marker with %q, so the case proves nothing", tc.Cmd)
			}
			for _, f := range []*fix{
				newReadonlyFix(t),
				newReadonlyFix(t, func(c *Config) { c.ReadonlyAllow = []string{"echo", "cat", "ls", "touch"} }),
			} {
				f.put("E", "e\n") // a file the here-document spellings could name
				if code, text := f.readonly(tc.Cmd); code != CodeNotReadOnly {
					t.Errorf("bash_readonly on %q = %s %q, want %s", tc.Cmd, code, text, CodeNotReadOnly)
				}
				if _, err := os.Stat(filepath.Join(f.root, shellscantest.Marker)); err == nil {
					t.Errorf("bash_readonly ran %q: the marker exists", tc.Cmd)
				}
			}
		})
	}
}
