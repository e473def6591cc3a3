//go:build !(linux && (amd64 || arm64 || riscv64))

package store

// kickWriteback does nothing where sync_file_range is missing: the fsync
// of Stream.Commit writes the whole record.
func kickWriteback(appendFile, int64, int64) {}
