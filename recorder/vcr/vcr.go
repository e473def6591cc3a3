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
// The mode (see Mode, and package recorder/mode) says whether a test
// records or replays: once by default (record a missing cassette, replay an
// existing one), replay under CI=true (never the network), missing (record
// only what the cassette lacks, appending it), refresh (record all again).
// Run with OPENMAX_RECORD_MODE=refresh, or OPENMAX_RECORD=1, (and real API
// keys) to record again; OPENMAX_RECORD_MODE=missing to add what changed. Server
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
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/openmax/openmax/internal/atomicfile"
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/importer"
	"github.com/openmax/openmax/recorder/mode"
	"github.com/openmax/openmax/recorder/replay"
)

// Mode is what New does with the test's cassette: the record modes of
// package recorder/mode, the same as the CLI's --mode.
type Mode = mode.Mode

// The modes, under the names this package has always had, and the new one.
const (
	// RecordOnce replays the cassette when it exists and records it when
	// it does not (mode once: the default, except under CI=true).
	RecordOnce = mode.Once
	// ReplayOnly always replays, never touching the network; a missing
	// cassette fails the test (mode replay: the default under CI=true).
	ReplayOnly = mode.Replay
	// RecordMissing replays what the cassette holds and records what it
	// misses, appending it (mode missing).
	RecordMissing = mode.Missing
	// Record always records, replacing the cassette (mode refresh).
	Record = mode.Refresh
)

// RecordEnv, set to 1 (or true), makes every test record again (Record
// mode) whatever its options say.
const RecordEnv = "OPENMAX_RECORD"

// ModeEnv names a mode for every test, whatever its options say
// (OPENMAX_RECORD_MODE=missing go test ./...); it wins over RecordEnv.
const ModeEnv = mode.Env

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
	why         string // where mode came from, for messages
	transport   http.RoundTripper
	passthrough mode.Passthrough
	ignore      []string
	scrub       []*regexp.Regexp
	allowUnused bool
	inOrder     bool
	prune       bool
	foreign     string // the format a loaded recording was converted from
}

// WithCassette sets the cassette file (default testdata/<TestName>.yaml,
// with the subtest separators of the name turned into folders).
func WithCassette(path string) Option { return func(c *config) { c.path = path } }

// WithMode sets the mode (default RecordOnce, ReplayOnly under CI=true;
// OPENMAX_RECORD_MODE and OPENMAX_RECORD=1 override it).
func WithMode(m Mode) Option { return func(c *config) { c.mode = m } }

// WithPassthrough sends the requests to these hosts ("localhost:8080",
// "auth.example.com": a name without a port matches any port) to the
// network as they are, in every mode, neither replayed nor recorded: for
// a test that talks to a local server of its own beside the model API.
func WithPassthrough(hosts ...string) Option {
	return func(c *config) {
		for _, h := range hosts {
			c.passthrough.Add(h) //nolint:errcheck // an empty host matches nothing
		}
	}
}

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

// PruneEnv, set to 1 (or true), makes every replaying test Prune.
const PruneEnv = "OPENMAX_PRUNE"

// Prune makes a replay that ends with every request served remove the
// recorded interactions nobody asked for from the cassette (rewritten
// atomically, the others byte for byte), instead of failing the test on
// them: the cassette keeps what the test uses (as openmax cassette prune
// does for a recorded session). A recording of another tool's format is
// never rewritten.
func Prune() Option { return func(c *config) { c.prune = true } }

// InOrder serves interactions in recorded order matching only method and
// path: for recordings made by another client, or imported from vcrpy,
// go-vcr or httprr, whose request bodies the test cannot reproduce.
func InOrder() Option { return func(c *config) { c.inOrder = true } }

