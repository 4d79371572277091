package shellscan

import (
	"strings"
	"sync"
)

// RunPlace says where a command that Follow found runs, compared with the segment it was
// found in.
type RunPlace uint8

const (
	// PlaceHere: the same filesystem and working directory.
	PlaceHere RunPlace = iota
	// PlaceOtherDir: another working directory (su -l, sudo -i, systemd-run): relative
	// paths name other files.
	PlaceOtherDir
	// PlaceElsewhere: another root, mount namespace, sandbox or machine (chroot, unshare,
	// bwrap, ssh): no path names the files the caller sees.
	PlaceElsewhere
)

// commandAt says where a command runner finds the command it runs.
type commandAt uint8

const (
	// atOperands: the operands after the options (after skip of them) are the command
	// and its arguments, run directly.
	atOperands commandAt = iota
	// atJoined: the operands are joined with spaces and the result is run by sh -c.
	atJoined
	// atScriptOption: only the value of a script option, run by a shell, is a command.
	atScriptOption
	// atUser: su's reading, `[-] [USER [SHELL-ARGS…]]`: the command is the value of a
	// script option or `-c TEXT` among the arguments handed to the user's shell.
	atUser
	// atHidden: the program runs commands the text does not show (or runs them where no
	// path can be judged).
	atHidden
)

// runnerSpec describes a program that runs another command taken from its arguments.
// One table of these is the general rule: the options are read with the program's own
// option grammar, and an option the grammar does not know, or an expanded word among
// the options, makes the command unknown (fail closed).
type runnerSpec struct {
	// opts is the option grammar. nil means valueOpts: every word starting with "-" up to
	// the first operand is an option, with a value only ever attached by "=" (valgrind,
	// firejail).
	opts *optSpec
	// find, when set, replaces opts: it returns the index in the arguments where the
	// command starts, or a reason the arguments cannot be read (bwrap's options take
	// one to three words).
	find func(args []Word) (int, string)
	at   commandAt
	// skip is the number of operands before the command (chroot NEWROOT, flock FILE,
	// taskset MASK); skipNumber skips the first operand when it is a number (chrt PRIO).
	skip       int
	skipNumber bool
	// script names options whose value is a script a shell runs (su -c, script -c).
	script []string
	// argv names options that make the operands the command (watch -x, runuser -u).
	argv []string
	// hidden names options that make the program run something the model does not read
	// (fakeroot --faked, dbus-run-session --dbus-daemon, proot -q).
	hidden []string
	// pipe names options whose value, when it starts with "|" or "!", is a command the
	// program hands to a shell (strace -o '|cmd').
	pipe []string
	// none names options under which no command runs (ionice -p, taskset -p, numactl -H).
	none []string
	// shell names the option that chooses the shell a script option's text is given to
	// (su -s): a program that is not a known shell makes the text unreadable.
	shell string
	// bare reports that, with no command written, the program starts a shell that reads
	// commands from standard input.
	bare bool
	// place is where the command runs; places raise it for the options named.
	place  RunPlace
	places map[string]RunPlace
	// why says, for atHidden, what the program does.
	why string
}

// suSpec is the option grammar of su and runuser (util-linux).
var suSpec = spec("flmpPh", "cgGsuwC", "", "command= session-command= fast group= supp-group= login "+
	"preserve-environment pty shell= user= whitelist-environment=").strictOpts().posixOpts()

