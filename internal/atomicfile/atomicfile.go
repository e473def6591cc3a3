// Package atomicfile replaces files so that a reader, or the next process
// after a crash, sees either the old content or the new content whole,
// never a torn mix: a synced temporary file in the same directory renamed
// over the target, then the directory synced so the rename itself is
// durable.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/openmax/openmax/internal/safefile"
)

// Write replaces path with data, created with permission perm.
func Write(path string, data []byte, perm os.FileMode) error {
	return WriteWith(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteWith replaces path with what fill writes, created with permission
// perm, so content made in pieces need not be held whole in memory first.
// fill's writes are buffered; a fill that fails leaves path as it was.
func WriteWith(path string, perm os.FileMode, fill func(w io.Writer) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	cherr := tmp.Chmod(perm)
	werr := Fill(tmp, fill)
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

// Fill writes what fill writes to f through a buffer, and flushes it.
func Fill(f *os.File, fill func(w io.Writer) error) error {
	bw := bufio.NewWriterSize(f, 256<<10)
	if err := fill(bw); err != nil {
		return err
	}
	return bw.Flush()
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
