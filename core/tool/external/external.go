// Package external loads the tools a project defines for itself (a JSON
// manifest under .openmax/tools plus project-local code) and runs them as
// native processes, argv only, never through a shell, with only the
// environment variables their manifest lists.
//
// A project's files are agent-writable, so an external tool is never
// trusted by where it comes from: each tool reports which of its files
// (the manifest, then the code) have bytes no human approved
// (UnapprovedSource), and the engine asks before running it
// (unapproved_source). See docs/external-tools.md.
package external

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/internal/safefile"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
)

// Dir is where a project's tool manifests live, relative to the project.
const Dir = ".openmax/tools"

// Limits of a manifest.
const (
	// MaxManifestSize bounds a manifest file.
	MaxManifestSize = 1 << 20
	// DefaultTimeout is a call's time limit when the manifest gives none.
	DefaultTimeout = 60 * time.Second
	// MaxTimeout is the longest timeout_seconds a manifest may ask for.
	MaxTimeout = 10 * time.Minute
	// OutputCap bounds the output given back to the model.
	OutputCap = 32 << 10
)

// Manifest is the JSON file defining one tool,
// <project>/.openmax/tools/<name>.json. Unknown keys are errors.
type Manifest struct {
	// Name is the tool's name as the model sees it; it must be the file's
	// name without .json (and may be left out).
	Name string `json:"name"`
	// Description tells the model what the tool does.
	Description string `json:"description"`
	// Parameters is the JSON schema of the tool's arguments (an object
	// schema); the default accepts any object.
	Parameters json.RawMessage `json:"parameters"`
	// Code is the tool's program: a file inside the project, relative to
	// the project directory. Its exact bytes must be approved.
	Code string `json:"code"`
	// Interpreter, when set, is the program that runs Code, with its own
	// leading arguments (["/bin/sh"], ["python3", "-u"]): an absolute path
	// or a name looked up in PATH, never a project path. Without it Code
	// is executed itself and must be executable.
	Interpreter []string `json:"interpreter"`
	// Args are fixed arguments passed after Code.
	Args []string `json:"args"`
	// Env lists the names of the environment variables the tool
	// receives from openmax's environment besides PATH, HOME and LANG:
	// a credential grant the human approves with the tool.
	Env []string `json:"env"`
	// TimeoutSeconds bounds a call (default 60, at most 600).
	TimeoutSeconds int `json:"timeout_seconds"`
}

// Approvals remembers which exact bytes of the project's files a human
// approved (config.SourceStore). sum is the hex sha256 of the bytes.
type Approvals interface {
	Approved(path, sum string) bool
	Approve(path, sum string) error
}

// Options are what Load needs besides the project.
type Options struct {
	// Approvals is where approvals are read and remembered; nil approves
	// nothing and remembers nothing.
	Approvals Approvals
	// Getenv reads openmax's environment, the only source of the
	// variables a tool receives; nil means os.Getenv.
	Getenv func(string) string
	// Clock times a call's timeout; nil means the wall clock.
	Clock clock.Clock
	// ExtraEnv are "KEY=value" entries every tool process gets (openmax's
	// marker for its children, say); they are not a credential grant.
	ExtraEnv []string
}

// Tool is one loaded external tool. It implements tool.Tool,
// tool.Mutator (always mutating) and the engine's source gate.
type Tool struct {
	m        Manifest
	project  string // absolute
	manifest string // project-relative, slash-separated
	raw      []byte // the manifest's bytes as loaded
	code     string // project-relative, slash-separated
	timeout  time.Duration
	opts     Options
}

var (
	nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })
	envRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
)

// Load reads every <project>/.openmax/tools/*.json, in name order. A
// manifest that cannot be loaded is left out and reported as an error
// naming its file; the others load. No directory means no tools.
func Load(project string, opts Options) ([]tool.Tool, []error) {
	dir := filepath.Join(project, filepath.FromSlash(Dir))
	entries, err := safefile.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, []error{fmt.Errorf("external tools: %w", err)}
	}
	var tools []tool.Tool
	var errs []error
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		rel := Dir + "/" + e.Name()
		t, err := LoadManifest(project, rel, opts)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		tools = append(tools, t)
	}
	return tools, errs
}

