//go:build unix

package builtin

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openmax/openmax/core/tool"
)

// setBeforeOpen installs the hook that runs between a file's stat and its
// open, for the test.
func setBeforeOpen(t *testing.T, fn func(rel string)) {
	t.Helper()
	beforeOpen = fn
	t.Cleanup(func() { beforeOpen = nil })
}

// runBounded runs a tool call that must not block: a call still running
// after a few seconds fails the test (its goroutine is left behind).
func runBounded(t *testing.T, e *env, name string, args any) tool.Result {
	t.Helper()
	ch := make(chan tool.Result, 1)
	go func() { ch <- e.run(t, name, args) }()
	select {
	case res := <-ch:
		return res
	case <-time.After(5 * time.Second):
		t.Fatalf("%s blocked", name)
		return tool.Result{}
	}
}

// TestFIFOSwappedInIsRefused: a regular file replaced by a FIFO between the
// tool's stat and its open is refused (read_file, write_file, edit_file) or
// skipped (search), never waited on.
func TestFIFOSwappedInIsRefused(t *testing.T) {
	const refused = "f.txt is not a regular file (it is a named pipe (FIFO)); not opened"
	tests := []struct {
		tool string
		args m
		ok   bool
		out  string
	}{
		{"read_file", m{"path": "f.txt"}, false, refused},
		{"search", m{"pattern": "hello"}, true, "(no matches)"},
		{"search", m{"pattern": "hello", "path": "f.txt"}, true, "(no matches)"},
		{"write_file", m{"path": "f.txt", "content": "new\n"}, false, refused},
		{"edit_file", m{"path": "f.txt", "old_string": "hello", "new_string": "bye"}, false, refused},
	}
	for _, tc := range tests {
		t.Run(tc.tool, func(t *testing.T) {
			e := newEnv(t, Options{})
			e.write(t, "f.txt", "hello\n")
			p := filepath.Join(e.root, "f.txt")
			setBeforeOpen(t, func(rel string) {
				if rel != "f.txt" {
					return
				}
				if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
					if err := os.Remove(p); err != nil {
						t.Error(err)
					}
					if err := syscall.Mkfifo(p, 0o644); err != nil {
						t.Error(err)
					}
				}
			})
			checkResult(t, runBounded(t, e, tc.tool, tc.args), tc.ok, tc.out)
		})
	}
}

