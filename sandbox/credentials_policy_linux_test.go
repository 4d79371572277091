//go:build linux

package sandbox_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/tools"
	"github.com/sema-agent/sema/tools/files"
)

// credentialKinds are one or more files of each kind of credential store, relative to the
// home directory. One table drives both walls: the kernel must hide each from a confined
// command, and the fence must refuse it to the file tools.
var credentialKinds = []struct{ kind, rel string }{
	{"shell history", ".bash_history"},
	{"zsh history", ".zsh_history"},
	{"fish history", ".local/share/fish/fish_history"},
	{"REPL history", ".python_history"},
	{"database client history", ".psql_history"},
	{"git credential store", ".git-credentials"},
	{"git credential store (XDG)", ".config/git/credentials"},
	{"another agent's login", ".claude/.credentials.json"},
	{"another agent's settings", ".claude.json"},
	{"a coding CLI's login", ".codex/auth.json"},
	{"Copilot's login", ".config/github-copilot/apps.json"},
	{"a forge CLI", ".config/gh/hosts.yml"},
	{"Maven", ".m2/settings.xml"},
	{"Gradle", ".gradle/gradle.properties"},
	{"npm", ".npmrc"},
	{"PyPI", ".pypirc"},
	{"cargo", ".cargo/credentials.toml"},
	{"RubyGems", ".gem/credentials"},
	{"Composer", ".config/composer/auth.json"},
	{"AWS", ".aws/credentials"},
	{"gcloud", ".config/gcloud/application_default_credentials.json"},
	{"Kubernetes", ".kube/config"},
	{"Docker", ".docker/config.json"},
	{"Podman", ".config/containers/auth.json"},
	{"Terraform", ".terraform.d/credentials.tfrc.json"},
	{"Vault", ".vault-token"},
	{"rclone", ".config/rclone/rclone.conf"},
	{"ssh keys", ".ssh/id_ed25519"},
	{"netrc", ".netrc"},
	{"pgpass", ".pgpass"},
	{"key ring", ".local/share/keyrings/login.keyring"},
	{"a settings file's hidden addition", "vault/token"},
}

// credentialWorld is a fake home holding every kind of store, a task root inside it,
// and home as a read root: the widest reach a leg's roots give, where only the
// credential list stands between a reader and the stores.
func credentialWorld(t *testing.T) (home, root string, f *fence.Fence, o sandbox.Options) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home = filepath.Join(base, "home")
	root = filepath.Join(home, "proj")
	os.MkdirAll(root, 0o755)
	hidden := []string{"vault"}
	f, err = fence.New(context.Background(), fence.Config{Env: env.NewHost(), Root: root,
		AdditionalReadDirectories: []string{home}, Home: home, Hidden: hidden})
	if err != nil {
		t.Fatal(err)
	}
	return home, root, f, sandbox.Options{Home: home, Hidden: hidden}
}

