//go:build linux

package env

import (
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// fdFile is what Host.Open returns on Linux: the bare descriptor openat2 gave, read with
// read(2). An *os.File around it would cost a flag probe (fcntl) per open and a finalizer
// to set and clear, which a search of thousands of small files feels; a descriptor from
// a regular file never needs the poller those serve. It is not safe for concurrent use;
// Close releases the descriptor once, and a later Read or Close fails with fs.ErrClosed
// instead of touching a number the process may have handed to another file.
type fdFile struct {
	fd   int
	path string
}

func openRead(path string) (*fdFile, error) {
	fd, err := openNoSymlinks(path, unix.O_RDONLY, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return &fdFile{fd: fd, path: path}, nil
}

// Read reads up to len(p) bytes; it returns io.EOF at the end of the file.
func (f *fdFile) Read(p []byte) (int, error) {
	if f.fd < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.path, Err: fs.ErrClosed}
	}
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := unix.Read(f.fd, p)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return 0, &fs.PathError{Op: "read", Path: f.path, Err: err}
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// Close releases the descriptor.
func (f *fdFile) Close() error {
	if f.fd < 0 {
		return &fs.PathError{Op: "close", Path: f.path, Err: fs.ErrClosed}
	}
	fd := f.fd
	f.fd = -1
	// As os.File.Close: EINTR is not retried, since Linux has released the descriptor.
	if err := unix.Close(fd); err != nil && !errors.Is(err, unix.EINTR) {
		return &fs.PathError{Op: "close", Path: f.path, Err: err}
	}
	return nil
}

// describe is OpenedInfo for an fdFile: one fstat of the descriptor.
func (f *fdFile) describe() (FileInfo, error) {
	if f.fd < 0 {
		return FileInfo{}, &fs.PathError{Op: "stat", Path: f.path, Err: fs.ErrClosed}
	}
	var st unix.Stat_t
	if err := unix.Fstat(f.fd, &st); err != nil {
		return FileInfo{}, &fs.PathError{Op: "stat", Path: f.path, Err: err}
	}
	return FileInfo{
		Name:    filepath.Base(f.path),
		Size:    st.Size,
		Mode:    modeOf(st.Mode),
		ModTime: time.Unix(st.Mtim.Unix()),
		Dev:     st.Dev,
		Ino:     st.Ino,
		Nlink:   st.Nlink,
	}, nil
}

// modeOf converts st_mode as package os does for a FileInfo.
func modeOf(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// unixMode is mode as chmod takes it: the permission bits and the setuid, setgid and
// sticky bits, which fs.FileMode keeps apart from them (as os.Chmod converts them).
func unixMode(mode fs.FileMode) uint32 {
	m := uint32(mode.Perm())
	if mode&fs.ModeSetuid != 0 {
		m |= unix.S_ISUID
	}
	if mode&fs.ModeSetgid != 0 {
		m |= unix.S_ISGID
	}
	if mode&fs.ModeSticky != 0 {
		m |= unix.S_ISVTX
	}
	return m
}
