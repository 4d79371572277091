package shellscan

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func w(path, op string) Target  { return Target{Path: path, Op: op, Static: true} }
func wn(path, op string) Target { return Target{Path: path, Op: op} } // not static
func u(op string) Target        { return Target{Op: op} }             // unknown places; Reason says why

// targetsTest checks paths, ops and static-ness; segment indexes are checked separately.
type targetsTest struct {
	cmd      string
	want     []Target
	complete bool
}

func checkTargets(t *testing.T, name string, fn func(*Script) ([]Target, bool), tests []targetsTest) {
	t.Helper()
	for _, tc := range tests {
		got, complete := fn(mustParse(t, tc.cmd))
		for _, tg := range got {
			if tg.Path == "" && tg.Reason == "" {
				t.Errorf("%s(%q): a target of unknown places without a reason: %+v", name, tc.cmd, tg)
			}
		}
		if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(Target{}, "Segment", "Reason")); diff != "" {
			t.Errorf("%s(%q) targets (-want +got):\n%s", name, tc.cmd, diff)
		}
		if complete != tc.complete {
			t.Errorf("%s(%q) complete = %v, want %v", name, tc.cmd, complete, tc.complete)
		}
	}
}

func TestWriteTargets(t *testing.T) {
	t.Parallel()
	checkTargets(t, "WriteTargets", WriteTargets, []targetsTest{
		// redirections
		{`echo x > out`, []Target{w("out", OpWrite)}, true},
		{`echo x >> "my file"`, []Target{w("my file", OpWrite)}, true},
		{`echo x 2> err &> all >| clob`, []Target{w("err", OpWrite), w("all", OpWrite), w("clob", OpWrite)}, true},
		{`cat <> rw`, []Target{w("rw", OpWrite)}, true},
		{`ls >& file`, []Target{w("file", OpWrite)}, true},
		{`ls > /dev/null 2>&1 >&2 2>/dev/stderr`, nil, true},
		{`echo x > ~/.bashrc`, []Target{{Path: "~/.bashrc", Op: OpWrite}}, false},
		{`echo x > $f`, []Target{wn("$f", OpWrite)}, false},
		{`{ ls; } > out`, []Target{w("out", OpWrite)}, true},
		{`> truncated`, []Target{w("truncated", OpWrite)}, true},
		{`cat < in`, nil, true},
		// tee
		{`ls | tee -a a b`, []Target{w("a", OpWrite), w("b", OpWrite)}, true},
		{`tee /dev/null`, nil, true},
		// cp, mv, ln, install
		{`cp a b`, []Target{w("b", OpWrite)}, true},
		{`cp -r src1 src2 dst/`, []Target{w("dst/", OpWrite)}, true},
		{`cp -t /tmp a b`, []Target{w("/tmp", OpWrite)}, true},
		{`cp --target-directory=/tmp a`, []Target{w("/tmp", OpWrite)}, true},
		{`cp --target /tmp a`, []Target{w("/tmp", OpWrite)}, true}, // abbreviation
		{`cp --bogus a b`, []Target{w("b", OpWrite)}, false},
		{`mv a b`, []Target{w("b", OpWrite), w("a", OpRemove)}, true},
		{`mv -t d a b`, []Target{w("d", OpWrite), w("a", OpRemove), w("b", OpRemove)}, true},
		{`ln -s /etc/passwd link`, []Target{w("link", OpWrite)}, true},
		{`ln -s /etc/passwd`, []Target{w("passwd", OpWrite)}, true},
		{`install -m 755 a /usr/local/bin/a`, []Target{w("/usr/local/bin/a", OpWrite)}, true},
		{`install -d d1 d2`, []Target{w("d1", OpCreate), w("d2", OpCreate)}, true},
		// removal and creation
		{`rm -rf / ~`, []Target{w("/", OpRemove), {Path: "~", Op: OpRemove}}, false},
		{`rm -- -f`, []Target{w("-f", OpRemove)}, true},
		{`rm *.o`, []Target{wn("*.o", OpRemove)}, false},
		{`rmdir a; unlink b`, []Target{w("a", OpRemove), w("b", OpRemove)}, true},
		{`shred -u key`, []Target{w("key", OpRemove)}, true},
		{`shred key`, []Target{w("key", OpWrite)}, true},
		{`touch -d yesterday a b`, []Target{w("a", OpCreate), w("b", OpCreate)}, true},
		{`mkdir -p -m 700 a/b`, []Target{w("a/b", OpCreate)}, true},
		{`mkfifo p; mknod dev c 1 3`, []Target{w("p", OpCreate), w("dev", OpCreate)}, true},
		// in-place and output options
		{`sed -i 's/a/b/' /etc/hosts`, []Target{w("/etc/hosts", OpWrite)}, true},
		{`sed --in-place=.bak -e 's/a/b/' f`, []Target{w("f", OpWrite), w("f.bak", OpWrite)}, true},
		{`sed -i'bak/*.old' s/a/b/ d/f`, []Target{w("d/f", OpWrite), wn("bak/f.old", OpWrite)}, false},
		{`sed -i'*.orig' s/a/b/ d/f`, []Target{w("d/f", OpWrite), w("d/f.orig", OpWrite)}, true},
		{`sed -in s/a/b/ f`, []Target{w("f", OpWrite), w("fn", OpWrite)}, true}, // -in is -i with suffix "n"
		{`sed 's/a/b/' f`, nil, true},
		{`sed -n 's/a/b/w out' f`, []Target{w("out", OpWrite)}, true},
		{`sed '/x/w /dev/stdout' f`, nil, true},
		{`sed 'e id' f`, []Target{u(OpWrite)}, false},
		{`sed -f script f`, []Target{u(OpWrite)}, false},
		{`sort -o out in`, []Target{w("out", OpWrite)}, true},
		{`sort -uoout in`, []Target{w("out", OpWrite)}, true},
		{`sort --output=out in`, []Target{w("out", OpWrite)}, true},
		{`sort --compress-program=gzip in`, nil, false},
		{`uniq in out`, []Target{w("out", OpWrite)}, true},
		{`tree -o out.txt`, []Target{w("out.txt", OpWrite)}, true},
		{`tree -R -H .`, nil, false},
		{`git diff --output=/tmp/p`, []Target{w("/tmp/p", OpWrite)}, true},
		{`git log -p --output /tmp/p`, []Target{w("/tmp/p", OpWrite)}, true},
		{`git status; git log -n 3`, nil, true},
		{`git commit -m x`, nil, false},
		{`git -C /other status`, nil, false},
		{`git diff --ext-diff`, nil, false},
		{`git branch -D x`, nil, false},
		{`curl -sSLo out.html https://example.com`, []Target{w("out.html", OpWrite)}, true},
		{`curl --output out -D headers -c jar https://x`, []Target{w("out", OpWrite), w("headers", OpWrite), w("jar", OpWrite)}, true},
		{`curl -O https://x/file`, nil, false},
		{`curl -w '%output{/tmp/x}' https://x`, nil, false},
		{`curl https://x`, nil, true},
		{`wget -O page.html https://x`, []Target{w("page.html", OpWrite)}, true},
		{`wget -qO- https://x`, nil, true},
		{`wget https://x/file`, nil, false},
		{`wget -r https://x`, nil, false},
		{`wget -nv -O page https://x`, []Target{w("page", OpWrite)}, true},
		{`wget -o log -O - https://x`, []Target{w("log", OpWrite)}, true},
		{`wget --spider https://x`, nil, true},
		{`wget --directory-pre=/tmp https://x`, nil, false}, // abbreviation of --directory-prefix
		{`curl --remote-na https://x`, nil, false},          // abbreviation of --remote-name
		{`dd if=/dev/zero of=/tmp/disk bs=1M count=1`, []Target{w("/tmp/disk", OpWrite)}, true},
		{`dd of=$f`, []Target{wn("$f", OpWrite)}, false},
		{`truncate -s 0 log`, []Target{w("log", OpWrite)}, true},
		{`chmod -R 755 a b`, []Target{w("a", OpWrite), w("b", OpWrite)}, true},
		{`chmod -x /usr/bin/tool`, []Target{w("/usr/bin/tool", OpWrite)}, true},
		{`chmod --reference=ref f`, []Target{w("f", OpWrite)}, true},
		{`chown -R root:root /srv`, []Target{w("/srv", OpWrite)}, true},
		{`chgrp staff f`, []Target{w("f", OpWrite)}, true},
		{`tar -xzf a.tgz -C /opt`, []Target{w("/opt", OpWrite)}, false},
		{`tar xf a.tar`, []Target{w(".", OpWrite)}, false},
		{`tar -czf a.tgz dir`, []Target{w("a.tgz", OpWrite)}, true},
		{`tar czf a.tgz dir`, []Target{w("a.tgz", OpWrite)}, true},
		{`tar -tf a.tar`, nil, true},
		{`tar -c dir`, nil, false},
		{`find / -name x -fprint /tmp/list -delete`, []Target{w("/tmp/list", OpWrite), w("/", OpRemove)}, true},
		{`find -delete`, []Target{w(".", OpRemove)}, true},
		{`find a b -fprintf out '%p' -name y`, []Target{w("out", OpWrite)}, true},
		{`find . -exec rm {} +`, nil, false},
		{`find . $x`, nil, false},
		// wrappers
		{`sudo rm -rf /x`, []Target{w("/x", OpRemove)}, true},
		{`sudo -u root env FOO=1 rm x`, []Target{w("x", OpRemove)}, false}, // env changes the environment
		{`timeout 5 nice -n 2 nohup cp a b`, []Target{w("b", OpWrite)}, true},
		{`/bin/rm x`, []Target{w("x", OpRemove)}, true},
		{`"rm" x`, []Target{w("x", OpRemove)}, true},
		{`command rm x`, []Target{w("x", OpRemove)}, true},
		{`command -v rm`, nil, true},
		{`xargs rm < list`, nil, false},
		{`find . | xargs grep foo`, nil, true},
		{`xargs sort`, nil, false},
		{`time -o log ls`, nil, false},
		{`sudo $cmd`, nil, false},
		// programs the model does not know, and what moves the ground under the others
		{`make install`, nil, false},
		{`$EDITOR file`, nil, false},
		{`cd /etc && rm passwd`, []Target{w("passwd", OpRemove)}, false},
		{`FOO=1 rm x`, []Target{w("x", OpRemove)}, false},
		{`x=1; rm y`, []Target{w("y", OpRemove)}, false},
		{`rm() { :; }; rm x`, []Target{w("x", OpRemove)}, false},
		{`export PATH=/tmp`, nil, false},
		{`ls -la; cat a | grep b; echo hi; date`, nil, true},
		{`rm $(cat list)`, []Target{wn("$(cat list)", OpRemove)}, false},
		{`echo $(rm inner)`, []Target{w("inner", OpRemove)}, true},
		{`cat <(rm inner)`, []Target{w("inner", OpRemove)}, true},
	})
}