// runners are the programs whose arguments hold a command they run; the wrappers Unwrap
// reads (sudo, env, timeout, nice, nohup, time, stdbuf, xargs, command, builtin, exec) are
// read there, shells by ShellScript and interpreters by interpreterCode.
var runners = sync.OnceValue(func() map[string]*runnerSpec {
	return map[string]*runnerSpec{
		"su": {opts: suSpec, at: atUser, script: []string{"c", "command", "session-command"}, shell: "s",
			bare: true, places: map[string]RunPlace{"l": PlaceOtherDir, "login": PlaceOtherDir}},
		"runuser": {opts: suSpec, at: atUser, script: []string{"c", "command", "session-command"}, shell: "s",
			argv: []string{"u", "user"}, bare: true, places: map[string]RunPlace{"l": PlaceOtherDir, "login": PlaceOtherDir}},
		"doas": {opts: spec("Lns", "Cua", "", "").strictOpts().posixOpts(), none: []string{"C", "L"},
			hidden: []string{"s"}, bare: true},
		"pkexec": {opts: spec("", "", "", "user= disable-internal-agent keep-cwd").strictOpts().posixOpts(), bare: true},
		"sg":     {opts: spec("", "", "", "").strictOpts().posixOpts(), at: atUser, bare: true},
		"newgrp": {opts: spec("", "", "", "").strictOpts().posixOpts(), at: atHidden, why: "starts a shell that reads commands from standard input"},
		"watch": {opts: spec("bcCeEgprtwx", "nqs", "d", "beep color no-color differences? errexit chgexit "+
			"interval= precise equexit= no-rerun shotsdir= no-title no-wrap exec no-linewrap").strictOpts().posixOpts(),
			at: atJoined, argv: []string{"x", "exec"}},
		"script": {opts: spec("aefqVh", "BcEIOomT", "t", "append command= echo= return flush force log-in= "+
			"log-out= log-io= logging-format= output-limit= quiet log-timing= timing?").strictOpts().posixOpts(),
			at: atScriptOption, script: []string{"c", "command"}, bare: true},
		"chroot": {opts: spec("", "", "", "groups= userspec= skip-chdir").strictOpts().posixOpts(), skip: 1, bare: true,
			place: PlaceElsewhere},
		"setsid": {opts: spec("cfw", "", "", "ctty fork wait").strictOpts().posixOpts()},
		"flock": {opts: spec("sexnoFu", "wE", "", "shared exclusive unlock nonblock nb timeout= wait= close "+
			"conflict-exit-code= no-fork verbose").strictOpts().posixOpts(), skip: 1},
		"nsenter": {opts: spec("aFZWekcG", "tSG", "muinpCUTrw", "all target= mount? uts? ipc? net? pid? cgroup? "+
			"user? time? setuid= setgid= preserve-credentials root? wd? wdns= no-fork follow-context env "+
			"join-cgroup keep-caps user-parent net-socket=").strictOpts().posixOpts(), bare: true, place: PlaceElsewhere},
		"unshare": {opts: spec("fhVrck", "RwSGl", "muinpCUT", "mount? uts? ipc? net? pid? user? cgroup? time? "+
			"fork kill-child? mount-proc? mount-binfmt? map-root-user map-current-user map-user= map-group= "+
			"map-users= map-groups= map-auto propagation= setgroups= root= wd= setuid= setgid= monotonic= "+
			"boottime= load-interp= keep-caps owner=").strictOpts().posixOpts(), bare: true, place: PlaceElsewhere},
		"ionice": {opts: spec("t", "cnpPu", "", "class= classdata= pid= pgid= ignore uid=").strictOpts().posixOpts(),
			none: []string{"p", "P", "u", "pid", "pgid", "uid"}},
		"chrt": {opts: spec("abdefiormRvp", "TPD", "", "all-tasks batch deadline ext fifo idle other rr "+
			"reset-on-fork sched-runtime= sched-period= sched-deadline= max pid verbose").strictOpts().posixOpts(),
			skipNumber: true, none: []string{"p", "pid", "m", "max"}},
		"taskset": {opts: spec("acp", "", "", "all-tasks cpu-list pid").strictOpts().posixOpts(), skip: 1,
			none: []string{"p", "pid"}},
		"numactl": {opts: spec("alsHbtcS", "ipPwCNmLof", "", "all interleave= preferred= preferred-many= "+
			"weighted-interleave= physcpubind= cpunodebind= membind= localalloc show hardware touch strict "+
			"huge offset= length= shm= shmid= shmmode= file= balancing cpu-compress verify dump dump-nodes").strictOpts().posixOpts(),
			none: []string{"s", "show", "H", "hardware"}},
		"systemd-run": {opts: spec("rGqdtPSh", "upEHM", "", "user system scope unit= property= description= slice= "+
			"slice-inherit remain-after-exit send-sighup service-type= uid= gid= nice= working-directory= same-dir "+
			"setenv= pty pipe shell quiet on-active= on-boot= on-startup= on-unit-active= on-unit-inactive= "+
			"on-calendar= on-clock-change on-timezone-change path-property= socket-property= timer-property= "+
			"no-block wait collect no-ask-password host= machine= ignore-failure background= "+
			"expand-environment= job-mode= json= verbose").strictOpts().posixOpts(),
			hidden: []string{"S", "shell", "H", "host", "M", "machine"}, place: PlaceOtherDir},
		"strace": {opts: spec("AcCdDfFhiknqrStTvVwxyYzZ", "abeEIoOpPsSuUX", "", "output= trace= signal= "+
			"follow-forks output-separately summary-only summary attach= user= env= string-limit= timestamps? "+
			"relative-timestamps? syscall-times? decode-fds? absolute-timestamps? seccomp-bpf trace-path= "+
			"quiet? status= successful-only failed-only daemonize? no-abbrev verbose= raw= read= write= "+
			"columns= instruction-pointer stack-traces kill-on-exit summary-columns= summary-sort-by= "+
			"summary-syscall-overhead= always-show-pid decode-pids= tips? argv0= inject= fault= silent= "+
			"const-print-style= strings-in-hex? debug").strictOpts().posixOpts(), pipe: []string{"o", "output"}},
		"ltrace": {opts: spec("bcCfhiLrStTV", "aADeFlnopsuwx", "", "align= demangle debug= library= "+
			"output= no-signals indent= help version").strictOpts().posixOpts()},
		"valgrind": {hidden: []string{"db-command", "vgdb-prefix", "log-socket"}},
		"firejail": {bare: true, place: PlaceElsewhere},
		"bwrap":    {find: bwrapCommand, place: PlaceElsewhere},
		"proot": {opts: spec("0h", "rbmqwkivRS", "", "rootfs= bind= mount= qemu= pwd= cwd= kernel-release= "+
			"root-id change-id= verbose= link2symlink kill-on-exit").strictOpts().posixOpts(),
			hidden: []string{"q", "qemu"}, bare: true, place: PlaceElsewhere},
		"fakeroot": {opts: spec("uvh", "lfisb", "", "lib= faked= unknown-is-real fd-base=").strictOpts().posixOpts(),
			hidden: []string{"l", "lib", "f", "faked"}, bare: true},
		"dbus-run-session": {opts: spec("", "", "", "config-file= dbus-daemon=").strictOpts().posixOpts(),
			hidden: []string{"dbus-daemon"}},
		"caffeinate": {opts: spec("disum", "tw", "", "").strictOpts().posixOpts()},
		"setpriv": {opts: spec("d", "", "", "dump no-new-privs reuid= regid= clear-groups keep-groups init-groups "+
			"groups= inh-caps= ambient-caps= bounding-set= securebits= pdeathsig= selinux-label= "+
			"apparmor-profile= landlock-access= landlock-rule= reset-env ptracer=").strictOpts().posixOpts(),
			none: []string{"d", "dump"}},
		"prlimit":   {opts: spec("o", "p", "", "pid= output= noheadings raw verbose core? data? nofile? as? stack? cpu? nproc? fsize? locks? memlock? msgqueue? nice? rss? rtprio? rttime? sigpending?").strictOpts().posixOpts(), none: []string{"p", "pid"}},
		"runcon":    {opts: spec("c", "turl", "", "compute type= user= role= range=").strictOpts().posixOpts()},
		"eatmydata": {opts: spec("", "", "", "").strictOpts().posixOpts()},
		"xvfb-run": {opts: spec("aes", "fnpw", "", "auto-servernum error-file= auth-file= server-num= "+
			"xauth-protocol= server-args= wait=").strictOpts().posixOpts()},
		"ssh-agent": {opts: spec("acDdk", "aEPt", "", "").strictOpts().posixOpts()},
		"gdb":       {at: atHidden, why: "runs the commands of its own command language, which can start programs and shells"},
		"ssh": {opts: spec("46AaCfGgKkMNnqsTtVvXxYy", "BbcDEeFIiJLlmOoPpQRSWw", "", "").strictOpts().posixOpts(),
			at: atHidden, why: "runs a command on another machine, and its options can run local commands"},
		"tmux":    {at: atHidden, why: "runs shell commands inside sessions and panes the text does not show"},
		"screen":  {at: atHidden, why: "runs shell commands inside sessions the text does not show"},
		"at":      {at: atHidden, why: "schedules commands it reads from standard input or a file"},
		"batch":   {at: atHidden, why: "schedules commands it reads from standard input or a file"},
		"crontab": {at: atHidden, why: "installs a table of commands the text does not show"},
		"pwsh":    {at: atHidden, why: "runs PowerShell commands"},
	}
})

