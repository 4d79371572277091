package shellscan

import "testing"

func TestShellScriptReadsOptionsAsBash(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cmd, text string
		known     bool
	}{
		{`bash -c 'ls'`, "ls", true},
		{`bash -c -e 'ls'`, "ls", true},
		{`sh -ec 'ls' name arg`, "ls", true},
		{`bash -o errexit -c 'ls'`, "ls", true},
		{`bash --norc -c -- 'ls'`, "ls", true},
		{`busybox sh -c 'ls'`, "ls", true},
		{`/bin/bash -c "ls"`, "ls", true},
		{`bash script.sh`, "", false},
		{`bash`, "", false},
		{`bash -c "$s"`, "", false},
		{`bash $opt 'ls'`, "", false},
		{`bash script.sh -c 'ls'`, "", false},
	} {
		s := mustParse(t, tc.cmd)
		text, isShell, known := ShellScript(s.Segments[0])
		if !isShell || known != tc.known || text != tc.text {
			t.Errorf("ShellScript(%q) = %q, %v, %v; want %q, true, %v", tc.cmd, text, isShell, known, tc.text, tc.known)
		}
	}
}

func TestRunsFollowsIndirection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cmd     string
		runs    string // a command word Runs must reach
		unknown bool
	}{
		{`sudo -u x timeout 5 rm a`, "rm", false},
		{`bash -c "sh -c 'rm a'"`, "rm", false},
		{`eval 'rm a'`, "rm", false},
		{`trap 'rm a' EXIT`, "rm", false},
		{`env -S 'rm a'`, "rm", false},
		{`env -iS'A=1 rm a'`, "rm", false},
		{`find . -exec rm {} +`, "rm", false},
		{`xargs -0 rm`, "rm", false},
		{`alias x='rm a'`, "rm", false},
		{`busybox rm a`, "rm", false},
		{`$x a`, "", true},
		{`eval "$s"`, "", true},
		{`env -S "$s"`, "", true},
		{`source f`, "", true},
		{`bash f.sh`, "", true},
		{`find . $a rm {} +`, "", true},
		{`echo ${!x}`, "", true},
	} {
		s := mustParse(t, tc.cmd)
		cmds, why := s.Segments[0].Runs()
		if (why != "") != tc.unknown {
			t.Errorf("Runs(%q) unknown = %q, want unknown %v", tc.cmd, why, tc.unknown)
		}
		if tc.runs == "" {
			continue
		}
		found := false
		for _, c := range cmds {
			if c.Name() == tc.runs {
				found = true
			}
		}
		if !found {
			t.Errorf("Runs(%q) = %+v, missing %s", tc.cmd, cmds, tc.runs)
		}
	}
}

func TestEvaluatesCodeIsOneJudgement(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{`echo $((x))`, `echo ${x@P}`, `printf -v 'a[0]' x`, `[[ a -eq 1 ]]`, `test -v x`, `let x`, `declare x=1`, `read 'a[i]'`, `echo $(ls)`, `for PS4 in x; do :; done`, `a[i]=1`} {
		s := mustParse(t, cmd)
		ev, ok := s.EvaluatesCode()
		if !ok || ev.Reason == "" {
			t.Errorf("EvaluatesCode(%q) = %+v, %v", cmd, ev, ok)
			continue
		}
		if ReadOnly(s, []string{"echo", "printf", "test", "read", ":"}).OK || AcceptsFileCommand(s, false) {
			t.Errorf("%q evaluates code but an analysis accepted it", cmd)
		}
	}
	for _, cmd := range []string{`echo $((1 + 2))`, `echo "$x" ${a[0]} ${#x}`, `test 1 -eq 2`, `[[ -f x ]]`, `printf '%s' x`, `read -r line`} {
		if ev, ok := mustParse(t, cmd).EvaluatesCode(); ok {
			t.Errorf("EvaluatesCode(%q) = %+v, want none", cmd, ev)
		}
	}
}

