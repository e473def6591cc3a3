package scan

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// WalkExts are the file names a directory walk scans: recordings (YAML
// cassettes, httprr traces) and openmax's golden transcripts and txtar
// session cases.
var WalkExts = []string{".yaml", ".yml", ".httprr", ".txtar", ".golden"}

// Files lists the files to scan for the paths given: a file is scanned
// whatever its name; a directory is walked, in lexical order, for the
// names of WalkExts. The walk never enters .git, and follows no symbolic
// link to a directory below the path given (so no loop), while a link to
// a file is listed. A
// path that is not there, or not a regular file or directory, is
// returned as an error beside the others, so one bad path does not hide
// the rest.
func Files(paths []string) (files []string, errs []error) {
	for _, root := range paths {
		fi, err := os.Stat(root)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !fi.IsDir() {
			files = append(files, root)
			continue
		}
		// A root that is a link to a directory is walked too: with a
		// trailing separator WalkDir follows it.
		if !strings.HasSuffix(root, string(filepath.Separator)) {
			root += string(filepath.Separator)
		}
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				errs = append(errs, err)
				if d != nil && d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				if d.Name() == ".git" && p != root {
					return fs.SkipDir
				}
				return nil
			}
			if !walked(d.Name()) {
				return nil
			}
			if d.Type()&fs.ModeSymlink != 0 {
				fi, err := os.Stat(p)
				if err != nil {
					errs = append(errs, err)
					return nil
				}
				if fi.IsDir() {
					return nil
				}
			}
			files = append(files, p)
			return nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", root, err))
		}
	}
	return files, errs
}

func walked(name string) bool {
	l := strings.ToLower(name)
	for _, e := range WalkExts {
		if strings.HasSuffix(l, e) {
			return true
		}
	}
	return false
}
