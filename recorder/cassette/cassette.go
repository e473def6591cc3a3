// Package cassette is the on-disk format of openmax recordings: a go-vcr v2
// cassette (format version 1, its Request and Response types) whose
// interactions carry an extra "openmax" member with the streaming detail
// stock go-vcr has no place for: the byte-exact chunks as they arrived, each
// with its arrival offset, and the terminal transport error when the body
// (or the whole exchange) failed. The file as a whole carries an "openmax"
// member with the session that was recorded (client commands, seeds).
//
// Stock go-vcr's cassette.Load reads these files: it ignores the members it
// does not know, and the response body holds the concatenated chunks, so it
// replays the same bytes (in one piece, as stock go-vcr does).
//
// The package is also the one reading of what a recording means, for
// by the recorder, replay and the cassette tools: an Interaction's chunks,
// body, status line, failure and timing (Chunks, Body, StatusLine,
// Failure, End), and the table of transport failure kinds both ways: the
// kind of a live error (KindOf, ErrorOf) and the error a recorded kind
// replays as (Error.Err), which has that kind again.
package cassette

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"
	"github.com/openmax/openmax/core/runconfig"
	"github.com/openmax/openmax/internal/atomicfile"
	"gopkg.in/yaml.v3"
)

// FormatVersion is go-vcr v2's cassette format version.
const FormatVersion = 1

// File is a whole cassette.
type File struct {
	Version      int            `yaml:"version"`
	Interactions []*Interaction `yaml:"interactions"`
	// Session is the recorded harness session, when the cassette was made
	// by `openmax record` (absent for proxy recordings).
	Session *Session `yaml:"openmax,omitempty"`
	// TornSave reports that the file's last save was incomplete (a
	// recording still being written, or one an OS crash or a kill cut
	// short) and the file was read as of its last complete save. It is
	// what was read, not part of the file.
	TornSave bool `yaml:"-"`
}

// Interaction is one request and what came back.
type Interaction struct {
	Request  vcr.Request  `yaml:"request"`
	Response vcr.Response `yaml:"response"`
	Stream   *Stream      `yaml:"openmax,omitempty"`
}

// Stream is the streaming detail of one interaction.
type Stream struct {
	// Start is when the request went out, as an offset from the start of
	// the recording.
	Start time.Duration `yaml:"start"`
	// Chunks are the body as it arrived; their data concatenated equals
	// Response.Body.
	Chunks []Chunk `yaml:"chunks,omitempty"`
	// Error is how the exchange ended if not cleanly: for a body that
	// failed, after the chunks; for a request that got no response at all,
	// instead of one (then Response.Code is 0).
	Error *Error `yaml:"error,omitempty"`
}

// Chunk is one read of the response body.
type Chunk struct {
	// At is the arrival offset from when the request went out.
	At   time.Duration `yaml:"at"`
	Data string        `yaml:"data"`
}

// Error is a recorded transport failure. Its Kind is one of the Kind
// constants (see KindOf, and Err for the error it replays as).
type Error struct {
	Kind    string        `yaml:"kind"`
	Message string        `yaml:"message"`
	At      time.Duration `yaml:"at"` // offset from when the request went out
}

// Session is the harness session a cassette was recorded from.
type Session struct {
	SessionID string `yaml:"session_id"`
	// Imported marks a session made up for another tool's recording: the
	// harness cannot reproduce that client's request bodies, so a replay
	// serves the interactions in order.
	Imported bool `yaml:"imported,omitempty"`
	// Seed seeds everything random in the harness (retry jitter).
	Seed uint64 `yaml:"seed"`
	// Config is the harness configuration the session ran with (provider,
	// model, limits, ...), without secrets. A replay builds the harness
	// from it.
	Config *runconfig.Config `yaml:"config,omitempty"`
	// Args are the harness flags of a cassette recorded before the
	// configuration was stored. Parse reads them into Config once, and
	// clears them; nothing else reads them.
	Args []string `yaml:"args,omitempty"`
	// Commands are the client's stdin lines in order.
	Commands []Command `yaml:"commands"`
	// Tools are the tools the session offered the model, and ToolResults
	// what their calls returned, in dispatch order: a replay answers each
	// call as recorded instead of running anything.
	Tools       []Tool       `yaml:"tools,omitempty"`
	ToolResults []ToolResult `yaml:"tool_results,omitempty"`
	// Hooks are the calls the engine made of the session's hooks, in
	// order (hooks.go); absent when the session ran without hooks.
	Hooks []HookCall `yaml:"hooks,omitempty"`
	// Reloads are what each reload froze, in order (reload.go); absent
	// when the client sent none, or in a cassette recorded before they
	// were kept.
	Reloads []Reload `yaml:"reloads,omitempty"`
	// Denials are the deny rules' decisions on the session's tool calls,
	// in dispatch order (empty Refusal: the rules let the call through);
	// absent when no deny rules applied. A replay, which reads no policy
	// file, refuses as recorded.
	Denials []Denial `yaml:"denials,omitempty"`
}