// TestFollowReadsRunners: the runner table reads each program's own options; an option it
// does not know, an expanded option word, or a runner whose command is not in the text
// makes the command unknown, and the place a runner moves its command to is reported.
func TestFollowReadsRunners(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cmd     string
		runs    string // a command word Follow must reach ("" for none)
		unknown bool
		place   RunPlace // the place of the command reached
	}{
		{`setsid -w rm a`, "rm", false, PlaceHere},
		{`flock -x lk rm a`, "rm", false, PlaceHere},
		{`flock lk -c 'rm a'`, "rm", false, PlaceHere},
		{`chrt -r 5 rm a`, "rm", false, PlaceHere},
		{`taskset -a 3 rm a`, "rm", false, PlaceHere},
		{`ionice -c2 -n7 rm a`, "rm", false, PlaceHere},
		{`su -l bob -c 'rm a'`, "rm", false, PlaceOtherDir},
		{`su - bob -c 'rm a'`, "rm", false, PlaceOtherDir},
		{`sudo -i rm a`, "rm", false, PlaceOtherDir},
		{`chroot /srv rm a`, "rm", false, PlaceElsewhere},
		{`unshare -m rm a`, "rm", false, PlaceElsewhere},
		{`watch -n 2 'rm a; ls'`, "rm", false, PlaceHere},
		{`strace -o '!rm a' ls`, "rm", false, PlaceHere},
		{`gdb --args rm a`, "rm", true, PlaceHere},
		{`ssh host rm a`, "rm", true, PlaceElsewhere},
		{`bwrap --ro-bind / / --chdir /tmp rm a`, "rm", false, PlaceElsewhere},
		{`valgrind --tool=memcheck --leak-check=full rm a`, "rm", false, PlaceHere},
		{`parallel -j2 rm ::: a b`, "", true, PlaceHere},
		{`ionice -p 42`, "", false, PlaceHere},
		{`taskset -p 42`, "", false, PlaceHere},
		{`setsid --bogus rm a`, "", true, PlaceHere},
		{`setsid $opt rm a`, "", true, PlaceHere},
		{`su`, "", true, PlaceHere},
		{`sudo -s`, "", true, PlaceHere},
		{`script out.log`, "", true, PlaceHere},
		{`chroot /srv`, "", true, PlaceHere},
		{`su -s /usr/bin/python3 -c 'x' bob`, "", true, PlaceHere},
		{`systemd-run '$CMD'`, "", true, PlaceHere},
		{`fakeroot --faked ./f ls`, "", true, PlaceHere},
		{`crontab f`, "", true, PlaceHere},
		{`python3 -c 'print(1)'`, "", true, PlaceHere},
		{`python3`, "", true, PlaceHere},
		{`python3 -I -W ignore x.py`, "", false, PlaceHere},
		{`python3 -m pytest -x`, "", false, PlaceHere},
		{`perl -MPOSIX x.pl`, "", true, PlaceHere},
		{`node --inspect x.js`, "", true, PlaceHere},
		{`node --max-old-space-size=4096 x.js`, "", false, PlaceHere},
		{`awk -F: '{ print $1 }' f`, "", false, PlaceHere},
		{`awk '{ print | "sh" }' f`, "", true, PlaceHere},
		{`sed 's/a/b/e' f`, "", true, PlaceHere},
		{`sed 's/a/b/' f`, "", false, PlaceHere},
	} {
		s := mustParse(t, tc.cmd)
		runs, why := s.Segments[0].Follow()
		if (why != "") != tc.unknown {
			t.Errorf("Follow(%q) unknown = %q, want unknown %v", tc.cmd, why, tc.unknown)
		}
		if tc.runs == "" {
			continue
		}
		found := false
		for _, r := range runs[1:] {
			if r.Name() == tc.runs {
				found = true
				if r.Place != tc.place {
					t.Errorf("Follow(%q): %s runs at place %d, want %d", tc.cmd, tc.runs, r.Place, tc.place)
				}
			}
		}
		if !found {
			t.Errorf("Follow(%q) = %+v, missing %s", tc.cmd, runs, tc.runs)
		}
	}
}
