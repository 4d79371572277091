package shellscan

import (
	"testing"
)

// bench20 is a realistic 20-segment read-only command line.
const bench20 = `ls -la src && cat a.txt | grep -n foo | wc -l; git status; git log --oneline -n 5; ` +
	`head -n 3 b.txt; tail -n 2 c.txt; sort -u d.txt | uniq -c; cut -d, -f1 e.csv; ` +
	`find . -name '*.go' -type f; rg -n TODO src; stat f; du -sh .; df -h; echo done; ` +
	`date +%s; jq .a x.json; diff a b 2>/dev/null`

func TestBenchCommandShape(t *testing.T) {
	s := mustParse(t, bench20)
	if n := len(s.Segments); n != 20 {
		t.Fatalf("bench command has %d segments, want 20", n)
	}
	if v := ReadOnlyAt(s, nil, noGitPrograms); !v.OK {
		t.Fatalf("bench command not read-only: %s", v.Reason)
	}
}

// BenchmarkReadOnlyWriteTargets measures the two analyses on a parsed 20-segment command.
func BenchmarkReadOnlyWriteTargets(b *testing.B) {
	s, err := Parse(bench20)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !ReadOnlyAt(s, nil, noGitPrograms).OK {
			b.Fatal("not read-only")
		}
		WriteTargets(s)
	}
}

// BenchmarkParseReadOnlyWriteTargets includes parsing, as a caller starting from text pays it.
func BenchmarkParseReadOnlyWriteTargets(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		s, err := Parse(bench20)
		if err != nil {
			b.Fatal(err)
		}
		if !ReadOnlyAt(s, nil, noGitPrograms).OK {
			b.Fatal("not read-only")
		}
		WriteTargets(s)
	}
}
