// Package httpx is the HTTP plumbing vendor clients share: one POST whose
// failures come back classified as provider.HTTPError or
// provider.TransportError, and a response body that fails as an incomplete
// stream when no byte arrives for the idle timeout. All waiting goes
// through the injected clock.
package httpx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
)

// Client sends vendor requests.
type Client struct {
	// HTTP is the client to use; its Transport is where a recorder or
	// replayer plugs in. Nil means http.DefaultClient.
	HTTP *http.Client
	// Clock times the watchdogs and Retry-After dates; nil means real.
	Clock clock.Clock
	// IdleTimeout fails a response body that delivers no byte for this
	// long; 0 disables the watchdog.
	IdleTimeout time.Duration
	// HeaderTimeout fails an attempt whose response headers have not
	// arrived this long after the request went out, as a
	// provider.TransportError (the retry policy resends it like a dead
	// connection); 0 waits as long as the context allows.
	HeaderTimeout time.Duration
	// ReplyTimeout bounds one response from the request to the end of its
	// body: past it the reply fails with a *provider.LimitError (an
	// incomplete reply that is not retried); 0 disables it.
	ReplyTimeout time.Duration
	// MaxReplyBytes caps the bytes read from one response body (as the
	// transport delivers them, that is after any decompression it did
	// itself): past it the reply fails with a *provider.LimitError. A body
	// the vendor client decompresses itself is capped again with Cap. 0
	// means no cap.
	MaxReplyBytes int64
}

// maxErrorBody caps how much of an error response is read.
const maxErrorBody = 64 << 10

// Post sends body (JSON) to url with header. On a 2xx status it returns the
// response, whose Body the caller must close. Otherwise the error is a
// *provider.HTTPError (with the vendor's code, message and Retry-After), a
// *provider.TransportError (the header timeout included) or a
// *provider.LimitError (the reply timeout passed before the headers came).
//
// The watchdogs run only while they have something to time: one clock
// wait while the headers are awaited (header and reply timeouts), one
// while the body is read (idle and reply timeouts); closing the body ends
// its wait before Close returns.
func (c *Client) Post(ctx context.Context, url string, header http.Header, body []byte) (*http.Response, error) {
	return c.PostWith(ctx, url, header, body, nil)
}

// ErrorReader reads a vendor's error response into the error Post
// returns: he comes with its Status and Retry-After set, and the reader
// fills in its Code and Message from the response headers and the first
// 64 KiB of the body (AWS, for one, names the error in a header,
// x-amzn-ErrorType, and gives only a message in the body).
type ErrorReader func(he *provider.HTTPError, header http.Header, body []byte)

// PostWith is Post with the vendor's own reading of an error response;
// a nil read takes the code and message from the body as Post does
// (provider.ParseErrorBody).
func (c *Client) PostWith(ctx context.Context, url string, header http.Header, body []byte, read ErrorReader) (*http.Response, error) {
	clk := c.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	rctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("building request: %w", err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	start := clk.Now()
	var replyDeadline time.Time
	if c.ReplyTimeout > 0 {
		replyDeadline = start.Add(c.ReplyTimeout)
	}
	var headerDeadline time.Time
	if c.HeaderTimeout > 0 {
		headerDeadline = start.Add(c.HeaderTimeout)
	}
	w := startWatch(clk, cancel, []deadline{{headerDeadline, firedHeader}, {replyDeadline, firedReply}})
	resp, err := hc.Do(req)
	fired := w.stop()
	if fired != firedNone && err == nil {
		resp.Body.Close()
	}
	switch {
	case ctx.Err() != nil:
		cancel()
		return nil, ctx.Err()
	case fired == firedHeader:
		cancel()
		return nil, &provider.TransportError{Err: fmt.Errorf("no response headers within %s (header timeout)", c.HeaderTimeout)}
	case fired == firedReply:
		cancel()
		return nil, replyTimeoutError(c.ReplyTimeout)
	case err != nil:
		cancel()
		return nil, &provider.TransportError{Err: scrubURLError(err), Unreachable: unreachable(err)}
	}
	resp.Body = newWatchedBody(resp.Body, cancel, clk, c.IdleTimeout, c.ReplyTimeout, replyDeadline, c.MaxReplyBytes)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		// The watchdogs and the cap hold here too: an error body that
		// drips or never ends still ends.
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		he := &provider.HTTPError{Status: resp.StatusCode}
		he.RetryAfter, he.HasRetryAfter = provider.ParseRetryAfter(resp.Header, clk.Now())
		if read != nil {
			read(he, resp.Header, data)
		} else {
			he.Code, he.Message = provider.ParseErrorBody(data)
		}
		return nil, he
	}
	return resp, nil
}

