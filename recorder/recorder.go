// Package recorder records model traffic into a cassette (see
// recorder/cassette) as it streams. A Recorder is an http.RoundTripper that
// sits in front of the real transport: the response is handed to the
// client the moment its headers arrive and every read of its body passes
// straight through (nothing is read ahead), while the recorder notes each
// read as a chunk with its arrival offset, and how the exchange ended if
// not cleanly (a reset, an early EOF, a cancel...), which stock go-vcr
// drops.
//
// Each interaction is appended to the cassette file as it completes (see
// cassette.Appender), before the client sees the end of its body, so the
// cost of a save does not grow with the interactions before it and a
// process killed at any moment leaves a file that Load and stock go-vcr
// read with every interaction whose end a client saw. The client does not
// wait for the disk: a goroutine of the recorder syncs the file behind the
// saves (one sync covers every save made while the one before ran), so an
// OS crash or a power cut loses at most the saves of the last sync or so
// (a millisecond here); a save it tears (part of it on the disk) is cut
// back by Load, which reads the file as it was at its last complete save
// (stock go-vcr may refuse such a file). Close, and SetSession, wait for
// the disk. A save that fails (a full
// disk) stops the recording: the file keeps the saves before, and Err,
// Close and the proxy report ErrIncomplete from then on.
// While recording, interactions are appended as they complete; Close
// writes them in the order their requests started, in the plain layout
// Marshal gives. (An unfinished recording, left by a crash, lists
// concurrent requests in the order they completed: keeping start order
// there cost a rewrite of the whole file whenever a request completed
// before an earlier-started one, which concurrent clients of a proxy made
// quadratic.) Secrets are scrubbed before anything is written
// (see ScrubRequest), in a way a replayer can reproduce on live requests.
//
// The cassette holds the bytes the client actually read. When the
// transport decoded a gzip body (it asked for gzip itself), those are the
// decoded bytes, and the response's Content-Encoding and Content-Length
// are dropped from the recording so a replay of it is self-consistent.
// A body the transport left encoded (the client asked for gzip itself, or
// the server sent deflate, br or zstd) is decoded by the recorder, at most
// MaxDecodedBody bytes of it, scrubbed and stored decoded, again without
// Content-Encoding and Content-Length; each chunk holds what its bytes
// decoded to. A body it cannot decode (br, zstd, a corrupt or oversized
// one) is never stored: the cassette holds a placeholder saying why
// (BodyNotStored), and so is a body over MaxDecodedBody bytes, which is
// not kept in memory past that. Content-Length is otherwise kept
// as received, even when the body was cut short; only when scrubbing
// changed the body's length is it shifted by the same amount.
//
// Bytes that arrive together with the end of the body or an error are
// handed to the client at once and the end on its next Read, so the client
// never waits for the cassette to be written to get bytes; the
// interaction is in the file by the time the client sees the end. The one
// exception is the read that completes a known Content-Length: those bytes
// are the end for the client (a proxy's client stops reading there), so
// they are handed over once the interaction is in the file. A client
// that closes the body early is recorded as a cancel, unless all of a
// known Content-Length had arrived (a JSON decoder need not read on to
// EOF).
//
// NewProxy puts a Recorder behind a reverse proxy, to record any client
// that can be pointed at another base URL.
package recorder

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/recorder/cassette"
)

// Options configure a Recorder.
type Options struct {
	// Path is the cassette file. It is written when the recorder is made
	// (an empty cassette, so a bad path fails at once), appended to after
	// every completed interaction, so a crash leaves what had completed,
	// and rewritten atomically, plain, by Close.
	Path string
	// Overwrite allows replacing a cassette that already exists at Path.
	// Without it New refuses with ErrExists and claims Path with an
	// exclusive create, so two recorders never write one file. With it the
	// existing file is left alone until the first save (New only checks
	// that the folder is writable).
	Overwrite bool
	// Transport is the real transport; nil means http.DefaultTransport.
	Transport http.RoundTripper
	// Clock measures the offsets; nil means the wall clock.
	Clock clock.Clock
	// Scrub are extra patterns: every match in header values, URLs,
	// bodies (request and response) and error messages is written as
	// "[scrubbed]". A replayer must scrub live requests with the same
	// patterns (ScrubRequest) to match them.
	Scrub []*regexp.Regexp
	// Keep are interactions the cassette starts with, before any
	// recorded: written first, as their Text is (record mode missing
	// keeps an older cassette's interactions byte for byte and appends
	// what it records after them; see cassette.Items).
	Keep []cassette.Item

	// syncFile replaces how the saves are synced (tests hold it up or fail
	// it); nil is (*cassette.Syncer).Sync. A field, not a package variable:
	// every recorder's syncing goroutine reads its own.
	syncFile func(*cassette.Syncer) error
}

