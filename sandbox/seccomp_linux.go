//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// installSyscallFilter denies the system calls no confined command may make, with a
// seccomp filter on the helper's thread (inherited by the command across fork and exec,
// and never lifted):
//
//   - ioctl TIOCSTI and TIOCLINUX: pushing input into a terminal, the way out of any
//     sandbox whose command can reach a terminal a person types into. The request is
//     compared on its low 32 bits, as the kernel reads it.
//   - chmod, fchmod, fchmodat, fchmodat2 setting S_ISUID, and open, openat, creat, mknod,
//     mknodat creating a file with it: a set-user-ID file planted in a write root runs
//     with its owner's identity later, outside the sandbox — root's, when sema runs as
//     root. (S_ISGID stays allowed: a directory keeps it across every chmod in a
//     group-shared tree, and a set-group-ID file grants a group, not an owner.)
//   - openat2 and io_uring_setup answer ENOSYS, as on a kernel without them: the mode of
//     an openat2 sits in memory a filter cannot read, and io_uring opens files without
//     system calls at all. Programs fall back to openat and read/write.
//
// Another architecture's system calls (i386 on x86-64, which has its own numbers) end
// the process; x32 calls answer ENOSYS. On an architecture the filter does not know, the
// helper refuses to run the command.
func installSyscallFilter() error {
	if auditArch == 0 {
		return fmt.Errorf("the syscall filter is written for x86-64 and arm64, not %s: commands cannot be confined on this architecture", runtime.GOARCH)
	}
	prog, err := syscallFilter()
	if err != nil {
		return err
	}
	// A filter may be installed without CAP_SYS_ADMIN only with no_new_privs (Landlock's
	// enforce sets it again; it cannot be unset).
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	// SPEC_ALLOW: a filter would otherwise switch on the speculative-store-bypass
	// mitigation for the command and all it starts, slowing every build for a threat
	// (other processes reading its memory by side channel) this filter is not about.
	flags := uintptr(unix.SECCOMP_FILTER_FLAG_SPEC_ALLOW)
	for {
		_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
		if errno == unix.EINVAL && flags != 0 {
			flags = 0 // a kernel before 4.17
			continue
		}
		runtime.KeepAlive(prog)
		if errno != 0 {
			return fmt.Errorf("installing the syscall filter: %w", errno)
		}
		return nil
	}
}

// Offsets in struct seccomp_data: nr, arch, instruction_pointer, args[6]. An argument's
// low 32 bits come first (both architectures are little-endian).
const (
	offNr   = 0
	offArch = 4
)

func offArg(i int) uint32 { return 16 + 8*uint32(i) }

const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retEPERM  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	retKill   = unix.SECCOMP_RET_KILL_PROCESS

	// createFlags: the open flags that create a file, and so read the mode.
	createFlags = unix.O_CREAT | (unix.O_TMPFILE &^ unix.O_DIRECTORY)
)

// A rule says what to check for one system call.
type rule struct {
	nr int
	// ioctlArg is the index of the request of an ioctl (TIOCSTI and TIOCLINUX refused);
	// -1 when the call is not one.
	ioctlArg int
	// modeArg is the index of a mode that must not hold S_ISUID, -1 for none.
	modeArg int
	// flagsArg, when not -1, is the index of open flags: the mode is checked only when
	// they create a file (the mode is garbage otherwise).
	flagsArg int
	// ret, when not 0, is the answer to every such call.
	ret uint32
}

func ioctlRule(nr int) rule { return rule{nr: nr, ioctlArg: 1, modeArg: -1, flagsArg: -1} }
func modeRule(nr, mode int) rule {
	return rule{nr: nr, ioctlArg: -1, modeArg: mode, flagsArg: -1}
}
func createRule(nr, flags, mode int) rule {
	return rule{nr: nr, ioctlArg: -1, modeArg: mode, flagsArg: flags}
}
func refuseRule(nr int, ret uint32) rule {
	return rule{nr: nr, ioctlArg: -1, modeArg: -1, flagsArg: -1, ret: ret}
}

