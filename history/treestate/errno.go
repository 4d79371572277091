package treestate

import "syscall"

// errNotDir: a parent of the path is no longer a directory, so nothing is there.
var errNotDir error = syscall.ENOTDIR