func TestWriteTargetSegments(t *testing.T) {
	t.Parallel()
	got, _ := WriteTargets(mustParse(t, "ls; rm a; { cp b c; } > d"))
	want := []Target{
		{Path: "a", Op: OpRemove, Segment: 1, Static: true},
		{Path: "c", Op: OpWrite, Segment: 2, Static: true},
		{Path: "d", Op: OpWrite, Segment: -1, Static: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("WriteTargets segments (-want +got):\n%s", diff)
	}
}

func TestReadTargets(t *testing.T) {
	t.Parallel()
	r := func(p string) Target { return w(p, OpRead) }
	checkTargets(t, "ReadTargets", ReadTargets, []targetsTest{
		{`cat a b`, []Target{r("a"), r("b")}, true},
		{`cat - < in`, []Target{r("in")}, true},
		{`cat /dev/null`, nil, true},
		{`head -n 5 a; tail -c 10 b; wc -l c`, []Target{r("a"), r("b"), r("c")}, true},
		{`grep -n foo a b`, []Target{r("a"), r("b")}, true},
		{`grep -e foo -f pats a`, []Target{r("pats"), r("a")}, true},
		{`grep -r foo`, []Target{r(".")}, true},
		{`grep --exclude-from=/etc/x foo a`, []Target{r("/etc/x"), r("a")}, true},
		{`grep foo`, nil, true},
		{`rg foo`, []Target{r(".")}, true},
		{`rg -g '*.go' foo src /etc`, []Target{r("src"), r("/etc")}, true},
		{`rg --files src`, []Target{r("src")}, true},
		{`ls`, []Target{r(".")}, true},
		{`ls -la /etc /tmp`, []Target{r("/etc"), r("/tmp")}, true},
		{`du -sh`, []Target{r(".")}, true},
		{`tree -L 2 src`, []Target{r("src")}, true},
		{`find /etc -newer ref -name x`, []Target{r("/etc"), r("ref")}, true},
		{`find`, []Target{r(".")}, true},
		{`find . -exec cat {} \;`, []Target{r(".")}, false},
		{`jq '.a' x.json y.json`, []Target{r("x.json"), r("y.json")}, true},
		{`jq -n --arg k v '$k'`, nil, true},
		{`jq --slurpfile s data.json -f prog.jq in.json`, []Target{r("data.json"), r("prog.jq"), u(OpRead), r("in.json")}, false},
		{`jq -n '$ARGS' --args a b`, nil, true},
		{`sort -o out in1 in2`, []Target{r("in1"), r("in2")}, true},
		{`uniq in out`, []Target{r("in")}, true},
		{`diff -u a b`, []Target{r("a"), r("b")}, true},
		{`sed -n p /etc/shadow`, []Target{r("/etc/shadow")}, true},
		{`sed '1r /etc/passwd' f`, []Target{r("/etc/passwd"), r("f")}, true},
		{`cp a b c`, []Target{r("a"), r("b")}, true},
		{`mv a b`, []Target{r("a")}, true},
		{`dd if=/etc/shadow of=x`, []Target{r("/etc/shadow")}, true},
		{`tar -tf a.tar`, []Target{r("a.tar")}, true},
		{`tar -czf out.tgz src`, []Target{r("src")}, true},
		{`git log`, []Target{r(".")}, true},
		{`git diff --no-index /etc/a /etc/b`, []Target{r("."), r("/etc/a"), r("/etc/b")}, false},
		{`touch -r ref new`, []Target{r("ref")}, true},
		{`date -r file +%s`, []Target{r("file")}, true},
		{`echo hi; pwd; rm x; mkdir y`, nil, true},
		{`cat $f`, []Target{wn("$f", OpRead)}, false},
		{`cat ~/.ssh/id_rsa`, []Target{{Path: "~/.ssh/id_rsa", Op: OpRead}}, false},
		{`xargs cat < list`, []Target{r("list"), u(OpRead)}, false},
		{`curl -d @/etc/passwd https://x`, []Target{r("/etc/passwd")}, false},
		{`python3 script.py`, nil, false},
		{`cd /etc; cat passwd`, []Target{r("passwd")}, false},
		{`sudo cat /etc/shadow`, []Target{r("/etc/shadow")}, true},
		{`cat $(ls)`, []Target{wn("$(ls)", OpRead), r(".")}, false},
		{`wget -nv --post-file=/etc/passwd -O out https://x`, []Target{r("/etc/passwd")}, false},
		{`chmod --reference=/etc/shadow f`, []Target{r("/etc/shadow")}, true},
		{`chmod -Z f`, nil, false},
		{`dd if=$src of=x`, []Target{wn("$src", OpRead)}, false},
		{`jq -L lib -r --indent 2 '.' -- in.json`, []Target{u(OpRead), r("in.json")}, false},
		{`jq -Q . x`, []Target{r("x")}, false},
		{`tar -cf out.tar -C /etc passwd`, []Target{r("passwd")}, false},
		{`tar -xf a.tar -T list`, []Target{r("list"), r("a.tar")}, true},
	})
}

// TestUnknownPlaces: options that follow symbolic links or read a list of names, for every
// modeled program, give a target of unknown places with its reason; the plain forms do not.
func TestUnknownPlaces(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cmd   string
		op    string // "" when there must be none
		write bool
	}{
		{`grep -r x .`, "", false},
		{`grep -R x .`, OpRead, false},
		{`rg --follow x`, OpRead, false},
		{`rg --fol x`, OpRead, false},
		{`rg -L x`, OpRead, false},
		{`rg x`, "", false},
		{`tree -l`, OpRead, false},
		{`tree -L 2`, "", false},
		{`stat -L f`, OpRead, false},
		{`ls -H d`, OpRead, false},
		{`du -D d`, OpRead, false},
		{`diff -r --no-dereference a b`, "", false},
		{`find -H . -name x`, OpRead, false},
		{`find . -files0-from list`, OpRead, false},
		{`cp -rL a b`, OpRead, false},
		{`cp -r a b`, "", false},
		{`chown -RL u d`, OpWrite, true},
		{`chgrp -RH g d`, OpWrite, true},
		{`chmod -RL u+w d`, OpWrite, true},
		{`chmod -R u+w d`, "", true},
		{`tar -xf a.tar -T list`, "", false},
		{`sed 's/a/b/' f`, "", true},
		{`sed --expression='1e id' f`, OpWrite, true},
		{`sed "$S" f`, OpWrite, true},
	}
	for _, tc := range tests {
		fn := ReadTargets
		if tc.write {
			fn = WriteTargets
		}
		got, _ := fn(mustParse(t, tc.cmd))
		found := ""
		for _, tg := range got {
			if tg.Reason != "" && tg.Path == "" {
				found = tg.Op
			}
		}
		if found != tc.op {
			t.Errorf("%q: unknown-place target %q, want %q (%+v)", tc.cmd, found, tc.op, got)
		}
	}
	s := mustParse(t, "sort -T /tmp/x f")
	if v := ReadOnly(s, nil); v.OK || !strings.Contains(v.Reason, "temporary") {
		t.Errorf("sort -T: %+v", v)
	}
	if w, _ := WriteTargets(s); len(w) != 1 || w[0].Path != "/tmp/x" {
		t.Errorf("sort -T write targets: %+v", w)
	}
}

