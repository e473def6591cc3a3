//go:build linux && (amd64 || arm64 || riscv64)

package store

import "syscall"

// kickWriteback starts writing n bytes of f from off to the disk without
// waiting for them (sync_file_range with SYNC_FILE_RANGE_WRITE), so the
// fsync that makes a long streamed record durable waits only for its
// last part. Best effort: an error or a file without a descriptor changes
// nothing but when the bytes are written, and the fsync still writes them.
func kickWriteback(f appendFile, off, n int64) {
	sc, ok := f.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	const syncFileRangeWrite = 2 // SYNC_FILE_RANGE_WRITE
	rc.Control(func(fd uintptr) {
		syscall.Syscall6(syscall.SYS_SYNC_FILE_RANGE, fd, uintptr(off), uintptr(n), syncFileRangeWrite, 0, 0)
	})
}
