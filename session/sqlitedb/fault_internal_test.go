package sqlitedb

import (
	"errors"
	"io/fs"
	"syscall"
	"testing"

	"github.com/sema-agent/sema"
)

// The operating system's answers that mean "cannot write here" are store.readonly, a
// read-only file system included (which a test cannot mount); others keep their text.
func TestFaultOfOSErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		code string
	}{
		{&fs.PathError{Op: "open", Path: "/s/sema.db", Err: syscall.EROFS}, CodeReadOnly},
		{&fs.PathError{Op: "open", Path: "/s/sema.db", Err: syscall.EACCES}, CodeReadOnly},
		{&fs.PathError{Op: "open", Path: "/s/sema.db", Err: syscall.EPERM}, CodeReadOnly},
		{&fs.PathError{Op: "open", Path: "/s/sema.db", Err: syscall.EIO}, ""},
		{errors.New("permission denied"), ""}, // judged by its value, not its text
		{sema.Errorf("x.y", "coded already"), "x.y"},
	} {
		err := fault("/s/sema.db", 0, tc.err)
		if got := sema.CodeOf(err); got != tc.code {
			t.Errorf("fault(%v) has code %q, want %q", tc.err, got, tc.code)
		}
		if !errors.Is(err, tc.err) {
			t.Errorf("fault(%v) does not wrap it", tc.err)
		}
	}
}
