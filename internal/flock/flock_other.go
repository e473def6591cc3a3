//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package flock

import (
	"fmt"
	"os"
	"runtime"
)

func tryLock(*os.File) error { return fmt.Errorf("%w (%s)", ErrUnsupported, runtime.GOOS) }

func unlock(*os.File) error { return nil }
