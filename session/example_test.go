package session_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sema-agent/sema/session"
)

// The SQLite store keeps sessions in one file; a deployment usually opens it (with the
// history store on the same file) through package statedir.
func ExampleOpenSQLite() {
	dir, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(dir)
	store, err := session.OpenSQLite(filepath.Join(dir, "sema.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	sessions, _ := store.List(context.Background(), session.Filter{})
	fmt.Println(len(sessions))
	// Output:
	// 0
}

// The in-memory store keeps sessions for the life of the process: tests, and hosts that
// do not resume across restarts.
func ExampleNewMemory() {
	store := session.NewMemory()
	sessions, _ := store.List(context.Background(), session.Filter{})
	fmt.Println(len(sessions))
	// Output:
	// 0
}
