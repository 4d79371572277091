//go:build !unix

package main

import "os"

// terminalWidth is the number of columns of the terminal f is, 0 when unknown.
func terminalWidth(*os.File) int { return 0 }
