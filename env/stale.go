package env

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// StaleTempAge is how old a leftover temporary file must be before CleanStaleTemps
// removes it: an atomic write takes far less, so a younger one may still be in flight.
const StaleTempAge = time.Minute

// MaxStaleTempWalk bounds how many entries one CleanStaleTemps call looks at, so a huge
// tree costs a bounded time at the start of a run.
const MaxStaleTempWalk = 200_000

// tempNameRE matches exactly the names tempName makes: "." + base + ".sema-" + creation
// time in nanoseconds (base 36) + "-" + a sequence number (base 36) + ".tmp".
var tempNameRE = regexp.MustCompile(`^\..+\.sema-([0-9a-z]+)-[0-9a-z]+\.tmp$`)

// CleanStaleTemps removes, under root, the temporary files that atomic writes of a
// process that died mid-write left behind (WriteFile writes ".<name>.sema-<time>-<n>.tmp"
// next to the file and renames it into place). A file is removed only when its name has
// exactly that form, it is a regular file (never a link or a directory), and both its
// modification time and the time in its name are older than StaleTempAge. Symbolic
// links are not followed and unreadable directories are skipped; the walk stops after
// MaxStaleTempWalk entries or when ctx ends. It returns the paths it removed. A runner
// calls it at the start of a run over root.
func CleanStaleTemps(ctx context.Context, root string) []string {
	var removed []string
	seen := 0
	now := time.Now()
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() && path != root {
				return fs.SkipDir
			}
			return nil
		}
		if seen++; seen > MaxStaleTempWalk || ctx.Err() != nil {
			return fs.SkipAll
		}
		if !d.Type().IsRegular() {
			return nil
		}
		m := tempNameRE.FindStringSubmatch(d.Name())
		if m == nil {
			return nil
		}
		nanos, err := strconv.ParseInt(m[1], 36, 64)
		if err != nil || now.Sub(time.Unix(0, nanos)) < StaleTempAge {
			return nil
		}
		fi, err := os.Lstat(path)
		if err != nil || !fi.Mode().IsRegular() || now.Sub(fi.ModTime()) < StaleTempAge {
			return nil
		}
		if os.Remove(path) == nil {
			removed = append(removed, path)
		}
		return nil
	})
	return removed
}