// ErrExists reports that a cassette is already at the path and Overwrite
// was not set.
var ErrExists = errors.New("recorder: the cassette already exists")

// ErrClosed is returned by RoundTrip once the recorder is closed.
var ErrClosed = errors.New("recorder: closed")

// ErrIncomplete is what Err, Close and SetSession return (wrapped, with
// the write that failed) once a save of the cassette failed: the recording
// stopped there. The file keeps the saves before, which Load and stock
// go-vcr read; nothing later is written to it, so it never holds an
// interaction the recording reported as lost.
var ErrIncomplete = errors.New("recorder: the recording is incomplete")

// Recorder records the exchanges that go through it. It is safe for
// concurrent use.
type Recorder struct {
	path     string
	rt       http.RoundTripper
	clk      clock.Clock
	patterns []*regexp.Regexp
	t0       time.Time

	saveMu sync.Mutex // serialises snapshot+write, so writes land in order
	// Under saveMu:
	app       *cassette.Appender // nil until the file is first written (Overwrite)
	savedVer  int                // the session version in the file
	everSaved bool
	scratch   []byte // the text of the interactions a save writes, reused by the next
	finished  bool   // Close has written the plain file; a later save rewrites it whole
	failed    error  // the first failed save (ErrIncomplete): nothing is written after it

	kick     chan struct{} // a save to sync (see syncLoop)
	stopSync chan struct{} // closed by Close
	syncDone chan struct{} // closed when syncLoop returns
	syncFile func(*cassette.Syncer) error

	mu      sync.Mutex
	entries []*entry // one slot per request, in start order
	session *cassette.Session
	sessVer int // counts SetSession/StageSession
	inFile  int // the session version the file holds (also savedVer, but read without saveMu)
	closed  bool
	broken  error // failed, read without saveMu
}

// entry is one interaction: in flight until done, then it holds the
// scrubbed interaction as written.
type entry struct {
	started time.Time // on the recorder's clock
	start   time.Duration
	scrub   *scrubber
	req     vcr.Request // scrubbed when the interaction completes
	raw     rawRequest  // what req is made from
	rawURL  string      // the unscrubbed URL, to take out of error messages

	responded    bool
	code         int
	status       string
	header       http.Header
	uncompressed bool
	chunks       []cassette.Chunk // raw until done
	size         int64            // bytes of the body read so far
	overflow     bool             // the body went past bodyLimit: chunks dropped
	overAt       time.Duration    // the first chunk's offset, for the placeholder

	done bool
	it   *cassette.Interaction

	enc     []byte        // it as a list item, until it is in the file (under saveMu)
	at      cassette.Span // where the file holds it, once written (under saveMu)
	written bool          // it is in the file (under saveMu)
}

// rawRequest is a request as it went out, before scrubbing.
type rawRequest struct {
	method string
	url    *url.URL
	header http.Header
	body   []byte
}

// New makes a recorder and writes an empty cassette at opts.Path.
func New(opts Options) (*Recorder, error) {
	if opts.Path == "" {
		return nil, errors.New("recorder: no cassette path")
	}
	for i, p := range opts.Scrub {
		if p == nil {
			return nil, fmt.Errorf("recorder: scrub pattern %d is nil", i)
		}
	}
	r := &Recorder{
		path:     opts.Path,
		rt:       opts.Transport,
		clk:      opts.Clock,
		patterns: append([]*regexp.Regexp(nil), opts.Scrub...),
		kick:     make(chan struct{}, 1),
		stopSync: make(chan struct{}),
		syncDone: make(chan struct{}),
		syncFile: opts.syncFile,
	}
	if r.syncFile == nil {
		r.syncFile = (*cassette.Syncer).Sync
	}
	for _, k := range opts.Keep {
		if k.Interaction == nil || len(k.Text) == 0 {
			return nil, errors.New("recorder: a kept interaction without its text")
		}
		r.entries = append(r.entries, &entry{done: true, it: k.Interaction, enc: k.Text, start: k.Interaction.Start()})
	}
	if r.rt == nil {
		r.rt = http.DefaultTransport
	}
	if r.clk == nil {
		r.clk = clock.Real{}
	}
	r.t0 = r.clk.Now()
	if opts.Overwrite {
		if err := checkReplaceable(opts.Path); err != nil {
			return nil, err
		}
	} else if err := r.claim(); err != nil {
		return nil, err
	}
	go r.syncLoop()
	return r, nil
}

