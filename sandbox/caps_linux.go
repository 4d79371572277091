//go:build linux

package sandbox

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// The securebits (linux/securebits.h; x/sys/unix does not name them).
const (
	secNoRoot                = 1 << 0 // exec as uid 0 grants no capability
	secNoRootLocked          = 1 << 1
	secNoSetuidFixup         = 1 << 2 // a change of uid does not touch the capability sets
	secNoSetuidFixupLocked   = 1 << 3
	secKeepCapsLocked        = 1 << 5 // keep-caps stays off
	secNoCapAmbientRaise     = 1 << 6 // no capability can be made ambient again
	secNoCapAmbientRaiseLock = 1 << 7

	secureAll = secNoRoot | secNoRootLocked | secNoSetuidFixup | secNoSetuidFixupLocked |
		secKeepCapsLocked | secNoCapAmbientRaise | secNoCapAmbientRaiseLock
)

// dropCapabilities takes every capability from the helper's thread before the command
// runs, so that who runs sema does not matter: root without a user namespace keeps
// nothing of root but its uid, which Landlock and the mounts already confine.
//
//   - the ambient set is cleared (a user namespace lent some for mounting);
//   - the securebits make uid 0 special no more: an exec as root grants no capability,
//     a change of uid changes none, no capability can be raised ambient again — each
//     locked (this needs CAP_SETPCAP, held by root and lent in a user namespace);
//   - the bounding set is emptied, so no exec can ever gain a capability back, whatever
//     a setuid bit or a file capability says (no_new_privs, set with Landlock, already
//     ignores both);
//   - the effective, permitted and inheritable sets are set to nothing.
//
// A helper without CAP_SETPCAP (a user without privilege where no user namespace could
// be made) holds no capability to begin with; its bounding set and securebits stay as
// they are, and no_new_privs keeps an exec from gaining any. Whatever the path, the
// result is read back: a helper left with a capability fails.
func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("reading capabilities: %w", err)
	}
	if data[unix.CAP_SETPCAP/32].Effective&(1<<(unix.CAP_SETPCAP%32)) != 0 {
		bits, err := unix.PrctlRetInt(unix.PR_GET_SECUREBITS, 0, 0, 0, 0)
		if err != nil {
			return fmt.Errorf("reading securebits: %w", err)
		}
		if err := unix.Prctl(unix.PR_SET_SECUREBITS, uintptr(bits|secureAll), 0, 0, 0); err != nil {
			return fmt.Errorf("setting securebits: %w", err)
		}
		// The kernel's own answer says how many capabilities it knows: reading one past
		// the last is EINVAL.
		for c := 0; ; c++ {
			in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0)
			if errors.Is(err, unix.EINVAL) {
				break
			}
			if err != nil {
				return fmt.Errorf("reading the bounding set: %w", err)
			}
			if in == 0 {
				continue
			}
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
				return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
			}
		}
	}
	data = [2]unix.CapUserData{}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("dropping capabilities: %w", err)
	}
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("reading capabilities: %w", err)
	}
	for _, d := range data {
		if d.Effective|d.Permitted|d.Inheritable != 0 {
			return errors.New("a capability is left after dropping them all")
		}
	}
	return nil
}
