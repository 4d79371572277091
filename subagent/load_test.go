package subagent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/env/envtest"
)

// tempRoot returns a canonical temporary directory: the host env reads canonical paths.
func tempRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func agent(name, desc string) string {
	return agentFile("Prompt of "+name+".", "name: "+name, "description: "+desc)
}

func TestLoad(t *testing.T) {
	t.Parallel()
	root := tempRoot(t)
	claude := filepath.Join(root, ".claude", "agents")
	sema_ := filepath.Join(root, ".sema", "agents")
	writeFile(t, filepath.Join(claude, "reviewer.md"), agent("reviewer", "Reviews code."))
	writeFile(t, filepath.Join(claude, "bad.md"), agentFile("", "name: bad"))
	writeFile(t, filepath.Join(claude, "big.md"), agent("big", "Big.")+strings.Repeat("x", MaxFileBytes))
	writeFile(t, filepath.Join(claude, "twin-a.md"), agent("twin", "One."))
	writeFile(t, filepath.Join(claude, "twin-b.md"), agent("twin", "Two."))
	writeFile(t, filepath.Join(claude, "notes.txt"), agent("notes", "Not an agent file."))
	writeFile(t, filepath.Join(claude, ".hidden.md"), agent("hidden", "Hidden."))
	writeFile(t, filepath.Join(claude, "dir.md", "inner.md"), agent("inner", "In a subdirectory."))
	writeFile(t, filepath.Join(root, "elsewhere", "linked.md"), agent("linked", "Reached through a link."))
	if err := os.Symlink(filepath.Join(root, "elsewhere", "linked.md"), filepath.Join(claude, "linked.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "elsewhere"), filepath.Join(claude, "linkdir.md")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(sema_, "reviewer.md"), agent("reviewer", "Reviews code the sema way."))
	writeFile(t, filepath.Join(sema_, "twin.md"), agent("twin", "Alone in its directory."))

	defs, problems := Load(context.Background(), env.NewHost(), root)

	var got []string
	for _, d := range defs {
		got = append(got, d.Name+" "+d.Source)
	}
	want := []string{
		"linked " + filepath.Join(claude, "linked.md"),
		"reviewer " + filepath.Join(claude, "reviewer.md"),
		"reviewer " + filepath.Join(sema_, "reviewer.md"),
		"twin " + filepath.Join(sema_, "twin.md"),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("definitions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if defs[0].Prompt != "Prompt of linked." {
		t.Errorf("Prompt = %q", defs[0].Prompt)
	}

	wantProblems := []struct{ code, part string }{
		{CodeDefinitionInvalid, filepath.Join(claude, "bad.md") + ": description is missing"},
		{CodeDefinitionInvalid, filepath.Join(claude, "big.md") + ": the file is"},
		{CodeDefinitionInvalid, `the agent name "twin" is defined by ` + filepath.Join(claude, "twin-a.md") + " and " + filepath.Join(claude, "twin-b.md")},
	}
	if len(problems) != len(wantProblems) {
		t.Fatalf("problems = %v, want %d", problems, len(wantProblems))
	}
	for i, w := range wantProblems {
		if !sema.IsCode(problems[i], w.code) || !strings.Contains(sema.MessageOf(problems[i]), w.part) {
			t.Errorf("problem %d = %v, want %s containing %q", i, problems[i], w.code, w.part)
		}
	}
	if !strings.Contains(sema.MessageOf(problems[1]), "at most 262144 bytes (256 KiB)") {
		t.Errorf("oversize problem %q does not state the limit", sema.MessageOf(problems[1]))
	}
}

func TestLoadMissingDirs(t *testing.T) {
	t.Parallel()
	root := tempRoot(t)
	defs, problems := Load(context.Background(), env.NewHost(), root)
	if len(defs) != 0 || len(problems) != 0 {
		t.Errorf("Load of an empty root = %v, %v; want nothing", defs, problems)
	}
	// Only one of the two directories.
	writeFile(t, filepath.Join(root, ".sema", "agents", "a.md"), agent("a", "A."))
	defs, problems = Load(context.Background(), env.NewHost(), root)
	if len(defs) != 1 || len(problems) != 0 {
		t.Errorf("Load = %v, %v; want one definition", defs, problems)
	}
}

func TestLoadEnvErrors(t *testing.T) {
	t.Parallel()
	root := tempRoot(t)
	dir := filepath.Join(root, ".claude", "agents")
	writeFile(t, filepath.Join(dir, "a.md"), agent("a", "A."))
	writeFile(t, filepath.Join(dir, "b.md"), agent("b", "B."))
	faulty := envtest.NewFaulty(env.NewHost())
	faulty.Inject(envtest.Errno(envtest.OpOpen, filepath.Join(dir, "a.md"), syscall.EACCES))
	faulty.Inject(envtest.Errno(envtest.OpReadDir, filepath.Join(root, ".sema", "agents"), syscall.EACCES))

	defs, problems := Load(context.Background(), faulty, root)
	if len(defs) != 1 || defs[0].Name != "b" {
		t.Errorf("definitions = %v, want only b", defs)
	}
	if len(problems) != 2 {
		t.Fatalf("problems = %v, want 2", problems)
	}
	for i, part := range []string{filepath.Join(dir, "a.md") + ": cannot read", filepath.Join(root, ".sema", "agents") + ": cannot list"} {
		if !sema.IsCode(problems[i], CodeLoadFailed) || !strings.Contains(sema.MessageOf(problems[i]), part) {
			t.Errorf("problem %d = %v, want %s containing %q", i, problems[i], CodeLoadFailed, part)
		}
		if !errorsIsErrno(problems[i], syscall.EACCES) {
			t.Errorf("problem %d does not wrap EACCES: %v", i, problems[i])
		}
	}
}

func errorsIsErrno(err error, errno syscall.Errno) bool {
	for err != nil {
		if e, ok := err.(syscall.Errno); ok && e == errno {
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

func TestLoadRefusals(t *testing.T) {
	t.Parallel()
	root := tempRoot(t)
	writeFile(t, filepath.Join(root, ".claude", "agents", "a.md"), agent("a", "A."))
	if err := os.Symlink(filepath.Join(root, "nowhere"), filepath.Join(root, ".claude", "agents", "dangling.md")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, problems := Load(ctx, env.NewHost(), root)
	if len(problems) != 1 || !sema.IsCode(problems[0], CodeLoadFailed) || !strings.Contains(sema.MessageOf(problems[0]), "dangling.md") {
		t.Errorf("dangling link: problems = %v, want one %s naming it", problems, CodeLoadFailed)
	}

	_, problems = Load(ctx, env.NewHost(), "relative/root")
	if len(problems) != 1 || !sema.IsCode(problems[0], CodeLoadFailed) || !strings.Contains(sema.MessageOf(problems[0]), "not an absolute path") {
		t.Errorf("relative root: problems = %v", problems)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	defs, problems := Load(cancelled, env.NewHost(), root)
	if len(defs) != 0 || len(problems) == 0 {
		t.Errorf("cancelled: %v, %v; want problems and no definitions", defs, problems)
	}
	for _, p := range problems {
		if !sema.IsCode(p, CodeLoadFailed) || !strings.Contains(p.Error(), context.Canceled.Error()) {
			t.Errorf("cancelled: problem %v", p)
		}
	}
}