// replyTimeoutError is the failure of a reply still running at its
// deadline.
func replyTimeoutError(d time.Duration) error {
	return &provider.LimitError{Limit: "reply timeout", Detail: fmt.Sprintf("the reply was not complete %s after the request went out", d)}
}

// sizeError is the failure of a body over its byte cap.
func sizeError(max int64) error {
	return &provider.LimitError{Limit: "max reply bytes", Detail: fmt.Sprintf("the response body passed %s", Size(max))}
}

// Size renders a byte count for people: whole MiB or KiB when it is one,
// else bytes.
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Cap returns r failing with a *provider.LimitError once more than max
// bytes were read from it; the bytes up to the cap are delivered. max <= 0
// means no cap. Vendor clients wrap a body they decompress themselves, so
// a small gzip body cannot expand without bound.
func Cap(r io.Reader, max int64) io.Reader {
	if max <= 0 {
		return r
	}
	return &capped{r: r, max: max}
}

type capped struct {
	r      io.Reader
	n, max int64
	err    error
}

func (c *capped) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	// Read one byte past the cap at most, to tell a body of exactly max
	// bytes from a longer one.
	if room := c.max - c.n + 1; int64(len(p)) > room {
		p = p[:room]
	}
	k, err := c.r.Read(p)
	c.n += int64(k)
	if c.n > c.max {
		k -= int(c.n - c.max)
		c.n = c.max
		c.err = sizeError(c.max)
		return k, c.err
	}
	return k, err
}

// unreachable reports a failure that happened before the request reached
// the server: a dial or DNS failure.
func unreachable(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// scrubURLError keeps the failure but drops the request URL, which may
// carry credentials in its query.
func scrubURLError(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil && strings.HasPrefix(err.Error(), "Post ") {
			return fmt.Errorf("POST: %w", inner)
		}
	}
	return err
}

// What ended a request or a body.
const (
	firedNone = iota
	firedHeader
	firedIdle
	firedReply
	firedSize
)

// deadline is a point in time that ends a request with reason; a zero at
// is none.
type deadline struct {
	at     time.Time
	reason int
}

// watch ends the request (cancel) at the first of its deadlines, until
// stopped.
type watch struct {
	clk    clock.Clock
	cancel context.CancelFunc
	quit   context.CancelFunc
	exited chan struct{}

	mu    sync.Mutex
	fired int
}

// startWatch starts a watch over deadlines; with none it starts no
// goroutine (and so no clock wait).
func startWatch(clk clock.Clock, cancel context.CancelFunc, ds []deadline) *watch {
	w := &watch{clk: clk, cancel: cancel, exited: make(chan struct{})}
	first := deadline{}
	for _, d := range ds {
		if !d.at.IsZero() && (first.at.IsZero() || d.at.Before(first.at)) {
			first = d
		}
	}
	if first.at.IsZero() {
		close(w.exited)
		w.quit = func() {}
		return w
	}
	ctx, quit := context.WithCancel(context.Background())
	w.quit = quit
	go func() {
		defer close(w.exited)
		for {
			wait := first.at.Sub(clk.Now())
			if wait <= 0 {
				w.mu.Lock()
				w.fired = first.reason
				w.mu.Unlock()
				cancel()
				return
			}
			if clock.Sleep(ctx, clk, wait) != nil {
				return
			}
		}
	}()
	return w
}

