package shellscan

import "context"

// Placer places one Target on disk for whoever judges the script: abs is the path made
// absolute against the task root (or home), cleaned; canonical is abs with its links
// resolved; ok is false when it cannot be placed (an expanded word, a directory that may
// have moved). The package only reads command lines; the caller, which knows the
// directory the command starts in and the file system, supplies the placing.
type Placer func(ctx context.Context, t Target) (abs, canonical string, ok bool)