// syncLoop makes the saves durable behind the clients: after each kick it
// tops up the blank lines ahead of the document (under saveMu, a write of
// the page cache) and syncs the file without holding saveMu, so a save in
// the meantime never waits for the disk. A sync that fails stops the
// recording as a failed save does.
func (r *Recorder) syncLoop() {
	defer close(r.syncDone)
	for {
		select {
		case <-r.stopSync:
			return
		case <-r.kick:
		}
		r.saveMu.Lock()
		app := r.app
		if r.failed != nil || r.finished || app == nil {
			r.saveMu.Unlock()
			continue
		}
		app.Reserve() //nolint:errcheck // only a speed-up
		s := app.Syncer()
		r.saveMu.Unlock()
		if err := r.syncFile(s); err != nil {
			r.saveMu.Lock()
			if r.app == app && r.failed == nil && !r.finished {
				r.fail(err) //nolint:errcheck // reported by Err, Close and SetSession
			}
			r.saveMu.Unlock()
		}
	}
}

// syncSoon asks syncLoop for a sync of the saves made so far.
func (r *Recorder) syncSoon() {
	select {
	case r.kick <- struct{}{}:
	default: // one is pending, and covers this save
	}
}

// claim creates Path exclusively, holding an empty cassette.
func (r *Recorder) claim() error {
	app, err := cassette.CreateAppender(r.path, true)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %s (record to a new file, or pass --overwrite to replace it)", ErrExists, r.path)
	}
	if err != nil {
		return fmt.Errorf("recorder: %w", err)
	}
	r.app = app
	return nil
}

// checkReplaceable fails when path cannot be replaced by a rename: it is a
// directory, or its folder does not take new files.
func checkReplaceable(path string) error {
	if fi, err := os.Lstat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("recorder: %s is a directory", path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("recorder: cannot write beside %s: %w", path, err)
	}
	tmp.Close()
	os.Remove(tmp.Name())
	return nil
}

// RoundTrip sends req through the real transport and records the exchange.
// A transport error is recorded (with no response) and returned unchanged.
// A response is returned as soon as it arrives, its body recorded as the
// client reads it; the interaction completes (and the cassette is saved)
// when the body reaches its end, fails, or is closed.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	out := new(http.Request)
	*out = *req
	body, err := takeBody(out)
	if err != nil {
		return nil, fmt.Errorf("recorder: reading the request body: %w", err)
	}
	// The request is scrubbed when the interaction completes, not here:
	// scrubbing a long conversation takes a fraction of a millisecond
	// that would delay the request, and so the first token.
	e := &entry{scrub: newScrubber(req.URL, req.Header, r.patterns),
		raw: rawRequest{method: req.Method, header: req.Header.Clone(), body: body}}
	if req.URL != nil {
		u := *req.URL
		e.raw.url = &u
		e.rawURL = req.URL.String()
	}

	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	e.started = r.clk.Now()
	e.start = e.started.Sub(r.t0)
	r.entries = append(r.entries, e)
	r.mu.Unlock()

	resp, err := r.rt.RoundTrip(out)
	if err != nil {
		r.finish(e, err, r.since(e), nil)
		return nil, err
	}
	resp.Request = req

	r.mu.Lock()
	e.responded = true
	e.code = resp.StatusCode
	e.status = resp.Status
	e.header = resp.Header.Clone()
	e.uncompressed = resp.Uncompressed
	r.mu.Unlock()

	if resp.Body == nil || resp.Body == http.NoBody || resp.StatusCode == http.StatusSwitchingProtocols {
		// Nothing to read (or a protocol switch, whose body is the
		// connection): complete now and leave the body as it is.
		r.finish(e, nil, r.since(e), nil)
		return resp, nil
	}
	length := resp.ContentLength
	if resp.Uncompressed {
		length = -1
	}
	resp.Body = &recBody{r: r, e: e, rc: resp.Body, length: length}
	return resp, nil
}

