package files

import (
	"context"
	"io"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
)

// CodeHardLink refuses to read a file with more than one hard link (fence.HardLinked):
// its other name may lie outside the roots. It is the fence's code, named here beside the
// other codes of the read tools.
const CodeHardLink = fence.CodeHardLink

// openContent opens the regular file at canonical to read its content for the model. It
// is the one door the file tools read content through (Read, Grep, and the write lane's
// read of the file it changes): a hard-linked file is refused with CodeHardLink. The
// link count is read from the opened file where the env can describe it, so a name
// swapped for a link after a check cannot slip through; otherwise from Stat.
func (c Config) openContent(ctx context.Context, spelled, canonical string) (io.ReadCloser, error) {
	rc, _, err := c.openContentSized(ctx, spelled, canonical)
	return rc, err
}

// openContentSized is openContent that also answers the size of the file it opened (as
// the open file describes itself where the env allows, else as Stat saw the path).
func (c Config) openContentSized(ctx context.Context, spelled, canonical string) (io.ReadCloser, int64, error) {
	rc, err := c.Env.Open(ctx, canonical)
	if err != nil {
		return nil, 0, err
	}
	fi, ok := env.OpenedInfo(rc)
	if !ok {
		if fi, err = c.Env.Stat(ctx, canonical); err != nil {
			rc.Close()
			return nil, 0, err
		}
	}
	if fence.HardLinked(canonical, fi) {
		rc.Close()
		return nil, 0, fence.HardLinkError(spelled)
	}
	return rc, fi.Size, nil
}
