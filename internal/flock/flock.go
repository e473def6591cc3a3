// Package flock takes exclusive advisory locks on lock files, shared by
// the settings file and the session store. A lock belongs to its open file
// description: it excludes other processes and other descriptors of this
// one alike, and the kernel drops it when its holder dies however it dies.
// Where flock(2) does not exist, Lock fails with ErrUnsupported rather than
// pretend.
package flock

import (
	"errors"
	"os"
	"time"

	"github.com/openmax/openmax/internal/safefile"
)

// ErrHeld reports a lock another holder keeps (for longer than the wait).
var ErrHeld = errors.New("the lock is held by another process")

// ErrUnsupported reports a system without flock(2).
var ErrUnsupported = errors.New("file locks (flock) are not supported on this system")

// Lock is a held lock.
type Lock struct{ f *os.File }

// Acquire takes an exclusive lock on path, creating it with perm if
// missing. With wait 0 it fails at once (ErrHeld) when another holder has
// it; otherwise it retries until wait has passed. A path that is not a
// regular file (a FIFO, a directory, a device) is refused without blocking.
func Acquire(path string, perm os.FileMode, wait time.Duration) (*Lock, error) {
	f, _, err := safefile.OpenFile(path, os.O_RDWR|os.O_CREATE, perm)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	pause := time.Millisecond
	for {
		err := tryLock(f)
		if err == nil {
			return &Lock{f: f}, nil
		}
		if !errors.Is(err, ErrHeld) || !time.Now().Before(deadline) {
			f.Close()
			return nil, err
		}
		time.Sleep(pause) // another process holds it: nothing to wait on but time
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// Release drops the lock. Closing the only descriptor of the open file
// description drops it too; the explicit unlock is belt and braces.
func (l *Lock) Release() error {
	uerr := unlock(l.f)
	if cerr := l.f.Close(); cerr != nil {
		return cerr
	}
	return uerr
}