// valueOpts reads options that are all written `--name` or `--name=value` (and single
// dashes alike): the command starts at the first word that is not an option.
func valueOpts(args []Word) (int, string) {
	for i, w := range args {
		if !w.Static {
			return 0, "an option word `" + w.Raw + "` is expanded"
		}
		if w.Lit == "--" {
			return i + 1, ""
		}
		if len(w.Lit) < 2 || w.Lit[0] != '-' {
			return i, ""
		}
	}
	return len(args), ""
}

// bwrapArity is how many words follow each bwrap option.
var bwrapArity = sync.OnceValue(func() map[string]int {
	return map[string]int{
		"--unshare-all": 0, "--share-net": 0, "--unshare-user": 0, "--unshare-user-try": 0,
		"--unshare-ipc": 0, "--unshare-pid": 0, "--unshare-net": 0, "--unshare-uts": 0,
		"--unshare-cgroup": 0, "--unshare-cgroup-try": 0, "--die-with-parent": 0, "--as-pid-1": 0,
		"--new-session": 0, "--clearenv": 0, "--disable-userns": 0, "--assert-userns-disabled": 0,
		"--help": 0, "--version": 0, "--level-prefix": 0,
		"--userns": 1, "--userns2": 1, "--pidns": 1, "--uid": 1, "--gid": 1, "--hostname": 1,
		"--chdir": 1, "--unsetenv": 1, "--lock-file": 1, "--sync-fd": 1, "--remount-ro": 1,
		"--exec-label": 1, "--file-label": 1, "--proc": 1, "--dev": 1, "--tmpfs": 1, "--mqueue": 1,
		"--dir": 1, "--seccomp": 1, "--add-seccomp-fd": 1, "--block-fd": 1, "--userns-block-fd": 1,
		"--info-fd": 1, "--json-status-fd": 1, "--cap-add": 1, "--cap-drop": 1, "--perms": 1,
		"--size": 1, "--overlay-src": 1, "--tmp-overlay": 1, "--ro-overlay": 1,
		"--setenv": 2, "--bind": 2, "--bind-try": 2, "--dev-bind": 2, "--dev-bind-try": 2,
		"--ro-bind": 2, "--ro-bind-try": 2, "--file": 2, "--bind-data": 2, "--ro-bind-data": 2,
		"--symlink": 2, "--chmod": 2, "--overlay": 3,
	}
})

