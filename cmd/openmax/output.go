package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/openmax/openmax/internal/atomicfile"
)

// errOutputExists reports an output file that is already there when
// --overwrite was not given.
var errOutputExists = errors.New("already exists")

// outputFile is a file a command writes, named on its command line. Every
// command applies the same rule to one: it is never one of the command's
// own inputs (even with --overwrite), and a file already there is replaced
// only with --overwrite. Both are checked before any work is done, so a
// mistake on the command line costs nothing.
type outputFile struct {
	path      string
	overwrite bool
}

// check refuses an output that is one of inputs (the same file by any
// name) or, without --overwrite, that already exists. Both are usage
// errors.
func (o outputFile) check(inputs ...string) error {
	st, err := os.Stat(o.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("%s: %w", o.path, err)
	}
	for _, in := range inputs {
		if ist, err := os.Stat(in); err == nil && os.SameFile(st, ist) {
			return fmt.Errorf("the output %s is the input %s; write to another file", o.path, in)
		}
	}
	if st.IsDir() {
		return fmt.Errorf("the output %s is a directory", o.path)
	}
	if !o.overwrite {
		return fmt.Errorf("%s %w (write to a new file, or pass --overwrite to replace it)", o.path, errOutputExists)
	}
	return nil
}

// write writes data to the output whole (a reader sees the old file or
// the new one, never a torn mix). Without --overwrite it never replaces a
// file that appeared since check: the new file is linked into place,
// which fails when the name is taken.
func (o outputFile) write(data []byte, perm os.FileMode) error {
	if o.overwrite {
		return atomicfile.Write(o.path, data, perm)
	}
	dir := filepath.Dir(o.path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(o.path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	cherr := tmp.Chmod(perm)
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	if err := errors.Join(cherr, werr, serr, tmp.Close()); err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), o.path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s %w (write to a new file, or pass --overwrite to replace it)", o.path, errOutputExists)
		}
		return err
	}
	return atomicfile.SyncDir(dir)
}

// create opens the output for a command that streams into it (a log):
// without --overwrite it is created only when the name is free (O_EXCL, so
// a file that appeared since check is not truncated either); with it, an
// existing regular file is truncated.
func (o outputFile) create(perm os.FileMode) (*os.File, error) {
	flag := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if o.overwrite {
		flag = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(o.path, flag, perm)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("%s %w (write to a new file, or pass --overwrite to replace it)", o.path, errOutputExists)
	}
	return f, err
}