// TestSpecialFilesAreRefused: a FIFO already in place is refused by name
// and kind, and skipped by search.
func TestSpecialFilesAreRefused(t *testing.T) {
	e := newEnv(t, Options{})
	e.write(t, "a.txt", "hello\n")
	if err := syscall.Mkfifo(filepath.Join(e.root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	const refused = "fifo is not a regular file (it is a named pipe (FIFO)); not opened"
	checkResult(t, runBounded(t, e, "read_file", m{"path": "fifo"}), false, refused)
	checkResult(t, runBounded(t, e, "write_file", m{"path": "fifo", "content": "x"}), false, refused)
	checkResult(t, runBounded(t, e, "edit_file", m{"path": "fifo", "old_string": "a", "new_string": "b"}), false, refused)
	checkResult(t, runBounded(t, e, "search", m{"pattern": "hello"}), true, "a.txt:1: hello\n")
	checkResult(t, runBounded(t, e, "list_files", m{}), true, "a.txt\nfifo\n")
}

// TestHardLinks: a file with another hard link, perhaps outside the
// project, is never written (nor when the link appears between the stat and
// the open); reading it is allowed, as documented.
func TestHardLinks(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, Options{})
	if err := os.Link(outside, filepath.Join(e.root, "link.txt")); err != nil {
		t.Skip("cannot make hard links here:", err)
	}
	const refused = "link.txt has 2 hard links: writing it would also change the same file under its other names, which may be outside the project; refused"
	checkResult(t, e.run(t, "write_file", m{"path": "link.txt", "content": "changed\n"}), false, refused)
	checkResult(t, e.run(t, "edit_file", m{"path": "link.txt", "old_string": "outside", "new_string": "changed"}), false, refused)
	if data, _ := os.ReadFile(outside); string(data) != "outside\n" {
		t.Errorf("the outside file was changed: %q", data)
	}
	checkResult(t, e.run(t, "read_file", m{"path": "link.txt"}), true, "     1\toutside\n")
	checkResult(t, e.run(t, "search", m{"pattern": "outside"}), true, "link.txt:1: outside\n")

	t.Run("linked between stat and open", func(t *testing.T) {
		e.write(t, "f.txt", "mine\n")
		other := filepath.Join(t.TempDir(), "other")
		setBeforeOpen(t, func(rel string) {
			if rel == "f.txt" {
				_ = os.Link(filepath.Join(e.root, "f.txt"), other)
			}
		})
		checkResult(t, e.run(t, "write_file", m{"path": "f.txt", "content": "changed\n"}), false, "f.txt has 2 hard links")
		if data, _ := os.ReadFile(other); string(data) != "mine\n" {
			t.Errorf("the other link was changed: %q", data)
		}
	})
}

// bigFile writes a file of more than MaxEditFileSize bytes in lines of 64
// bytes and returns its line count.
func bigFile(t *testing.T, e *env, rel string) int {
	t.Helper()
	line := strings.Repeat("x", 63) + "\n"
	n := MaxEditFileSize/len(line) + 10
	f, err := os.Create(filepath.Join(e.root, rel))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := strings.Repeat(line, 1024)
	for i := 0; i < n/1024; i++ {
		f.WriteString(chunk)
	}
	f.WriteString(strings.Repeat(line, n%1024))
	return n
}

// TestHugeFiles: edit_file refuses files over MaxEditFileSize; write_file
// replaces one without holding it in memory, and its diff event gives the
// line counts and a note instead of 16 MiB of hunks.
func TestHugeFiles(t *testing.T) {
	e := newEnv(t, Options{})
	n := bigFile(t, e, "big.txt")
	size := int64(n * 64)
	res := e.run(t, "edit_file", m{"path": "big.txt", "old_string": "xx", "new_string": "yy", "replace_all": true})
	checkResult(t, res, false, fmt.Sprintf("big.txt is %s, over edit_file's limit of 16 MiB; change a file this big with run_command", sizeText(size)))

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res = e.run(t, "write_file", m{"path": "big.txt", "content": "small\n"})
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Errorf("write_file over a %d-byte file allocated %d bytes", size, alloc)
	}
	if !res.OK || len(res.Diffs) != 1 {
		t.Fatalf("write_file: %+v", res)
	}
	d := res.Diffs[0]
	wantNote := fmt.Sprintf("--- a/big.txt\n+++ b/big.txt\n[diff not computed: the old content is %s, the new 6 bytes; contents over 16 MiB are not diffed, every old line counts as removed and every new one as added]\n", sizeText(size))
	if d.Unified != wantNote || d.Added != 1 || d.Removed != n {
		t.Errorf("diff %+v", d)
	}
	if got := e.read(t, "big.txt"); got != "small\n" {
		t.Errorf("content %q", got)
	}

	// The same big content again: unchanged, without a diff.
	bigFile(t, e, "big.txt")
	content := e.read(t, "big.txt")
	res = e.run(t, "write_file", m{"path": "big.txt", "content": content})
	if !res.OK || res.Diffs != nil || !strings.Contains(res.Output, "unchanged") {
		t.Errorf("same content: %+v", res.Output)
	}
}

// TestDiffCap: a diff longer than DiffCap is cut at a line with a note
// giving its whole size; the line counts stay whole.
func TestDiffCap(t *testing.T) {
	e := newEnv(t, Options{DiffCap: 200})
	var old, new strings.Builder
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&old, "line %d\n", i)
		fmt.Fprintf(&new, "LINE %d\n", i)
	}
	e.write(t, "f.txt", old.String())
	res := e.run(t, "write_file", m{"path": "f.txt", "content": new.String()})
	if !res.OK || len(res.Diffs) != 1 {
		t.Fatalf("%+v", res)
	}
	d := res.Diffs[0]
	whole, _, _ := unifiedDiff("a/f.txt", "b/f.txt", old.String(), new.String())
	i := strings.LastIndex(d.Unified[:len(d.Unified)-1], "\n") + 1
	shown, note := d.Unified[:i], d.Unified[i:]
	if want := fmt.Sprintf("[diff cut: %d bytes, showing the first %d]", len(whole), len(shown)); note != want || len(shown) > 200 || !strings.HasPrefix(whole, shown) {
		t.Errorf("cut diff %q\nnote %q, want %q", shown, note, want)
	}
	if d.Added != 100 || d.Removed != 100 {
		t.Errorf("counts +%d -%d", d.Added, d.Removed)
	}
}
