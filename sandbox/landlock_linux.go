//go:build linux

package sandbox

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The Landlock interface is called directly: restrict_self applies to the calling thread,
// and the helper execs the command from that same locked thread, so nothing needs the
// all-threads machinery (and its cgo) of a general-purpose binding.

// Access rights by the ABI version that introduced them.
const (
	fsABI1 = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	fsRefer    = unix.LANDLOCK_ACCESS_FS_REFER    // ABI 2
	fsTruncate = unix.LANDLOCK_ACCESS_FS_TRUNCATE // ABI 3
	fsIoctlDev = unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	netTCP     = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP // ABI 4
	scopeAll   = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL    // ABI 6

	readRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_DIR
	// fileRights are the rights that mean anything on a file (not a directory).
	fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | fsTruncate | fsIoctlDev
	// neverGranted: no command makes device nodes.
	neverGranted = unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK
)

// landlockABI is the kernel's Landlock ABI version, or 0 where Landlock is missing or off.
func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// handledFS are the filesystem rights a ruleset handles at abi: all the kernel knows.
func handledFS(abi int) uint64 {
	h := uint64(fsABI1)
	if abi >= 2 {
		h |= fsRefer
	}
	if abi >= 3 {
		h |= fsTruncate
	}
	if abi >= 5 {
		h |= fsIoctlDev
	}
	return h
}

// rulesetAttr is struct landlock_ruleset_attr as far as ABI 6 defines it; the kernel
// accepts a shorter struct from a newer program and a longer one whose tail is zero.
type rulesetAttr struct {
	handledFS  uint64
	handledNet uint64
	scoped     uint64
}

type pathBeneath struct {
	allowed  uint64
	parentFD int32
}

// ruleset is a Landlock ruleset being filled.
type ruleset struct {
	fd      int
	handled uint64
}

// newRuleset creates a ruleset handling every filesystem right of abi, TCP when blockTCP
// (ABI 4 on), and the abstract-socket and signal scopes (ABI 6 on).
func newRuleset(abi int, blockTCP bool) (*ruleset, error) {
	attr := rulesetAttr{handledFS: handledFS(abi)}
	size := unsafe.Sizeof(attr)
	if blockTCP && abi >= 4 {
		attr.handledNet = netTCP
	}
	if abi >= 6 {
		attr.scoped = scopeAll
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return nil, fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	return &ruleset{fd: int(fd), handled: attr.handledFS}, nil
}

// allow grants rights beneath the object open at fd (O_PATH), keeping only the rights
// the ruleset handles and, for a file, only those that mean anything on a file.
func (r *ruleset) allow(fd int, rights uint64, isDir bool) error {
	rights &= r.handled &^ neverGranted
	if !isDir {
		rights &= fileRights
	}
	if rights == 0 {
		return nil
	}
	pb := pathBeneath{allowed: rights, parentFD: int32(fd)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(r.fd), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&pb)), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("landlock_add_rule: %w", errno)
	}
	return nil
}

// enforce restricts the calling thread, for good, to the ruleset. The caller has locked
// its goroutine to the thread and execs from it.
func (r *ruleset) enforce() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	_, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(r.fd), 0, 0)
	if errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	unix.Close(r.fd)
	return nil
}
