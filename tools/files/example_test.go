package files_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/tools"
	"github.com/sema-agent/sema/tools/files"
)

// The read tools of a leg share one fence: Read answers a file inside the task root
// and refuses, with a coded error Result, one outside it.
func ExampleReadTools() {
	ctx := context.Background()
	base, err := os.MkdirTemp("", "sema-files-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(base)
	root := filepath.Join(base, "repo")
	_ = os.MkdirAll(root, 0o755)
	_ = os.WriteFile(filepath.Join(root, "notes.txt"), []byte("inside the root\n"), 0o644)
	_ = os.WriteFile(filepath.Join(base, "outside.txt"), []byte("beside it\n"), 0o644)

	host := env.NewHost()
	f, err := fence.New(ctx, fence.Config{Env: host, Root: root})
	if err != nil {
		fmt.Println(err)
		return
	}
	roster := tools.Roster(files.ReadTools(files.Config{Env: host, Fence: f, ReadState: files.NewReadState()}))
	fmt.Println(roster.Names())

	read := roster.Lookup("Read")
	for _, p := range []string{filepath.Join(root, "notes.txt"), filepath.Join(base, "outside.txt")} {
		input, _ := json.Marshal(map[string]string{"file_path": p})
		r := read.Run(ctx, input)
		if r.IsError {
			fmt.Println(filepath.Base(p), "refused:", r.Code)
			continue
		}
		fmt.Println(filepath.Base(p), "read:", strings.Contains(r.TextOf(), "inside the root"))
	}
	// Output:
	// [Read Glob Grep LS]
	// notes.txt read: true
	// outside.txt refused: fs.path_not_in_root
}