// TestGitDiffFilesystemReads: `git diff` compares two paths on the filesystem with
// --no-index, and without it when given exactly two words after its leading options; the
// read targets name both, placed as git places them (relative to its -C directories).
func TestGitDiffFilesystemReads(t *testing.T) {
	t.Parallel()
	r := func(p string) Target { return w(p, OpRead) }
	checkTargets(t, "ReadTargets", ReadTargets, []targetsTest{
		{`git diff --no-index /outside/a b`, []Target{r("."), r("/outside/a"), r("b")}, false},
		{`git diff --no-index -- /outside/a b`, []Target{r("."), r("/outside/a"), r("b")}, false},
		{`git diff --no-index --stat /outside/a -- b`, []Target{r("."), r("/outside/a"), r("b")}, false},
		{`git --no-pager diff --no-index /outside/a b`, []Target{r("."), r("/outside/a"), r("b")}, false},
		{`git -P diff --no-index /outside/a b`, []Target{r("."), r("/outside/a"), r("b")}, false},
		{`git diff --no-inde /outside/a b`, []Target{r("."), r("/outside/a"), r("b")}, false}, // an abbreviation counts
		{`git diff --no-index -O /outside/order a b`, []Target{r("."), r("/outside/order"), r("a"), r("b")}, false},
		{`git diff --no-index - /outside/a`, []Target{r("."), r("/outside/a")}, false},
		{`sudo git diff --no-index /outside/a b`, []Target{r("."), r("/outside/a"), r("b")}, false},
		// -C moves git, and the relative paths with it.
		{`git -C dir diff --no-index /outside/a b`, []Target{r("dir"), r("/outside/a"), r("dir/b")}, false},
		{`git -C /x -C y diff --no-index a ../b`, []Target{r("/x/y"), r("/x/y/a"), r("/x/b")}, false},
		{`git -C /x -C /y diff --no-index a b`, []Target{r("/y"), r("/y/a"), r("/y/b")}, false},
		{`git -C '' diff --no-index a b`, []Target{r("."), r("a"), r("b")}, false},
		{`git -C $d diff --no-index /outside/a b`, []Target{u(OpRead), r("/outside/a"), u(OpRead)}, false},
		{`git -c diff.noprefix=true diff --no-index /outside/a b`, []Target{r("."), r("/outside/a"), r("b")}, false},
		// Without --no-index: exactly two words after the leading options.
		{`git diff /outside/a b`, []Target{r("."), r("/outside/a"), r("b")}, true},
		{`git diff --stat -- /outside/a b`, []Target{r("."), r("/outside/a"), r("b")}, true},
		{`git diff - /outside/a b`, []Target{r("."), r("/outside/a"), r("b")}, true},
		{`git diff ../../outside/a b`, []Target{r("."), r("../../outside/a"), r("b")}, true},
		{`git diff HEAD~1 HEAD`, []Target{r("."), r("HEAD~1"), r("HEAD")}, true},
		{`git diff HEAD~1 HEAD -- src`, []Target{r(".")}, true},
		{`git diff -- src`, []Target{r(".")}, true},
		{`git diff HEAD`, []Target{r(".")}, true},
		{`git diff`, []Target{r(".")}, true},
		{`git log /outside/a b`, []Target{r(".")}, true},
		// An expanded word that could be an option (or --no-index) makes every operand a read.
		{`git diff $opt /outside/a b`, []Target{r("."), wn("$opt", OpRead), r("/outside/a"), r("b")}, false},
		{`git diff "$@" /outside/a`, []Target{r("."), wn(`"$@"`, OpRead), r("/outside/a")}, false},
		// Other global options that move git.
		{`git -C /other status`, []Target{r("/other")}, false},
		{`git --git-dir=/other/.git --work-tree /w log`, []Target{r("."), r("/other/.git"), r("/w")}, false},
		{`git -C /x --git-dir=.git log`, []Target{r("/x"), r("/x/.git")}, false},
		{`git --bogus diff --no-index /outside/a b`, nil, false},
		{`git -C`, nil, false},
	})
}
