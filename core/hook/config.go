package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/tool/builtin"
	"github.com/openmax/openmax/internal/safefile"
)

// File names of the two hook files.
const (
	// ProjectFile is the project's hook file, relative to the project root.
	ProjectFile = ".openmax/hooks.json"
	// UserFile is the user's hook file, relative to the user's config
	// directory (config.Dir).
	UserFile = "hooks.json"
)

// Lifecycles of a hook process.
const (
	// Persistent: one process serves every message of the session.
	Persistent = "persistent"
	// PerEvent: a process per message, which gets the message and EOF.
	PerEvent = "process-per-event"
)

// Modes of a hook.
const (
	// ModeIntercept: the hook answers and may refuse (intercept events only).
	ModeIntercept = "intercept"
	// ModeObserve: the hook is notified and cannot change anything.
	ModeObserve = "observe"
)

// Limits and defaults of the configuration.
const (
	DefaultTimeout = 30 * time.Second
	MaxTimeout     = 10 * time.Minute
	maxFileSize    = 1 << 20
)

// Hook is one configured hook, checked.
type Hook struct {
	Name      string
	Event     core.HookEvent
	Mode      string // ModeIntercept or ModeObserve
	Command   string // absolute, or a bare name looked up in the hook's PATH
	Args      []string
	Lifecycle string // Persistent or PerEvent
	Env       map[string]string
	Timeout   time.Duration
	Dir       string // the working directory: the project root, else the file's directory
	File      string // the file that defines it
}

// fileHook is one entry of a hook file as written.
type fileHook struct {
	Name      string            `json:"name"`
	Event     string            `json:"event"`
	Mode      string            `json:"mode"`
	Command   string            `json:"command"`
	Args      []string          `json:"args"`
	Lifecycle string            `json:"lifecycle"`
	Env       map[string]string `json:"env"`
	Timeout   string            `json:"timeout"`
}

// hookFile is a hook file as written.
type hookFile struct {
	Hooks []json.RawMessage `json:"hooks"`
}

