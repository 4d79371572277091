package shellscan

import "testing"

func TestRecursiveSegments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cmd  string
		want []bool
	}{
		{"grep -r x .", []bool{true}},
		{"grep -nR x src", []bool{true}},
		{"grep --recursive x", []bool{true}},
		{"grep --recur x", []bool{true}},
		{"grep -d recurse x src", []bool{true}},
		{"grep --directories=recurse x src", []bool{true}},
		{"grep -n x README.md", []bool{false}},
		{"grep -n -- -r README.md", []bool{false}},
		{"rg x", []bool{true}},
		{"find . -name '*.go'", []bool{true}},
		{"du -sh", []bool{true}},
		{"tree src", []bool{true}},
		{"ls -la", []bool{false}},
		{"ls -lR src", []bool{true}},
		{"diff -ru a b", []bool{true}},
		{"diff a b", []bool{false}},
		{"git grep x", []bool{true}},
		{"git -C . grep x", []bool{true}},
		{"git ls-files", []bool{false}},
		{"git log -p", []bool{false}},
		{"cat README.md | grep -r x . && timeout 5 rg y", []bool{false, true, true}},
	}
	for _, tc := range tests {
		s, err := Parse(tc.cmd)
		if err != nil {
			t.Fatalf("%q: %v", tc.cmd, err)
		}
		got := s.RecursiveSegments()
		if len(got) != len(tc.want) {
			t.Errorf("%q: %v, want %v", tc.cmd, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%q: %v, want %v", tc.cmd, got, tc.want)
				break
			}
		}
	}
}
