package cassette

import (
	"os"
	"syscall"
)

// fdatasync makes f's data durable, without the metadata a read does not
// need (timestamps).
func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
