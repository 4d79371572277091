package env

import (
	"context"
	"io/fs"
)

// FileWrite is one file of a batch write: what WriteFile takes.
type FileWrite struct {
	// Path is the file's absolute, cleaned path, as WriteFile takes it.
	Path string
	// Data is the file's new content.
	Data []byte
	// Perm is the mode of a file the write creates; an existing file keeps its own.
	Perm fs.FileMode
}

// BatchWriter is an ExecutionEnv that can write many files at once for less than one
// WriteFile after another costs. A durable atomic replace pays for its syncs per file —
// the new bytes, then the directory entry — and most of a batch's time went there; a
// batch syncs the bytes of all its files together, and each directory once.
//
// It is optional: a caller type-asserts an env to BatchWriter and falls back to WriteFile
// per file when the env is not one. A wrapper env that changes what WriteFile does
// (counts, faults, records) is not a BatchWriter unless it says so itself, so a batch
// never bypasses it.
type BatchWriter interface {
	// WriteFiles writes each of files as WriteFile would write it alone — the same
	// refusals (a symlink or directory at the path, a symlink above it), the same mode
	// rule, the same atomic replace — so after a crash each file holds its old bytes or
	// its new ones, never a mix, whichever others of the batch were replaced. Files are
	// independent: one that fails does not stop the others, and leaves no temporary
	// file behind. A path given twice ends with its last entry's bytes. It returns nil
	// when every file was written, otherwise one error per file, in order, nil for each
	// file written; each error names its file's path. A ctx that ends fails the files
	// not yet replaced with its error.
	WriteFiles(ctx context.Context, files []FileWrite) []error
}
