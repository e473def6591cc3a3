// Package replay serves a recorded cassette (recorder/cassette) back to
// the code that made it: as an http.RoundTripper for in-process replay, or
// as an http.Handler over real HTTP (openmax fake-provider --cassette).
//
// # Matching
//
// A live request matches a recorded one when, after Options.Scrub has been
// applied to the live request (recorded requests were scrubbed when they
// were recorded), they agree on
//
//   - the method;
//   - the URL path (escaped form; "" counts as "/") and query (parsed,
//     compared with keys sorted). Scheme and host are ignored by default,
//     so a cassette recorded against http://127.0.0.1:PORT replays against
//     any base URL; Options.MatchHost compares them too;
//   - the body: when both parse as a single JSON value they are compared
//     structurally, after dropping the DefaultIgnore and Options.Ignore
//     paths and putting placeholders in place of volatile text in strings
//     (temporary and home paths, UUIDs, dates; Options.NoDefaults turns
//     the built-in rules off); key order, whitespace and escaping do not
//     matter, and numbers compare by their literal text. Other bodies are
//     compared byte for byte.
//
// Headers are not compared. Each recorded interaction is served at most
// once; identical requests get the identical recordings in recorded order
// (the first unserved match). A miss is a *MissError (errors.Is ErrNoMatch)
// whose message holds a unified diff against the nearest recorded request
// and names its index; Misses lists them after a run, and
// Options.OnRequest hears of every request as it is matched.
//
// # Serving
//
// An interaction whose response code is 0 got no response: RoundTrip fails
// with its recorded error, shaped as the transport would have made it (see
// cassette.Error.Err). Otherwise the response body yields the recorded chunks
// one per Read, never merged (a short buffer splits a chunk across reads),
// then the recorded terminal error, or io.EOF. An interaction without the
// openmax streaming member (a stock go-vcr cassette) serves its body as one
// chunk, recorded as arriving after Response.Duration.
//
// # Pacing
//
// Pace instant (the default) never waits and never reads the clock.
// Recorded pace waits, on Options.Clock, before each chunk (and before the
// terminal error, or the error of a request that got no response) until its
// recorded offset has passed since RoundTrip was called (since the request
// arrived, for the handler); a scaled pace divides the offsets by its
// factor. Waits honour the request context: cancelling it ends a pending
// wait and Body.Read returns the context's error.
package replay

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/recorder/cassette"
)

// Options configure a replay.
type Options struct {
	// Clock is the clock pacing waits go through; nil means the real one.
	Clock clock.Clock
	// Pace is how fast to serve; the zero Pace is instant.
	Pace Pace
	// Ignore lists JSON field paths dropped from both bodies before they
	// are compared: dot-separated member names ("metadata.user_id",
	// "stream_options"). In a path, "*" stands for every member or
	// element, a number picks an array element, and a name met at an array
	// applies to each of its elements ("messages.cache_control").
	Ignore []string
	// NoDefaults turns off the built-in matching rules for the volatile
	// parts of known clients' requests: the DefaultIgnore paths, and the
	// normalisation that puts <tmp>, <home>, <uuid> and <date> in place of
	// temporary and home paths, UUIDs and dates inside JSON strings of both
	// bodies (see defaultNormaliser). With it, only Ignore is dropped and
	// strings compare exactly.
	NoDefaults bool
	// MissAsResponse answers a request the cassette does not hold with an
	// HTTP 400 in the vendor's error shape (as the handler does, see
	// NewHandler), instead of failing the round trip: a harness then
	// reports the miss as a provider error rather than retrying it as a
	// transport failure.
	MissAsResponse bool
	// OnRequest, when set, is called once per request, after it was
	// matched and before it is answered, from the goroutine serving it.
	OnRequest func(Event)
	// InOrder serves the interactions in recorded order, matching only the
	// method and path: for recordings made by another client (imported),
	// whose request bodies the harness cannot reproduce.
	InOrder bool
	// MatchHost makes the scheme and host (with port) part of the match.
	// By default they are ignored, so a cassette replays against whatever
	// base URL the client was given.
	MatchHost bool
	// Scrub is applied to each live request before it is matched (it is
	// the recorder's scrub, which the recorded requests went through). It
	// gets a copy of the headers. Nil means none.
	Scrub func(method, url string, header http.Header, body []byte) (string, http.Header, []byte)
	// Fallback, when set, answers every request no unserved interaction
	// matches, instead of a miss: it gets the request as it arrived (its
	// body whole, unscrubbed) and the *MissError saying why it missed.
	// Such a request is not counted in Misses; OnRequest hears of it with
	// Event.Fallback set. It is how record mode missing sends what the
	// cassette lacks to the network (see recorder/mode).
	Fallback func(req *http.Request, miss *MissError) (*http.Response, error)
}