// since is the time since e's request went out.
func (r *Recorder) since(e *entry) time.Duration { return r.clk.Now().Sub(e.started) }

// chunk notes a read of e's body.
func (r *Recorder) chunk(e *entry, at time.Duration, p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.done || e.overflow {
		return
	}
	e.size += int64(len(p))
	if e.size > bodyLimit {
		// Too large to keep: the client still gets every byte, the
		// cassette a placeholder, and memory stays bounded.
		e.overflow, e.overAt = true, at
		if len(e.chunks) > 0 {
			e.overAt = e.chunks[0].At
		}
		e.chunks = nil
		return
	}
	e.chunks = append(e.chunks, cassette.Chunk{At: at, Data: string(p)})
}

// finish completes e and saves: cleanly when err is nil or io.EOF, else
// with err's kind (or end, when given, as it is). A second finish is
// ignored.
func (r *Recorder) finish(e *entry, err error, at time.Duration, end *cassette.Error) {
	r.mu.Lock()
	if e.done {
		r.mu.Unlock()
		return
	}
	if end == nil && err != nil && err != io.EOF {
		end = cassette.ErrorOf(err, at)
	}
	r.completeLocked(e, end, at)
	r.mu.Unlock()
	// In the file before the client sees the end; on the disk soon after.
	if r.save(false) == nil {
		r.syncSoon()
	}
}

// completeLocked builds e's interaction, scrubbed.
func (r *Recorder) completeLocked(e *entry, end *cassette.Error, at time.Duration) {
	e.done = true
	e.req = e.scrub.request(e.raw.method, e.raw.url, e.raw.header, e.raw.body)
	e.raw = rawRequest{}
	it := &cassette.Interaction{Request: e.req, Stream: &cassette.Stream{Start: e.start}}
	if end != nil {
		msg := end.Message
		if e.rawURL != "" {
			msg = strings.ReplaceAll(msg, e.rawURL, e.req.URL)
		}
		it.Stream.Error = &cassette.Error{Kind: end.Kind, Message: e.scrub.str(msg), At: end.At}
	}
	if e.responded {
		raw := make([]string, len(e.chunks))
		ats := make([]time.Duration, len(e.chunks))
		for i, c := range e.chunks {
			raw[i], ats[i] = c.Data, c.At
		}
		h := e.scrub.header(e.header)
		if e.overflow {
			raw = []string{fmt.Sprintf("%sit was over the limit of %d bytes (%d MiB)]", BodyNotStored, bodyLimit, bodyLimit>>20)}
			ats = []time.Duration{e.overAt}
			h.Del("Content-Encoding")
			h.Del("Content-Length")
		} else if e.uncompressed {
			// The transport decoded the body: the client read (and the
			// cassette holds) the decoded bytes, so the encoding and the
			// encoded length no longer describe them.
			h.Del("Content-Encoding")
			h.Del("Content-Length")
		} else if codings := ContentCodings(e.header); len(codings) > 0 {
			// Still encoded (the client asked for an encoding itself, or
			// the server sent one unasked): decoded here, so the scrubber
			// sees the text, and stored decoded, which the cassette's
			// headers then say.
			raw, ats = decodeRecorded(codings, raw, ats)
			h.Del("Content-Encoding")
			h.Del("Content-Length")
		}
		rawLen := 0
		for _, p := range raw {
			rawLen += len(p)
		}
		body, pieces, keep := e.scrub.chunks(raw)
		for i, p := range pieces {
			it.Stream.Chunks = append(it.Stream.Chunks, cassette.Chunk{At: ats[keep[i]], Data: p})
		}
		adjustLength(h, len(body)-rawLen)
		it.Response = vcr.Response{
			Body:     body,
			Headers:  h,
			Status:   e.status,
			Code:     e.code,
			Duration: at,
		}
	} else {
		it.Response = vcr.Response{Duration: at}
	}
	// The interaction holds all of it now: what the entry kept to make
	// it goes, so a completed entry holds only the interaction until it
	// is in the file, and then nothing of its text (see placeAt).
	e.chunks, e.req, e.header, e.scrub, e.rawURL = nil, vcr.Request{}, nil, nil, ""
	e.it = it
}

