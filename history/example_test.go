package history_test

import (
	"context"
	"fmt"

	"github.com/sema-agent/sema/env/envtest"
	"github.com/sema-agent/sema/history"
)

// The shape of a write lane's first-touch station over Files: Track before the write,
// refuse the write when Track fails, Annul the minted record when the write then fails,
// record what a write that succeeded left (Wrote), and a rewind later puts the file back.
func ExampleFiles_Track() {
	ctx := context.Background()
	e := envtest.NewMem()
	e.MkdirAll("/w", 0o755)
	e.WriteFile(ctx, "/w/main.go", []byte("package main\n"), 0o644)

	store := history.NewMemory()
	files := history.NewFiles(store, e)
	store.MintBoundary(ctx, "session-1", 1) // the turn-start seat

	rec, minted, err := files.Track(ctx, "session-1", "/w/main.go")
	if err != nil {
		fmt.Println("refuse the edit:", err) // cannot record durably: do not write
		return
	}
	edited := []byte("package main // edited\n")
	if werr := e.WriteFile(ctx, "/w/main.go", edited, 0o644); werr != nil {
		if minted {
			files.Annul(ctx, rec, history.ProofVerify) // the write failed: retract the record
		}
	} else {
		files.Wrote(ctx, rec, edited) // what the agent left, so a rewind can tell it from others' edits
	}

	led, err := files.Rewind(ctx, "session-1", 1, history.RewindOptions{SessionID: "session-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	data, _ := e.ReadFile(ctx, "/w/main.go")
	fmt.Println(led.Entries[0].Status, led.Entries[0].Path)
	fmt.Printf("%q\n", data)
	// Output:
	// restored /w/main.go
	// "package main\n"
}
