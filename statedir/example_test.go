package statedir_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/statedir"
)

// A deployment opens its state directory once, fills the runner's seats from it, and
// closes it when the last runner is done.
func ExampleOpen() {
	ctx := context.Background()
	base, err := os.MkdirTemp("", "sema-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(base)

	// The directory need not exist: Open makes it (owner-only) and the database in it.
	dir, err := statedir.Open(ctx, filepath.Join(base, "state"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dir.Close()

	deps := agent.Deps{ /* Provider: anthropic.FromEnv(), … */ }.WithStateDir(dir)
	fmt.Println("state dir protected:", deps.StateDir == dir.Path())
	fmt.Println("sessions and history set:", deps.Store != nil && deps.History != nil)

	fi, _ := os.Stat(filepath.Join(base, "state"))
	fmt.Println("directory mode:", fi.Mode().Perm())
	fi, _ = os.Stat(filepath.Join(base, "state", statedir.DatabaseName))
	fmt.Println("database mode:", fi.Mode().Perm())

	// Both stores are live on the one file.
	s, _ := dir.Sessions().Create(ctx, session.Session{Root: "/work/repo"})
	b, _ := dir.History().MintBoundary(ctx, s.ID, 1)
	fmt.Println("first boundary of the new session: turn", b.Turn)
	// Output:
	// state dir protected: true
	// sessions and history set: true
	// directory mode: -rwx------
	// database mode: -rw-------
	// first boundary of the new session: turn 1
}