// bwrapCommand finds where bwrap's command starts. --args reads further arguments from a
// file descriptor, which the text does not show.
func bwrapCommand(args []Word) (int, string) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Static {
			return 0, "an option word `" + w.Raw + "` is expanded"
		}
		if w.Lit == "--" {
			return i + 1, ""
		}
		if !strings.HasPrefix(w.Lit, "-") {
			return i, ""
		}
		n, ok := bwrapArity()[w.Lit]
		if !ok {
			return 0, "the option `" + w.Lit + "` is not modeled"
		}
		i += n
	}
	return len(args), ""
}

// runner follows the command a runnerSpec program runs. k is the index of the segment's
// own Run, marked Opaque when its words cannot be read.
func (r *runReader) runner(s Segment, name string, rs *runnerSpec, depth, k int, at runAt) {
	args := s.Words[1:]
	opaque := func(why string) {
		r.runs[k].Opaque = true
		r.hide("`" + name + "` " + why)
	}
	p, start, why := runnerOptions(args, rs)
	if why != "" {
		opaque(why)
		return
	}
	if len(rs.hidden) > 0 && p.has(rs.hidden...) {
		opaque("is given an option that runs a program the text does not show")
		return
	}
	if len(rs.none) > 0 && p.has(rs.none...) {
		return
	}
	next := at
	next.script = nil
	next.place = max(next.place, rs.place)
	for opt, pl := range rs.places {
		if p.has(opt) {
			next.place = max(next.place, pl)
		}
	}
	for _, v := range p.values(rs.pipe...) {
		if !v.Static {
			opaque("is given the expanded value `" + v.Raw + "`, which can name a command")
			return
		}
		if strings.HasPrefix(v.Lit, "|") || strings.HasPrefix(v.Lit, "!") {
			r.script(v.Lit[1:], depth, at)
		}
	}
	operands := args[start:]
	if rs.at == atHidden {
		opaque(rs.why)
		r.hiddenAlso(s, name, operands, depth, next)
		return
	}
	// A script option: its value is the command.
	if vals := p.values(rs.script...); len(vals) > 0 {
		r.runnerScript(vals, p, rs, operands, depth, next, opaque)
		return
	}
	if rs.at == atScriptOption {
		if rs.bare {
			opaque("starts a shell that reads commands from standard input")
		}
		return
	}
	if rs.at == atUser && !(len(rs.argv) > 0 && p.has(rs.argv...)) {
		r.userShell(s, name, rs, operands, depth, k, next)
		return
	}
	r.runnerOperands(s, name, rs, p, operands, depth, next, opaque)
}

