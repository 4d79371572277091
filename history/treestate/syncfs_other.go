//go:build !linux

package treestate

import "errors"

// syncFS is Linux's syncfs(2); elsewhere every file is fsynced on its own.
func syncFS(string) error { return errors.New("treestate: no syncfs here") }
