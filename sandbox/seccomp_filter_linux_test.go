//go:build linux && (amd64 || arm64)

package sandbox

import (
	"encoding/binary"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// runFilter interprets the classic BPF subset the filter uses on one seccomp_data.
func runFilter(t *testing.T, prog []unix.SockFilter, nr int, arch uint32, args ...uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data[0:], uint32(nr))
	binary.LittleEndian.PutUint32(data[4:], arch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(data[16+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			var ok bool
			switch in.Code &^ (unix.BPF_JMP | unix.BPF_K) {
			case unix.BPF_JEQ:
				ok = acc == in.K
			case unix.BPF_JGE:
				ok = acc >= in.K
			case unix.BPF_JSET:
				ok = acc&in.K != 0
			}
			if ok {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		default:
			t.Fatalf("instruction %d: unexpected code %#x", pc, in.Code)
		}
	}
	t.Fatal("the filter fell off its end")
	return 0
}

// The filter's decisions, call by call, including the spellings a careless filter lets
// through: a request with high bits set, a mode with other bits beside S_ISUID, a mode
// that only matters when a file is created.
func TestSyscallFilterDecisions(t *testing.T) {
	prog, err := syscallFilter()
	if err != nil {
		t.Fatal(err)
	}
	var cwd = uint64(1<<64 - 100) // AT_FDCWD as the kernel passes it
	cases := []struct {
		name string
		nr   int
		args []uint64
		want uint32
	}{
		{"ioctl TIOCSTI", unix.SYS_IOCTL, []uint64{0, unix.TIOCSTI}, retEPERM},
		{"ioctl TIOCSTI with high bits", unix.SYS_IOCTL, []uint64{0, 0xdead_0000_0000 | unix.TIOCSTI}, retEPERM},
		{"ioctl TIOCLINUX", unix.SYS_IOCTL, []uint64{0, unix.TIOCLINUX}, retEPERM},
		{"ioctl TIOCGWINSZ", unix.SYS_IOCTL, []uint64{0, unix.TIOCGWINSZ}, retAllow},
		{"ioctl TCGETS", unix.SYS_IOCTL, []uint64{0, unix.TCGETS}, retAllow},
		{"fchmod 04755", unix.SYS_FCHMOD, []uint64{3, 0o4755}, retEPERM},
		{"fchmod 0755", unix.SYS_FCHMOD, []uint64{3, 0o755}, retAllow},
		{"fchmod 02775 (a group-shared directory)", unix.SYS_FCHMOD, []uint64{3, 0o2775}, retAllow},
		{"fchmodat 04000", unix.SYS_FCHMODAT, []uint64{cwd, 0, 0o4000}, retEPERM},
		{"fchmodat 06755", unix.SYS_FCHMODAT, []uint64{cwd, 0, 0o6755}, retEPERM},
		{"fchmodat 0644", unix.SYS_FCHMODAT, []uint64{cwd, 0, 0o644}, retAllow},
		{"fchmodat2 04755", sysFchmodat2, []uint64{cwd, 0, 0o4755, unix.AT_EMPTY_PATH}, retEPERM},
		{"openat O_CREAT 04755", unix.SYS_OPENAT, []uint64{cwd, 0, unix.O_CREAT | unix.O_WRONLY, 0o4755}, retEPERM},
		{"openat O_TMPFILE 04755", unix.SYS_OPENAT, []uint64{cwd, 0, unix.O_TMPFILE | unix.O_RDWR, 0o4755}, retEPERM},
		{"openat O_CREAT 0644", unix.SYS_OPENAT, []uint64{cwd, 0, unix.O_CREAT | unix.O_WRONLY, 0o644}, retAllow},
		{"openat without O_CREAT, garbage mode", unix.SYS_OPENAT, []uint64{cwd, 0, unix.O_RDONLY, 0o4755}, retAllow},
		{"mknodat S_IFREG|04755", unix.SYS_MKNODAT, []uint64{cwd, 0, unix.S_IFREG | 0o4755, 0}, retEPERM},
		{"openat2", unix.SYS_OPENAT2, nil, retENOSYS},
		{"io_uring_setup", unix.SYS_IO_URING_SETUP, nil, retENOSYS},
		{"read", unix.SYS_READ, nil, retAllow},
		{"write", unix.SYS_WRITE, nil, retAllow},
	}
	for _, r := range legacyRules {
		if r.nr == 0 {
			t.Fatal("a legacy rule without a number")
		}
		args := make([]uint64, 4)
		args[r.modeArg] = 0o4755
		if r.flagsArg >= 0 {
			args[r.flagsArg] = unix.O_CREAT
		}
		cases = append(cases, struct {
			name string
			nr   int
			args []uint64
			want uint32
		}{fmt.Sprintf("legacy call %d with 04755", r.nr), r.nr, args, retEPERM})
	}
	for _, c := range cases {
		if got := runFilter(t, prog, c.nr, auditArch, c.args...); got != c.want {
			t.Errorf("%s: %#x, want %#x", c.name, got, c.want)
		}
	}
	// Another architecture's numbers mean other calls: the process ends.
	if got := runFilter(t, prog, 54, unix.AUDIT_ARCH_I386, 0, unix.TIOCSTI); got != retKill {
		t.Errorf("a foreign architecture's call: %#x", got)
	}
	if x32Bit != 0 {
		if got := runFilter(t, prog, x32Bit|16, auditArch, 0, unix.TIOCSTI); got != retENOSYS {
			t.Errorf("an x32 call: %#x", got)
		}
	}
}
