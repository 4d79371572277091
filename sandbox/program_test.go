package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestProgramReadableGrantsTheProgramItsTree(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pkg := filepath.Join(dir, "node_modules", "server", "dist")
	bin := filepath.Join(dir, "node_modules", ".bin")
	for _, d := range []string{pkg, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(pkg, "index.js"), []byte("//"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../server/dist/index.js", filepath.Join(bin, "server")); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "scripts", "run.py")
	os.MkdirAll(filepath.Dir(script), 0o755)
	os.WriteFile(script, nil, 0o644)
	got := ProgramReadable([]string{filepath.Join(bin, "server"), "--flag", script, "relative.txt", filepath.Join(dir, "missing")})
	real, _ := filepath.EvalSymlinks(dir)
	for _, want := range []string{bin, filepath.Join(real, "node_modules", "server", "dist"), filepath.Join(real, "node_modules"), filepath.Dir(script)} {
		if !slices.Contains(got, want) {
			t.Errorf("ProgramReadable lacks %s: %v", want, got)
		}
	}
	for _, p := range got {
		if p == dir || p == filepath.Join(dir, "missing") {
			t.Errorf("granted more than the program needs: %s", p)
		}
	}
}