// Replayer is an http.RoundTripper serving a cassette. It is safe for
// concurrent use.
type Replayer struct {
	m              *matcher
	clk            clock.Clock
	pace           Pace
	missAsResponse bool
	fallback       func(*http.Request, *MissError) (*http.Response, error)
}

// New returns a Replayer serving f. The Replayer reads f but does not
// modify it; f must not change while it is in use.
func New(f *cassette.File, opts Options) *Replayer {
	clk := opts.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	return &Replayer{m: newMatcher(f, opts), clk: clk, pace: opts.Pace, missAsResponse: opts.MissAsResponse, fallback: opts.Fallback}
}

// Unused returns the indices of the interactions never served, ascending.
func (r *Replayer) Unused() []int { return r.m.unused() }

// Misses returns the requests no interaction answered so far, in arrival
// order; a caller that wants every request served checks it is empty
// after the run.
func (r *Replayer) Misses() []Miss { return r.m.missed() }

// Summary is a one-line account of the replay so far: requests served and
// missed, interactions never requested.
func (r *Replayer) Summary() string { return r.m.summary() }

// RoundTrip serves the first unserved interaction matching req.
func (r *Replayer) RoundTrip(req *http.Request) (*http.Response, error) {
	p := newPacer(r.clk, r.pace)
	if req.URL == nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("replay: request without a URL")
	}
	var sent []byte // the body as it arrived, for Fallback
	if r.fallback != nil && req.Body != nil {
		data, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			err = fmt.Errorf("replay: reading the request body: %w", err)
			r.m.unreadable(req.Method, req.URL.String(), err)
			return nil, err
		}
		sent = data
		req.Body = io.NopCloser(bytes.NewReader(data))
	}
	size := req.ContentLength
	if size == 0 && req.Body != nil && req.Body != http.NoBody {
		size = -1 // an outgoing request's 0 with a body means unknown
	}
	q, raw, err := r.m.live(req.Method, req.URL.String(), req.Header, req.Body, size)
	if err != nil {
		r.m.unreadable(req.Method, req.URL.String(), err)
		return nil, err
	}
	n, i, err := r.m.serve(q, raw)
	if err != nil {
		if r.fallback != nil {
			return r.fallback(withBody(req, sent), err.(*MissError))
		}
		if r.missAsResponse {
			return missResponse(req, n, err), nil
		}
		return nil, err
	}
	it := r.m.f.Interactions[i]
	ctx := req.Context()
	if !it.Responded() {
		e := it.Failure()
		if e == nil {
			return nil, fmt.Errorf("replay: interaction %d has neither a response nor a recorded error", i)
		}
		if err := p.wait(ctx, e.At); err != nil {
			return nil, err
		}
		return nil, e.Err(req.URL.Host, false)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	chunks, term := servedChunks(it), it.Failure()
	bctx, cancel := context.WithCancel(ctx)
	b := &body{ctx: ctx, wctx: bctx, cancel: cancel, p: p, chunks: chunks, term: term, host: req.URL.Host}
	resp := &http.Response{
		Status:        it.StatusLine(),
		StatusCode:    it.Response.Code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        it.Response.Headers.Clone(),
		Body:          b,
		ContentLength: -1,
		Request:       req,
	}
	if resp.Header == nil {
		resp.Header = http.Header{}
	}
	if n, err := strconv.ParseInt(strings.TrimSpace(resp.Header.Get("Content-Length")), 10, 64); err == nil && n >= 0 {
		resp.ContentLength = n
	}
	return resp, nil
}

