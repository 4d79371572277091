package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sema-agent/sema/fence"
)

// Options are what a leg adds to the fence when it builds the policy of its commands.
type Options struct {
	// TempDir is the commands' private temporary directory (exported to them as TMPDIR):
	// writable. Empty: none.
	TempDir string
	// Files are single files the commands may write (the shell's working-directory
	// report). Each must exist.
	Files []string
	// Readable and Writable extend the read and write sets: a deployment's or a settings
	// file's additions (a toolchain in an unusual place, a shared cache). Relative and
	// empty entries are ignored; "~/" is the home directory.
	Readable, Writable []string
	// Hidden extends DefaultCredentialStores: places no command may read, also beneath a
	// root. Relative entries are relative to the home directory.
	Hidden []string
	// Network lets commands reach the network. Default false: loopback only.
	Network bool
	// Home is the home directory the toolchain and credential lists are relative to.
	// Empty: os.UserHomeDir.
	Home string
	// Getenv reads the environment commands run with (toolchain cache locations).
	// Nil: os.Getenv.
	Getenv func(string) string
}

// ForFence derives a leg's policy from its fence, never by hand: write = the write roots
// (which hold the admitted advertised directories), the private temp directory and the
// toolchain caches; read = the read roots, the system directories and the toolchains;
// hidden = the fence's deny set (state directory, literal deny globs) and the credential
// stores. A write face of open makes the whole filesystem writable, a read face of open
// the whole filesystem readable; hidden places stay hidden under either. Protected paths
// are added per command by WithProtected.
func ForFence(f *fence.Fence, o Options) Policy {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	home := o.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	expand := func(list []string, base string) []string {
		var out []string
		for _, p := range list {
			switch {
			case p == "~" || strings.HasPrefix(p, "~/"):
				if home != "" {
					out = append(out, filepath.Join(home, p[1:]))
				}
			case filepath.IsAbs(p):
				out = append(out, p)
			case base != "" && p != "":
				out = append(out, filepath.Join(base, p))
			}
		}
		return out
	}
	m := machineFor(home, getenv)
	var p Policy
	// The fence's roots and deny paths are canonical already; only what a person or a
	// settings file wrote is resolved here.
	p.Write = append(p.Write, f.WriteRoots()...)
	if o.TempDir != "" {
		p.Write = append(p.Write, o.TempDir)
	}
	p.Write = append(p.Write, o.Files...)
	p.Write = append(p.Write, m.write...)
	p.Write = append(p.Write, existing(resolved(expand(o.Writable, "")))...)
	p.Read = append(p.Read, f.ReadRoots()...)
	p.Read = append(p.Read, m.read...)
	p.Read = append(p.Read, existing(resolved(expand(o.Readable, "")))...)
	if f.WriteFace() == fence.FaceOpen {
		p.Write = []string{"/"}
	}
	if f.ReadFace() == fence.FaceOpen {
		p.Read = []string{"/"}
	}
	p.Devices = m.devices
	p.Network = o.Network
	p.Write = outermost(p.Write, nil)
	p.Read = outermost(p.Read, p.Write)
	hidden := existing(f.DenyPaths())
	hidden = append(hidden, m.credentials...)
	hidden = append(hidden, existing(resolved(expand(o.Hidden, home)))...)
	// A hidden place needs hiding only where a grant would reach it; elsewhere the
	// kernel's default (nothing) already holds.
	for _, h := range hidden {
		if beneathAny(p.Read, h) || beneathAny(p.Write, h) {
			p.Hidden = append(p.Hidden, h)
		}
	}
	return p
}

// machine is the part of a policy that depends on the machine, not on the leg: the
// system directories, the toolchains and their caches, the device files and the
// credential stores, each resolved and present.
type machine struct {
	read, write, devices, credentials []string
}

// machines caches the machine part per home directory and toolchain environment: a leg
// starts without resolving some fifty paths again. A toolchain cache made after the first
// leg of a process is granted from the next process on.
var machines sync.Map // key string → *machine

func machineFor(home string, getenv func(string) string) *machine {
	var key strings.Builder
	key.WriteString(home)
	for _, k := range toolchainEnv {
		key.WriteByte(0)
		key.WriteString(getenv(k))
	}
	if m, ok := machines.Load(key.String()); ok {
		return m.(*machine)
	}
	tcRead, tcWrite := Toolchain(home, getenv)
	creds := make([]string, 0, len(DefaultCredentialStores))
	if home != "" {
		for _, c := range DefaultCredentialStores {
			creds = append(creds, filepath.Join(home, c))
		}
	}
	m := &machine{
		read:        existing(resolved(append(append([]string(nil), systemReadable...), tcRead...))),
		write:       existing(resolved(tcWrite)),
		devices:     existing(append([]string(nil), systemDevices...)),
		credentials: existing(resolved(creds)),
	}
	actual, _ := machines.LoadOrStore(key.String(), m)
	return actual.(*machine)
}

// WithProtected returns p with the protected entries at the top of each write root kept
// read-only: .git, .sema, .vscode, shell rc files and the rest of the fence's protected
// set. Protected entries deeper in a tree are the permission fold's to judge. Nothing is
// added under an open write face (bypassPermissions asks no one about protected paths),
// nor when approved — a person said yes to exactly this command.
func (p Policy) WithProtected(f *fence.Fence, approved bool) Policy {
	if approved || f.WriteFace() == fence.FaceOpen {
		return p
	}
	var ro []string
	for _, root := range f.WriteRoots() {
		ents, err := os.ReadDir(root)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if e.Type()&os.ModeSymlink != 0 {
				continue // writing through it reaches its target, which the grants judge
			}
			c := filepath.Join(root, e.Name())
			if prot, _ := f.IsProtected(c); prot && !beneathAny(p.Hidden, c) {
				ro = append(ro, c)
			}
		}
	}
	if len(ro) > 0 {
		p.ReadOnly = append(append([]string(nil), p.ReadOnly...), ro...)
	}
	return p
}

// resolved canonicalizes each path as far as it exists (symbolic links followed), since
// the kernel grants on the object a path names, and drops duplicates.
func resolved(list []string) []string {
	out := make([]string, 0, len(list))
	for _, p := range compact(list) {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		out = append(out, p)
	}
	return compact(out)
}

// existing keeps the paths that exist.
func existing(list []string) []string {
	out := list[:0]
	for _, p := range list {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}
