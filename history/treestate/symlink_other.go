//go:build !linux

package treestate

import "os"

// hostSymlink makes the link path → target.
func hostSymlink(target, path string) error { return os.Symlink(target, path) }
