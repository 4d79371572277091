package shellscan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseSed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		script string
		ok     bool
		want   sedScript
	}{
		{`s/a/b/`, true, sedScript{}},
		{`s/a/b/g`, true, sedScript{}},
		{`s|/usr|/opt|g`, true, sedScript{}},
		{`s/a\/b/c/2p`, true, sedScript{}},
		{`/x/d`, true, sedScript{}},
		{`1,5p;$d`, true, sedScript{}},
		{`0~3d`, true, sedScript{}},
		{`/a/,+2d`, true, sedScript{}},
		{`\%x%Id`, true, sedScript{}},
		{`/x/!{p;q}`, true, sedScript{}},
		{`:a;N;$!ba;s/\n/ /g`, true, sedScript{}},
		{"# comment with w file\np", true, sedScript{}},
		{`y/abc/xyz/`, true, sedScript{}},
		{`a hello; w not-a-command`, true, sedScript{}}, // a's text runs to the end of the line
		{"a\\\nline one\\\nline two", true, sedScript{}},
		{`1i\  text`, true, sedScript{}},
		{`$a end`, true, sedScript{}},
		{`l 40;q 5`, true, sedScript{}},
		{`=`, true, sedScript{}},
		{`1r /etc/passwd`, true, sedScript{reads: []string{"/etc/passwd"}}},
		{`R other`, true, sedScript{reads: []string{"other"}}},
		{`w out`, true, sedScript{writes: []string{"out"}}},
		{`/x/W out; p`, true, sedScript{writes: []string{"out; p"}}}, // a file name runs to the end of the line
		{`s/a/b/w out`, true, sedScript{writes: []string{"out"}}},
		{`s/a/b/gpw out`, true, sedScript{writes: []string{"out"}}},
		{"s/a/b/w out\np", true, sedScript{writes: []string{"out"}}},
		{`e id`, true, sedScript{exec: true}},
		{`1e`, true, sedScript{exec: true}},
		{`s/a/id/e`, true, sedScript{exec: true}},
		{`s/x/y/ge`, true, sedScript{exec: true}},
		{`s/a/b`, false, sedScript{}},
		{`s/[/]/x/w out`, false, sedScript{}},
		{`/[/]/w out`, false, sedScript{}},
		{`k`, false, sedScript{}},
		{`p x`, false, sedScript{}},
		{`{p`, false, sedScript{}},
		{`p}`, false, sedScript{}},
		{`1,`, false, sedScript{}},
		{"s/a\n/b/", false, sedScript{}},
		{`y/ab/c`, false, sedScript{}},
		{`s\a\b\`, false, sedScript{}},
	}
	for _, tc := range tests {
		got, ok := parseSed(tc.script)
		if ok != tc.ok {
			t.Errorf("parseSed(%q) ok = %v, want %v", tc.script, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(sedScript{}), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("parseSed(%q) (-want +got):\n%s", tc.script, diff)
		}
	}
}

func TestReadSed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cmd      string
		inPlace  bool
		suffix   string
		files    []string
		complete bool
	}{
		{`sed s/a/b/ f g`, false, "", []string{"f", "g"}, true},
		{`sed -i s/a/b/ f`, true, "", []string{"f"}, true},
		{`sed -i.bak s/a/b/ f`, true, ".bak", []string{"f"}, true},
		{`sed -ni s/a/b/ f`, true, "", []string{"f"}, true},
		{`sed -in s/a/b/ f`, true, "n", []string{"f"}, true},
		{`sed -ie s/a/b/ f`, true, "e", []string{"f"}, true}, // -ie is -i with suffix "e", not -e
		{`sed --in-place -e s/a/b/ -e p f`, true, "", []string{"f"}, true},
		{`sed --in=.orig s/a/b/ f`, true, ".orig", []string{"f"}, true}, // abbreviation of --in-place
		{`sed -f prog f`, false, "", []string{"f"}, false},
		{`sed -x s/a/b/ f`, false, "", []string{"f"}, false},
		{`sed $flags s/a/b/ f`, false, "", []string{"s/a/b/", "f"}, false}, // $flags is taken for the script
		{`sed`, false, "", nil, false},
	}
	for _, tc := range tests {
		call := readSed(mustParse(t, tc.cmd).Segments[0].Words[1:])
		var files []string
		for _, f := range call.files {
			files = append(files, f.Raw)
		}
		if call.inPlace != tc.inPlace || call.suffix != tc.suffix || call.complete != tc.complete ||
			!cmp.Equal(files, tc.files, cmpopts.EquateEmpty()) {
			t.Errorf("readSed(%q) = {inPlace:%v suffix:%q files:%q complete:%v}, want {%v %q %q %v}",
				tc.cmd, call.inPlace, call.suffix, files, call.complete, tc.inPlace, tc.suffix, tc.files, tc.complete)
		}
	}
}
