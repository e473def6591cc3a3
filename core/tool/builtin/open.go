package builtin

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/openmax/openmax/internal/safefile"
)

// MaxEditFileSize is the largest file edit_file changes (16 MiB), and the
// largest content write_file and edit_file diff line by line: a write with
// a bigger side reports line counts and a note instead of hunks, and never
// holds the old content in memory.
const MaxEditFileSize = 16 << 20

// Opening files. A path is checked with stat before it is opened, but the
// file can be swapped in between (a FIFO, whose open would block until a
// writer comes, or a device), so every open is non-blocking and the opened
// file is checked again with fstat: only regular files are read or written.
// A file with more than one hard link is never written: the same file is
// reachable under its other names, which may be outside the project. Reads
// of such files are allowed (package managers such as pnpm hard-link whole
// trees); see docs/stdio.md.

// beforeOpen, when set (by tests), runs between the stat of a file and its
// open: where a file can be swapped.
var beforeOpen func(rel string)

// openRegular opens the regular file rel for reading, refusing
// directories and special files.
func openRegular(root *os.Root, rel, arg string) (*os.File, fs.FileInfo, error) {
	st, err := root.Stat(rel)
	if err != nil {
		return nil, nil, fileError(arg, err)
	}
	if err := regularOnly(st, arg); err != nil {
		return nil, nil, err
	}
	if beforeOpen != nil {
		beforeOpen(rel)
	}
	f, err := root.OpenFile(rel, os.O_RDONLY|safefile.Nonblock, 0)
	if err != nil {
		return nil, nil, fileError(arg, err)
	}
	if st, err = checkOpened(f, arg); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// openForWrite opens the file rel for reading and writing, creating it
// (and its missing parent directories) when create is set and it does not
// exist; existed reports whether it did. Directories, special files and
// files with more than one hard link are refused.
func openForWrite(root *os.Root, rel, arg string, create bool) (f *os.File, st fs.FileInfo, existed bool, err error) {
	switch st, err := root.Stat(rel); {
	case err == nil:
		if err := writableOnly(st, arg); err != nil {
			return nil, nil, false, err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, nil, false, fileError(arg, err)
	}
	if beforeOpen != nil {
		beforeOpen(rel)
	}
	for attempt := 0; ; attempt++ {
		f, err = root.OpenFile(rel, os.O_RDWR|safefile.Nonblock, 0)
		if err == nil {
			existed = true
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || !create || attempt > 0 {
			return nil, nil, false, fileError(arg, err)
		}
		if dir := filepath.Dir(rel); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return nil, nil, false, fmt.Errorf("creating the directories of %s: %v", arg, unwrapPath(err))
			}
		}
		f, err = root.OpenFile(rel, os.O_RDWR|os.O_CREATE|os.O_EXCL|safefile.Nonblock, 0o644)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, nil, false, fileError(arg, err)
		}
		// Created meanwhile: open what is there now.
	}
	st, err = checkOpened(f, arg)
	if err == nil {
		err = writableOnly(st, arg)
	}
	if err != nil {
		f.Close()
		return nil, nil, false, err
	}
	return f, st, existed, nil
}

// checkOpened checks with fstat that the opened f is a regular file, and
// makes it blocking again.
func checkOpened(f *os.File, arg string) (fs.FileInfo, error) {
	st, err := safefile.Checked(f, arg)
	var nr *safefile.NotRegularError
	if err != nil && !errors.As(err, &nr) {
		return nil, fileError(arg, err)
	}
	return st, err
}

// regularOnly refuses anything but a regular file.
func regularOnly(st fs.FileInfo, arg string) error { return safefile.Regular(st, arg) }

// writableOnly refuses what write_file and edit_file must not change:
// anything but a regular file, and a file with other hard links.
func writableOnly(st fs.FileInfo, arg string) error {
	if err := regularOnly(st, arg); err != nil {
		return err
	}
	if n := safefile.Links(st); n > 1 {
		return fmt.Errorf("%s has %d hard links: writing it would also change the same file under its other names, which may be outside the project; refused (write a new file instead, or remove the other links)", arg, n)
	}
	return nil
}

// readUpTo reads what is left of f, at most limit bytes; over reports that
// there was more (content is then incomplete).
func readUpTo(f *os.File, sizeHint int64, limit int) (content string, over bool, err error) {
	var sb strings.Builder
	sb.Grow(int(min(max(sizeHint, 0), int64(limit))) + 1)
	n, err := io.Copy(&sb, io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return "", false, err
	}
	if n > int64(limit) {
		return "", true, nil
	}
	return sb.String(), false, nil
}

// countLines counts the lines of r as splitLines would split it.
func countLines(r io.Reader) (int, error) {
	buf := make([]byte, 64<<10)
	lines, last := 0, byte('\n')
	for {
		n, err := r.Read(buf)
		if n > 0 {
			lines += bytes.Count(buf[:n], []byte{'\n'})
			last = buf[n-1]
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if last != '\n' {
		lines++
	}
	return lines, nil
}

// sizeText says how big n bytes are, for messages.
func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB (%d bytes)", float64(n)/(1<<20), n)
	}
	return fmt.Sprintf("%d bytes", n)
}
