//go:build linux

package sandbox

// What the view needs to know of the machine's mounts: which are kernel filesystems
// (bound, never overlaid) and where the mount points are, read by the starter from
// mountinfo and passed to the helper.

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// isPseudo reports whether the directory open at fd is on a kernel filesystem (sysfs,
// cgroup, …), where no socket can be bound: it is bound, not overlaid.
func isPseudo(fd int) bool {
	var sfs unix.Statfs_t
	if unix.Fstatfs(fd, &sfs) != nil {
		return false
	}
	switch uint64(sfs.Type) {
	case unix.PROC_SUPER_MAGIC, unix.SYSFS_MAGIC, unix.CGROUP_SUPER_MAGIC, unix.CGROUP2_SUPER_MAGIC,
		unix.DEBUGFS_MAGIC, unix.TRACEFS_MAGIC, unix.SECURITYFS_MAGIC, unix.BPF_FS_MAGIC,
		unix.DEVPTS_SUPER_MAGIC, unix.PSTOREFS_MAGIC, unix.EFIVARFS_MAGIC, unix.BINFMTFS_MAGIC,
		unix.NSFS_MAGIC, unix.SELINUX_MAGIC, unix.SMACK_MAGIC, unix.AUTOFS_SUPER_MAGIC,
		0x62656570 /* configfs */, 0x65735543 /* fusectl */, 0x19800202 /* mqueue */ :
		return true
	}
	return false
}

// pseudoAt reports whether the machine's directory path (open at fd) is on a kernel
// filesystem: the mount list says, where the helper has it.
func (v *view) pseudoAt(path string, fd int) bool {
	if v.mounts == nil {
		return isPseudo(fd)
	}
	best := -1
	for i, m := range v.mounts {
		if within(m.path, path) && (best < 0 || len(m.path) >= len(v.mounts[best].path)) {
			best = i
		}
	}
	return best >= 0 && v.mounts[best].pseudo
}

// hostMount is a mount of the helper's namespace, as /proc/self/mountinfo lists it.
type hostMount struct {
	path    string
	escaped string // as mountinfo spells it (no space, no newline)
	pseudo  bool
}

// pseudoTypes are the kernel filesystems isPseudo recognizes, by mountinfo's name.
var pseudoTypes = []string{"proc", "sysfs", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs",
	"bpf", "devpts", "pstore", "efivarfs", "binfmt_misc", "nsfs", "selinuxfs", "smackfs", "autofs",
	"configfs", "fusectl", "mqueue"}

// hostMounts lists the mounts of this namespace (parents before children); nil if
// mountinfo cannot be read.
func hostMounts() []hostMount {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	return parseMountinfo(string(data))
}

// parseMountinfo reads mountinfo's lines: mount point and filesystem type.
func parseMountinfo(data string) []hostMount {
	var out []hostMount
	for line := range strings.SplitSeq(data, "\n") {
		f := strings.Fields(line)
		if len(f) < 7 {
			continue
		}
		sep := slices.Index(f[6:], "-")
		if sep < 0 || 6+sep+1 >= len(f) {
			continue
		}
		path := unescapeMount(f[4])
		if !strings.HasPrefix(path, "/") {
			continue
		}
		out = append(out, hostMount{path: filepath.Clean(path), escaped: f[4], pseudo: slices.Contains(pseudoTypes, f[6+sep+1])})
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// helperMachineEnv carries what the starter knows of the machine into the helper: whether
// the helper is in a user namespace, and the mount points (a kernel filesystem or not).
// The starter keeps the list and reads mountinfo again only when the kernel says it
// changed; reading it in every helper cost more than the rest of the view.
const helperMachineEnv = "SEMA_SANDBOX_MACHINE"

var machineCache struct {
	sync.Mutex
	fd   int // /proc/self/mountinfo, open, whose poll says when the mounts changed; 0: not yet
	text string
}

var starterUserNS = sync.OnceValue(func() bool { return os.Geteuid() != 0 || inUserNamespace() })

// machineForHelper is helperMachineEnv's value: "u" or "-" (a user namespace), then one
// line per mount, "p" (a kernel filesystem) or "-" and its escaped mount point, and one
// per symbolic link in the root directory, "l" and its name (read again with the mounts,
// which is when a root changes). "" when mountinfo cannot be read (the helper then reads
// it itself).
func machineForHelper() string {
	c := &machineCache
	c.Lock()
	defer c.Unlock()
	if c.fd == 0 {
		fd, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return ""
		}
		c.fd = fd
	} else {
		pfd := []unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLPRI}}
		if n, err := unix.Poll(pfd, 0); err == nil && n == 0 && c.text != "" {
			return c.text
		}
	}
	var data []byte
	buf := make([]byte, 64<<10)
	for off := int64(0); ; {
		n, err := unix.Pread(c.fd, buf, off)
		if err != nil {
			return ""
		}
		if n == 0 {
			break
		}
		data = append(data, buf[:n]...)
		off += int64(n)
	}
	var b strings.Builder
	if starterUserNS() {
		b.WriteString("u")
	} else {
		b.WriteString("-")
	}
	for _, m := range parseMountinfo(string(data)) {
		flag := "\n-"
		if m.pseudo {
			flag = "\np"
		}
		b.WriteString(flag + m.escaped)
	}
	for _, name := range symlinksIn("/") {
		if !strings.Contains(name, "\n") {
			b.WriteString("\nl" + name)
		}
	}
	c.text = b.String()
	return c.text
}

// machineFromEnv reads helperMachineEnv's value; where it is empty, the helper finds out
// itself.
func machineFromEnv(s string) (userNS bool, mounts []hostMount, rootLinks []string) {
	if s == "" {
		return inUserNamespace(), hostMounts(), nil
	}
	lines := strings.Split(s, "\n")
	rootLinks = []string{}
	for _, l := range lines[1:] {
		if len(l) < 2 {
			continue
		}
		switch l[0] {
		case 'l':
			rootLinks = append(rootLinks, l[1:])
		default:
			mounts = append(mounts, hostMount{path: filepath.Clean(unescapeMount(l[1:])), escaped: l[1:], pseudo: l[0] == 'p'})
		}
	}
	return lines[0] == "u", mounts, rootLinks
}

// inUserNamespace reports whether the helper runs in a user namespace other than the
// machine's (whose uid_map maps all of 0..2^32-2 onto itself).
func inUserNamespace() bool {
	data, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return true
	}
	f := strings.Fields(string(data))
	return !(len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295")
}
