//go:build !unix

package safefile

import (
	"io/fs"
	"os"
)

// Nonblock is zero where there is no O_NONBLOCK.
const Nonblock = 0

// SetBlocking does nothing where there is no O_NONBLOCK.
func SetBlocking(*os.File) error { return nil }

// Links reports one hard link where the count is not known.
func Links(fs.FileInfo) uint64 { return 1 }

// dirFlag makes an open fail on anything but a directory.
const dirFlag = 0