// save writes the interactions completed since the last save (those
// completed together in start order) and the session, if either is new.
// With durable the save is on disk when save returns; without, it is in
// the file (a killed process loses nothing) and reaches the disk with the
// next durable save or Close.
//
// The first save that fails stops the recording: it and every later save
// return the same ErrIncomplete, and the file keeps what was saved before.
func (r *Recorder) save(durable bool) error {
	r.saveMu.Lock()
	defer r.saveMu.Unlock()
	if r.failed != nil {
		return r.failed
	}
	r.mu.Lock()
	var done, fresh []*entry
	for _, e := range r.entries {
		if !e.done {
			continue
		}
		done = append(done, e)
		if !e.written {
			fresh = append(fresh, e)
		}
	}
	sess, ver := r.session, r.sessVer
	r.mu.Unlock()
	if len(fresh) == 0 && ver == r.savedVer && r.app != nil && r.everSaved {
		return nil
	}
	// Encoded into one buffer kept between saves: the text is needed only
	// until it is in the file (placeAt lets go of it; a save that fails
	// stops the recording, and nothing encodes into the buffer again).
	r.scratch = r.scratch[:0]
	ends := make([]int, len(fresh))
	for i, e := range fresh {
		ends[i] = len(r.scratch)
		if e.enc != nil {
			continue // kept as it was (Options.Keep)
		}
		var err error
		if r.scratch, err = cassette.AppendInteraction(r.scratch, e.it); err != nil {
			return r.fail(err)
		}
		ends[i] = len(r.scratch)
	}
	from := 0
	for i, e := range fresh {
		if e.enc == nil {
			e.enc = r.scratch[from:ends[i]:ends[i]]
		}
		from = ends[i]
	}
	defer func() {
		if cap(r.scratch) > maxScratch {
			r.scratch = nil // not kept after one huge interaction
		}
	}()
	if r.finished {
		// After Close (a session set late): the plain file again.
		spans, err := cassette.NewAppender(r.path).Close(texts(done), sess)
		if err != nil {
			return r.fail(err)
		}
		r.placeAt(done, spans)
		r.savedVer = ver
		r.mu.Lock()
		r.inFile = ver
		r.mu.Unlock()
		return nil
	}
	var err error
	if r.app != nil {
		var spans []cassette.Span
		if spans, err = r.app.Append(encodings(fresh), sess, durable); err == nil {
			r.placeAt(fresh, spans)
		}
	}
	if r.app == nil || err != nil {
		// A failed append (a full disk, say) is tried again as a
		// rewrite: the whole cassette once, without the sessions each
		// append left hidden, may still fit.
		if r.app == nil {
			r.app = cassette.NewAppender(r.path)
		}
		spans, rerr := r.app.Rewrite(texts(done), sess)
		if rerr != nil {
			// The file holds the last save that worked (a failed
			// append leaves the document as it was, a failed rewrite
			// the file).
			if err != nil {
				rerr = fmt.Errorf("%w, and rewriting it whole: %w", err, rerr)
			}
			return r.fail(rerr)
		}
		r.placeAt(done, spans)
	}
	r.savedVer, r.everSaved = ver, true
	r.mu.Lock()
	r.inFile = ver
	r.mu.Unlock()
	return nil
}

// maxScratch is the largest encoding buffer kept between saves.
const maxScratch = 4 << 20

// placeAt notes where es are in the file (under saveMu): the text of each
// is read back from there when needed (a rewrite, Close, Cassette), so
// neither it nor the decoded interaction is held any longer. A recording's
// memory thus does not grow with what it has saved (a long conversation's
// requests each carry the history so far: the square of its turns).
func (r *Recorder) placeAt(es []*entry, spans []cassette.Span) {
	r.mu.Lock()
	for i, e := range es {
		e.written, e.at, e.enc, e.it = true, spans[i], nil, nil
	}
	r.mu.Unlock()
}

