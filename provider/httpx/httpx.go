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
	// Clock times the idle watchdog and Retry-After dates; nil means real.
	Clock clock.Clock
	// IdleTimeout fails a response body that delivers no byte for this
	// long; 0 disables the watchdog.
	IdleTimeout time.Duration
}

// maxErrorBody caps how much of an error response is read.
const maxErrorBody = 64 << 10

// Post sends body (JSON) to url with header. On a 2xx status it returns the
// response, whose Body the caller must close. Otherwise the error is a
// *provider.HTTPError (with the vendor's code, message and Retry-After) or
// a *provider.TransportError.
func (c *Client) Post(ctx context.Context, url string, header http.Header, body []byte) (*http.Response, error) {
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
	resp, err := hc.Do(req)
	if err != nil {
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &provider.TransportError{Err: scrubURLError(err), Unreachable: unreachable(err)}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer cancel()
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		he := &provider.HTTPError{Status: resp.StatusCode}
		he.Code, he.Message = provider.ParseErrorBody(data)
		he.RetryAfter, he.HasRetryAfter = provider.ParseRetryAfter(resp.Header, clk.Now())
		return nil, he
	}
	resp.Body = newIdleBody(resp.Body, cancel, clk, c.IdleTimeout)
	return resp, nil
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

// idleBody fails reads with an incomplete-stream error once no byte has
// arrived for the timeout.
type idleBody struct {
	rc      io.ReadCloser
	cancel  context.CancelFunc
	clk     clock.Clock
	timeout time.Duration

	mu    sync.Mutex
	last  time.Time
	idle  bool
	done  chan struct{}
	close sync.Once
}

func newIdleBody(rc io.ReadCloser, cancel context.CancelFunc, clk clock.Clock, timeout time.Duration) io.ReadCloser {
	b := &idleBody{rc: rc, cancel: cancel, clk: clk, timeout: timeout, last: clk.Now(), done: make(chan struct{})}
	if timeout > 0 {
		go b.watch()
	}
	return b
}

func (b *idleBody) watch() {
	ctx, stop := context.WithCancel(context.Background())
	go func() { <-b.done; stop() }()
	for {
		b.mu.Lock()
		wait := b.timeout - b.clk.Now().Sub(b.last)
		b.mu.Unlock()
		if wait <= 0 {
			b.mu.Lock()
			b.idle = true
			b.mu.Unlock()
			b.cancel()
			return
		}
		if clock.Sleep(ctx, b.clk, wait) != nil {
			return
		}
	}
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.mu.Lock()
	if n > 0 {
		b.last = b.clk.Now()
	}
	idle := b.idle
	b.mu.Unlock()
	if err != nil && idle {
		return n, fmt.Errorf("%w: no bytes for %s (idle timeout)", provider.ErrIncomplete, b.timeout)
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.close.Do(func() { close(b.done) })
	err := b.rc.Close()
	b.cancel()
	return err
}
