package gate

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/permission"
)

// TestRestrictiveRulesSeeThroughRunners: programs that run another command taken from
// their arguments — su -c, runuser, watch, script -c, chroot, setsid, flock, nsenter,
// unshare, ionice, chrt, taskset, strace, valgrind, gdb, fakeroot, dbus-run-session,
// sg, setpriv, prlimit, and the interpreters — never carry touch past a deny rule on it:
// the rule names touch behind them ("deny"), or, where the command that will run cannot
// be known, the answer is a person's ("ask!"). An ask rule asks; dontAsk refuses. Each
// spelling really runs touch under plain bash (calibration) where its program is
// installed and works as the current user.
func TestRestrictiveRulesSeeThroughRunners(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	deny := l.gate(permission.ModeBypassPermissions, mustRules(t, []string{"Bash"}, []string{"Bash(touch *)"}, nil))
	ask := l.gate(permission.ModeDefault, mustRules(t, []string{"Bash"}, nil, []string{"Bash(touch *)"}))
	dontAsk := l.gate(permission.ModeDontAsk, mustRules(t, []string{"Bash"}, []string{"Bash(touch *)"}, nil))
	// {M} is replaced by the marker's path, {D} by the case's directory. prog is the
	// program calibration needs; probe, when set, is a harmless command that must succeed
	// for prog to work here at all.
	cases := []struct {
		cmd, want, prog, probe string
	}{
		{cmd: `su -c 'touch {M}'`, want: "deny", prog: "su"},
		{cmd: `su - root -c 'touch {M}'`, want: "deny", prog: "su"},
		{cmd: `su root -c 'touch {M}'`, want: "deny", prog: "su"},
		{cmd: `su -s /bin/bash -c 'touch {M}' root`, want: "deny", prog: "su"},
		{cmd: `su root -- -c 'touch {M}'`, want: "deny", prog: "su"},
		{cmd: `echo 'touch {M}' | su`, want: "ask!", prog: "su"},
		{cmd: `runuser -u root -- touch {M}`, want: "deny", prog: "runuser"},
		{cmd: `runuser -c 'touch {M}'`, want: "deny", prog: "runuser"},
		{cmd: `runuser -l root -c 'touch {M}'`, want: "deny", prog: "runuser"},
		{cmd: `sg root -c 'touch {M}'`, want: "deny", prog: "sg"},
		{cmd: `sg root 'touch {M}'`, want: "deny", prog: "sg"},
		{cmd: `echo 'touch {M}' | sudo -s`, want: "ask!", prog: "sudo", probe: "sudo -n true"},
		{cmd: `sudo -i touch {M}`, want: "deny", prog: "sudo", probe: "sudo -n true"},
		{cmd: `doas touch {M}`, want: "deny", prog: "doas", probe: "doas -n true"},
		{cmd: `TERM=dumb timeout 3 watch -n 1 touch {M}`, want: "deny", prog: "watch"},
		{cmd: `TERM=dumb timeout 3 watch -x touch {M}`, want: "deny", prog: "watch"},
		{cmd: `TERM=dumb timeout 3 watch -n 1 'touch {M}; true'`, want: "deny", prog: "watch"},
		{cmd: `script -qc 'touch {M}' /dev/null`, want: "deny", prog: "script"},
		{cmd: `script -q --command='touch {M}' /dev/null`, want: "deny", prog: "script"},
		{cmd: `chroot / touch {M}`, want: "deny", prog: "chroot"},
		{cmd: `chroot --skip-chdir / bash -c 'touch {M}'`, want: "deny", prog: "chroot"},
		{cmd: `setsid touch {M}`, want: "deny", prog: "setsid"},
		{cmd: `setsid -w touch {M}`, want: "deny", prog: "setsid"},
		{cmd: `flock {D}/lock touch {M}`, want: "deny", prog: "flock"},
		{cmd: `flock -n {D}/lock -c 'touch {M}'`, want: "deny", prog: "flock"},
		{cmd: `nsenter touch {M}`, want: "deny", prog: "nsenter"},
		{cmd: `unshare touch {M}`, want: "deny", prog: "unshare"},
		{cmd: `unshare -f touch {M}`, want: "deny", prog: "unshare"},
		{cmd: `ionice -c 3 touch {M}`, want: "deny", prog: "ionice"},
		{cmd: `chrt -o 0 touch {M}`, want: "deny", prog: "chrt"},
		{cmd: `chrt -b 0 touch {M}`, want: "deny", prog: "chrt"},
		{cmd: `taskset 1 touch {M}`, want: "deny", prog: "taskset"},
		{cmd: `taskset -c 0 touch {M}`, want: "deny", prog: "taskset"},
		{cmd: `numactl --localalloc touch {M}`, want: "deny", prog: "numactl"},
		{cmd: `systemd-run --wait -q touch {M}`, want: "deny", prog: "systemd-run", probe: "systemd-run --wait -q true"},
		{cmd: `strace -f -o /dev/null touch {M}`, want: "deny", prog: "strace"},
		{cmd: `strace -o '|touch {M}' true`, want: "deny", prog: "strace"},
		{cmd: `ltrace -o /dev/null touch {M}`, want: "deny", prog: "ltrace"},
		{cmd: `valgrind -q touch {M}`, want: "deny", prog: "valgrind"},
		{cmd: `gdb -batch -ex run --args touch {M}`, want: "deny", prog: "gdb"},
		{cmd: `gdb -batch -ex 'shell touch {M}'`, want: "ask!", prog: "gdb"},
		{cmd: `ssh -o ProxyCommand='touch {M}' -o BatchMode=yes host true`, want: "ask!", prog: "ssh"},
		{cmd: `dbus-run-session -- touch {M}`, want: "deny", prog: "dbus-run-session"},
		{cmd: `fakeroot touch {M}`, want: "deny", prog: "fakeroot"},
		{cmd: `fakeroot -- bash -c 'touch {M}'`, want: "deny", prog: "fakeroot"},
		{cmd: `firejail --quiet touch {M}`, want: "deny", prog: "firejail"},
		{cmd: `bwrap --bind / / --dev /dev touch {M}`, want: "deny", prog: "bwrap"},
		{cmd: `proot touch {M}`, want: "deny", prog: "proot"},
		{cmd: `caffeinate -i touch {M}`, want: "deny", prog: "caffeinate"},
		{cmd: `setpriv --reuid=0 touch {M}`, want: "deny", prog: "setpriv"},
		{cmd: `prlimit --nofile=100 touch {M}`, want: "deny", prog: "prlimit"},
		{cmd: `stdbuf -oL nice -n 2 setsid touch {M}`, want: "deny", prog: "setsid"},
		{cmd: `nohup setsid flock {D}/lock ionice -c 3 touch {M}`, want: "deny", prog: "flock"},
		{cmd: `parallel touch ::: {M}`, want: "deny", prog: "parallel"},
		{cmd: `parallel ::: 'touch {M}'`, want: "deny", prog: "parallel"},
		{cmd: `tmux -S {D}/sock new-session -d 'touch {M}'; sleep 1; tmux -S {D}/sock kill-server`, want: "ask!", prog: "tmux"},
		{cmd: `echo 'touch {M}' | at now`, want: "ask!", prog: "at"},
		{cmd: `python3 -c 'import os; os.system("touch {M}")'`, want: "ask!", prog: "python3"},
		{cmd: `echo 'import os; os.system("touch {M}")' | python3`, want: "ask!", prog: "python3"},
		{cmd: `python3 -m timeit -n 1 -s 'import os' 'os.system("touch {M}")'`, want: "ask!", prog: "python3"},
		{cmd: `perl -e 'system("touch {M}")'`, want: "ask!", prog: "perl"},
		{cmd: `perl -le 'system("touch {M}")'`, want: "ask!", prog: "perl"},
		{cmd: `node -e 'require("child_process").execSync("touch {M}")'`, want: "ask!", prog: "node"},
		{cmd: `ruby -e 'system("touch {M}")'`, want: "ask!", prog: "ruby"},
		{cmd: `expect -c 'exec touch {M}'`, want: "ask!", prog: "expect"},
		{cmd: `awk 'BEGIN { system("touch {M}") }'`, want: "ask!", prog: "awk"},
		{cmd: `echo x | awk '{ print "{M}" | "xargs touch" }'`, want: "ask!", prog: "awk"},
		{cmd: `echo x | sed '1e touch {M}'`, want: "ask!", prog: "sed"},
		{cmd: `setsid $(echo touch) {M}`, want: "ask!", prog: "setsid"},
		{cmd: `c='touch {M}'; su -c "$c"`, want: "ask!", prog: "su"},
	}
	if len(cases) < 20 {
		t.Fatalf("only %d spellings", len(cases))
	}
	for i, tc := range cases {
		t.Run(fmt.Sprintf("%02d-%s", i, tc.prog), func(t *testing.T) {
			dir := t.TempDir()
			marker := filepath.Join(dir, "marker")
			cmd := strings.ReplaceAll(strings.ReplaceAll(tc.cmd, "{M}", marker), "{D}", dir)
			d := l.decideBash(deny, cmd)
			if got := verdict(d); got != tc.want {
				t.Errorf("deny Bash(touch *): %q = %s (%s), want %s", cmd, got, d.Reason, tc.want)
			}
			if d := l.decideBash(ask, cmd); d.Behavior != permission.Ask {
				t.Errorf("ask Bash(touch *): %q = %+v, want a question", cmd, d)
			}
			call := l.bashCall(cmd, false)
			d = dontAsk.Decide(context.Background(), call)
			if d.Behavior == permission.Ask {
				d = dontAsk.Answer(context.Background(), call, d, nil, nil, nil)
			}
			if d.Behavior != permission.Deny {
				t.Errorf("dontAsk with deny Bash(touch *): %q = %+v, want deny", cmd, d)
			}
			// Calibration: the spelling really runs touch.
			if _, err := exec.LookPath(tc.prog); err != nil {
				t.Skipf("%s is not installed, so %q cannot be calibrated", tc.prog, cmd)
			}
			if tc.probe != "" && !calibrate(t, dir, tc.probe+" && touch "+marker, marker) {
				t.Skipf("%s does not work here (%q fails), so %q cannot be calibrated", tc.prog, tc.probe, cmd)
			}
			_ = exec.Command("rm", "-f", marker).Run()
			if !calibrate(t, dir, cmd, marker) {
				t.Errorf("calibration: %q did not run touch under bash; the case proves nothing", cmd)
			}
		})
	}
	// Commands whose programs are all known and not touch still run, and so does a
	// program file given to an interpreter (outside the model, like a Makefile).
	for _, cmd := range []string{"setsid ls", "flock lock ls", "chrt -o 0 ls", "taskset -c 0 ls", "ionice -c 3 ls",
		"su -c 'ls'", "watch -n 1 ls", "script -qc 'ls' /dev/null", "python3 x.py", "perl x.pl", "node build.js",
		"awk '{ print $1 }' f", "sed -n 1p f", "python3 --version", "strace -o /dev/null ls"} {
		if d := l.decideBash(deny, cmd); d.Behavior != permission.Allow {
			t.Errorf("%q = %+v, want allowed", cmd, d)
		}
	}
}

