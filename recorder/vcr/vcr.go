// Package vcr plugs record and replay into a user's own Go tests: one call
// gives a test an http.RoundTripper that records the test's provider
// traffic into testdata/<TestName>.yaml the first time and replays it from
// there every time after, offline and deterministically, with the
// defaults the openmax CLI uses (volatile request fields ignored, a miss
// answered as a vendor-shaped HTTP 400, secrets scrubbed before anything
// is written). At the end of the test, a request the cassette did not hold
// and a recorded interaction nobody asked for both fail it.
//
//	func TestMyAgent(t *testing.T) {
//		rt := vcr.New(t)
//		client := &http.Client{Transport: rt}
//		// ... point your OpenAI or Anthropic client at its usual URL with client
//	}
//
// Run with OPENMAX_RECORD=1 (and real API keys) to record again. Server
// serves a cassette over loopback HTTP instead, for clients that cannot
// take a RoundTripper (another process, an SDK with its own transport).
// Golden transcripts of whole harness sessions are package
// github.com/openmax/openmax/replay/goldens.
package vcr

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/importer"
	"github.com/openmax/openmax/recorder/replay"
)

// Mode says whether a test records or replays.
type Mode int

const (
	// RecordOnce replays the cassette when it exists and records it when
	// it does not (the default).
	RecordOnce Mode = iota
	// ReplayOnly always replays; a missing cassette fails the test.
	ReplayOnly
	// Record always records, replacing the cassette.
	Record
)

// RecordEnv, set to 1 (or true), makes every test record again (Record
// mode) whatever its options say.
const RecordEnv = "OPENMAX_RECORD"

// TB is the part of testing.TB the package needs.
type TB interface {
	Helper()
	Name() string
	Cleanup(func())
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

var _ TB = (testing.TB)(nil)

// Option configures New and Server.
type Option func(*config)

type config struct {
	path        string
	mode        Mode
	transport   http.RoundTripper
	ignore      []string
	scrub       []*regexp.Regexp
	allowUnused bool
	inOrder     bool
}

// WithCassette sets the cassette file (default testdata/<TestName>.yaml,
// with the subtest separators of the name turned into folders).
func WithCassette(path string) Option { return func(c *config) { c.path = path } }

// WithMode sets the mode (default RecordOnce; OPENMAX_RECORD=1 overrides).
func WithMode(m Mode) Option { return func(c *config) { c.mode = m } }

// WithTransport sets the real transport a recording goes through (default
// http.DefaultTransport).
func WithTransport(rt http.RoundTripper) Option { return func(c *config) { c.transport = rt } }

// WithIgnore adds request body paths ignored when matching (as
// `openmax replay --ignore`: "metadata.user_id", "messages.*.cache_control").
func WithIgnore(paths ...string) Option {
	return func(c *config) { c.ignore = append(c.ignore, paths...) }
}

// WithScrub adds patterns scrubbed from everything recorded (header
// values, URLs, bodies); replay scrubs live requests the same way to match.
func WithScrub(patterns ...*regexp.Regexp) Option {
	return func(c *config) { c.scrub = append(c.scrub, patterns...) }
}

// AllowUnused lets a replay end with recorded interactions never asked for.
func AllowUnused() Option { return func(c *config) { c.allowUnused = true } }

// InOrder serves interactions in recorded order matching only method and
// path: for recordings made by another client, or imported from vcrpy,
// go-vcr or httprr, whose request bodies the test cannot reproduce.
func InOrder() Option { return func(c *config) { c.inOrder = true } }

func configure(t TB, opts []Option) config {
	c := config{path: DefaultPath(t.Name())}
	for _, o := range opts {
		o(&c)
	}
	if v := strings.ToLower(os.Getenv(RecordEnv)); v == "1" || v == "true" {
		c.mode = Record
	}
	return c
}

// DefaultPath is the cassette of the test named name:
// testdata/<name>.yaml, each "/" of a subtest name a folder.
func DefaultPath(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = strings.Map(func(r rune) rune {
			if r == filepath.Separator || r == 0 || strings.ContainsRune(`<>:"\|?*`, r) {
				return '_'
			}
			return r
		}, p)
	}
	return filepath.Join(append([]string{"testdata"}, parts...)...) + ".yaml"
}

