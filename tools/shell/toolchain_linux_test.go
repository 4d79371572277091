//go:build linux

package shell

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema/sandbox"
)

// The toolchain acceptance: the builds people run keep working inside the sandbox. Each
// case runs through the real Bash tool of a Set confined the way a leg confines it (the
// Sandbox seat with the leg's options: the user's home, the network only where the case
// asks for it), in a fresh temporary task root, with the machine's own toolchains and
// home (rustup, pyenv and the like live there, so a fake home would break them before the
// sandbox is even met). Nothing the cases run writes outside the task root unless the
// sandbox lets it. A case whose toolchain is not installed is skipped with the reason.
// Each asserts what its build produced: the binary runs, the test passed, the commit is in
// git's log, the installed package imports.

// toolchainFix is a sandboxed Set for one toolchain case; network grants the network.
func toolchainFix(t *testing.T, network bool, progs ...string) *fix {
	t.Helper()
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed: %v", p, err)
		}
	}
	k := sandbox.Probe()
	if !k.Available() {
		t.Skipf("no kernel sandbox on this machine: %s", k.Reason)
	}
	return newFix(t, func(c *Config) {
		c.Sandbox = &Sandbox{Kernel: k, Options: sandbox.Options{Network: network}}
	})
}

// build runs command through the sandboxed Bash tool and returns its output; a failure
// (an error result or a non-zero exit) fails the test with the whole output.
func (f *fix) build(command string) string {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	r := f.call(ctx, NameBash, map[string]any{"command": command, "timeout": 240000})
	out := r.TextOf()
	if r.IsError || strings.Contains(out, "exited with") {
		f.t.Fatalf("under the sandbox, %s failed (%s):\n%s", command, r.Code, out)
	}
	return out
}

func wantIn(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Fatalf("the output lacks %q:\n%s", w, out)
		}
	}
}

func TestToolchainGo(t *testing.T) {
	f := toolchainFix(t, false, "go")
	f.put("main.go", "package main\n\nimport \"fmt\"\n\nfunc Sum(a, b int) int { return a + b }\n\nfunc main() { fmt.Println(\"sum is\", Sum(2, 3)) }\n")
	f.put("main_test.go", "package main\n\nimport \"testing\"\n\nfunc TestSum(t *testing.T) {\n\tif Sum(2, 3) != 5 {\n\t\tt.Fatal(\"sum\")\n\t}\n\tt.Log(\"sum checked\")\n}\n")
	out := f.build("go mod init x 2>&1 && go build ./... && go test -count=1 -v ./... && go build -o app . && ./app")
	wantIn(t, out, "--- PASS: TestSum", "sum checked", "sum is 5")
}

func TestToolchainMake(t *testing.T) {
	f := toolchainFix(t, false, "make", "cc")
	f.put("hello.c", "#include <stdio.h>\nint main(void) { printf(\"hello from %s\\n\", \"C\"); return 0; }\n")
	f.put("Makefile", "run: hello\n\t./hello\n\nhello: hello.c\n\tcc -O2 -o hello hello.c\n")
	out := f.build("make")
	wantIn(t, out, "cc -O2 -o hello hello.c", "hello from C")
	if _, err := os.Stat(f.path("hello")); err != nil {
		t.Fatalf("make left no binary: %v", err)
	}
}

func TestToolchainGitCommit(t *testing.T) {
	f := toolchainFix(t, false, "git")
	f.put("README.md", "# x\n")
	out := f.build("git init -q && git add README.md && git -c user.name=Tester -c user.email=tester@example.com commit -q -m 'first commit under the sandbox' && git log --format='%an %s' && git show --stat --format= HEAD")
	wantIn(t, out, "Tester first commit under the sandbox", "README.md")
	// The commit is in the repository, as git outside the sandbox reads it.
	if got := git(t, f.root, "log", "--format=%s"); strings.TrimSpace(got) != "first commit under the sandbox" {
		t.Fatalf("git log outside the sandbox: %q", got)
	}
}