// LoadManifest loads the tool whose manifest is rel (project-relative).
func LoadManifest(project, rel string, opts Options) (*Tool, error) {
	fail := func(format string, a ...any) (*Tool, error) {
		return nil, fmt.Errorf("external tool %s: %s", rel, fmt.Sprintf(format, a...))
	}
	raw, err := readFile(project, rel, MaxManifestSize)
	if err != nil {
		return fail("%v", err)
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return fail("not a valid manifest: %v", err)
	}
	if dec.More() {
		return fail("not a valid manifest: data after the object")
	}
	stem := strings.TrimSuffix(filepath.Base(rel), ".json")
	if m.Name == "" {
		m.Name = stem
	}
	switch {
	case m.Name != stem:
		return fail("name %q is not the file's name %q", m.Name, stem)
	case !nameRE().MatchString(m.Name):
		return fail("name %q: use 1 to 64 letters, digits, _ or -", m.Name)
	case m.Code == "":
		return fail(`"code" (the tool's program, a file in the project) is missing`)
	case m.TimeoutSeconds < 0 || time.Duration(m.TimeoutSeconds)*time.Second > MaxTimeout:
		return fail("timeout_seconds %d is not between 1 and %d", m.TimeoutSeconds, int(MaxTimeout/time.Second))
	}
	if len(m.Interpreter) > 0 {
		p := m.Interpreter[0]
		if p == "" || (strings.ContainsRune(p, '/') && !filepath.IsAbs(p)) {
			return fail("interpreter %q must be an absolute path or a program name looked up in PATH", p)
		}
	}
	code, err := projectPath(project, m.Code)
	if err != nil {
		return fail("code: %v", err)
	}
	if err := checkCode(project, code); err != nil {
		return fail("code: %v", err)
	}
	seen := map[string]bool{}
	var env []string
	for _, name := range m.Env {
		if !envRE().MatchString(name) {
			return fail("env: %q is not an environment variable name", name)
		}
		if !seen[name] {
			seen[name] = true
			env = append(env, name)
		}
	}
	m.Env = env
	if len(bytes.TrimSpace(m.Parameters)) == 0 || string(bytes.TrimSpace(m.Parameters)) == "null" {
		m.Parameters = json.RawMessage(`{"type":"object"}`)
	} else {
		var schema map[string]any
		if err := json.Unmarshal(m.Parameters, &schema); err != nil || schema == nil {
			return fail("parameters must be a JSON schema object")
		}
	}
	timeout := DefaultTimeout
	if m.TimeoutSeconds > 0 {
		timeout = time.Duration(m.TimeoutSeconds) * time.Second
	}
	return &Tool{m: m, project: project, manifest: rel, raw: raw, code: code, timeout: timeout, opts: opts}, nil
}

// projectPath checks that p names a place inside project (after cleaning;
// symbolic links are checked when the file is read) and returns it
// project-relative with slashes.
func projectPath(project, p string) (string, error) {
	if filepath.IsAbs(p) {
		return "", fmt.Errorf("%q must be relative to the project directory", p)
	}
	clean := filepath.Clean(filepath.FromSlash(p))
	if clean == "." || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%q is outside the project", p)
	}
	return filepath.ToSlash(clean), nil
}

// resolve returns the absolute path of project-relative rel after
// following symbolic links, refusing one that leads out of the project.
func resolve(project, rel string) (string, error) {
	root, err := filepath.EvalSymlinks(project)
	if err != nil {
		return "", err
	}
	abs, err := filepath.EvalSymlinks(filepath.Join(project, filepath.FromSlash(rel)))
	if err != nil {
		return "", err
	}
	if r, err := filepath.Rel(root, abs); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s leads outside the project", rel)
	}
	return abs, nil
}

// readFile reads project-relative rel, a regular file inside the project,
// of at most max bytes, never blocking on what is there instead (a FIFO, a
// device, a directory: refused, naming what it is).
func readFile(project, rel string, max int64) ([]byte, error) {
	abs, err := resolve(project, rel)
	if err != nil {
		return nil, err
	}
	data, err := safefile.ReadFile(abs, max)
	if errors.Is(err, safefile.ErrTooLarge) {
		return nil, fmt.Errorf("%s is larger than %d bytes", rel, max)
	}
	if err != nil {
		return nil, relError(abs, rel, err)
	}
	return data, nil
}

