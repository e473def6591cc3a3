package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"unsafe"

	"github.com/openmax/openmax/internal/citest"
)

// openPTY opens a pseudo-terminal pair: the controller end the test reads,
// and the terminal end a child process writes as if to a real terminal.
func openPTY(t *testing.T) (controller, terminal *os.File) {
	t.Helper()
	c, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		citest.SkipOutsideCI(t, fmt.Sprintf("no pseudo-terminals here (/dev/ptmx): %v", err))
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, c.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		c.Close()
		citest.SkipOutsideCI(t, fmt.Sprintf("no pseudo-terminals here (unlockpt): %v", e))
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, c.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		c.Close()
		citest.SkipOutsideCI(t, fmt.Sprintf("no pseudo-terminals here (ptsname): %v", e))
	}
	term, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		c.Close()
		citest.SkipOutsideCI(t, fmt.Sprintf("no pseudo-terminal to open here (/dev/pts): %v", err))
	}
	t.Cleanup(func() { c.Close(); term.Close() })
	return c, term
}
