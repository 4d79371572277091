package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/sandbox"
)

// Probe finds, once per process, what this machine's kernel offers; Available says
// whether commands can be confined at all, and Coverage names what they get and what
// is missing. The answer depends on the machine, so this example has no Output.
func ExampleProbe() {
	k := sandbox.Probe()
	fmt.Println("available:", k.Available())
	fmt.Println("landlock ABI:", k.Landlock)
	confines, missing := k.Coverage(false)
	fmt.Println("confines:", confines)
	fmt.Println("missing:", missing)
	if k.Reason != "" {
		fmt.Println("why:", k.Reason)
	}
}

// A leg's policy is derived from its fence, never written by hand: the write roots and
// a private temp directory are writable; the fence's deny set (the state directory
// here), the credential stores and Options.Hidden are hidden wherever a grant would
// reach them; the network is closed unless asked for. WithProtected then keeps the
// protected entries of a write root (.git here) read-only for each command.
func ExampleForFence() {
	ctx := context.Background()
	base, err := os.MkdirTemp("", "sema-sandbox-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(base)
	base, _ = filepath.EvalSymlinks(base) // policies hold canonical paths
	root := filepath.Join(base, "repo")
	state := filepath.Join(root, "state")     // a state directory inside the project
	secrets := filepath.Join(root, "secrets") // a deployment's sandbox.hidden entry
	home := filepath.Join(base, "home")       // a stand-in home, so nothing real is read
	for _, dir := range []string{filepath.Join(root, ".git"), state, secrets, home} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fmt.Println(err)
			return
		}
	}

	f, err := fence.New(ctx, fence.Config{Env: env.NewHost(), Root: root, StateDir: state, Home: home})
	if err != nil {
		fmt.Println(err)
		return
	}
	tmp, err := sandbox.TempDir("sema-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sandbox.RemoveTempDir(tmp)

	p := sandbox.ForFence(f, sandbox.Options{
		TempDir: tmp,
		Home:    home,
		Hidden:  []string{secrets},
		Getenv:  func(string) string { return "" }, // no PATH or toolchain variables
	})
	p = p.WithProtected(f, false)

	fmt.Println("root writable:", slices.Contains(p.Write, root))
	fmt.Println("temp dir writable:", slices.Contains(p.Write, tmp), p.TempDir == tmp)
	fmt.Println("state dir hidden:", slices.Contains(p.Hidden, state))
	fmt.Println("secrets hidden:", slices.Contains(p.Hidden, secrets))
	fmt.Println(".git read-only:", slices.Contains(p.ReadOnly, filepath.Join(root, ".git")))
	fmt.Println("network:", p.Network)
	// Output:
	// root writable: true
	// temp dir writable: true true
	// state dir hidden: true
	// secrets hidden: true
	// .git read-only: true
	// network: false
}

// The sandbox's mode word: "" is auto (confine where the kernel can), and anything but
// auto, on and off is refused by name.
func ExampleParseMode() {
	for _, word := range []string{"", "on", "off", "strict"} {
		m, err := sandbox.ParseMode(word)
		if err != nil {
			fmt.Printf("%q: refused (%s)\n", word, sema.CodeOf(err))
			continue
		}
		fmt.Printf("%q: %s\n", word, m)
	}
	// Output:
	// "": auto
	// "on": on
	// "off": off
	// "strict": refused (config.sandbox_invalid)
}