// relError is err with the absolute path abs written as project-relative
// rel, as every message of this package names a project's file.
func relError(abs, rel string, err error) error {
	var nr *safefile.NotRegularError
	if errors.As(err, &nr) {
		return &safefile.NotRegularError{Name: rel, Kind: nr.Kind}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == abs {
		return &fs.PathError{Op: pe.Op, Path: rel, Err: pe.Err}
	}
	return err
}

// checkCode refuses code (project-relative) when it is there and is not a
// regular file: a FIFO, a directory or a device is no program, and
// hashing or running it could wait for ever, or run nothing and report
// success. Whatever else is wrong with it (missing, leading outside the
// project) is left to the call, which says so.
func checkCode(project, code string) error {
	abs, err := resolve(project, code)
	if err != nil {
		return nil
	}
	var nr *safefile.NotRegularError
	if _, err := safefile.Stat(abs); errors.As(err, &nr) {
		return relError(abs, code, err)
	}
	return nil
}

// Sum is the hex sha256 of data.
func Sum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// SumFile is the hex sha256 of the bytes of project-relative rel, a regular
// file inside the project, as they are now; anything else is refused
// without blocking.
func SumFile(project, rel string) (string, error) {
	abs, err := resolve(project, rel)
	if err != nil {
		return "", err
	}
	f, _, err := safefile.Open(abs)
	if err != nil {
		return "", relError(abs, rel, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Spec describes the tool to the model.
func (t *Tool) Spec() provider.ToolSpec {
	return provider.ToolSpec{Name: t.m.Name, Description: t.m.Description, Schema: t.m.Parameters}
}

// Mutating is always true: an external tool is a native process with
// openmax's authority, gated whatever it says of itself.
func (t *Tool) Mutating() bool { return true }

// Manifest is the tool's manifest as loaded.
func (t *Tool) Manifest() Manifest { return t.m }

// Sources are the tool's files, project-relative: its manifest, then its
// code.
func (t *Tool) Sources() []string { return []string{t.manifest, t.code} }

// UnapprovedSource returns the first of the tool's files (the manifest as
// loaded, then the code as it is now on disk) whose exact bytes no human
// approved, with the hex sha256 of those bytes; path is "" when every file
// is approved. err reports a file that cannot be read (the call must not
// run).
func (t *Tool) UnapprovedSource() (path, sum string, err error) {
	approved := func(p, s string) bool { return t.opts.Approvals != nil && t.opts.Approvals.Approved(p, s) }
	if s := Sum(t.raw); !approved(t.manifest, s) {
		return t.manifest, s, nil
	}
	s, err := SumFile(t.project, t.code)
	if err != nil {
		return "", "", fmt.Errorf("the code of %s cannot be read: %w", t.m.Name, err)
	}
	if !approved(t.code, s) {
		return t.code, s, nil
	}
	return "", "", nil
}

// ApproveSource remembers a human's approval of the bytes of path whose
// sha256 is sum.
func (t *Tool) ApproveSource(path, sum string) error {
	if t.opts.Approvals == nil {
		return errors.New("approvals cannot be remembered here")
	}
	return t.opts.Approvals.Approve(path, sum)
}

// EnvGrant lists the environment variable names the tool receives beyond
// the base ones: the manifest's env allowlist.
func (t *Tool) EnvGrant() []string { return append([]string(nil), t.m.Env...) }

// SourceDetail describes the tool for an approval card: what runs and with
// which arguments.
func (t *Tool) SourceDetail() string {
	argv := append(append(append([]string(nil), t.m.Interpreter...), t.code), t.m.Args...)
	q, _ := json.Marshal(argv)
	return fmt.Sprintf("external tool %s (manifest %s) runs %s in the project directory, timeout %v", t.m.Name, t.manifest, q, t.timeout)
}

// baseEnv are the variables every tool gets from openmax's environment.
var baseEnv = []string{"PATH", "HOME", "LANG"}

// environ is the tool's whole environment: the base variables, the
// allowlisted ones that are set, and opts.ExtraEnv.
func (t *Tool) environ() []string {
	getenv := t.opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	names := append(append([]string(nil), baseEnv...), t.m.Env...)
	seen := map[string]bool{}
	var env []string
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		if v := getenv(n); v != "" {
			env = append(env, n+"="+v)
		}
	}
	return append(env, t.opts.ExtraEnv...)
}
