//go:build !unix

package sqlitedb

// Without the unix calls that tell, a failure to open or write the file keeps SQLite's
// own words (see host_unix.go).

func fdExhausted() bool { return false }

func diskFull(string) bool { return false }

// processAlive cannot tell here, so a creation's leftovers are kept.
func processAlive(int) bool { return true }