// Denial is the deny rules' decision on one tool call.
type Denial struct {
	Tool    string `yaml:"tool"`
	Refusal string `yaml:"refusal,omitempty"`
}

// Clone returns a deep copy of s.
func (s *Session) Clone() *Session {
	if s == nil {
		return nil
	}
	c := *s
	if s.Config != nil {
		cfg := *s.Config
		c.Config = &cfg
	}
	c.Args = slices.Clone(s.Args)
	c.Commands = slices.Clone(s.Commands)
	c.Tools = cloneTools(s.Tools)
	c.ToolResults = slices.Clone(s.ToolResults)
	c.Hooks = cloneHooks(s.Hooks)
	c.Reloads = cloneReloads(s.Reloads)
	c.Denials = slices.Clone(s.Denials)
	return &c
}

// HarnessConfig is the configuration to build the session's harness
// from: Config, or for a session that has only flags (recorded before the
// configuration was stored, or made up by an importer) the configuration
// those flags describe.
func (s *Session) HarnessConfig() (runconfig.Config, error) {
	if s.Config != nil {
		return *s.Config, nil
	}
	cfg, err := runconfig.FromArgs(s.Args)
	if err != nil {
		return cfg, fmt.Errorf("the recorded flags %q: %w", s.Args, err)
	}
	return cfg, nil
}