// TestDeleteGuardSeesThroughRunners: a removal behind a runner is judged by the delete
// guard: the task root removed through setsid, flock or su -c is a person's question, and
// so is a removal behind a runner that runs it in another root, or whose arguments cannot
// be read. Nothing here is run.
func TestDeleteGuardSeesThroughRunners(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	g := l.gate(permission.ModeBypassPermissions, permission.RuleSet{})
	for _, tmpl := range []string{
		`setsid rm -rf R`,
		`flock R/.lock rm -rf R`,
		`su -c 'rm -rf R'`,
		`nice ionice -c 3 taskset 1 rm -rf R`,
		`find R -maxdepth 0 -exec rm -rf {} +`,
		`env -S 'rm -rf R'`,
		`trap 'rm -rf R' EXIT`,
		`chroot /srv rm -rf /x`,
		`unshare --bogus-option rm -rf x`,
		`env -C /tmp sh -c 'rm -rf x'`,
		`watch -n 60 rm -rf R`,
		`sudo -i rm -rf x`,
	} {
		cmd := strings.ReplaceAll(tmpl, "R", l.root)
		if d := l.decideBash(g, cmd); verdict(d) != "ask!" {
			t.Errorf("%q = %s (%s), want a person's question", cmd, verdict(d), d.Reason)
		}
	}
	for _, cmd := range []string{`setsid rm -rf build`, `flock .lock rm -f out.txt`} {
		if d := l.decideBash(g, cmd); d.Behavior != permission.Allow {
			t.Errorf("%q = %+v, want allowed", cmd, d)
		}
	}
}