// fail stops the recording at a save that failed with err (under saveMu):
// the file is closed as it stands and every later save, Close and Err
// report it.
func (r *Recorder) fail(err error) error {
	if r.app != nil {
		r.app.Abandon() //nolint:errcheck // the save's own error is the one to report
		r.app = nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	kept := 0
	for _, e := range r.entries {
		if e.written {
			kept++
		}
	}
	r.failed = fmt.Errorf("%w: writing the cassette failed (%w); %s keeps the %d interaction(s) saved before, and nothing after is recorded", ErrIncomplete, err, r.path, kept)
	r.broken = r.failed
	return r.failed
}

// Err is nil while every save of the cassette has worked, and the
// ErrIncomplete of the first that failed after: a caller that must not
// report anything the cassette does not hold checks it first.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.broken
}

// texts is the text of each of es: in memory, or where the file holds it.
func texts(es []*entry) []cassette.Text {
	out := make([]cassette.Text, len(es))
	for i, e := range es {
		out[i] = cassette.Text{Bytes: e.enc, At: e.at}
	}
	return out
}

func encodings(es []*entry) [][]byte {
	out := make([][]byte, len(es))
	for i, e := range es {
		out[i] = e.enc
	}
	return out
}

// Cassette returns a copy of the cassette as it stands: the completed
// interactions, in start order, scrubbed, and the session. Those already
// in the file are read back from it; an error says one could not be (the
// file changed under the recording, or cannot be read).
func (r *Recorder) Cassette() (*cassette.File, error) {
	r.saveMu.Lock() // the file and where it holds each interaction
	defer r.saveMu.Unlock()
	r.mu.Lock()
	f := cassette.New()
	f.Interactions = []*cassette.Interaction{}
	var where []cassette.Text // for each interaction not held, its text
	for _, e := range r.entries {
		if !e.done {
			continue
		}
		var it *cassette.Interaction
		if e.it != nil {
			it = e.it.Clone()
		}
		f.Interactions = append(f.Interactions, it)
		where = append(where, cassette.Text{Bytes: e.enc, At: e.at})
	}
	if r.session != nil {
		f.Session = r.session.Clone()
	}
	r.mu.Unlock()
	app := r.app
	if app == nil {
		app = cassette.NewAppender(r.path) // closed, or stopped: the file at the path
	}
	for i, it := range f.Interactions {
		if it != nil {
			continue
		}
		text, err := app.ReadItem(where[i])
		if err == nil {
			f.Interactions[i], err = cassette.DecodeInteraction(text)
		}
		if err != nil {
			return nil, fmt.Errorf("recorder: interaction %d as written: %w", i+1, err)
		}
	}
	return f, nil
}

// Recorded is how many interactions have completed.
func (r *Recorder) Recorded() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.entries {
		if e.done {
			n++
		}
	}
	return n
}

// SetSession stores the recorded session in the cassette and saves it,
// durably.
func (r *Recorder) SetSession(s *cassette.Session) error {
	r.StageSession(s)
	return r.save(true)
}

// StageSession stores the recorded session for the next save without
// saving: FlushSession (or any save) writes it. A caller that stages a
// change flushes it before it reports the change to anyone.
func (r *Recorder) StageSession(s *cassette.Session) {
	r.mu.Lock()
	if s == nil {
		r.session = nil
	} else {
		r.session = s.Clone()
	}
	r.sessVer++
	r.mu.Unlock()
}

// FlushSession writes a staged session if it is not in the file yet. When
// it returns the session is in the file, so a process killed at any moment
// after leaves it in the cassette. It does not wait for the disk (that
// costs from a fifth of a millisecond to several, and a caller flushes
// before every line it sends): the next interaction's save or Close, which
// are synced, makes it durable, and an OS crash before then can lose it
// (Load then reads the cassette as the save before left it; see
// cassette.Appender.Append). It costs nothing when nothing is staged.
func (r *Recorder) FlushSession() error {
	r.mu.Lock()
	clean := r.sessVer == r.inFile
	r.mu.Unlock()
	if clean {
		return nil
	}
	return r.save(false)
}