func configure(t TB, opts []Option) config {
	t.Helper()
	c := config{path: DefaultPath(t.Name())}
	for _, o := range opts {
		o(&c)
	}
	explicit := c.mode
	if explicit == "" {
		if v := strings.ToLower(os.Getenv(RecordEnv)); v == "1" || v == "true" {
			explicit = Record
		}
	}
	if v := strings.ToLower(os.Getenv(PruneEnv)); v == "1" || v == "true" {
		c.prune = true
	}
	if v := os.Getenv(ModeEnv); strings.TrimSpace(v) != "" {
		explicit = "" // Resolve reads it
	}
	m, why, err := mode.Resolve(explicit, os.Getenv)
	if err != nil {
		t.Fatalf("vcr: %v", err)
	}
	c.mode, c.why = m, why
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
	_, statErr := os.Stat(c.path)
	exists := !errors.Is(statErr, fs.ErrNotExist)
	var rt http.RoundTripper
	switch {
	case c.mode == Record || (c.mode == RecordOnce && !exists) || (c.mode == RecordMissing && !exists):
		rt = newRecorder(t, c)
	case c.mode == RecordMissing:
		rt = newMissing(t, c)
	default:
		f := load(t, &c)
		r := replay.New(f, c.replayOptions(true))
		t.Cleanup(func() {
			misses, unused := r.Misses(), r.Unused()
			if c.prune && len(misses) == 0 && len(unused) > 0 {
				if err := prune(c, f, unused); err != nil {
					t.Errorf("vcr: pruning %s: %v", c.path, err)
				}
				unused = nil
			}
			check(t, c, misses, unused)
		})
		rt = r
	}
	return c.passing(rt)
}

// passing sends the passthrough hosts' requests to the real transport and
// every other to rt.
func (c config) passing(rt http.RoundTripper) http.RoundTripper {
	if len(c.passthrough) == 0 {
		return rt
	}
	real := c.transport
	if real == nil {
		real = http.DefaultTransport
	}
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.URL != nil && c.passthrough.Match(req.URL.Host) {
			return real.RoundTrip(req)
		}
		return rt.RoundTrip(req)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// newMissing replays the cassette and records what it misses: the
// recorder is made at the first miss, keeping every interaction the
// cassette had (byte for byte) and appending each new one as it completes,
// so a test killed midway leaves a cassette that loads. Until a request
// misses, the file is not touched.
func newMissing(t TB, c config) http.RoundTripper {
	t.Helper()
	f := load(t, &c)
	data, err := os.ReadFile(c.path)
	if err != nil {
		t.Fatalf("vcr: %v", err)
	}
	items, err := cassette.Items(data, f)
	if err != nil {
		t.Fatalf("vcr: %s: %v", c.path, err)
	}
	var (
		mu  sync.Mutex
		rec *recorder.Recorder
	)
	o := c.replayOptions(true)
	o.Fallback = func(req *http.Request, _ *replay.MissError) (*http.Response, error) {
		mu.Lock()
		if rec == nil {
			rec, err = recorder.New(recorder.Options{Path: c.path, Overwrite: true, Transport: c.transport, Scrub: c.scrub, Keep: items})
			if err == nil && f.Session != nil {
				rec.StageSession(f.Session)
			}
		}
		r, rerr := rec, err
		mu.Unlock()
		if rerr != nil {
			return nil, fmt.Errorf("vcr: recording into %s: %w", c.path, rerr)
		}
		return r.RoundTrip(req)
	}
	rp := replay.New(f, o)
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		if rec != nil {
			if err := rec.Close(); err != nil {
				t.Errorf("vcr: saving %s: %v", c.path, err)
			}
		}
		// Interactions no request used stay: openmax cassette prune
		// removes them.
		check(t, c, rp.Misses(), nil)
	})
	return rp
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

// prune rewrites the cassette without the interactions unused.
func prune(c config, f *cassette.File, unused []int) error {
	if c.foreign != "" {
		return fmt.Errorf("it is a %s recording; only an openmax cassette is rewritten", c.foreign)
	}
	data, err := os.ReadFile(c.path)
	if err != nil {
		return err
	}
	items, err := cassette.Items(data, f)
	if err != nil {
		return err
	}
	var texts [][]byte
	for i, it := range items {
		if !slices.Contains(unused, i) {
			texts = append(texts, it.Text)
		}
	}
	out, err := cassette.PlainText(texts, f.Session)
	if err != nil {
		return err
	}
	perm := os.FileMode(0o644)
	if fi, err := os.Stat(c.path); err == nil {
		perm = fi.Mode().Perm()
	}
	if err := atomicfile.Write(c.path, out, perm); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "vcr: %s: pruned %d interaction(s) never requested: %v\n", c.path, len(unused), unused)
	return nil
}

// load reads the cassette, converting a foreign recording in memory.
func load(t TB, c *config) *cassette.File {
	t.Helper()
	f, converted, err := importer.Load(c.path)
	c.foreign = converted
	if errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("vcr: no cassette at %s to replay (mode %s, %s; record it with %s=1 or %s=once)", c.path, c.mode, c.why, RecordEnv, ModeEnv)
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
	f := load(t, &c)
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
