// Package safefile opens and reads files whose path someone else may
// control without ever blocking: a project's configuration (which the
// model can write), openmax's state and settings files. A FIFO in such a
// place would block an ordinary open until a writer came, for good; a
// directory or a device would be read as nothing or as an endless stream.
//
// Every open here is non-blocking (O_NONBLOCK, so a FIFO or device open
// returns at once), follows symbolic links, and is checked twice: with
// stat before the open (a device is never opened at all) and with fstat
// after it (a file swapped in between is caught). Anything but a regular
// file is refused with a *NotRegularError naming the path and what it is;
// the file handed back is regular and blocking again. Reads are bounded.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// ErrNotRegular is what every *NotRegularError is (errors.Is).
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge reports a file over the size ReadFile was given.
var ErrTooLarge = errors.New("file too large")

// NotRegularError is a path that is not a regular file.
type NotRegularError struct {
	Name string // the path as the caller named it
	Kind string // what it is: "a directory", "a named pipe (FIFO)", ...
}

func (e *NotRegularError) Error() string {
	if e.Kind == kindDir {
		return e.Name + " is a directory, not a regular file; not opened"
	}
	return fmt.Sprintf("%s is not a regular file (it is %s); not opened", e.Name, e.Kind)
}

// Is makes errors.Is(err, ErrNotRegular) hold.
func (e *NotRegularError) Is(target error) bool { return target == ErrNotRegular }

const kindDir = "a directory"

// Kind says what a file of mode m is, for messages: "a regular file", "a
// directory", "a named pipe (FIFO)", "a socket", "a character device", "a
// device", or "a special file".
func Kind(m fs.FileMode) string {
	switch t := m.Type(); {
	case t == 0:
		return "a regular file"
	case t&fs.ModeDir != 0:
		return kindDir
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a device"
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a special file"
}

// Regular returns a *NotRegularError naming name unless st describes a
// regular file.
func Regular(st fs.FileInfo, name string) error {
	if st.Mode().IsRegular() {
		return nil
	}
	return &NotRegularError{Name: name, Kind: Kind(st.Mode())}
}

// Stat is os.Stat (symbolic links followed) refusing anything but a
// regular file. It never opens the file.
func Stat(path string) (fs.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := Regular(st, path); err != nil {
		return nil, err
	}
	return st, nil
}

// Checked checks an open file with fstat: a regular file is made
// blocking again and its FileInfo returned; anything else is an error
// naming name (the caller closes f).
func Checked(f *os.File, name string) (fs.FileInfo, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := Regular(st, name); err != nil {
		return nil, err
	}
	if err := SetBlocking(f); err != nil {
		return nil, err
	}
	return st, nil
}

// OpenFile is os.OpenFile for a regular file that must never block: flag
// gets Nonblock, an existing path that is not a regular file is refused
// before it is opened, and the opened file is checked again with fstat.
// With os.O_CREATE a missing file is created as usual.
func OpenFile(path string, flag int, perm fs.FileMode) (*os.File, fs.FileInfo, error) {
	switch st, err := os.Stat(path); {
	case err == nil:
		if err := Regular(st, path); err != nil {
			return nil, nil, err
		}
	case !errors.Is(err, fs.ErrNotExist) || flag&os.O_CREATE == 0:
		return nil, nil, err
	}
	f, err := os.OpenFile(path, flag|Nonblock, perm)
	if err != nil {
		return nil, nil, err
	}
	st, err := Checked(f, path)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// Open opens the regular file path for reading (OpenFile).
func Open(path string) (*os.File, fs.FileInfo, error) {
	return OpenFile(path, os.O_RDONLY, 0)
}

// ReadFile reads the regular file path whole, refusing one of more than
// max bytes (an error wrapping ErrTooLarge) without reading past max+1.
func ReadFile(path string, max int64) ([]byte, error) {
	f, st, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > max {
		return nil, tooLarge(path, max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, tooLarge(path, max)
	}
	return data, nil
}

func tooLarge(path string, max int64) error {
	return fmt.Errorf("%s is larger than %d bytes: %w", path, max, ErrTooLarge)
}

// WriteFile is os.WriteFile for a path that must never block: what is
// there already must be a regular file (a FIFO would hold the open until a
// reader came), else it is refused and left alone.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	f, _, err := OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	return errors.Join(werr, f.Close())
}

// OpenDir opens the directory path for reading (its entries, or a sync)
// without ever blocking: the open insists on a directory and does not
// wait, so a FIFO or device in its place is refused, saying what it is.
func OpenDir(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory (it is %s); not opened", path, Kind(st.Mode()))
	}
	return os.OpenFile(path, os.O_RDONLY|dirFlag|Nonblock, 0)
}

// ReadDir is os.ReadDir (the entries sorted by name) for a directory that
// must never block (OpenDir).
func ReadDir(path string) ([]fs.DirEntry, error) {
	f, err := OpenDir(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}