var (
	knownEvents = map[core.HookEvent]bool{
		core.HookUserPromptSubmit: true, core.HookTurnEnd: true,
		core.HookTurnStart: true, core.HookToolStart: true, core.HookToolEnd: true, core.HookTurnDone: true,
	}
	hookName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`) })
	envName  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
)

// fileError is a hook file that is not loaded: the failure names the file
// and, when the fault is in one entry, that entry's event.
type fileError struct {
	event  core.HookEvent
	detail string
}

func (e *fileError) Error() string { return e.detail }

// readFile reads and checks one hook file. A missing file has no hooks and
// no error. base resolves relative commands and is the working directory.
func readFile(path, base string) ([]*Hook, error) {
	// Never blocks: a FIFO, directory or device in the file's place is
	// refused, saying what it is.
	data, err := safefile.ReadFile(path, maxFileSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, safefile.ErrTooLarge):
		return nil, &fileError{detail: fmt.Sprintf("the hook file is larger than %d bytes; no hook of it is loaded", maxFileSize)}
	case err != nil:
		return nil, &fileError{detail: fmt.Sprintf("cannot read the hook file: %v", err)}
	}
	var hf hookFile
	if err := strictJSON(data, &hf); err != nil {
		return nil, &fileError{detail: fmt.Sprintf("the hook file is not valid (no hook of it is loaded): %v", err)}
	}
	var hooks []*Hook
	seen := map[string]bool{}
	for i, raw := range hf.Hooks {
		var fh fileHook
		if err := strictJSON(raw, &fh); err != nil {
			return nil, &fileError{detail: fmt.Sprintf("hooks[%d] is not valid (no hook of the file is loaded): %v", i, err)}
		}
		h, err := check(fh, base)
		if err == nil && seen[h.Name] {
			err = fmt.Errorf("name %q is used twice", h.Name)
		}
		if err != nil {
			return nil, &fileError{event: core.HookEvent(safeEvent(fh.Event)),
				detail: fmt.Sprintf("hooks[%d] is not valid (no hook of the file is loaded): %v", i, err)}
		}
		seen[h.Name] = true
		h.File = path
		hooks = append(hooks, h)
	}
	return hooks, nil
}

// safeEvent is the event an entry names when it is a known one, for the
// failure; anything else is left out rather than echoed.
func safeEvent(e string) string {
	if knownEvents[core.HookEvent(e)] {
		return e
	}
	return ""
}

// strictJSON decodes one JSON value into v, refusing unknown fields and
// trailing data, so a misspelt key is an error rather than a silent default.
func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the JSON value")
	}
	return nil
}

// check validates one entry. Errors name fields and env variable names,
// never env values.
func check(fh fileHook, base string) (*Hook, error) {
	h := &Hook{
		Name: fh.Name, Event: core.HookEvent(fh.Event), Mode: fh.Mode, Command: fh.Command,
		Args: fh.Args, Lifecycle: fh.Lifecycle, Timeout: DefaultTimeout, Dir: base,
	}
	if !hookName().MatchString(h.Name) {
		return nil, fmt.Errorf("name %q: want 1 to 64 letters, digits, '.', '_' or '-'", h.Name)
	}
	if !knownEvents[h.Event] {
		return nil, fmt.Errorf("hook %q: unknown event %q", h.Name, fh.Event)
	}
	switch h.Mode {
	case "":
		h.Mode = ModeObserve
		if h.Event.Intercept() {
			h.Mode = ModeIntercept
		}
	case ModeIntercept:
		if !h.Event.Intercept() {
			return nil, fmt.Errorf("hook %q: event %s can only be observed (mode observe)", h.Name, h.Event)
		}
	case ModeObserve:
	default:
		return nil, fmt.Errorf("hook %q: mode %q: want intercept or observe", h.Name, h.Mode)
	}
	switch h.Lifecycle {
	case "":
		h.Lifecycle = PerEvent
	case Persistent, PerEvent:
	default:
		return nil, fmt.Errorf("hook %q: lifecycle %q: want persistent or process-per-event", h.Name, h.Lifecycle)
	}
	if h.Command == "" || strings.ContainsRune(h.Command, 0) {
		return nil, fmt.Errorf("hook %q: command is missing", h.Name)
	}
	if strings.ContainsRune(h.Command, '/') && !filepath.IsAbs(h.Command) {
		h.Command = filepath.Join(base, h.Command)
	}
	for i, a := range h.Args {
		if strings.ContainsRune(a, 0) {
			return nil, fmt.Errorf("hook %q: args[%d] contains a NUL byte", h.Name, i)
		}
	}
	if len(fh.Env) > 0 {
		h.Env = make(map[string]string, len(fh.Env))
		for k, v := range fh.Env {
			if !envName().MatchString(k) {
				return nil, fmt.Errorf("hook %q: env name %q is not a valid variable name", h.Name, k)
			}
			if k == builtin.AgentSpawnedEnv {
				return nil, fmt.Errorf("hook %q: env %s is openmax's to set", h.Name, k)
			}
			if strings.ContainsRune(v, 0) {
				return nil, fmt.Errorf("hook %q: the value of env %s contains a NUL byte", h.Name, k)
			}
			h.Env[k] = v
		}
	}
	if fh.Timeout != "" {
		d, err := time.ParseDuration(fh.Timeout)
		if err != nil || d <= 0 || d > MaxTimeout {
			return nil, fmt.Errorf("hook %q: timeout %q: want a duration such as \"5s\", above 0 and at most %v", h.Name, fh.Timeout, MaxTimeout)
		}
		h.Timeout = d
	}
	return h, nil
}

// loadAll reads the user's file, then the project's: user hooks run first,
// each file's in its order. A project hook may not reuse a user hook's
// name (the project's file is one the agent can write; it must not be
// able to replace the user's hooks): that makes the project file invalid.
func loadAll(project, userDir string) ([]*Hook, []core.HookFailure) {
	var hooks []*Hook
	var failures []core.HookFailure
	names := map[string]bool{}
	type source struct{ path, base string }
	var sources []source
	if userDir != "" {
		sources = append(sources, source{filepath.Join(userDir, UserFile), userDir})
	}
	if project != "" {
		sources = append(sources, source{filepath.Join(project, filepath.FromSlash(ProjectFile)), project})
	}
	for _, src := range sources {
		hs, err := readFile(src.path, src.base)
		if err == nil {
			for _, h := range hs {
				if names[h.Name] {
					err = &fileError{event: h.Event, detail: fmt.Sprintf("hook %q is already defined by the user's hook file (no hook of this file is loaded)", h.Name)}
					break
				}
			}
		}
		if err != nil {
			var fe *fileError
			if !errors.As(err, &fe) {
				fe = &fileError{detail: err.Error()}
			}
			failures = append(failures, core.HookFailure{Hook: src.path, Event: fe.event, Detail: fe.detail})
			continue
		}
		for _, h := range hs {
			names[h.Name] = true
		}
		hooks = append(hooks, hs...)
	}
	return hooks, failures
}