// rules are the checks on this architecture: the calls every Linux has (below) and the
// older ones an architecture keeps (legacyRules).
func rules() []rule {
	return append([]rule{
		ioctlRule(unix.SYS_IOCTL),
		modeRule(unix.SYS_FCHMOD, 1),
		modeRule(unix.SYS_FCHMODAT, 2),
		modeRule(sysFchmodat2, 2),
		createRule(unix.SYS_OPENAT, 2, 3),
		modeRule(unix.SYS_MKNODAT, 2),
		refuseRule(unix.SYS_OPENAT2, retENOSYS),
		refuseRule(unix.SYS_IO_URING_SETUP, retENOSYS),
	}, legacyRules...)
}

// sysFchmodat2 is fchmodat2 (Linux 6.6), numbered alike on both architectures; an older
// kernel answers ENOSYS and the filter's check costs nothing.
const sysFchmodat2 = 452

// syscallFilter assembles the filter: the architecture check, then per system call a
// jump to its checks; every call the rules do not name is allowed after two comparisons
// per rule, which the kernel caches per system call number.
func syscallFilter() ([]unix.SockFilter, error) {
	var a asm
	a.load(offArch)
	a.jeq(auditArch, "", "foreign")
	a.load(offNr)
	if x32Bit != 0 {
		a.jge(x32Bit, "x32", "")
	}
	rs := rules()
	for i, r := range rs {
		a.jeq(uint32(r.nr), fmt.Sprint("rule", i), "")
	}
	a.ret(retAllow)
	for i, r := range rs {
		a.label(fmt.Sprint("rule", i))
		switch {
		case r.ret != 0:
			a.ret(r.ret)
		case r.ioctlArg >= 0:
			a.load(offArg(r.ioctlArg))
			a.jeq(unix.TIOCSTI, "deny", "")
			a.jeq(unix.TIOCLINUX, "deny", "allow")
		default:
			if r.flagsArg >= 0 {
				a.load(offArg(r.flagsArg))
				a.jset(createFlags, "", "allow")
			}
			a.load(offArg(r.modeArg))
			a.jset(unix.S_ISUID, "deny", "allow")
		}
	}
	a.label("allow")
	a.ret(retAllow)
	a.label("deny")
	a.ret(retEPERM)
	a.label("foreign")
	a.ret(retKill)
	if x32Bit != 0 {
		a.label("x32")
		a.ret(retENOSYS)
	}
	return a.assemble()
}

// asm is a small assembler for classic BPF with forward jumps to labels.
type asm struct {
	ins    []unix.SockFilter
	jumps  []jump
	labels map[string]int
}

type jump struct {
	at     int
	jt, jf string
}

func (a *asm) load(off uint32) {
	a.ins = append(a.ins, unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off})
}

func (a *asm) ret(v uint32) {
	a.ins = append(a.ins, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: v})
}

// jeq, jge and jset compare the accumulator with k and go to jt when true, jf when false;
// "" is the next instruction.
func (a *asm) jeq(k uint32, jt, jf string)  { a.cond(unix.BPF_JEQ, k, jt, jf) }
func (a *asm) jge(k uint32, jt, jf string)  { a.cond(unix.BPF_JGE, k, jt, jf) }
func (a *asm) jset(k uint32, jt, jf string) { a.cond(unix.BPF_JSET, k, jt, jf) }

func (a *asm) cond(op uint16, k uint32, jt, jf string) {
	a.jumps = append(a.jumps, jump{at: len(a.ins), jt: jt, jf: jf})
	a.ins = append(a.ins, unix.SockFilter{Code: unix.BPF_JMP | op | unix.BPF_K, K: k})
}

func (a *asm) label(name string) {
	if a.labels == nil {
		a.labels = map[string]int{}
	}
	a.labels[name] = len(a.ins)
}

func (a *asm) assemble() ([]unix.SockFilter, error) {
	off := func(from int, to string) (uint8, error) {
		if to == "" {
			return 0, nil
		}
		at, ok := a.labels[to]
		if !ok {
			return 0, fmt.Errorf("syscall filter: no label %q", to)
		}
		d := at - from - 1
		if d < 0 || d > 255 {
			return 0, fmt.Errorf("syscall filter: jump to %q out of reach", to)
		}
		return uint8(d), nil
	}
	for _, j := range a.jumps {
		var err1, err2 error
		a.ins[j.at].Jt, err1 = off(j.at, j.jt)
		a.ins[j.at].Jf, err2 = off(j.at, j.jf)
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
	}
	if len(a.ins) > unix.BPF_MAXINSNS {
		return nil, errors.New("syscall filter: too long")
	}
	return a.ins, nil
}