// runnerOptions reads a runner's options as its spec says and returns them with the
// index of its first operand; why, when set, says why the command it runs is not known.
func runnerOptions(args []Word, rs *runnerSpec) (p parsedArgs, start int, why string) {
	switch {
	case rs.find != nil:
		i, why := rs.find(args)
		if why != "" {
			return p, 0, why + ", so the command it runs is not known"
		}
		return p, i, ""
	case rs.opts != nil:
		p = parseOpts(args, rs.opts)
		if len(p.unknown) > 0 || len(p.risky) > 0 {
			return p, 0, "has options the model does not read, so the command it runs is not known"
		}
		return p, p.rest, ""
	}
	i, why := valueOpts(args)
	if why != "" {
		return p, 0, why + ", so the command it runs is not known"
	}
	for _, w := range args[:i] {
		opt, _, _ := strings.Cut(strings.TrimLeft(w.Lit, "-"), "=")
		p.opts = append(p.opts, option{name: opt})
	}
	return p, i, ""
}

// runnerScript follows the scripts a runner's script option gives (vals), run by the
// shell its shell option names when it has one.
func (r *runReader) runnerScript(vals []Word, p parsedArgs, rs *runnerSpec, operands []Word, depth int, next runAt, opaque func(string)) {
	if rs.shell != "" {
		for _, sh := range p.values(rs.shell) {
			if !sh.Static || !shellPrograms[wrapperName(sh)] {
				opaque("gives its script to `" + sh.Raw + "`, which is not a shell the model reads")
				return
			}
		}
	}
	for _, v := range vals {
		if !v.Static {
			opaque("runs the expanded script `" + v.Raw + "`")
			return
		}
		r.script(v.Lit, depth, next)
	}
	if rs.at == atUser {
		// Arguments after the user still reach the shell; only a user may follow.
		users := operands
		if len(users) > 0 && users[0].Static && users[0].Lit == "-" {
			users = users[1:]
		}
		if len(users) > 1 {
			opaque("hands further arguments to the user's shell")
		}
	}
}

// runnerOperands follows the command a runner finds among its operands.
func (r *runReader) runnerOperands(s Segment, name string, rs *runnerSpec, p parsedArgs, operands []Word, depth int, next runAt, opaque func(string)) {
	if rs.skipNumber && len(operands) > 0 && operands[0].Static && isNumber(operands[0].Lit) {
		operands = operands[1:]
	}
	if len(operands) <= rs.skip {
		if rs.bare {
			opaque("starts a shell that reads commands from standard input")
		}
		return
	}
	operands = operands[rs.skip:]
	if name == "flock" && operands[0].Static && (operands[0].Lit == "-c" || operands[0].Lit == "--command") {
		if len(operands) != 2 || !operands[1].Static {
			opaque("runs a script that cannot be read")
			return
		}
		r.script(operands[1].Lit, depth, next)
		return
	}
	if name == "systemd-run" {
		// systemd-run expands $VAR and ${VAR} in the command line itself.
		for _, w := range operands {
			if strings.Contains(w.Lit, "$") {
				opaque("expands `" + w.Raw + "` itself, so the command it runs is not known")
				return
			}
		}
	}
	if rs.at == atJoined && !(len(rs.argv) > 0 && p.has(rs.argv...)) {
		parts := make([]string, 0, len(operands))
		for _, w := range operands {
			if !w.Static {
				opaque("joins the expanded word `" + w.Raw + "` into the script it runs")
				return
			}
			parts = append(parts, w.Lit)
		}
		r.script(strings.Join(parts, " "), depth, next)
		return
	}
	inner := s
	inner.Words = operands
	r.segment(inner, depth+1, next)
}

