//go:build !linux

package treestate

import (
	"errors"
	"os"
)

// syncFS is Linux's syncfs(2); elsewhere every file is fsynced on its own.
func syncFS(string) error { return errors.New("treestate: no syncfs here") }

// dataSync is an fsync where fdatasync is not at hand.
func dataSync(f *os.File) error { return f.Sync() }
