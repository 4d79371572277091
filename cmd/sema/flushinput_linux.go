package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// flushInput drops what a terminal holds typed but not yet read.
func flushInput(in io.Reader) {
	if f, ok := in.(*os.File); ok {
		unix.IoctlSetInt(int(f.Fd()), unix.TCFLSH, unix.TCIFLUSH)
	}
}