// withBody is req with body as its body, which can be read again (GetBody).
func withBody(req *http.Request, body []byte) *http.Request {
	out := req.Clone(req.Context())
	if body == nil {
		out.Body, out.GetBody, out.ContentLength = http.NoBody, nil, 0
		return out
	}
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	out.ContentLength = int64(len(body))
	return out
}

// servedChunks is what an interaction's body serves, one chunk per Read: its
// chunks (see cassette.Interaction.Chunks) without the empty ones.
func servedChunks(it *cassette.Interaction) []cassette.Chunk {
	chunks := it.Chunks()
	if !slices.ContainsFunc(chunks, func(c cassette.Chunk) bool { return c.Data == "" }) {
		return chunks
	}
	var out []cassette.Chunk
	for _, c := range chunks {
		if c.Data != "" {
			out = append(out, c)
		}
	}
	return out
}

// pacer times one exchange.
type pacer struct {
	clk   clock.Clock
	pace  Pace
	start time.Time
}

func newPacer(clk clock.Clock, pace Pace) *pacer {
	p := &pacer{clk: clk, pace: pace}
	if pace.paced() {
		p.start = clk.Now()
	}
	return p
}

// wait returns once the recorded offset at (scaled) has passed since the
// start, or with ctx's error. Instant pace does not wait, but still
// reports a context that has ended.
func (p *pacer) wait(ctx context.Context, at time.Duration) error {
	if !p.pace.paced() {
		return ctx.Err()
	}
	d := p.start.Add(p.pace.scale(at)).Sub(p.clk.Now())
	return clock.Sleep(ctx, p.clk, d)
}

// body serves recorded chunks one per Read.
type body struct {
	ctx    context.Context // the request's
	wctx   context.Context // the request's, also ended by Close
	cancel context.CancelFunc
	p      *pacer
	chunks []cassette.Chunk
	term   *cassette.Error
	host   string
	closed atomic.Bool

	mu   sync.Mutex
	next int    // the next chunk
	rest []byte // what a short read left of the current chunk
	err  error  // the error every further Read returns
}

func (b *body) Read(p []byte) (int, error) {
	if b.closed.Load() {
		return 0, errClosed
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if err := b.ctx.Err(); err != nil {
		b.fail(err)
		return 0, err
	}
	if len(b.rest) > 0 {
		n := copy(p, b.rest)
		b.rest = b.rest[n:]
		return n, nil
	}
	var at time.Duration
	if b.next < len(b.chunks) {
		at = b.chunks[b.next].At
	} else if b.term != nil {
		at = b.term.At
	}
	if err := b.p.wait(b.wctx, at); err != nil {
		if b.closed.Load() {
			return 0, errClosed
		}
		if cerr := b.ctx.Err(); cerr != nil {
			err = cerr
		}
		b.fail(err)
		return 0, err
	}
	if b.next < len(b.chunks) {
		data := b.chunks[b.next].Data
		b.next++
		n := copy(p, data)
		b.rest = []byte(data[n:])
		return n, nil
	}
	err := io.EOF
	if b.term != nil {
		err = b.term.Err(b.host, true)
	}
	b.fail(err)
	return 0, err
}

// fail ends the body with err, which every further Read returns.
func (b *body) fail(err error) {
	b.err = err
	b.cancel()
}

func (b *body) Close() error {
	b.closed.Store(true)
	b.cancel()
	return nil
}
