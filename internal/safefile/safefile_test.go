//go:build unix

package safefile_test

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openmax/openmax/internal/safefile"
)

// places makes one of each kind of file in a fresh directory and returns
// the directory.
func places(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "file"), []byte("hello\n"), 0o600))
	must(os.WriteFile(filepath.Join(dir, "big"), make([]byte, 100), 0o600))
	must(syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	must(os.Mkdir(filepath.Join(dir, "dir"), 0o700))
	must(os.Symlink("fifo", filepath.Join(dir, "link-to-fifo")))
	must(os.Symlink("file", filepath.Join(dir, "link-to-file")))
	must(os.Symlink("/dev/null", filepath.Join(dir, "link-to-device")))
	// A socket's path is short-limited: make it under a short directory.
	sockDir, err := os.MkdirTemp("", "sf")
	must(err)
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	l, err := net.Listen("unix", filepath.Join(sockDir, "s"))
	must(err)
	t.Cleanup(func() { l.Close() })
	must(os.Symlink(filepath.Join(sockDir, "s"), filepath.Join(dir, "socket")))
	return dir
}

// bounded runs f, failing the test if it has not returned within a
// generous deadline (a hang guard: f must never block).
func bounded(t *testing.T, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("blocked")
		return nil
	}
}

// TestNeverBlocks: each way in (Open, ReadFile, OpenFile with O_CREATE
// and O_WRONLY, WriteFile, flock-style O_RDWR) returns at once on a FIFO,
// a directory, a device and a socket, refusing each with an error that
// names the path and what it is; a regular file, or a link to one, is read.
func TestNeverBlocks(t *testing.T) {
	dir := places(t)
	ways := []struct {
		name string
		do   func(path string) ([]byte, error)
	}{
		{"ReadFile", func(p string) ([]byte, error) { return safefile.ReadFile(p, 64) }},
		{"Open", func(p string) ([]byte, error) {
			f, _, err := safefile.Open(p)
			if err == nil {
				f.Close()
			}
			return nil, err
		}},
		{"OpenFile write", func(p string) ([]byte, error) {
			f, _, err := safefile.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o600)
			if err == nil {
				f.Close()
			}
			return nil, err
		}},
		{"OpenFile read-write", func(p string) ([]byte, error) {
			f, _, err := safefile.OpenFile(p, os.O_RDWR|os.O_APPEND, 0)
			if err == nil {
				f.Close()
			}
			return nil, err
		}},
	}
	files := []struct {
		name, kind string // kind "": readable
	}{
		{"file", ""},
		{"link-to-file", ""},
		{"fifo", "a named pipe (FIFO)"},
		{"link-to-fifo", "a named pipe (FIFO)"},
		{"dir", "a directory"},
		{"link-to-device", "a character device"},
		{"socket", "a socket"},
	}
	for _, w := range ways {
		for _, f := range files {
			t.Run(w.name+"/"+f.name, func(t *testing.T) {
				path := filepath.Join(dir, f.name)
				var data []byte
				err := bounded(t, func() (err error) { data, err = w.do(path); return err })
				if f.kind == "" {
					if err != nil {
						t.Fatal(err)
					}
					if w.name == "ReadFile" && string(data) != "hello\n" {
						t.Errorf("read %q", data)
					}
					return
				}
				var nr *safefile.NotRegularError
				if !errors.As(err, &nr) || !errors.Is(err, safefile.ErrNotRegular) || nr.Kind != f.kind {
					t.Fatalf("err %v, want a NotRegularError saying %s", err, f.kind)
				}
				if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), f.kind) {
					t.Errorf("message %q does not name %s and %s", err, path, f.kind)
				}
			})
		}
	}
}

func TestReadFileBounds(t *testing.T) {
	dir := places(t)
	if _, err := safefile.ReadFile(filepath.Join(dir, "big"), 99); !errors.Is(err, safefile.ErrTooLarge) {
		t.Errorf("100 bytes with a limit of 99: %v", err)
	}
	if data, err := safefile.ReadFile(filepath.Join(dir, "big"), 100); err != nil || len(data) != 100 {
		t.Errorf("100 bytes with a limit of 100: %d bytes, %v", len(data), err)
	}
	if _, err := safefile.ReadFile(filepath.Join(dir, "missing"), 10); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

// TestWriteFileLeavesAFIFOAlone: WriteFile over a FIFO is refused at once,
// and the FIFO is still there; over a missing file it creates it.
func TestWriteFileLeavesAFIFOAlone(t *testing.T) {
	dir := places(t)
	fifo := filepath.Join(dir, "fifo")
	if err := bounded(t, func() error { return safefile.WriteFile(fifo, []byte("x"), 0o600) }); !errors.Is(err, safefile.ErrNotRegular) {
		t.Errorf("over a FIFO: %v", err)
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode().Type() != fs.ModeNamedPipe {
		t.Errorf("the FIFO is now %v (%v)", st, err)
	}
	fresh := filepath.Join(dir, "fresh")
	if err := safefile.WriteFile(fresh, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(fresh); err != nil || string(data) != "new" {
		t.Errorf("fresh file %q (%v)", data, err)
	}
}

// TestReadDirNeverBlocks: ReadDir and OpenDir on a FIFO (or a link to one)
// or a file are refused at once, naming what is there; a directory lists.
func TestReadDirNeverBlocks(t *testing.T) {
	dir := places(t)
	cases := []struct {
		name, want string // want "": lists
	}{
		{"dir", ""},
		{"fifo", "is not a directory (it is a named pipe (FIFO))"},
		{"link-to-fifo", "is not a directory (it is a named pipe (FIFO))"},
		{"file", "is not a directory (it is a regular file)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := bounded(t, func() error { _, err := safefile.ReadDir(filepath.Join(dir, tc.name)); return err })
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
	entries, err := safefile.ReadDir(dir)
	if err != nil || len(entries) == 0 || entries[0].Name() != "big" {
		t.Errorf("entries %v (%v), want them sorted, big first", entries, err)
	}
}
