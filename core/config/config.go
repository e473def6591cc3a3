// Package config keeps the user's per-project settings in the user's config
// directory: which projects are trusted (turns run only in a trusted
// project) and each project's approval mode.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
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

// Projects is the projects file. It is safe for concurrent use.
type Projects struct {
	path string
	mu   sync.Mutex
	data file
}

type file struct {
	Projects map[string]*Project `json:"projects"`
}

// Project is one project's settings.
type Project struct {
	Trusted bool   `json:"trusted"`
	Mode    string `json:"mode,omitempty"`
}

// Open reads dir/projects.json (a missing file is an empty one).
func Open(dir string) (*Projects, error) {
	p := &Projects{path: filepath.Join(dir, "projects.json"), data: file{Projects: map[string]*Project{}}}
	data, err := os.ReadFile(p.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return p, nil
	case err != nil:
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := json.Unmarshal(data, &p.data); err != nil {
		return nil, fmt.Errorf("config: %s is not valid: %w", p.path, err)
	}
	if p.data.Projects == nil {
		p.data.Projects = map[string]*Project{}
	}
	return p, nil
}

// Trusted reports whether project is trusted.
func (p *Projects) Trusted(project string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	pr := p.data.Projects[project]
	return pr != nil && pr.Trusted
}

// Trust marks project trusted and saves.
func (p *Projects) Trust(project string) error {
	return p.update(project, func(pr *Project) { pr.Trusted = true })
}

// Mode is project's approval mode.
func (p *Projects) Mode(project string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pr := p.data.Projects[project]; pr != nil && pr.Mode != "" {
		return pr.Mode
	}
	return DefaultMode
}

// SetMode saves project's approval mode; on failure nothing changes.
func (p *Projects) SetMode(project, mode string) error {
	return p.update(project, func(pr *Project) { pr.Mode = mode })
}

func (p *Projects) update(project string, change func(*Project)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	old, had := p.data.Projects[project]
	pr := &Project{}
	if had {
		*pr = *old
	}
	change(pr)
	p.data.Projects[project] = pr
	if err := p.saveLocked(); err != nil {
		if had {
			p.data.Projects[project] = old
		} else {
			delete(p.data.Projects, project)
		}
		return err
	}
	return nil
}

// saveLocked writes the file atomically.
func (p *Projects) saveLocked() error {
	data, err := json.MarshalIndent(p.data, "", "  ")
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(p.path), 0o700); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p.path), ".projects.json.*")
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	_, werr := tmp.Write(append(data, '\n'))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("config: %w", err)
	}
	if err := os.Rename(tmp.Name(), p.path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// ModeStore binds the approval mode of one project (stdio.ModeStore).
type ModeStore struct {
	P       *Projects
	Project string
}

// Mode returns the project's mode.
func (m ModeStore) Mode() string { return m.P.Mode(m.Project) }

// SetMode saves the project's mode.
func (m ModeStore) SetMode(mode string) error { return m.P.SetMode(m.Project, mode) }
