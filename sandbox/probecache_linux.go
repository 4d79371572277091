//go:build linux

package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// What the kernel offers is the same for every sema process of a user on one boot of a
// machine, in one set of namespaces, until an administrator changes a setting that
// governs namespaces. Finding it out starts the helper once (a re-exec of this binary:
// about 6 ms of CPU and 10 ms before a leg's first request), so a full result is kept
// in a file of the user's own for the next process, under a key made of everything the
// result depends on. Only a full result is kept: a machine that offers less is asked
// again each time (a partial answer may have been a passing failure).
//
// A kept result is not a grant: it only spares the question. A result that no longer
// holds (a setting the key does not name changed) makes the helper fail its own steps,
// and a helper that cannot confine never runs the command; nothing runs unconfined
// because of it.

// probeCacheName is the file, inside probeCacheDir, that keeps the result.
const probeCacheName = "kernel-probe.json"

// keptProbe is the file's content.
type keptProbe struct {
	Key    string `json:"key"`
	Kernel Kernel `json:"kernel"`
}

// probeCacheDir is a directory only this user can write: $XDG_RUNTIME_DIR/sema (a
// per-boot tmpfs on systemd machines), else sema-UID in the temporary directory. It is
// made when missing; one that is a link, is another user's, or that others may write is
// not used ("", and the kernel is asked every time).
func probeCacheDir() string {
	uid := os.Getuid()
	if rt := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(rt) && ownedPrivateDir(rt, uid, false) {
		dir := filepath.Join(rt, "sema")
		if ensurePrivateDir(dir, uid) {
			return dir
		}
	}
	dir := filepath.Join(os.TempDir(), "sema-"+strconv.Itoa(uid))
	if ensurePrivateDir(dir, uid) {
		return dir
	}
	return ""
}

// ensurePrivateDir makes dir (mode 0700) when missing and reports whether it is a
// directory of uid's that no one else may write.
func ensurePrivateDir(dir string, uid int) bool {
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return false
	}
	return ownedPrivateDir(dir, uid, true)
}

// ownedPrivateDir reports whether dir is a directory (not a link to one) owned by uid
// that no other user may write; strict also refuses any access by others.
func ownedPrivateDir(dir string, uid int, strict bool) bool {
	var st unix.Stat_t
	if unix.Lstat(dir, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != uid {
		return false
	}
	if strict {
		return st.Mode&0o077 == 0
	}
	return st.Mode&0o022 == 0
}

// probeKey names everything a full result depends on: the machine's boot, the user, this
// binary (its helper does the confining), the kernel and its namespace settings, the
// namespaces this process is in, the temporary directory the overlay is tried in, and
// the Landlock ABI. "" when one of them cannot be read: then nothing is kept.
func probeKey(landlock int) string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	var est unix.Stat_t
	if unix.Stat(exe, &est) != nil {
		return ""
	}
	var uts unix.Utsname
	if unix.Uname(&uts) != nil {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "boot %s\nuid %d gid %d\nexe %s %d:%d %d %d.%d\nkernel %s %s\nlandlock %d\n",
		strings.TrimSpace(string(boot)), os.Getuid(), os.Getgid(),
		exe, est.Dev, est.Ino, est.Size, est.Mtim.Sec, est.Mtim.Nsec,
		unix.ByteSliceToString(uts.Release[:]), unix.ByteSliceToString(uts.Version[:]), landlock)
	// The settings that allow or forbid namespaces to unprivileged users, on the
	// kernels that have them; a missing one is written as such.
	for _, f := range []string{
		"/proc/sys/user/max_user_namespaces",
		"/proc/sys/user/max_mnt_namespaces",
		"/proc/sys/user/max_pid_namespaces",
		"/proc/sys/user/max_net_namespaces",
		"/proc/sys/kernel/unprivileged_userns_clone",
		"/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
	} {
		b, err := os.ReadFile(f)
		fmt.Fprintf(h, "%s %q %v\n", f, strings.TrimSpace(string(b)), err == nil)
	}
	for _, ns := range []string{"user", "mnt", "pid", "net", "cgroup"} {
		target, err := os.Readlink("/proc/self/ns/" + ns)
		if err != nil {
			return ""
		}
		fmt.Fprintf(h, "ns %s\n", target)
	}
	tmp := os.TempDir()
	var tst unix.Stat_t
	if unix.Stat(tmp, &tst) != nil {
		return ""
	}
	fmt.Fprintf(h, "tmp %s %d:%d\n", tmp, tst.Dev, tst.Ino)
	return hex.EncodeToString(h.Sum(nil))
}

// full reports that k offers everything the sandbox uses.
func (k Kernel) full() bool {
	return k.Landlock >= 1 && k.MountNamespace && k.NetworkNamespace && k.PIDNamespace && k.Overlay && k.Reason == ""
}

// keptKernel returns the result kept in dir under key, if there is one.
func keptKernel(dir, key string) (Kernel, bool) {
	if dir == "" || key == "" {
		return Kernel{}, false
	}
	f, err := os.OpenFile(filepath.Join(dir, probeCacheName), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return Kernel{}, false
	}
	defer f.Close()
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != os.Getuid() || st.Mode&0o022 != 0 {
		return Kernel{}, false
	}
	data, err := io.ReadAll(io.LimitReader(f, 4<<10))
	if err != nil {
		return Kernel{}, false
	}
	var kept keptProbe
	if json.Unmarshal(data, &kept) != nil || kept.Key != key || !kept.Kernel.full() {
		return Kernel{}, false
	}
	return kept.Kernel, true
}

// keepKernel writes k to dir under key, whole (a temporary file renamed into place), or
// not at all.
func keepKernel(dir, key string, k Kernel) {
	if dir == "" || key == "" || !k.full() {
		return
	}
	data, err := json.Marshal(keptProbe{Key: key, Kernel: k})
	if err != nil {
		return
	}
	f, err := os.CreateTemp(dir, probeCacheName+".*")
	if err != nil {
		return
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, probeCacheName))
	}
	if err != nil {
		os.Remove(f.Name())
	}
}

// probeKept is probe, answered from the kept result when it is there under the same key.
func probeKept(dir string, ask func() Kernel) Kernel {
	key := probeKey(landlockABI())
	if k, ok := keptKernel(dir, key); ok {
		return k
	}
	k := ask()
	keepKernel(dir, key, k)
	return k
}
