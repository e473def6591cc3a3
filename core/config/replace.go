package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/openmax/openmax/internal/atomicfile"
	"github.com/openmax/openmax/internal/flock"
	"github.com/openmax/openmax/internal/safefile"
)

// replaceLocked is the update both settings files make: under an exclusive
// flock on lock (its directory created first, the wait bounded by
// lockWait), modify reads the file as it is now and returns what to save
// instead (nil: nothing to save); that is written as indented JSON and
// replaces path atomically and durably. An error of modify's is returned
// as it is, and nothing is saved.
func replaceLocked(path, lock string, modify func() (any, error)) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	l, err := flock.Acquire(lock, 0o600, lockWait)
	if errors.Is(err, flock.ErrHeld) {
		err = fmt.Errorf("another openmax process has held %s for over %v: %w", lock, lockWait, err)
	}
	if err != nil {
		return fmt.Errorf("config: lock: %w", err)
	}
	defer l.Release()
	v, err := modify()
	if err != nil || v == nil {
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := atomicfile.Write(path, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("config: save %s: %w", path, err)
	}
	return nil
}

// readFile reads a settings file as it is now, at most maxFileSize+1
// bytes (so the caller can tell one that is too large); found is false
// when there is no file.
func readFile(path string) (data []byte, found bool, err error) {
	f, _, err := safefile.Open(path) // never blocks: a FIFO or directory here is an error
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("config: cannot read %s: %w", path, err)
	}
	defer f.Close()
	data, err = io.ReadAll(io.LimitReader(f, int64(maxFileSize)+1))
	if err != nil {
		return nil, false, fmt.Errorf("config: cannot read %s: %w", path, err)
	}
	return data, true, nil
}
