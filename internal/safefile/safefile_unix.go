//go:build unix

package safefile

import (
	"io/fs"
	"os"
	"syscall"
)

// Nonblock makes an open return at once on a FIFO or device instead of
// waiting for the other end.
const Nonblock = syscall.O_NONBLOCK

// SetBlocking clears O_NONBLOCK on f, a regular file.
func SetBlocking(f *os.File) error {
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

// Links is the number of hard links of the file st describes.
func Links(st fs.FileInfo) uint64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Nlink)
	}
	return 1
}

// dirFlag makes an open fail on anything but a directory.
const dirFlag = syscall.O_DIRECTORY
