package files

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkReadThousandLines reads a 1,000-line source file whole.
func BenchmarkReadThousandLines(b *testing.B) {
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	var sb strings.Builder
	for i := range 1000 {
		sb.WriteString("\tif err := doSomething(ctx, value, ")
		sb.WriteString(strings.Repeat("x", i%40))
		sb.WriteString("); err != nil { return err }\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "f.go"), []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	ts := benchTools(b, dir)
	b.SetBytes(int64(sb.Len()))
	benchRun(b, ts["Read"], map[string]any{"file_path": "f.go"})
}