func TestToolchainPythonVenvAndPip(t *testing.T) {
	f := toolchainFix(t, false, "python3")
	if out, err := exec.Command("python3", "-c", "import venv, ensurepip").CombinedOutput(); err != nil {
		t.Skipf("python3 has no venv or ensurepip: %v\n%s", err, out)
	}
	wheel := writeWheel(t, f.path("dist"), "hello_sema", "1.0", "def greet():\n    return 'hello from the wheel'\n")
	rel, _ := filepath.Rel(f.root, wheel)
	// Into a venv: what `pip install` in a venv means (pip refuses --user there).
	out := f.build("python3 -m venv .venv && .venv/bin/pip install --no-index " + rel + " 2>&1 && .venv/bin/python -c 'import hello_sema; print(hello_sema.greet())'")
	wantIn(t, out, "Successfully installed hello-sema-1.0", "hello from the wheel")
	// --user, with the user base inside the workspace.
	out = f.build("export PYTHONUSERBASE=$PWD/userbase; python3 -m pip install --user --no-index " + rel + " 2>&1; echo \"pip exit: $?\"; python3 -c 'import hello_sema, site; print(hello_sema.greet(), hello_sema.__file__.startswith(site.getuserbase()))'")
	wantIn(t, out, "Successfully installed hello-sema-1.0", "hello from the wheel True")
	if !strings.Contains(out, "pip exit: 0") {
		// pyenv's pip hook rewrites its shims after an install; its shims directory is
		// on PATH outside the roots, and a shim written there would run outside the
		// sandbox, so the kernel refuses it. The install itself landed (above): that
		// refusal, and nothing else, may fail the command.
		shim, _ := exec.LookPath("python3")
		if !strings.Contains(shim, "/shims/") || !strings.Contains(out, "pyenv: cannot rehash") {
			t.Fatalf("pip install --user failed:\n%s", out)
		}
		t.Logf("pip install --user through the pyenv shim %s installed the package, and pyenv could not rewrite its shims (read-only in the sandbox):\n%s", shim, out)
	}
}

func TestToolchainCargo(t *testing.T) {
	f := toolchainFix(t, false, "cargo")
	f.put("Cargo.toml", "[package]\nname = \"hello\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n")
	f.put("src/main.rs", "fn main() { println!(\"hello from {}\", \"rust\"); }\n")
	out := f.build("cargo build --offline 2>&1 && ./target/debug/hello")
	wantIn(t, out, "Finished", "hello from rust")
}

func TestToolchainNpmInstall(t *testing.T) {
	f := toolchainFix(t, true, "npm", "node")
	f.put("package.json", `{"name":"fresh","version":"1.0.0","private":true}`)
	if why := npmRegistryReachable(); why != "" {
		// The registry cannot be reached from here: a local package, which needs no
		// network, stands in.
		t.Logf("the npm registry cannot be reached (%s); installing a local package instead", why)
		f.put("local-pkg/package.json", `{"name":"local-pkg","version":"1.0.0","main":"index.js"}`)
		f.put("local-pkg/index.js", "module.exports = () => 'hello from local-pkg';\n")
		out := f.build("npm install --no-audit --no-fund ./local-pkg 2>&1 && node -e \"console.log(require('local-pkg')())\"")
		wantIn(t, out, "hello from local-pkg")
		return
	}
	out := f.build("npm install --no-audit --no-fund left-pad@1.3.0 2>&1 && node -e \"console.log(require('left-pad')('7', 3, '0'))\"")
	wantIn(t, out, "added 1 package", "007")
}

// npmRegistryReachable says why the npm registry cannot be reached from the test, or "".
func npmRegistryReachable() string {
	registry := "https://registry.npmjs.org/"
	if out, err := exec.Command("npm", "config", "get", "registry").Output(); err == nil && strings.HasPrefix(strings.TrimSpace(string(out)), "http") {
		registry = strings.TrimSpace(string(out))
	}
	// No connection may outlive the probe: the package's TestMain checks for leaked
	// goroutines.
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	c := http.Client{Timeout: 15 * time.Second, Transport: tr}
	resp, err := c.Get(strings.TrimSuffix(registry, "/") + "/left-pad")
	if err != nil {
		return err.Error()
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return registry + " answered " + resp.Status
	}
	return ""
}

// writeWheel builds a pure-Python wheel of one module package in dir and returns its path.
func writeWheel(t *testing.T, dir, name, version, init string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, fmt.Sprintf("%s-%s-py3-none-any.whl", name, version))
	file, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	info := fmt.Sprintf("%s-%s.dist-info", name, version)
	files := []struct{ name, body string }{
		{name + "/__init__.py", init},
		{info + "/METADATA", fmt.Sprintf("Metadata-Version: 2.1\nName: %s\nVersion: %s\n", strings.ReplaceAll(name, "_", "-"), version)},
		{info + "/WHEEL", "Wheel-Version: 1.0\nGenerator: sema-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	zw := zip.NewWriter(file)
	var record strings.Builder
	for _, fl := range files {
		w, err := zw.Create(fl.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(fl.body)); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(fl.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", fl.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(fl.body))
	}
	fmt.Fprintf(&record, "%s/RECORD,,\n", info)
	w, err := zw.Create(info + "/RECORD")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(record.String())); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}