// Close completes the interactions still open, as cancelled (a request
// still waiting for its response is recorded with none; a body still being
// read keeps the chunks read so far), saves the cassette and reports
// whether that worked. After a failed save it writes nothing and returns
// that save's ErrIncomplete: the file stays as the last save that worked
// left it. Later requests fail with ErrClosed; bodies still
// open keep passing through, unrecorded.
func (r *Recorder) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	for _, e := range r.entries {
		if e.done {
			continue
		}
		at := r.since(e)
		msg := "the recorder was closed before the end of the body"
		if !e.responded {
			msg = "the recorder was closed before a response"
		}
		r.completeLocked(e, &cassette.Error{Kind: cassette.KindCancel, Message: msg, At: at}, at)
	}
	r.mu.Unlock()
	return r.finishFile()
}

// finishFile writes every completed interaction and the session, and then
// the whole cassette again, atomically, in the plain layout (Marshal's).
// After a failed save it writes nothing and reports that save's error.
func (r *Recorder) finishFile() error {
	close(r.stopSync)
	<-r.syncDone
	// Not synced here: the appender's Close syncs this file before it
	// writes the plain one.
	serr := r.save(false)
	r.saveMu.Lock()
	defer r.saveMu.Unlock()
	if r.failed != nil {
		r.finished = true
		return r.failed
	}
	r.mu.Lock()
	var done []*entry
	for _, e := range r.entries {
		if e.done && (e.written || e.enc != nil) {
			done = append(done, e)
		}
	}
	sess := r.session
	r.mu.Unlock()
	app := r.app
	if app == nil {
		app = cassette.NewAppender(r.path)
	}
	r.app, r.finished = nil, true
	spans, err := app.Close(texts(done), sess)
	if err != nil {
		return errors.Join(serr, fmt.Errorf("recorder: %w", err))
	}
	r.placeAt(done, spans)
	return serr
}

// recBody passes a response body through, noting each read.
type recBody struct {
	r      *Recorder
	e      *entry
	rc     io.ReadCloser
	length int64 // the Content-Length, -1 when unknown

	mu      sync.Mutex
	n       int64         // bytes read
	last    time.Duration // offset of the last read that brought bytes
	pending error         // an error that came with bytes, owed to the next Read
	pendAt  time.Duration
}

// Read reads straight from the real body. Bytes that arrive with an error
// (typically the last bytes with io.EOF) are returned at once and the error
// on the next Read, so the client never waits on the cassette being
// written to get bytes that have arrived.
func (b *recBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	if err := b.pending; err != nil {
		b.pending = nil
		at := b.pendAt
		b.mu.Unlock()
		b.r.finish(b.e, err, at, nil)
		return 0, err
	}
	b.mu.Unlock()

	n, err := b.rc.Read(p)
	at := b.r.since(b.e)
	if n > 0 {
		b.r.chunk(b.e, at, p[:n])
		b.mu.Lock()
		b.n += int64(n)
		b.last = at
		whole := b.length >= 0 && b.n >= b.length
		if err != nil && !whole {
			b.pending, b.pendAt = err, at
			err = nil
		}
		b.mu.Unlock()
		if whole {
			// These bytes complete a known Content-Length: with them the
			// client has the whole reply (a proxy's client too), so the
			// interaction goes into the file first.
			b.r.finish(b.e, err, at, nil)
		}
		return n, err
	}
	if err != nil {
		b.r.finish(b.e, err, at, nil)
	}
	return n, err
}

// Close closes the real body. Closed before its end, the interaction is
// recorded as cancelled by the client, unless every byte of a known
// Content-Length had arrived (a client that decoded a whole reply need not
// read on to EOF).
func (b *recBody) Close() error {
	err := b.rc.Close()
	at := b.r.since(b.e)
	b.mu.Lock()
	pending, pendAt := b.pending, b.pendAt
	b.pending = nil
	complete := b.length >= 0 && b.n == b.length
	last := b.last
	if b.n == 0 {
		last = at
	}
	b.mu.Unlock()
	switch {
	case pending != nil:
		b.r.finish(b.e, pending, pendAt, nil)
	case complete:
		b.r.finish(b.e, nil, last, nil)
	default:
		b.r.finish(b.e, nil, at, &cassette.Error{Kind: cassette.KindCancel, Message: "closed by the client before the end", At: at})
	}
	return err
}
