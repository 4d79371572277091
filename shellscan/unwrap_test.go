package shellscan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestUnwrap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cmd      string
		inner    []string // Raw words of the inner segment
		wrappers []string
		ok       bool
		assigns  []string
		appended bool
	}{
		{"rm x", []string{"rm", "x"}, nil, true, nil, false},
		{"sudo rm -rf /", []string{"rm", "-rf", "/"}, []string{"sudo"}, true, nil, false},
		{"sudo -u root -E rm x", []string{"rm", "x"}, []string{"sudo"}, true, nil, false},
		{"sudo -- rm x", []string{"rm", "x"}, []string{"sudo"}, true, nil, false},
		{"sudo FOO=1 rm x", []string{"rm", "x"}, []string{"sudo"}, true, []string{"FOO=1"}, false},
		{"sudo -e /etc/hosts", []string{"sudo", "-e", "/etc/hosts"}, []string{"sudo"}, false, nil, false},
		{"sudo -D /tmp rm x", []string{"sudo", "-D", "/tmp", "rm", "x"}, []string{"sudo"}, false, nil, false},
		{"sudo --bogus rm x", []string{"sudo", "--bogus", "rm", "x"}, []string{"sudo"}, false, nil, false},
		{"/usr/bin/sudo rm x", []string{"rm", "x"}, []string{"sudo"}, true, nil, false},
		{`"sudo" rm x`, []string{"rm", "x"}, []string{"sudo"}, true, nil, false},
		{"env FOO=1 BAR=2 rm x", []string{"rm", "x"}, []string{"env"}, true, []string{"FOO=1", "BAR=2"}, false},
		{"env -i -u HOME rm x", []string{"rm", "x"}, []string{"env"}, true, nil, false},
		{"env - rm x", []string{"rm", "x"}, []string{"env"}, true, nil, false},
		{"env", []string{"env"}, nil, true, nil, false},
		{"env -i", []string{"env", "-i"}, nil, true, nil, false},
		{"env -C /tmp rm x", []string{"env", "-C", "/tmp", "rm", "x"}, []string{"env"}, false, nil, false},
		{"env -S 'rm x'", []string{"env", "-S", "'rm x'"}, []string{"env"}, false, nil, false},
		{"env $VARS rm x", []string{"env", "$VARS", "rm", "x"}, []string{"env"}, false, nil, false},
		{"timeout 5 rm x", []string{"rm", "x"}, []string{"timeout"}, true, nil, false},
		{"timeout -s KILL -k 2 5s rm x", []string{"rm", "x"}, []string{"timeout"}, true, nil, false},
		{"timeout --signal=TERM 5 rm x", []string{"rm", "x"}, []string{"timeout"}, true, nil, false},
		{"timeout $T rm x", []string{"timeout", "$T", "rm", "x"}, []string{"timeout"}, false, nil, false},
		{"nice rm x", []string{"rm", "x"}, []string{"nice"}, true, nil, false},
		{"nice -n 10 rm x", []string{"rm", "x"}, []string{"nice"}, true, nil, false},
		{"nice -10 rm x", []string{"rm", "x"}, []string{"nice"}, true, nil, false},
		{"nohup rm x", []string{"rm", "x"}, []string{"nohup"}, true, nil, false},
		{"time rm x", []string{"rm", "x"}, []string{"time"}, true, nil, false},
		{"time -p rm x", []string{"rm", "x"}, []string{"time"}, true, nil, false},
		{"/usr/bin/time -v rm x", []string{"rm", "x"}, []string{"time"}, true, nil, false},
		{"/usr/bin/time -o log rm x", []string{"/usr/bin/time", "-o", "log", "rm", "x"}, []string{"time"}, false, nil, false},
		{"command rm x", []string{"rm", "x"}, []string{"command"}, true, nil, false},
		{"command -p rm x", []string{"rm", "x"}, []string{"command"}, true, nil, false},
		{"command -v rm", []string{"command", "-v", "rm"}, nil, true, nil, false},
		{"command -V rm", []string{"command", "-V", "rm"}, nil, true, nil, false},
		{"stdbuf -oL -e0 rm x", []string{"rm", "x"}, []string{"stdbuf"}, true, nil, false},
		{"stdbuf --output=L rm x", []string{"rm", "x"}, []string{"stdbuf"}, true, nil, false},
		{"xargs rm", []string{"rm"}, []string{"xargs"}, true, nil, true},
		{"xargs -0 -n 1 -I{} rm -f {}", []string{"rm", "-f", "{}"}, []string{"xargs"}, true, nil, true},
		{"xargs -a list -P4 rm", []string{"rm"}, []string{"xargs"}, true, nil, true},
		{"xargs", []string{"echo"}, []string{"xargs"}, true, nil, true},
		{"builtin echo hi", []string{"echo", "hi"}, []string{"builtin"}, true, nil, false},
		{"exec rm x", []string{"rm", "x"}, []string{"exec"}, true, nil, false},
		{"exec -a name rm x", []string{"rm", "x"}, []string{"exec"}, true, nil, false},
		{"exec 3>f", []string{"exec"}, nil, true, nil, false},
		{"sudo env A=1 timeout 5 nice -n 1 nohup stdbuf -oL xargs rm", []string{"rm"},
			[]string{"sudo", "env", "timeout", "nice", "nohup", "stdbuf", "xargs"}, true, []string{"A=1"}, true},
		{"sudo $CMD", []string{"sudo", "$CMD"}, []string{"sudo"}, false, nil, false},
		{"sudo ./$CMD", []string{"sudo", "./$CMD"}, []string{"sudo"}, false, nil, false},
		{`sudo ./"$CMD"`, []string{`./"$CMD"`}, []string{"sudo"}, true, nil, false},
		{"$WRAP rm x", []string{"$WRAP", "rm", "x"}, nil, true, nil, false},
	}
	for _, tc := range tests {
		seg := mustParse(t, tc.cmd).Segments[0]
		inner, wrappers, ok := seg.Unwrap()
		var words []string
		for _, w := range inner.Words {
			words = append(words, w.Raw)
		}
		if diff := cmp.Diff(tc.inner, words); diff != "" {
			t.Errorf("Unwrap(%q) inner (-want +got):\n%s", tc.cmd, diff)
		}
		if diff := cmp.Diff(tc.wrappers, wrappers, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Unwrap(%q) wrappers (-want +got):\n%s", tc.cmd, diff)
		}
		if ok != tc.ok {
			t.Errorf("Unwrap(%q) ok = %v, want %v", tc.cmd, ok, tc.ok)
		}
		if diff := cmp.Diff(tc.assigns, inner.Assignments, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Unwrap(%q) assignments (-want +got):\n%s", tc.cmd, diff)
		}
		if inner.Appended != tc.appended {
			t.Errorf("Unwrap(%q) Appended = %v, want %v", tc.cmd, inner.Appended, tc.appended)
		}
	}
}

func TestUnwrapKeepsSegmentContext(t *testing.T) {
	t.Parallel()
	s := mustParse(t, "ls && FOO=1 sudo rm x > out &")
	inner, _, ok := s.Segments[1].Unwrap()
	if !ok || inner.Joiner != "&&" || !inner.Background || len(inner.Redirects) != 1 ||
		len(inner.Assignments) != 1 || inner.Assignments[0] != "FOO=1" {
		t.Errorf("Unwrap lost the segment's context: %+v", inner)
	}
}
