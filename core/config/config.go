// Package config keeps the user's per-project settings in the user's config
// directory: which projects are trusted (turns run only in a trusted
// project) and each project's approval mode.
//
// The settings live in one file, dir/projects.json, shared by every openmax
// process of the user. Its guarantees:
//
//   - Every update is a read-modify-write of the current file under an
//     exclusive flock(2) on dir/projects.json.lock: it re-reads the file
//     under the lock and changes only its own project's keys, so concurrent
//     updates from any number of processes and goroutines are never lost.
//   - The file is replaced atomically and durably: a temp file in the same
//     directory is written and fsynced, renamed over projects.json, and the
//     directory is fsynced. A reader (who takes no lock) sees the old or the
//     new file whole, and an acknowledged update survives a power cut.
//   - Readers read the file, not a copy taken at Open, so a running session
//     sees a mode another process saved.
//   - A projects.json that cannot be read or parsed is an error naming the
//     file, and is never overwritten: an update refuses rather than replace
//     every trust with an empty map.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"
)

// Dir is $XDG_CONFIG_HOME/openmax, else $HOME/.config/openmax.
func Dir(getenv func(string) string) (string, error) {
	if x := getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "openmax"), nil
	}
	if h := getenv("HOME"); h != "" && filepath.IsAbs(h) {
		return filepath.Join(h, ".config", "openmax"), nil
	}
	return "", errors.New("config directory: neither XDG_CONFIG_HOME nor HOME is set")
}

// DefaultMode is the approval mode of a project that never chose one.
const DefaultMode = "ask"

const (
	fileName = "projects.json"
	lockName = "projects.json.lock"
)

// Variables so tests can shorten them.
var (
	// maxFileSize bounds what a read takes into memory: a projects file is
	// about a hundred bytes a project.
	maxFileSize = 16 << 20
	// lockWait is how long an update waits for another process's lock
	// before it fails.
	lockWait = 10 * time.Second
)

// Projects is the projects file. It is safe for concurrent use, within a
// process and across processes.
type Projects struct {
	path string
	lock string

	mu   sync.Mutex         // serializes this value's updates and its cache
	last map[string]Project // the file as last read or written
}

// Project is one project's settings.
type Project struct {
	Trusted bool   `json:"trusted"`
	Mode    string `json:"mode,omitempty"`
}

// Open reads dir/projects.json (a missing file is an empty one) to check
// that it is valid; later reads and updates go to the file again.
func Open(dir string) (*Projects, error) {
	p := &Projects{path: filepath.Join(dir, fileName), lock: filepath.Join(dir, lockName)}
	parsed, err := read(p.path)
	if err != nil {
		return nil, err
	}
	p.last = parsed.typed
	return p, nil
}

// Path is the projects file.
func (p *Projects) Path() string { return p.path }

// Canonical is the key a project's settings are kept under: its absolute
// path with every symbolic link resolved, so one directory reached through
// different links is one project (its trust and its approval mode). When
// the path cannot be resolved (it does not exist) it is the cleaned path.
func Canonical(project string) string {
	if real, err := filepath.EvalSymlinks(project); err == nil {
		if abs, err := filepath.Abs(real); err == nil {
			return abs
		}
	}
	return filepath.Clean(project)
}

// Get reads project's settings from the file as it is now (the zero
// Project when the project has none), under its canonical key; settings
// saved before keys were canonical, under the path as given, are read
// when the canonical key has none.
func (p *Projects) Get(project string) (Project, error) {
	parsed, err := read(p.path)
	if err != nil {
		return Project{}, err
	}
	p.mu.Lock()
	p.last = parsed.typed
	p.mu.Unlock()
	return lookup(parsed.typed, project), nil
}

// lookup is project's settings in m: under its canonical key, else as
// given.
func lookup(m map[string]Project, project string) Project {
	if pr, ok := m[Canonical(project)]; ok {
		return pr
	}
	return m[project]
}

// Trusted reports whether project is trusted, as the file says now; a file
// that has become unreadable counts as not trusted.
func (p *Projects) Trusted(project string) bool {
	pr, err := p.Get(project)
	return err == nil && pr.Trusted
}

// Trust marks project trusted and saves.
func (p *Projects) Trust(project string) error {
	return p.update(project, func(pr *Project) { pr.Trusted = true })
}