// userShell reads su's operands: `[-] [USER [ARGS…]]`, where ARGS go to the user's shell.
func (r *runReader) userShell(s Segment, name string, rs *runnerSpec, operands []Word, depth, k int, at runAt) {
	opaque := func(why string) {
		r.runs[k].Opaque = true
		r.hide("`" + name + "` " + why)
	}
	if len(operands) > 0 && operands[0].Static && operands[0].Lit == "-" {
		operands = operands[1:]
		at.place = max(at.place, PlaceOtherDir)
	}
	if len(operands) > 0 {
		operands = operands[1:] // the user (sg: the group)
	}
	if len(operands) > 0 && operands[0].Static && operands[0].Lit == "--" {
		operands = operands[1:] // su reads it as the end of its own options
	}
	if len(operands) == 0 {
		opaque("starts a shell that reads commands from standard input")
		return
	}
	if name == "sg" {
		// sg GROUP [-c] COMMAND: the command is handed to /bin/sh -c.
		if operands[0].Static && operands[0].Lit == "-c" {
			operands = operands[1:]
		}
		if len(operands) != 1 || !operands[0].Static {
			opaque("runs a command that cannot be read")
			return
		}
		r.script(operands[0].Lit, depth, at)
		return
	}
	if len(operands) == 2 && operands[0].Static && operands[0].Lit == "-c" && operands[1].Static {
		r.script(operands[1].Lit, depth, at)
		return
	}
	opaque("hands arguments to the user's shell that the model does not read")
}

// hiddenAlso adds, for a program whose commands are hidden, the command its arguments
// still show, so that a deny rule names it outright: gdb's --args program and the
// command ssh sends to the other machine.
func (r *runReader) hiddenAlso(s Segment, name string, operands []Word, depth int, at runAt) {
	switch name {
	case "gdb":
		for i, w := range s.Words {
			if w.Static && (w.Lit == "--args" || w.Lit == "-args") && i+1 < len(s.Words) {
				inner := s
				inner.Words = s.Words[i+1:]
				r.segment(inner, depth+1, at)
				return
			}
		}
	case "ssh":
		if len(operands) < 2 {
			return
		}
		parts := make([]string, 0, len(operands)-1)
		for _, w := range operands[1:] {
			if !w.Static {
				return
			}
			parts = append(parts, w.Lit)
		}
		at.place = PlaceElsewhere
		r.script(strings.Join(parts, " "), depth, at)
	}
}

// parallel reads GNU parallel (`parallel [OPTIONS] [COMMAND] ::: ARGS…`) and moreutils
// parallel (`parallel [OPTIONS] [COMMAND] -- ARGS…`): the command, run by a shell with the
// arguments put in, or, when no command is written, each argument run as a command. Any
// option is unknown to the model: GNU parallel has hundreds, several of which run commands.
func (r *runReader) parallel(s Segment, depth, k int, at runAt) {
	opaque := func(why string) {
		r.runs[k].Opaque = true
		r.hide("`parallel` " + why)
	}
	args := s.Words[1:]
	sep := len(args)
	for i, w := range args {
		if !w.Static {
			opaque("is given the expanded word `" + w.Raw + "`, so the commands it runs are not known")
			return
		}
		if w.Lit == ":::" || w.Lit == "::::" || w.Lit == ":::+" || w.Lit == "::::+" || w.Lit == "--" {
			sep = i
			break
		}
	}
	command := args[:sep]
	if len(command) > 0 && strings.HasPrefix(command[0].Lit, "-") {
		opaque("has options the model does not read, so the commands it runs are not known")
		return
	}
	at.script = nil
	if len(command) > 0 {
		parts := make([]string, 0, len(command))
		for _, w := range command {
			parts = append(parts, w.Lit)
		}
		r.script(strings.Join(parts, " "), depth, at)
		// The arguments are put into the command at run time.
		for i := k + 1; i < len(r.runs); i++ {
			r.runs[i].Appended = true
		}
		return
	}
	if sep == len(args) {
		opaque("runs commands it reads from standard input")
		return
	}
	for _, w := range args[sep+1:] {
		switch w.Lit {
		case ":::", ":::+":
			continue
		case "::::", "::::+":
			opaque("runs commands it reads from a file")
			return
		}
		r.script(w.Lit, depth, at)
	}
}
