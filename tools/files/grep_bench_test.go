package files

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/tools"
)

// goSrc returns $(go env GOROOT)/src, the ~10k-file tree the search benchmarks use.
func goSrc(b *testing.B) string {
	b.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skipf("go env GOROOT: %v", err)
	}
	src, err := filepath.EvalSymlinks(filepath.Join(strings.TrimSpace(string(out)), "src"))
	if err != nil {
		b.Skipf("GOROOT/src: %v", err)
	}
	return src
}

// benchTools mounts the read tools on a fence whose task root is root.
func benchTools(b *testing.B, root string) map[string]tools.Tool {
	b.Helper()
	e := env.NewHost()
	fn, err := fence.New(context.Background(), fence.Config{Env: e, Root: root})
	if err != nil {
		b.Fatal(err)
	}
	m := map[string]tools.Tool{}
	for _, t := range ReadTools(Config{Env: e, Fence: fn, ReadState: NewReadState()}) {
		m[t.Spec().Name] = t
	}
	return m
}

func benchRun(b *testing.B, t tools.Tool, input map[string]any) tools.Result {
	b.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		b.Fatal(err)
	}
	var r tools.Result
	for b.Loop() {
		r = t.Run(context.Background(), raw)
	}
	if r.IsError {
		b.Fatalf("%s: %s", r.Code, r.TextOf())
	}
	return r
}

// BenchmarkGrepGOROOT searches the Go source tree in files_with_matches mode (and once in
// content mode); compare with `rg -l --hidden` and `grep -rl` for the same patterns. It
// reports CPU time per search as well (laneCPU): on a shared machine it is the steadier
// measure.
func BenchmarkGrepGOROOT(b *testing.B) {
	src := goSrc(b)
	ts := benchTools(b, src)
	for _, c := range []struct{ name, pattern string }{
		{"literal", "func NewReader"},
		{"regexp", `func \w+Reader\(`},
		{"literal-ignore-case", "func newreader"},
		{"no-literal", `[A-Z]{12,}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			laneCPU(b)
			in := map[string]any{"pattern": c.pattern}
			if strings.HasSuffix(c.name, "ignore-case") {
				in["-i"] = true
			}
			r := benchRun(b, ts["Grep"], in)
			b.ReportMetric(float64(strings.Count(r.TextOf(), "\n")), "files")
		})
	}
	b.Run("content", func(b *testing.B) {
		laneCPU(b)
		r := benchRun(b, ts["Grep"], map[string]any{"pattern": `func \w+Reader\(`, "output_mode": "content"})
		b.ReportMetric(float64(strings.Count(r.TextOf(), "\n")+1), "lines")
	})
}

// BenchmarkGlobGOROOT lists every test file of the Go source tree.
func BenchmarkGlobGOROOT(b *testing.B) {
	ts := benchTools(b, goSrc(b))
	benchRun(b, ts["Glob"], map[string]any{"pattern": "**/*_test.go"})
}

// BenchmarkLineDFA runs the DFA of a literal-free pattern over the Go files of net/http
// (about 2 MB), every line visited (as the count and content modes do).
func BenchmarkLineDFA(b *testing.B) {
	files, err := filepath.Glob(filepath.Join(goSrc(b), "net", "http", "*.go"))
	if err != nil || len(files) == 0 {
		b.Skipf("net/http sources: %v", err)
	}
	var buf []byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		buf = append(buf, data...)
	}
	for _, pattern := range []string{`[A-Z]{12,}`, `\b[a-z]+[0-9]\b`, `\pL{20}`} {
		b.Run(pattern, func(b *testing.B) {
			m, err := compileGrep(pattern, false, false)
			if err != nil || m.dfas.New == nil {
				b.Fatalf("pattern %q: no DFA (%v)", pattern, err)
			}
			d := m.dfas.Get().(*lineDFA)
			b.SetBytes(int64(len(buf)))
			lines := 0
			for b.Loop() {
				lines = 0
				if _, ok := d.scan(buf, 0, func(int, int) bool { lines++; return true }); !ok {
					b.Fatal("the DFA gave up")
				}
			}
			b.ReportMetric(float64(lines), "lines")
		})
	}
}
