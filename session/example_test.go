package session_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

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

// Code given only a Store (an embedder's agent.Deps.Store) asks for the administration
// methods through AsAdmin, whose refusal says what to change when the store is made
// only to serve runs.
func ExampleAsAdmin() {
	var store session.Store = session.NewMemory()
	admin, err := session.AsAdmin(store)
	if err != nil {
		fmt.Println(err)
		return
	}
	pruned, _ := admin.Prune(context.Background(), time.Now())
	fmt.Println(len(pruned))
	// Output:
	// 0
}
