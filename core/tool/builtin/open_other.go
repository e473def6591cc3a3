//go:build !unix

package builtin

import (
	"io/fs"
	"os"
)

// openNonblock is zero where there is no O_NONBLOCK.
const openNonblock = 0

// setBlocking does nothing where there is no O_NONBLOCK.
func setBlocking(*os.File) error { return nil }

// links reports one hard link where the count is not known.
func links(fs.FileInfo) uint64 { return 1 }
