package env

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// StaleTempAge is how old a leftover temporary file must be before CleanStaleTemps
// removes it: an atomic write takes far less, so a younger one may still be in flight.
const StaleTempAge = time.Minute

// MaxStaleTempWalk bounds how many entries one CleanStaleTemps call looks at, so a huge
// tree costs a bounded time at the start of a run.
const MaxStaleTempWalk = 200_000

// tempNameRE matches exactly the names tempName makes: "." + base + ".sema-" + creation
// time in nanoseconds (base 36) + "-" + a sequence number (base 36), then, when the
// writer is named, "-" + its pid, start time and pid namespace (base 36, joined by
// dots), then ".tmp".
var tempNameRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\..+\.sema-([0-9a-z]+)-[0-9a-z]+(?:-([0-9a-z]+)\.([0-9a-z]+)\.([0-9a-z]+))?\.tmp$`)
})

// CleanStaleTemps removes, under root, the temporary files that atomic writes of a
// process that died mid-write left behind (WriteFile writes
// ".<name>.sema-<time>-<n>-<writer>.tmp" next to the file and renames it into place). A
// file is removed only when its name has exactly that form and it is a regular file
// (never a link or a directory), and either the writer it names is provably dead — in
// this pid namespace, its pid free or held by a process that started later — or, for a
// name without a writer or a writer in another pid namespace, both its modification time
// and the time in its name are older than StaleTempAge. A live writer's file is kept
// however old: that writer may be stopped, and rename it into place when it resumes. Symbolic
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
		m := tempNameRE().FindStringSubmatch(d.Name())
		if m == nil {
			return nil
		}
		fi, err := os.Lstat(path)
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		dead, alive := false, false
		if m[2] != "" {
			dead, alive = judgeWriter(m[2], m[3], m[4])
		}
		if alive {
			return nil // this process or another live one: its write may be in flight
		}
		if !dead {
			nanos, err := strconv.ParseInt(m[1], 36, 64)
			if err != nil || now.Sub(time.Unix(0, nanos)) < StaleTempAge || now.Sub(fi.ModTime()) < StaleTempAge {
				return nil
			}
		}
		if os.Remove(path) == nil {
			removed = append(removed, path)
		}
		return nil
	})
	return removed
}
