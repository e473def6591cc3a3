// Package golden checks output against golden files and rewrites them on
// request: a whole file (a replay's transcript), or one named section of a
// txtar archive (the transcript of a session case, beside the case's
// script and steps). The tests and `openmax replay --golden --update` both
// use it, so a golden file written by one is exactly what the other
// checks.
package golden

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pmezard/go-difflib/difflib"
	"golang.org/x/tools/txtar"

	"github.com/openmax/openmax/internal/atomicfile"
)

// MismatchError reports output that differs from its golden file.
type MismatchError struct {
	Path    string // the golden file
	Section string // the txtar section, "" for a whole file
	Diff    string // unified diff, golden first
}

func (e *MismatchError) Error() string {
	where := e.Path
	if e.Section != "" {
		where += " (section " + e.Section + ")"
	}
	return fmt.Sprintf("differs from %s:\n%s", where, e.Diff)
}

// ErrMissing is returned (wrapped) when the golden file or section does
// not exist yet; writing it is an update.
var ErrMissing = errors.New("no golden yet (run with --update, or -update in go test, to create it)")

// Diff is the unified diff from want (named from) to got (named to), with
// two lines of context.
func Diff(from, to string, want, got []byte) string {
	d, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(want)), B: difflib.SplitLines(string(got)),
		FromFile: from, ToFile: to, Context: 2,
	})
	return d
}

// File compares got with the golden file at path, or with update writes
// got there (creating its directory). A difference is a *MismatchError
// whose diff names the output to.
func File(path, to string, got []byte, update bool) error {
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		return atomicfile.Write(path, got, 0o644)
	}
	want, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("golden file %s: %w", path, ErrMissing)
	}
	if err != nil {
		return fmt.Errorf("golden file: %w", err)
	}
	if bytes.Equal(want, got) {
		return nil
	}
	return &MismatchError{Path: path, Diff: Diff(path, to, want, got)}
}

// Section compares got with the section named name of the txtar archive
// at path, or with update rewrites that section (adding it at the end
// when missing) and leaves every other byte of the archive as it was.
func Section(path, name, to string, got []byte, update bool) error {
	a, err := txtar.ParseFile(path)
	if err != nil {
		return fmt.Errorf("golden archive: %w", err)
	}
	i := index(a, name)
	if update {
		if i < 0 {
			a.Files = append(a.Files, txtar.File{Name: name})
			i = len(a.Files) - 1
		}
		a.Files[i].Data = got
		return atomicfile.Write(path, txtar.Format(a), 0o644)
	}
	if i < 0 {
		return fmt.Errorf("golden archive %s, section %s: %w", path, name, ErrMissing)
	}
	if want := a.Files[i].Data; !bytes.Equal(want, got) {
		return &MismatchError{Path: path, Section: name, Diff: Diff(path+":"+name, to, want, got)}
	}
	return nil
}

func index(a *txtar.Archive, name string) int {
	for i, f := range a.Files {
		if f.Name == name {
			return i
		}
	}
	return -1
}