// stop ends the watch, waiting until its clock wait is withdrawn, and
// reports what fired, if anything did.
func (w *watch) stop() int {
	w.quit()
	<-w.exited
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fired
}

// watchedBody is a response body under the idle watchdog, the reply
// deadline and the byte cap: whichever trips first fails its reads with
// the matching error (an incomplete stream for idle, a client limit for
// the others) and cancels the request.
type watchedBody struct {
	rc       io.ReadCloser
	cancel   context.CancelFunc
	clk      clock.Clock
	idle     time.Duration
	reply    time.Duration
	deadline time.Time // zero: none
	max      int64     // 0: no cap
	n        int64

	mu    sync.Mutex
	last  time.Time
	fired int

	quit   context.CancelFunc
	exited chan struct{}
	close  sync.Once
}

func newWatchedBody(rc io.ReadCloser, cancel context.CancelFunc, clk clock.Clock, idle, reply time.Duration, deadline time.Time, max int64) io.ReadCloser {
	b := &watchedBody{rc: rc, cancel: cancel, clk: clk, idle: idle, reply: reply, deadline: deadline, max: max, last: clk.Now(), exited: make(chan struct{})}
	if idle <= 0 && deadline.IsZero() {
		close(b.exited)
		b.quit = func() {}
		return b
	}
	ctx, quit := context.WithCancel(context.Background())
	b.quit = quit
	go b.watch(ctx)
	return b
}

// due reports what has tripped at now, and how long until the next check
// otherwise. The reply deadline wins a tie.
func (b *watchedBody) due(now time.Time) (int, time.Duration) {
	wait := time.Duration(-1)
	if !b.deadline.IsZero() {
		wait = b.deadline.Sub(now)
		if wait <= 0 {
			return firedReply, 0
		}
	}
	if b.idle > 0 {
		w := b.idle - now.Sub(b.last)
		if w <= 0 {
			return firedIdle, 0
		}
		if wait < 0 || w < wait {
			wait = w
		}
	}
	return firedNone, wait
}

func (b *watchedBody) watch(ctx context.Context) {
	defer close(b.exited)
	for {
		b.mu.Lock()
		if b.fired != firedNone {
			b.mu.Unlock()
			return
		}
		why, wait := b.due(b.clk.Now())
		if why != firedNone {
			b.fired = why
		}
		b.mu.Unlock()
		if why != firedNone {
			b.cancel()
			return
		}
		if clock.Sleep(ctx, b.clk, wait) != nil {
			return
		}
	}
}

// failure is the error of what fired; mu held.
func (b *watchedBody) failure() error {
	switch b.fired {
	case firedIdle:
		return fmt.Errorf("%w: no bytes for %s (idle timeout)", provider.ErrIncomplete, b.idle)
	case firedReply:
		return replyTimeoutError(b.reply)
	case firedSize:
		return sizeError(b.max)
	}
	return nil
}

func (b *watchedBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	if b.fired == firedNone && !b.deadline.IsZero() && !b.clk.Now().Before(b.deadline) {
		b.fired = firedReply
		b.cancel()
	}
	if b.fired != firedNone {
		err := b.failure()
		b.mu.Unlock()
		return 0, err
	}
	b.mu.Unlock()
	if b.max > 0 {
		// One byte past the cap at most tells a body of exactly max
		// bytes from a longer one.
		if room := b.max - b.n + 1; int64(len(p)) > room {
			p = p[:room]
		}
	}
	n, err := b.rc.Read(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n += int64(n)
	if n > 0 {
		b.last = b.clk.Now()
	}
	if b.max > 0 && b.n > b.max {
		n -= int(b.n - b.max)
		b.n = b.max
		if b.fired == firedNone {
			b.fired = firedSize
			b.cancel()
		}
	}
	if b.fired == firedSize || (err != nil && b.fired != firedNone) {
		return n, b.failure()
	}
	return n, err
}

func (b *watchedBody) Close() error {
	err := b.rc.Close()
	b.close.Do(func() {
		b.quit()
		<-b.exited
	})
	b.cancel()
	return err
}