func putSecret(t *testing.T, p, marker string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(marker+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readTools(f *fence.Fence) map[string]tools.Tool {
	m := map[string]tools.Tool{}
	for _, tl := range files.ReadTools(files.Config{Env: env.NewHost(), Fence: f, ReadState: files.NewReadState()}) {
		m[tl.Spec().Name] = tl
	}
	return m
}

func callTool(t *testing.T, tl tools.Tool, input map[string]any) tools.Result {
	t.Helper()
	raw, _ := json.Marshal(input)
	return tl.Run(context.Background(), raw)
}

// TestCredentialStoresAreHiddenFromBothWalls: each kind of store, planted in a home that
// is a read root, is read by plain bash (calibration), and then neither a confined
// command (cat, a recursive grep) nor the file tools (Read, Grep, Glob, LS) show it.
func TestCredentialStoresAreHiddenFromBothWalls(t *testing.T) {
	whoami(t)
	k := kernel(t)
	needMounts(t, k)
	for i, c := range credentialKinds {
		t.Run(c.kind, func(t *testing.T) {
			home, root, f, o := credentialWorld(t)
			marker := "CRED-SECRET-" + strconv.Itoa(i)
			p := filepath.Join(home, c.rel)
			putSecret(t, p, marker)
			script := `cat ` + strconv.Quote(p) + `; grep -rh CRED-SECRET ` + strconv.Quote(home) + ` 2>/dev/null; true`
			if _, out := run(t, nil, sandbox.Policy{}, root, script); !strings.Contains(out, marker) {
				t.Fatalf("calibration: plain bash did not read the store; output %q", out)
			}
			pol := sandbox.ForFence(f, o).WithProtected(f, false)
			code, out := run(t, &k, pol, root, script)
			if code == sandbox.HelperFailed || strings.Contains(out, "sema sandbox:") {
				t.Fatalf("the helper did not run the command, so the case proves nothing: %q", out)
			}
			if strings.Contains(out, marker) {
				t.Fatalf("a confined command read %s (exit %d): %q", c.rel, code, out)
			}
			checkToolsRefuse(t, f, home, p, marker)
		})
	}
}

// checkToolsRefuse asserts the file tools neither read the store at p nor show its
// content or name in a walk of home.
func checkToolsRefuse(t *testing.T, f *fence.Fence, home, p, marker string) {
	t.Helper()
	ts := readTools(f)
	if r := callTool(t, ts["Read"], map[string]any{"file_path": p}); !r.IsError || r.Code != fence.CodeDenied {
		t.Errorf("Read %s: error %v code %q, want %s: %s", p, r.IsError, r.Code, fence.CodeDenied, r.TextOf())
	}
	if r := callTool(t, ts["Grep"], map[string]any{"pattern": "CRED-SECRET", "path": p}); !r.IsError || r.Code != fence.CodeDenied {
		t.Errorf("Grep of %s: error %v code %q, want %s", p, r.IsError, r.Code, fence.CodeDenied)
	}
	top := strings.SplitN(strings.TrimPrefix(p, home+"/"), "/", 2)[0]
	for _, call := range []struct {
		tool  string
		input map[string]any
	}{
		{"Grep", map[string]any{"pattern": "CRED-SECRET", "path": home, "output_mode": "content"}},
		{"Glob", map[string]any{"pattern": "**/" + filepath.Base(p), "path": home}},
		{"LS", map[string]any{"path": filepath.Dir(p)}},
		{"LS", map[string]any{"path": home}},
	} {
		r := callTool(t, ts[call.tool], call.input)
		// The temp dir's name holds the test's, which may hold the store's.
		text := strings.ReplaceAll(r.TextOf(), home, "<home>")
		if strings.Contains(text, marker) || !r.IsError && strings.Contains(text, filepath.Base(p)) && filepath.Base(p) != top {
			t.Errorf("%s %v shows the store: %s", call.tool, call.input, text)
		}
	}
}

// TestStoreMadeMidLegIsHiddenFromTheNextCommand: the leg's policy and fence are made
// while ~/.aws does not exist; a command makes it (as a login would); the next command
// cannot read it, and Read refuses it.
func TestStoreMadeMidLegIsHiddenFromTheNextCommand(t *testing.T) {
	whoami(t)
	k := kernel(t)
	needMounts(t, k)
	home, root, f, o := credentialWorld(t)
	base := sandbox.ForFence(f, o)
	creds := filepath.Join(home, ".aws", "credentials")
	make := `mkdir -p ` + strconv.Quote(filepath.Dir(creds)) + ` && echo AWS-MID-LEG > ` + strconv.Quote(creds)
	read := `cat ` + strconv.Quote(creds)
	// Calibration: unconfined, the store is made and read.
	if _, out := run(t, nil, sandbox.Policy{}, root, make+" && "+read); !strings.Contains(out, "AWS-MID-LEG") {
		t.Fatalf("calibration: %q", out)
	}
	os.RemoveAll(filepath.Dir(creds))
	if _, err := os.Stat(filepath.Dir(creds)); err == nil {
		t.Fatal("the calibration's store is still there")
	}
	// The first command of the leg: home is only readable, so the store is made by
	// someone else in between (an unconfined login), as between two commands.
	if code, out := run(t, &k, base.WithProtected(f, false), root, `true`); code != 0 {
		t.Fatalf("first command: exit %d %q", code, out)
	}
	putSecret(t, creds, "AWS-MID-LEG")
	code, out := run(t, &k, base.WithProtected(f, false), root, read)
	if code == sandbox.HelperFailed || strings.Contains(out, "sema sandbox:") {
		t.Fatalf("the helper did not run the command: %q", out)
	}
	if strings.Contains(out, "AWS-MID-LEG") {
		t.Fatalf("the next command read a store made mid-leg: %q", out)
	}
	checkToolsRefuse(t, f, home, creds, "AWS-MID-LEG")
}

// TestLocalBinGrantsOnlyItself: with ~/.local/bin on PATH, a program there still runs
// confined, while the rest of ~/.local and ~/.gitconfig stay out of reach.
func TestLocalBinGrantsOnlyItself(t *testing.T) {
	whoami(t)
	k := kernel(t)
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, root := filepath.Join(base, "home"), filepath.Join(base, "proj")
	os.MkdirAll(root, 0o755)
	tool := filepath.Join(home, ".local", "bin", "hello-tool")
	putSecret(t, tool, "#!/bin/sh\necho HELLO-TOOL")
	os.Chmod(tool, 0o755)
	putSecret(t, filepath.Join(home, ".local", "share", "app", "data"), "LOCAL-SECRET")
	putSecret(t, filepath.Join(home, ".gitconfig"), "[url \"https://LOCAL-SECRET@example.com/\"]")
	f, err := fence.New(context.Background(), fence.Config{Env: env.NewHost(), Root: root, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(home, ".local", "bin") + ":" + os.Getenv("PATH")
	getenv := func(k string) string {
		if k == "PATH" {
			return path
		}
		return os.Getenv(k)
	}
	p := sandbox.ForFence(f, sandbox.Options{Home: home, Getenv: getenv}).WithProtected(f, false)
	q := strconv.Quote
	cases := []struct{ name, script, marker string }{
		{"list ~/.local", `ls ` + q(filepath.Join(home, ".local")) + ` && echo LISTED`, "LISTED"},
		{"list ~/.local/share", `ls ` + q(filepath.Join(home, ".local", "share")) + ` | grep -q app && echo LISTED`, "LISTED"},
		{"read ~/.local/share", `cat ` + q(filepath.Join(home, ".local", "share", "app", "data")), "LOCAL-SECRET"},
		{"read ~/.local through bin/..", `cat ` + q(filepath.Join(home, ".local", "bin", "..", "share", "app", "data")), "LOCAL-SECRET"},
		{"read ~/.gitconfig", `cat ` + q(filepath.Join(home, ".gitconfig")), "LOCAL-SECRET"},
		{"search home", `grep -r LOCAL-SECRET ` + q(home) + ` 2>/dev/null`, "LOCAL-SECRET"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, out := run(t, nil, sandbox.Policy{}, root, c.script); !strings.Contains(out, c.marker) {
				t.Fatalf("calibration: %q", out)
			}
			code, out := run(t, &k, p, root, c.script)
			if code == sandbox.HelperFailed || strings.Contains(out, "sema sandbox:") {
				t.Fatalf("the helper did not run the command: %q", out)
			}
			if strings.Contains(out, c.marker) {
				t.Fatalf("confined: %q", out)
			}
		})
	}
	if code, out := run(t, &k, p, root, `PATH=`+q(path)+` hello-tool`); code != 0 || !strings.Contains(out, "HELLO-TOOL") {
		t.Fatalf("a program in ~/.local/bin did not run confined: exit %d %q", code, out)
	}
}

// The credential stores are hidden, and the toolchain grants kept narrow, for an
// unprivileged user too, whose helper goes through a user namespace: the same tables,
// run as nobody.
func TestCredentialTablesAlsoHoldForAnUnprivilegedUser(t *testing.T) {
	kernel(t)
	runAsNobody(t,
		"TestCredentialStoresAreHiddenFromBothWalls",
		"TestStoreMadeMidLegIsHiddenFromTheNextCommand",
		"TestLocalBinGrantsOnlyItself",
		"TestHiddenCredentialStoreInsideTheRoot",
	)
}