// Mode is project's approval mode, as the file says now. When the file has
// become unreadable it is the mode last read or saved through p: a session
// keeps the mode its user chose rather than fall back to a laxer default.
func (p *Projects) Mode(project string) string {
	pr, err := p.Get(project)
	if err != nil {
		p.mu.Lock()
		pr = lookup(p.last, project)
		p.mu.Unlock()
	}
	if pr.Mode == "" {
		return DefaultMode
	}
	return pr.Mode
}

// SetMode saves project's approval mode; on failure nothing changes.
func (p *Projects) SetMode(project, mode string) error {
	return p.update(project, func(pr *Project) { pr.Mode = mode })
}

// update changes project's settings in the file as it is now, under the
// lock and under the project's canonical key, keeping every other project
// and every key it does not know.
func (p *Projects) update(project string, change func(*Project)) error {
	given := project
	project = Canonical(project)
	p.mu.Lock()
	defer p.mu.Unlock()
	var saved map[string]Project
	err := replaceLocked(p.path, p.lock, func() (any, error) {
		cur, err := read(p.path)
		if err != nil {
			return nil, fmt.Errorf("%w (nothing was saved)", err)
		}
		entry := map[string]json.RawMessage{}
		if raw, ok := cur.raw[project]; ok {
			if err := json.Unmarshal(raw, &entry); err != nil || entry == nil {
				return nil, fmt.Errorf("config: %s: project %q is not an object (nothing was saved)", p.path, project)
			}
		}
		pr, ok := cur.typed[project]
		if !ok && given != project {
			pr = cur.typed[given] // saved under the path as given, before keys were canonical
		}
		change(&pr)
		entry["trusted"] = mustJSON(pr.Trusted)
		if pr.Mode != "" {
			entry["mode"] = mustJSON(pr.Mode)
		} else {
			delete(entry, "mode")
		}
		cur.raw[project] = mustJSON(entry)
		cur.top["projects"] = mustJSON(cur.raw)
		cur.typed[project] = pr
		saved = cur.typed
		return cur.top, nil
	})
	if err != nil {
		return err
	}
	p.last = saved
	return nil
}

// parsed is the projects file: its top-level object, the projects object
// kept raw (so an update rewrites other projects byte for byte, up to
// indentation) and decoded.
type parsed struct {
	top   map[string]json.RawMessage
	raw   map[string]json.RawMessage
	typed map[string]Project
}

// read reads and validates the projects file; a missing file is empty.
func read(path string) (parsed, error) {
	p := parsed{top: map[string]json.RawMessage{}, raw: map[string]json.RawMessage{}, typed: map[string]Project{}}
	data, found, err := readFile(path)
	if err != nil || !found {
		return p, err
	}
	invalid := func(why error) (parsed, error) {
		return p, fmt.Errorf("config: %s is not valid (fix or remove it; a trust lost with it is regained by `openmax trust`): %w", path, why)
	}
	if len(data) > maxFileSize {
		return invalid(fmt.Errorf("larger than %d bytes", maxFileSize))
	}
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return invalid(errors.New("not a JSON object"))
	}
	if err := json.Unmarshal(data, &p.top); err != nil {
		return invalid(err)
	}
	if p.top == nil {
		p.top = map[string]json.RawMessage{}
	}
	if raw, ok := p.top["projects"]; ok {
		if err := json.Unmarshal(raw, &p.raw); err != nil {
			return invalid(fmt.Errorf("projects: %w", err))
		}
		if p.raw == nil {
			p.raw = map[string]json.RawMessage{}
		}
	}
	for name, raw := range p.raw {
		if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
			return invalid(fmt.Errorf("project %q: not a JSON object", name))
		}
		var pr Project
		if err := json.Unmarshal(raw, &pr); err != nil {
			return invalid(fmt.Errorf("project %q: %w", name, err))
		}
		p.typed[name] = pr
	}
	return p, nil
}

func mustJSON(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // bools, strings and maps of raw JSON always encode
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// ModeStore binds the approval mode of one project (stdio.ModeStore).
type ModeStore struct {
	P       *Projects
	Project string
}

// Mode returns the project's mode as the file says now.
func (m ModeStore) Mode() string { return m.P.Mode(m.Project) }

// SetMode saves the project's mode.
func (m ModeStore) SetMode(mode string) error { return m.P.SetMode(m.Project, mode) }
