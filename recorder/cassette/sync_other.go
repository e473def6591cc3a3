//go:build !linux

package cassette

import "os"

// fdatasync makes f's data durable.
func fdatasync(f *os.File) error { return f.Sync() }
