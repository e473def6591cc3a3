// Package atomicfile replaces files so that a reader, or the next process
// after a crash, sees either the old content or the new content whole,
// never a torn mix: a synced temporary file in the same directory renamed
// over the target, then the directory synced so the rename itself is
// durable.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openmax/openmax/internal/safefile"
)

// Write replaces path with data, created with permission perm.
func Write(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	cherr := tmp.Chmod(perm)
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(cherr, werr, serr, cerr); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// SyncDir makes the entries of dir (a rename into it, a new file) durable.
func SyncDir(dir string) error {
	d, err := safefile.OpenDir(dir) // never blocks on a FIFO swapped in
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}
