// Package builtin holds the tools every session gets: reading, listing and
// searching files, writing and editing them, and running commands, all
// confined to one project directory.
//
// Confinement. A path argument is taken relative to the project root (or
// as is, when absolute) and cleaned lexically, as filepath.Join does, so
// "a/link/../b" means "a/b". Its symbolic links are then followed component
// by component, through components that do not exist yet too, so that a
// dangling link or a new file under a linked directory is judged by where it
// really lands; the call fails, naming the path, when that is outside the
// root. The tool then works on the resolved path. File operations go through
// an os.Root opened on the project, so a link swapped in between the check
// and the use still cannot lead outside. Walks (list_files, search) do not
// follow symbolic links. run_command confines only its working directory: the
// command itself can do whatever the user can, which is why it is a Mutator,
// gated by the approval policy.
//
// Output. Every tool's output is capped at Options.OutputCap bytes; longer
// output is cut (at a line boundary where the tool is line oriented) and ends
// with a note such as "[output cut: 123456 bytes, showing the first 32768]".
// The diffs of write_file and edit_file are capped the same way at
// Options.DiffCap ("[diff cut: ...]"), and contents over MaxEditFileSize are
// not diffed at all.
//
// Special files. Files are opened without blocking and checked once open:
// a FIFO or device swapped in for a file is refused, never waited on.
// write_file and edit_file refuse files with more than one hard link.
package builtin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/provider/clock"
)

// Defaults and limits for Options.
const (
	DefaultOutputCap      = 32 << 10
	DefaultDiffCap        = 256 << 10
	DefaultCommandTimeout = 2 * time.Minute
	// MaxCommandTimeout caps the timeout_ms a run_command call may ask for
	// (or Options.CommandTimeout, when that is longer).
	MaxCommandTimeout = 10 * time.Minute
)

// Options configure the built-in tools. The zero value is usable.
type Options struct {
	// OutputCap is the most bytes of output a tool call returns before the
	// cut note. Zero or less means DefaultOutputCap.
	OutputCap int
	// DiffCap is the most bytes of one diff event's unified diff before
	// the cut note. Zero or less means DefaultDiffCap.
	DiffCap int
	// CommandTimeout is run_command's timeout when a call names none. Zero
	// or less means DefaultCommandTimeout.
	CommandTimeout time.Duration
	// Env is the whole environment of run_command's processes, as
	// "KEY=value" entries; nothing else of this process's environment is
	// passed on, except PWD (the command's directory), added unless Env
	// sets it, and AgentSpawnedEnv=1, always. Nil means MinimalEnv(); an
	// empty non-nil slice means an environment of those two alone.
	// Commands are looked up in Env's PATH.
	Env []string
	// Clock is what run_command's timeout waits on; nil is the wall clock.
	Clock clock.Clock
}

// MinimalEnv returns PATH, HOME and LANG from this process's environment,
// those that are set: the default environment of run_command.
func MinimalEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "LANG"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// project is what the tools share: the confined root and the options.
type project struct {
	root       string // absolute, clean, symbolic links resolved
	given      string // root as passed to New, cleaned
	cap        int
	diffCap    int
	timeout    time.Duration
	maxTimeout time.Duration
	clock      clock.Clock
	env        []string
}

// New returns the built-in tools confined to the directory root, which must
// be absolute and exist. Its symbolic links are resolved once, here. The
// tools are, in order: read_file, list_files, search, write_file, edit_file
// and run_command.
func New(root string, opts Options) ([]tool.Tool, error) {
	if !filepath.IsAbs(root) {
		return nil, fmt.Errorf("builtin: project root %q is not absolute", root)
	}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("builtin: project root: %w", err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("builtin: project root: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("builtin: project root %s is not a directory", root)
	}
	p := &project{
		root:       filepath.Clean(real),
		given:      filepath.Clean(root),
		cap:        opts.OutputCap,
		diffCap:    opts.DiffCap,
		timeout:    opts.CommandTimeout,
		maxTimeout: MaxCommandTimeout,
		env:        opts.Env,
		clock:      opts.Clock,
	}
	if p.cap <= 0 {
		p.cap = DefaultOutputCap
	}
	if p.diffCap <= 0 {
		p.diffCap = DefaultDiffCap
	}
	if p.timeout <= 0 {
		p.timeout = DefaultCommandTimeout
	}
	if p.timeout > p.maxTimeout {
		p.maxTimeout = p.timeout
	}
	if p.env == nil {
		p.env = MinimalEnv()
	}
	// Never nil: os/exec gives a nil Env this process's environment.
	p.env = append([]string{}, p.env...)
	return []tool.Tool{
		readFile{p}, listFiles{p}, search{p},
		writeFile{p}, editFile{p}, runCommand{p},
	}, nil
}

// openRoot opens the project for one call's file operations.
func (p *project) openRoot() (*os.Root, error) {
	r, err := os.OpenRoot(p.root)
	if err != nil {
		return nil, fmt.Errorf("cannot open the project directory: %v", err)
	}
	return r, nil
}

// openTree resolves a directory or file argument ("" meaning the project
// root) and opens the project root for walking from it; start is the
// slash-separated path inside the root. The caller closes root.
func (p *project) openTree(arg string) (root *os.Root, start string, err error) {
	rel, err := p.resolve(orDot(arg))
	if err != nil {
		return nil, "", err
	}
	if root, err = p.openRoot(); err != nil {
		return nil, "", err
	}
	return root, slashRel(rel), nil
}

// orDot is a path argument with "" meaning the project root.
func orDot(arg string) string {
	if arg == "" {
		return "."
	}
	return arg
}

// resolve maps a path argument to the file it names: its path relative to
// the root with every existing symbolic link resolved ("." for the root
// itself), or an error naming the argument when that is outside the root.
func (p *project) resolve(arg string) (rel string, err error) {
	if strings.IndexByte(arg, 0) >= 0 {
		return "", fmt.Errorf("path %q contains a NUL byte", arg)
	}
	abs := arg
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(p.root, abs)
	}
	abs = filepath.Clean(abs)
	real, err := resolveLinks(abs)
	if err != nil {
		return "", fmt.Errorf("path %q: %v", arg, err)
	}
	rel, ok := within(p.root, real)
	if !ok {
		_, lexIn := within(p.root, abs)
		if _, in := within(p.given, abs); in {
			lexIn = true
		}
		if lexIn {
			return "", fmt.Errorf("path %q resolves through a symbolic link to %s, outside the project directory %s", arg, real, p.root)
		}
		return "", fmt.Errorf("path %q is outside the project directory %s", arg, p.root)
	}
	return rel, nil
}

