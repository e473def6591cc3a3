package config

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
)

// The approved sources of external tools live in dir/sources.json, under
// the same guarantees as projects.json: every update is a read-modify-write
// under an exclusive flock on dir/sources.json.lock, the file is replaced
// atomically and durably, readers read the file as it is now, and a file
// that cannot be parsed is an error and is never overwritten.
//
// The file maps a project (its absolute path) to its files (project-
// relative, slash-separated) to the sha256 digests (64 hex digits) of the
// exact bytes a human approved:
//
//	{"projects": {"/home/me/app": {".openmax/tools/greet.json": ["9f86d0…"]}}}
const (
	sourcesName     = "sources.json"
	sourcesLockName = "sources.json.lock"
	// maxApprovedPerFile bounds the digests kept per file: the oldest
	// approvals are forgotten first.
	maxApprovedPerFile = 32
)

// Sources remembers which exact bytes of which project files a human
// approved. It is safe for concurrent use, within a process and across
// processes.
type Sources struct {
	path string
	lock string
	mu   sync.Mutex // serializes this value's updates
}

// OpenSources returns the approved-sources file of config directory dir
// after checking that it can be read (a missing file approves nothing).
func OpenSources(dir string) (*Sources, error) {
	s := &Sources{path: filepath.Join(dir, sourcesName), lock: filepath.Join(dir, sourcesLockName)}
	if _, err := readSources(s.path); err != nil {
		return nil, err
	}
	return s, nil
}

// Path is the approved-sources file.
func (s *Sources) Path() string { return s.path }

// Approved reports whether a human approved the bytes whose sha256 is sum
// (hex) for file path of project (keyed by its canonical path, as the
// project settings are). A file that cannot be read approves nothing.
func (s *Sources) Approved(project, path, sum string) bool {
	project = Canonical(project)
	cur, err := readSources(s.path)
	if err != nil {
		return false
	}
	for _, have := range cur[project][path] {
		if have == sum {
			return true
		}
	}
	return false
}

// Approve remembers that a human approved the bytes whose sha256 is sum
// (hex) for file path of project, under its canonical path.
func (s *Sources) Approve(project, path, sum string) error {
	if len(sum) != 64 {
		return fmt.Errorf("config: approve %s: %q is not a sha256 digest", path, sum)
	}
	project = Canonical(project)
	s.mu.Lock()
	defer s.mu.Unlock()
	return replaceLocked(s.path, s.lock, func() (any, error) {
		cur, err := readSources(s.path)
		if err != nil {
			return nil, fmt.Errorf("%w (nothing was saved)", err)
		}
		files := cur[project]
		if files == nil {
			files = map[string][]string{}
			cur[project] = files
		}
		sums := files[path]
		for _, have := range sums {
			if have == sum {
				return nil, nil // approved already: nothing to save
			}
		}
		sums = append(sums, sum)
		if len(sums) > maxApprovedPerFile {
			sums = sums[len(sums)-maxApprovedPerFile:]
		}
		files[path] = sums
		return sourcesFile{Projects: cur}, nil
	})
}

type sourcesFile struct {
	Projects map[string]map[string][]string `json:"projects"`
}

// readSources reads the approved-sources file; a missing file is empty.
func readSources(path string) (map[string]map[string][]string, error) {
	data, found, err := readFile(path)
	if err != nil {
		return nil, err
	}
	if !found {
		return map[string]map[string][]string{}, nil
	}
	invalid := func(why error) (map[string]map[string][]string, error) {
		return nil, fmt.Errorf("config: %s is not valid (fix or remove it; approvals lost with it are asked for again): %w", path, why)
	}
	if len(data) > maxFileSize {
		return invalid(fmt.Errorf("larger than %d bytes", maxFileSize))
	}
	var sf sourcesFile
	if err := json.Unmarshal(data, &sf); err != nil {
		return invalid(err)
	}
	if sf.Projects == nil {
		sf.Projects = map[string]map[string][]string{}
	}
	return sf.Projects, nil
}

// SourceStore binds the approved sources of one project
// (external.Approvals).
type SourceStore struct {
	S       *Sources
	Project string
}

// Approved reports whether the bytes with sha256 sum of path were approved.
func (s SourceStore) Approved(path, sum string) bool { return s.S.Approved(s.Project, path, sum) }

// Approve remembers the approval of the bytes with sha256 sum of path.
func (s SourceStore) Approve(path, sum string) error { return s.S.Approve(s.Project, path, sum) }
