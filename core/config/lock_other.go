//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package config

import (
	"fmt"
	"runtime"
	"time"
)

// lockFile is unsupported here: without a file lock concurrent updates
// could be lost, so every update fails with a clear error instead.
func lockFile(path string, wait time.Duration) (func(), error) {
	return nil, fmt.Errorf("lock %s: saving settings needs flock(2), which openmax does not support on %s", path, runtime.GOOS)
}