// within reports whether the clean absolute path p is dir or under it, and
// p relative to dir.
func within(dir, p string) (string, bool) {
	rel, err := filepath.Rel(dir, p)
	if err != nil || filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

const maxLinks = 255

// resolveLinks returns the clean absolute path p with the symbolic links of
// its existing components resolved, the way the kernel would follow them.
// Components that do not exist are kept as they are, so the result is
// where a file created at p would land.
func resolveLinks(p string) (string, error) {
	vol := filepath.VolumeName(p)
	done := vol + string(filepath.Separator)
	todo := splitPath(p[len(vol):])
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			done = filepath.Dir(done)
			continue
		}
		next := filepath.Join(done, c)
		fi, err := os.Lstat(next)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			// A plain component, or one that does not exist (yet).
			done = next
			continue
		}
		links++
		if links > maxLinks {
			return "", errors.New("too many levels of symbolic links")
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			tv := filepath.VolumeName(target)
			done = tv + string(filepath.Separator)
			target = target[len(tv):]
		}
		todo = append(splitPath(target), todo...)
	}
	return done, nil
}

func splitPath(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r < utf8.RuneSelf && os.IsPathSeparator(uint8(r)) })
}

// slashRel is a root-relative path as shown to the model and the client.
func slashRel(rel string) string { return filepath.ToSlash(rel) }

// decodeArgs unmarshals a call's arguments into v (a pointer to a struct
// whose json tags are the argument names), rejecting unknown arguments and
// naming the argument at fault.
func decodeArgs(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return fmt.Errorf("arguments must be a JSON object, not %s", te.Value)
		}
		return fmt.Errorf("argument %q must be %s, not %s", te.Field, describeType(te.Type), te.Value)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("unknown argument %s", name)
	}
	return fmt.Errorf("arguments are not valid JSON: %v", err)
}

func describeType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(describeType(t.Elem()), "a "), "an ") + "s"
	}
	return t.String()
}

// missing is the error for an absent required argument.
func missing(name string) tool.Result {
	return tool.Failed("missing required argument %q", name)
}

// cutNote is the note ending cut output.
func cutNote(total, shown int) string { return cutNoteOf("output", total, shown) }

// cutNoteOf is the note ending a cut what ("output", "diff").
func cutNoteOf(what string, total, shown int) string {
	return fmt.Sprintf("[%s cut: %d bytes, showing the first %d]", what, total, shown)
}

// lineCap collects output line by line up to a byte cap, counting what
// does not fit.
type lineCap struct {
	cap   int
	what  string // what the cut note calls it; "" is "output"
	buf   strings.Builder
	total int
	full  bool
}

// add appends line, which should end in "\n". It reports false once the
// cap is reached; later lines are only counted. A first line longer than the
// cap is shown cut.
func (c *lineCap) add(line string) bool {
	c.total += len(line)
	if c.full {
		return false
	}
	if c.buf.Len()+len(line) <= c.cap {
		c.buf.WriteString(line)
		return true
	}
	c.full = true
	if c.buf.Len() == 0 {
		c.buf.WriteString(cutUTF8(line, c.cap))
	}
	return false
}

// addLine appends prefix and line (and a newline when line lacks one) as
// one line, without building it once the cap is reached.
func (c *lineCap) addLine(prefix, line string) bool {
	if c.full {
		c.total += len(prefix) + len(line)
		if !strings.HasSuffix(line, "\n") {
			c.total++
		}
		return false
	}
	if !strings.HasSuffix(line, "\n") {
		return c.add(prefix + line + "\n")
	}
	return c.add(prefix + line)
}

// count adds n bytes of output that were not offered to add.
func (c *lineCap) count(n int) { c.total += n }

// String returns the output, with the cut note (and extra inside it) when
// something did not fit.
func (c *lineCap) String(extra string) string {
	s := c.buf.String()
	if c.total <= len(s) {
		return s
	}
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	what := c.what
	if what == "" {
		what = "output"
	}
	note := cutNoteOf(what, c.total, c.buf.Len())
	if extra != "" {
		note = strings.TrimSuffix(note, "]") + "; " + extra + "]"
	}
	return s + note
}

// cutUTF8 returns at most n bytes of s, not splitting a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && i > n-utf8.UTFMax && !utf8.RuneStart(s[i]) {
		i--
	}
	if !utf8.RuneStart(s[i]) {
		i = n // not UTF-8 anyway
	}
	return s[:i]
}

// isBinary guesses whether data (a file's content, or its first bytes)
// is not text: a NUL in the first 8000 bytes.
func isBinary[T string | []byte](data T) bool {
	if len(data) > 8000 {
		data = data[:8000]
	}
	for i := 0; i < len(data); i++ {
		if data[i] == 0 {
			return true
		}
	}
	return false
}

// text makes s safe to return as a JSON string.
func text(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