// New returns the RoundTripper for test t: a recorder writing the
// cassette, or a replayer serving it (see Mode). Cleanup closes a
// recording and, for a replay, fails t on every request the cassette did
// not hold and (unless AllowUnused) on interactions never requested.
func New(t TB, opts ...Option) http.RoundTripper {
	t.Helper()
	c := configure(t, opts)
	record := c.mode == Record
	if c.mode == RecordOnce {
		if _, err := os.Stat(c.path); errors.Is(err, fs.ErrNotExist) {
			record = true
		}
	}
	if record {
		return newRecorder(t, c)
	}
	f := load(t, c)
	r := replay.New(f, c.replayOptions(true))
	t.Cleanup(func() { check(t, c, r.Misses(), r.Unused()) })
	return r
}

func newRecorder(t TB, c config) http.RoundTripper {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(c.path), 0o755); err != nil {
		t.Fatalf("vcr: %v", err)
	}
	rec, err := recorder.New(recorder.Options{Path: c.path, Overwrite: true, Transport: c.transport, Scrub: c.scrub})
	if err != nil {
		t.Fatalf("vcr: recording %s: %v", c.path, err)
	}
	t.Cleanup(func() {
		if err := rec.Close(); err != nil {
			t.Errorf("vcr: saving %s: %v", c.path, err)
		}
	})
	return rec
}

// load reads the cassette, converting a foreign recording in memory.
func load(t TB, c config) *cassette.File {
	t.Helper()
	f, _, err := importer.Load(c.path)
	if errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("vcr: no cassette at %s to replay (record it with %s=1)", c.path, RecordEnv)
	}
	if err != nil {
		t.Fatalf("vcr: %v", err)
	}
	return f
}

func (c config) replayOptions(missAsResponse bool) replay.Options {
	return replay.Options{
		Ignore:         c.ignore,
		MissAsResponse: missAsResponse,
		InOrder:        c.inOrder,
		Scrub:          recorder.ScrubFunc(c.scrub),
	}
}

// check fails t on misses and, unless allowed, unused interactions.
func check(t TB, c config, misses []replay.Miss, unused []int) {
	for _, m := range misses {
		t.Errorf("vcr: %s: request %d is not in the cassette: %v", c.path, m.Request, m.MissError)
	}
	if len(unused) > 0 && !c.allowUnused {
		t.Errorf("vcr: %s: %d recorded interaction(s) never requested: %v (AllowUnused to permit)", c.path, len(unused), unused)
	}
}

// Server serves test t's cassette (see New for its path and options) over
// loopback HTTP until the test ends, and returns its base URL. It only
// replays: a missing cassette fails t. Cleanup fails t as New's does.
func Server(t TB, opts ...Option) string {
	t.Helper()
	c := configure(t, opts)
	f := load(t, c)
	var (
		mu     sync.Mutex // OnRequest runs on the handlers' goroutines
		misses []replay.Miss
		served = map[int]bool{}
	)
	o := c.replayOptions(false)
	o.OnRequest = func(e replay.Event) {
		mu.Lock()
		defer mu.Unlock()
		if e.Miss != nil {
			misses = append(misses, replay.Miss{Request: e.Request, MissError: e.Miss})
		}
		if e.Interaction >= 0 {
			served[e.Interaction] = true
		}
	}
	srv := httptest.NewServer(replay.NewHandler(f, o))
	t.Cleanup(func() {
		srv.Close() // waits for the handlers: OnRequest is done
		mu.Lock()
		defer mu.Unlock()
		var unused []int
		for i := range f.Interactions {
			if !served[i] {
				unused = append(unused, i)
			}
		}
		check(t, c, misses, unused)
	})
	return srv.URL
}

// String names a mode.
func (m Mode) String() string {
	switch m {
	case RecordOnce:
		return "record-once"
	case ReplayOnly:
		return "replay-only"
	case Record:
		return "record"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}
