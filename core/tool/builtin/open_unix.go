//go:build unix

package builtin

import (
	"io/fs"
	"os"
	"syscall"
)

// openNonblock makes an open return at once on a FIFO or device instead of
// waiting for the other end; the opened file is checked with fstat and the
// flag cleared before it is read or written.
const openNonblock = syscall.O_NONBLOCK

// setBlocking clears O_NONBLOCK on f, a regular file.
func setBlocking(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), false) }); err != nil {
		return err
	}
	return serr
}

// links is the number of hard links of the file st describes.
func links(st fs.FileInfo) uint64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Nlink)
	}
	return 1
}
