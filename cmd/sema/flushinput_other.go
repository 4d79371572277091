//go:build !linux

package main

import "io"

// flushInput would drop what a terminal holds typed but not yet read; here it does
// nothing, and only the lines read ahead of a question are dropped (termApprover).
func flushInput(io.Reader) {}