// Tool is a tool offered to the model.
type Tool struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`
	Schema      string `yaml:"schema,omitempty"` // JSON
	// Mutating says the approval policy gated the tool (it changes files
	// or runs commands, or is an external tool), so a replay gates it too.
	Mutating bool `yaml:"mutating,omitempty"`
	// Source is set for an external tool (its files are agent-writable):
	// what its unapproved_source requests showed, so a replay asks them
	// again without the files.
	Source *ToolSource `yaml:"source,omitempty"`
}

// ToolSource is what the source gate of an external tool said while the
// session was recorded.
type ToolSource struct {
	Env    []string `yaml:"env,omitempty"`    // the credential grant's names
	Detail string   `yaml:"detail,omitempty"` // what runs
	// Checks are the answers of each look at the tool's files, in order:
	// the first file whose bytes no human approved (empty Path: all were),
	// or why the files could not be read.
	Checks []SourceCheck `yaml:"checks,omitempty"`
}

// SourceCheck is one look at an external tool's files.
type SourceCheck struct {
	Path  string `yaml:"path,omitempty"`
	SHA   string `yaml:"sha,omitempty"` // hex sha256 of its bytes
	Error string `yaml:"error,omitempty"`
}

// ToolResult is what one tool call returned.
type ToolResult struct {
	Name   string `yaml:"name"`
	Args   string `yaml:"args"` // JSON
	OK     bool   `yaml:"ok"`
	Output string `yaml:"output"`
}

// Command is one stdin line and the protocol point it arrived at: which
// turn (how many done lines had gone out) and, within it, after which line.
// A replay delivers it at the same point, so a fault injected earlier (an
// extra retry line, a turn cut short) moves it with the conversation
// instead of into the middle of another turn.
type Command struct {
	Line string `yaml:"line"`
	// TooLong, when set, is the size of a line the harness refused for
	// exceeding the line cap; Line is empty then (its bytes are not kept).
	TooLong int64 `yaml:"too_long,omitempty"`
	// Anchor is where the command arrived; see Anchor.
	Anchor `yaml:",inline"`
	// Refused marks a command the harness answered with a protocol_error
	// when it was recorded: a replay that refuses any other command did
	// not reproduce the session.
	Refused bool `yaml:"refused,omitempty"`
	// AfterLines is the anchor of cassettes recorded before anchors
	// existed: the number of stdout lines that had gone out. It is used
	// only when Anchor.After is empty.
	AfterLines int `yaml:"after_lines,omitempty"`
}

// New returns an empty cassette.
func New() *File { return &File{Version: FormatVersion} }

// MaxFileSize is the largest cassette file Load and ReadAny read (1 GiB).
// They decode the layout the recorder writes as they read it, in well
// under one and a half times the file's size, so a session with huge
// streamed bodies loads; any other YAML is decoded whole by yaml.v3,
// which takes several times the file's size, and is refused over
// MaxYAMLSize.
const MaxFileSize = 1 << 30

// MaxYAMLSize is the largest recording decoded whole as a YAML document
// (128 MiB): a cassette not in the recorder's layout, or another tool's
// recording (ReadFile).
const MaxYAMLSize = 128 << 20

// MaxLine is the longest line a cassette may have, its line break
// included (256 MiB): the recorder keeps a body of up to 64 MiB, and may
// write one on a single line with up to four bytes for each of its bytes
// (a control character escaped as \xNN). A longer line is refused
// (ErrTooLarge) once that much of it is read, so that one huge line costs
// no more memory than this.
const MaxLine = 256 << 20

// MaxOffset bounds every recorded time offset (Stream.Start, Chunk.At,
// Error.At, Response.Duration): a recording is of one session, and an
// offset of centuries would make a paced replay wait for ever.
const MaxOffset = 24 * time.Hour

// ErrTooLarge is returned (wrapped) for a cassette file over MaxFileSize.
var ErrTooLarge = errors.New("cassette: the file is too large")

// ErrAlias is returned (wrapped) for a cassette that uses a YAML alias.
var ErrAlias = errors.New("a YAML alias")

// Load reads a cassette file. It decodes the file as it reads it, with a
// reader for the YAML the recorder writes (see fastRead), and reads
// anything else whole with yaml.v3. A recording an OS crash tore (its
// last save half on the disk) is read as it was at its last complete
// save. Commands, which take other tools' recordings too, read through
// ReadAny instead.
func Load(path string) (*File, error) {
	src, err := openSource(path)
	if err != nil {
		return nil, err
	}
	defer src.fh.Close()
	f, _, err := src.fastRead()
	if err = src.fastError(err); errors.Is(err, errUnsupported) {
		var data []byte
		if data, err = src.whole(); errors.Is(err, ErrTooLarge) {
			err = fmt.Errorf("%w (it is not in the layout openmax writes, which may be up to %d MiB)", err, MaxFileSize>>20)
		} else if err == nil {
			f, err = parseWhole(data)
		}
	}
	if err == nil {
		err = f.check()
	}
	if err != nil {
		return nil, named(path, err)
	}
	return f, nil
}

// parseWhole decodes data with yaml.v3 and checks it; a recording whose
// last save an OS crash tore is read as it was at its last complete save
// (see recoverSaves).
func parseWhole(data []byte) (*File, error) {
	f, err := parseYAML(data)
	if err == nil {
		err = f.check()
	}
	return recoverSaves(data, f, err)
}

// Foreign is a recording ReadAny found not to be an openmax cassette,
// for an importer to convert.
type Foreign struct {
	// Data is the whole file.
	Data []byte
	// Doc is the YAML document yaml.v3 read from Data when ReadAny had to
	// read it to tell, so the importer need not read it again, and DocErr
	// why yaml.v3 could not; both are nil when ReadAny did not read it
	// (the fast reader told, or foreign did).
	Doc    *yaml.Node
	DocErr error
}

// ReadAny reads the recording at path for a command that takes any
// recording, parsing it once. An openmax cassette (one with an openmax
// member at the top, or on one of its interactions) is returned as f,
// decoded and checked as Load does: the recorder's layout as it is read,
// up to MaxFileSize, anything else by yaml.v3, up to MaxYAMLSize. Any
// other recording (a stock go-vcr cassette, another tool's) is returned
// as other, read whole (up to MaxYAMLSize), for an importer; so is a file
// whose first bytes foreign (when not nil) recognises, unparsed. A file
// that is not a regular file (a pipe) is read once, whole, up to
// MaxYAMLSize. The errors name path.
func ReadAny(path string, foreign func(head []byte) bool) (f *File, other *Foreign, err error) {
	src, err := openSource(path)
	if err != nil {
		return nil, nil, err
	}
	defer src.fh.Close()
	if head, _ := src.r.Peek(sniffSize); foreign != nil && foreign(head) {
		data, err := src.whole()
		if err != nil {
			return nil, nil, err
		}
		return nil, &Foreign{Data: data}, nil
	}

	f, native, err := src.fastRead()
	switch err = src.fastError(err); {
	case err == nil && native:
		if err := f.check(); err != nil {
			return nil, nil, named(path, err)
		}
		return f, nil, nil
	case err != nil && !errors.Is(err, errUnsupported):
		return nil, nil, err
	}
	outside := err != nil // the fast reader gave up: yaml.v3 must tell
	data, err := src.whole()
	if errors.Is(err, ErrTooLarge) {
		why := "a stock go-vcr cassette is converted whole"
		if outside {
			why = fmt.Sprintf("it is not in the layout openmax writes, which may be up to %d MiB", MaxFileSize>>20)
		}
		return nil, nil, fmt.Errorf("%w (%s)", err, why)
	}
	if err != nil {
		return nil, nil, err
	}
	if !outside {
		return nil, &Foreign{Data: data}, nil
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		if f, rerr := recoverSaves(data, nil, err); rerr == nil {
			return f, nil, nil // a recording torn by a crash
		}
		return nil, &Foreign{Data: data, DocErr: err}, nil
	}
	if !nativeDoc(&root) {
		// A recording of openmax's whose last save was cut short can
		// read as something else (an interaction without its url).
		if f, rerr := recoverSaves(data, nil, errNotNative); rerr == nil && f.TornSave {
			return f, nil, nil
		}
		return nil, &Foreign{Data: data, Doc: &root}, nil
	}
	if f, err = decodeDoc(&root); err == nil {
		err = f.check()
	}
	if f, err = recoverSaves(data, f, err); err != nil {
		return nil, nil, named(path, err)
	}
	return f, nil, nil
}

// source is a recording file open for ReadAny: a regular file is read as
// it is decoded (up to MaxFileSize), anything else (a pipe, which can be
// read only once) whole first (up to MaxYAMLSize).
type source struct {
	path string
	fh   *os.File
	r    *bufio.Reader
	lr   *limitReader // a regular file's limit
	size int64        // a regular file's size when opened
	data []byte       // what is not a regular file, read whole
}

// fastRead reads the source with the fast reader: a large regular file in
// parts on several cores (readSplit), anything else, or a file the parts
// do not read as one pass would, in one pass from the start.
func (s *source) fastRead() (*File, bool, error) {
	if s.lr != nil {
		if f, native, ok := readSplit(s.fh, s.size); ok {
			return f, native, nil
		}
	}
	return fastReadNative(s.r)
}

func openSource(path string) (*source, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cassette: %w", err)
	}
	s := &source{path: path, fh: fh}
	fi, err := fh.Stat()
	switch {
	case err != nil:
		err = fmt.Errorf("cassette: %w", err)
	case !fi.Mode().IsRegular():
		if s.data, err = readAll(fh, path); err == nil {
			s.r = bufio.NewReaderSize(bytes.NewReader(s.data), readBuffer)
		}
	case fi.Size() > MaxFileSize:
		err = fmt.Errorf("%w: %s is %d bytes, the limit is %d (%d MiB)", ErrTooLarge, path, fi.Size(), int64(MaxFileSize), MaxFileSize>>20)
	default:
		s.size = fi.Size()
		s.lr = &limitReader{r: fh, n: MaxFileSize}
		// A small file gets a buffer its size: the library's cassettes are
		// tens of KB, and a sweep or a report opens each of them.
		s.r = bufio.NewReaderSize(s.lr, int(max(min(readBuffer, s.size+1), minReadBuffer)))
	}
	if err != nil {
		fh.Close()
		return nil, err
	}
	return s, nil
}

// whole is the whole file (up to MaxYAMLSize).
func (s *source) whole() ([]byte, error) {
	if s.data != nil {
		return s.data, nil
	}
	return ReadFile(s.path)
}

// fastError is the error ReadAny gives for the fast reader's err:
// errUnsupported as it is, the others naming the file.
func (s *source) fastError(err error) error {
	lt := lineTooLong{}
	switch {
	case s.lr != nil && s.lr.over:
		return fmt.Errorf("%w: %s is over the limit of %d bytes (%d MiB)", ErrTooLarge, s.path, int64(MaxFileSize), MaxFileSize>>20)
	case errors.As(err, &lt):
		return fmt.Errorf("%w: %s: %w", ErrTooLarge, s.path, lt)
	case err != nil && !errors.Is(err, errUnsupported):
		return fmt.Errorf("cassette: %w", err)
	}
	return err
}

// readBuffer is the fast reader's buffer: lines up to this long are read
// in place; minReadBuffer is the buffer of a smaller file (at least what
// ReadAny's caller sniffs).
const (
	readBuffer    = 64 << 10
	minReadBuffer = 4 << 10
)

// sniffSize is how much of a file ReadAny's caller sees to recognise it.
const sniffSize = 512

// named names path in a parse error.
func named(path string, err error) error {
	if pe := (parseError{}); errors.As(err, &pe) {
		return fmt.Errorf("cassette %s: %w", path, pe.err)
	}
	return err
}

// nativeDoc reports whether the YAML document under root is an openmax
// cassette: a mapping with an openmax member at the top, or on one of its
// interactions.
func nativeDoc(root *yaml.Node) bool {
	if root.Kind != yaml.DocumentNode || len(root.Content) == 0 {
		return false
	}
	m := root.Content[0]
	if m.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		switch m.Content[i].Value {
		case "openmax":
			return true
		case "interactions":
			if seq := m.Content[i+1]; seq.Kind == yaml.SequenceNode {
				for _, in := range seq.Content {
					if hasMember(in, "openmax") {
						return true
					}
				}
			}
		}
	}
	return false
}

func hasMember(m *yaml.Node, name string) bool {
	if m.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == name {
			return true
		}
	}
	return false
}

// errParse marks an error in a cassette's content, for Load to name the
// file.
var errParse = errors.New("parse")

// errNotNative is what recoverSaves is told of a document that does not
// read as an openmax cassette.
var errNotNative = errors.New("not an openmax cassette")

type parseError struct{ err error }

func (e parseError) Error() string   { return e.err.Error() }
func (e parseError) Unwrap() error   { return e.err }
func (e parseError) Is(t error) bool { return t == errParse }

// limitReader reads at most n bytes, and notes a read past them.
type limitReader struct {
	r    io.Reader
	n    int64
	over bool
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n < 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > l.n+1 {
		p = p[:l.n+1]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	if l.n < 0 {
		l.over = true
		return 0, io.EOF
	}
	return n, err
}

// ReadFile reads a recording file of at most MaxYAMLSize bytes; a larger
// one (or one that grows past it while read) is refused with ErrTooLarge
// before it is read whole.
func ReadFile(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cassette: %w", err)
	}
	defer fh.Close()
	if fi, err := fh.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxYAMLSize {
		return nil, fmt.Errorf("%w: %s is %d bytes, the limit is %d (%d MiB)", ErrTooLarge, path, fi.Size(), int64(MaxYAMLSize), MaxYAMLSize>>20)
	}
	return readAll(fh, path)
}

// readAll reads r to its end, refusing more than MaxYAMLSize bytes
// (ErrTooLarge, naming path).
func readAll(r io.Reader, path string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxYAMLSize+1))
	if err != nil {
		return nil, fmt.Errorf("cassette: %w", err)
	}
	if len(data) > MaxYAMLSize {
		return nil, fmt.Errorf("%w: %s is over the limit of %d bytes (%d MiB)", ErrTooLarge, path, int64(MaxYAMLSize), MaxYAMLSize>>20)
	}
	return data, nil
}

// Parse decodes a cassette and checks it. A cassette must not use YAML
// aliases (the recorder never writes one, and an alias of a large value,
// repeated, multiplies the decoded size without bound: ErrAlias), its
// chunks must add up to its body, and its time offsets must be between 0
// and MaxOffset, the chunks' in arrival order (see CheckTiming). A
// recording an OS crash tore is read as it was at its last complete save
// (see recoverSaves), as Load and ReadAny read it.
func Parse(data []byte) (*File, error) {
	f, err := fastRead(bytes.NewReader(data))
	if errors.Is(err, errUnsupported) {
		f, err = parseWhole(data)
	}
	if err == nil {
		err = f.check()
	}
	var pe parseError
	if errors.As(err, &pe) {
		return nil, pe.err
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// parseYAML decodes a cassette with yaml.v3, refusing aliases. Its errors
// are parseErrors.
func parseYAML(data []byte) (*File, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, parseError{err}
	}
	return decodeDoc(&root)
}

// decodeDoc decodes a cassette from the document yaml.v3 read, refusing
// aliases. Its errors are parseErrors.
func decodeDoc(root *yaml.Node) (*File, error) {
	if err := NoAliases(root); err != nil {
		return nil, parseError{err}
	}
	var f File
	if err := root.Decode(&f); err != nil {
		return nil, parseError{err}
	}
	return &f, nil
}

// check checks a decoded cassette (see Parse), and reads the harness
// flags of an old session into its configuration. Its errors are
// parseErrors.
func (f *File) check() error {
	if f.Version != FormatVersion {
		return parseError{fmt.Errorf("format version %d, want %d", f.Version, FormatVersion)}
	}
	if s := f.Session; s != nil && s.Config == nil && len(s.Args) > 0 {
		cfg, err := s.HarnessConfig()
		if err != nil {
			return parseError{err}
		}
		s.Config, s.Args = &cfg, nil
	}
	for i, it := range f.Interactions {
		if it == nil {
			return parseError{fmt.Errorf("interaction %d is empty", i)}
		}
		if err := it.CheckTiming(); err != nil {
			return parseError{fmt.Errorf("interaction %d: %w", i, err)}
		}
		if it.ChunkDetail() && !chunksMakeBody(it) {
			return parseError{fmt.Errorf("interaction %d: its chunks do not add up to its body", i)}
		}
	}
	return nil
}

// chunksMakeBody reports whether the chunks' data, concatenated, is the
// response body (it.Body() == it.Response.Body, without building the
// concatenation).
func chunksMakeBody(it *Interaction) bool {
	body := it.Response.Body
	for _, c := range it.Stream.Chunks {
		if len(c.Data) > len(body) || body[:len(c.Data)] != c.Data {
			return false
		}
		body = body[len(c.Data):]
	}
	return body == ""
}

// NoAliases returns an error wrapping ErrAlias, naming its line, for the
// first alias (or merge of one) in the document under n.
func NoAliases(n *yaml.Node) error {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.AliasNode {
		return fmt.Errorf("line %d: %w (*%s): openmax cassettes never use aliases, and one can multiply the decoded size without bound", n.Line, ErrAlias, n.Value)
	}
	for _, c := range n.Content {
		if err := NoAliases(c); err != nil {
			return err
		}
	}
	return nil
}

// CheckTiming checks the interaction's recorded offsets: the start, every
// chunk's arrival, the error's and the response's duration are each
// between 0 and MaxOffset, and the chunks arrive in order (each at or after
// the one before). The error names the field.
func (it *Interaction) CheckTiming() error {
	check := func(field string, d time.Duration) error {
		switch {
		case d < 0:
			return fmt.Errorf("%s is %v: a recorded offset cannot be negative", field, d)
		case d >= MaxOffset:
			return fmt.Errorf("%s is %v: a recorded offset must be under %v", field, d, MaxOffset)
		}
		return nil
	}
	if err := check("response.duration", it.Response.Duration); err != nil {
		return err
	}
	s := it.Stream
	if s == nil {
		return nil
	}
	if err := check("openmax.start", s.Start); err != nil {
		return err
	}
	var prev time.Duration
	for j, c := range s.Chunks {
		field := fmt.Sprintf("openmax.chunks[%d].at", j)
		if err := check(field, c.At); err != nil {
			return err
		}
		if c.At < prev {
			return fmt.Errorf("%s is %v, before the chunk ahead of it (%v): chunks are in arrival order", field, c.At, prev)
		}
		prev = c.At
	}
	if s.Error != nil {
		if err := check("openmax.error.at", s.Error.At); err != nil {
			return err
		}
	}
	return nil
}

// Marshal encodes the cassette.
func (f *File) Marshal() ([]byte, error) { return encodeYAML(f) }

// Save writes the cassette atomically: a crash leaves either the previous
// complete file or the new one, never a torn one.
func (f *File) Save(path string) error {
	data, err := f.Marshal()
	if err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	return nil
}
