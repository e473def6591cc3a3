//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package config

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockFile takes an exclusive flock(2) on path (created if missing),
// waiting up to wait for another holder, and returns its release. The lock
// belongs to the open file description, so it excludes other processes and
// other descriptors of this one alike, and the kernel drops it when its
// holder dies however it dies.
func lockFile(path string, wait time.Duration) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	deadline := time.Now().Add(wait)
	pause := time.Millisecond
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if err != syscall.EINTR && !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if errors.Is(err, syscall.EWOULDBLOCK) {
			if !time.Now().Before(deadline) {
				f.Close()
				return nil, fmt.Errorf("lock %s: another openmax process has held it for over %v: %w", path, wait, err)
			}
			time.Sleep(pause)
			pause = min(2*pause, 50*time.Millisecond)
		}
	}
}
