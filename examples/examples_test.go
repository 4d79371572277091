// The examples are programs; this test builds and runs each one against the scripted
// model, as a reader would run them, and checks what they print.
package examples_test

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// run builds ./NAME and runs it with args and stdin in a fresh example directory.
func run(t *testing.T, dir, name, stdin string, args ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("go", "build", "-o", bin, "./"+name).CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, out)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "SEMA_EXAMPLE_DIR=" + dir}
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

func wantAll(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

func TestEmbed(t *testing.T) {
	t.Parallel()
	out := run(t, t.TempDir(), "embed", "")
	// "asked: Write" is the approver's line: the example shows an approver, so it must be called.
	wantAll(t, out, "event: system/init", "asked: Write", "event: permission", "completed \"# changes\\n- one more line\\n\"", "rewound: \"# changes\\n\"")
}

func TestApprover(t *testing.T) {
	t.Parallel()
	yes := run(t, t.TempDir(), "approver", "y\n")
	wantAll(t, yes, "allow? [y/N]", "completed", `CHANGES.md: "# changes\n- one more line\n"`)
	no := run(t, t.TempDir(), "approver", "n\n")
	wantAll(t, no, `CHANGES.md: "# changes\n"`)
}

func TestParkInOneProcessApproveInAnother(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := run(t, dir, "park", "", "start")
	wantAll(t, out, "Write asks:")
	var args []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 5 && f[0] == "approve" {
			args = f
		}
	}
	if args == nil {
		t.Fatalf("no approve line in %q", out)
	}
	wantAll(t, run(t, dir, "park", "", args...), "completed", `CHANGES.md: "# changes\n- one more line\n"`)
	// The checkpoint was claimed: a second answer is refused, and nothing runs twice.
	cmd := exec.Command("go", "run", "./park")
	cmd.Args = append(cmd.Args, args...)
	cmd.Env = append(os.Environ(), "SEMA_EXAMPLE_DIR="+dir)
	again, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(again), "checkpoint.already_claimed") {
		t.Fatalf("a second approval: err %v, output %s", err, again)
	}
}

func TestCustomTool(t *testing.T) {
	t.Parallel()
	wantAll(t, run(t, t.TempDir(), "customtool", ""), "completed Filed the review ticket.", "tickets: [review at 15:00] denials: 0")
}

// The README shows examples/embed's main; the two must not drift apart.
func TestREADMEShowsEmbed(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("embed/main.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(src), "func main() {")
	end := strings.Index(string(src[start:]), "\n}\n")
	if start < 0 || end < 0 {
		t.Fatal("examples/embed/main.go has no func main")
	}
	body := string(src[start : start+end+2])
	if !strings.Contains(string(readme), "```go\n"+body+"\n```") {
		t.Fatal("README.md does not show examples/embed/main.go's main as it is")
	}
}

// The flagship example is what a reader copies out of the repository: it may import only
// sema's public packages, never one under an internal directory it could not import.
func TestEmbedImportsNoInternalPackage(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "embed/main.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Imports) == 0 {
		t.Fatal("no imports read from examples/embed/main.go")
	}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if path == "internal" || strings.HasPrefix(path, "internal/") || strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal") {
			t.Errorf("examples/embed imports %s, which a program outside this module cannot import", path)
		}
	}
}
