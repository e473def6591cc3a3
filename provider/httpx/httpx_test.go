package httpx

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
)

func TestErrorResponsesAreClassified(t *testing.T) {
	tests := []struct {
		status  int
		header  map[string]string
		body    string
		code    string
		msg     string
		wait    time.Duration
		hasWait bool
	}{
		{429, map[string]string{"Retry-After": "3"}, `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`, "rate_limit_exceeded", "slow down", 3 * time.Second, true},
		{429, nil, `{"error":{"message":"quota","type":"insufficient_quota","code":null}}`, "insufficient_quota", "quota", 0, false},
		{529, map[string]string{"retry-after-ms": "250"}, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "overloaded_error", "Overloaded", 250 * time.Millisecond, true},
		{503, map[string]string{"Date": "Thu, 01 Jan 2026 00:00:00 GMT", "Retry-After": "Thu, 01 Jan 2026 00:00:09 GMT"}, `upstream unavailable`, "", "upstream unavailable", 9 * time.Second, true},
		{500, nil, `{"error":"boom"}`, "", "boom", 0, false},
	}
	for _, tt := range tests {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for k, v := range tt.header {
				w.Header()[k] = []string{v}
			}
			w.WriteHeader(tt.status)
			io.WriteString(w, tt.body)
		}))
		c := &Client{Clock: clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))}
		_, err := c.Post(context.Background(), srv.URL, http.Header{"Authorization": {"Bearer sk-secret"}}, []byte(`{}`))
		srv.Close()
		var he *provider.HTTPError
		if !errors.As(err, &he) {
			t.Fatalf("%d: got %v", tt.status, err)
		}
		if he.Status != tt.status || he.Code != tt.code || he.Message != tt.msg || he.RetryAfter != tt.wait || he.HasRetryAfter != tt.hasWait {
			t.Errorf("%d: got %+v", tt.status, he)
		}
		if strings.Contains(err.Error(), "sk-secret") {
			t.Errorf("the key leaked: %v", err)
		}
	}
}

// TestPostWithReadsErrors: PostWith hands the vendor's reader the
// status, the headers and the body of an error response, with the
// Retry-After already read, and returns what it made of them; a 2xx
// response never reaches it.
func TestPostWithReadsErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			io.WriteString(w, "fine")
			return
		}
		w.Header().Set("X-Amzn-Errortype", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/")
		w.Header().Set("Retry-After", "4")
		w.WriteHeader(429)
		io.WriteString(w, `{"message":"Too many requests"}`)
	}))
	defer srv.Close()
	var seen []string
	read := func(he *provider.HTTPError, h http.Header, body []byte) {
		seen = append(seen, string(body))
		if he.Status != 429 || !he.HasRetryAfter || he.RetryAfter != 4*time.Second {
			t.Errorf("the reader got %+v", he)
		}
		he.Code, he.Message = strings.Split(h.Get("X-Amzn-Errortype"), ":")[0], strings.Trim(string(body), "{}")
	}
	c := &Client{}
	_, err := c.PostWith(context.Background(), srv.URL+"/err", nil, []byte(`{}`), read)
	var he *provider.HTTPError
	if !errors.As(err, &he) || he.Code != "ThrottlingException" || he.Message != `"message":"Too many requests"` {
		t.Fatalf("error %v", err)
	}
	resp, err := c.PostWith(context.Background(), srv.URL+"/ok", nil, []byte(`{}`), read)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(seen) != 1 || seen[0] != `{"message":"Too many requests"}` {
		t.Fatalf("the reader saw %q", seen)
	}
}

func TestUnreachableIsTransportError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/v1/x?key=sk-secret"
	l.Close()
	_, err = (&Client{}).Post(context.Background(), url, nil, []byte(`{}`))
	var te *provider.TransportError
	if !errors.As(err, &te) || !te.Unreachable {
		t.Fatalf("got %#v", err)
	}
	if strings.Contains(err.Error(), "sk-secret") {
		t.Errorf("the URL's credentials leaked: %v", err)
	}
}

func TestIdleBodyFailsAsIncomplete(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "data: a\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	fake := clock.NewFake(time.Unix(0, 0))
	c := &Client{Clock: fake, IdleTimeout: 30 * time.Second}
	resp, err := c.Post(context.Background(), srv.URL, nil, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 64)
	if n, err := resp.Body.Read(buf); err != nil || string(buf[:n]) != "data: a\n\n" {
		t.Fatalf("first read %q, %v", buf[:n], err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fake.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	fake.Advance(29 * time.Second)
	errc := make(chan error, 1)
	go func() {
		_, err := resp.Body.Read(buf)
		errc <- err
	}()
	if err := fake.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	fake.Advance(time.Second)
	select {
	case err := <-errc:
		if !errors.Is(err, provider.ErrIncomplete) || !strings.Contains(err.Error(), "idle") {
			t.Errorf("got %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the idle body never failed")
	}
}

// waitErr runs f in the background; the test advances the clock meanwhile.
func waitErr(f func() error) chan error {
	c := make(chan error, 1)
	go func() { c <- f() }()
	return c
}

// advanceUntil advances fake by step each time something waits on it,
// until c delivers.
func advanceUntil(t *testing.T, fake *clock.Fake, step time.Duration, c chan error) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		waited := make(chan error, 1)
		bctx, stop := context.WithCancel(ctx)
		go func() { waited <- fake.BlockUntil(bctx, 1) }()
		select {
		case err := <-c:
			stop()
			return err
		case err := <-waited:
			stop()
			if err != nil {
				t.Fatal("no result, and nothing waits on the clock")
			}
			fake.Advance(step)
		}
	}
}

func recv(t *testing.T, c chan error) error {
	t.Helper()
	select {
	case err := <-c:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("no result")
		return nil
	}
}

// silent takes the request and never answers. It reads the body first:
// the server notices a client hanging up (r.Context ends) only once the
// body is consumed, and httptest's Close waits for the handler.
func silent(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

// TestHeaderTimeout: a server that takes the request and never answers
// fails the attempt as a transport failure (retryable) once the header
// timeout passes on the injected clock, and leaves no clock wait behind.
func TestHeaderTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(silent))
	defer srv.Close()
	fake := clock.NewFake(time.Unix(0, 0))
	c := &Client{Clock: fake, HeaderTimeout: 2 * time.Minute, ReplyTimeout: time.Hour}
	errc := waitErr(func() error { _, err := c.Post(context.Background(), srv.URL, nil, []byte(`{}`)); return err })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fake.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	fake.Advance(2*time.Minute - time.Nanosecond)
	select {
	case err := <-errc:
		t.Fatalf("failed before the timeout: %v", err)
	default:
	}
	fake.Advance(time.Nanosecond)
	err := recv(t, errc)
	var te *provider.TransportError
	if !errors.As(err, &te) || te.Unreachable || !strings.Contains(err.Error(), "no response headers within 2m0s (header timeout)") {
		t.Fatalf("got %v", err)
	}
	if n := fake.Waiters(); n != 0 {
		t.Errorf("%d clock waits left", n)
	}
}

// TestReplyLimits: a body that never ends stops at the reply deadline or
// the byte cap, whichever comes first, with a client-limit error; the
// request context is cancelled and no clock wait is left once it closes.
func TestReplyLimits(t *testing.T) {
	endless := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := []byte(strings.Repeat(": keepalive\n", 100))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	})
	tests := []struct {
		name    string
		client  Client
		advance time.Duration
		want    string
		total   int64 // bytes delivered before the failure; -1 any
	}{
		{"byte cap", Client{MaxReplyBytes: 100000, IdleTimeout: time.Minute, ReplyTimeout: time.Hour}, 0, "the response body passed 100000 bytes (max reply bytes)", 100000},
		{"byte cap in MiB", Client{MaxReplyBytes: 1 << 20}, 0, "passed 1 MiB (max reply bytes)", 1 << 20},
		{"reply deadline", Client{IdleTimeout: time.Minute, ReplyTimeout: 30 * time.Minute}, 30 * time.Minute, "not complete 30m0s after the request went out (reply timeout)", -1},
		{"reply deadline without idle timeout", Client{ReplyTimeout: time.Minute}, time.Minute, "(reply timeout)", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(endless)
			defer srv.Close()
			fake := clock.NewFake(time.Unix(0, 0))
			c := tt.client
			c.Clock = fake
			resp, err := c.Post(context.Background(), srv.URL, nil, []byte(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			if tt.advance > 0 {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := fake.BlockUntil(ctx, 1); err != nil {
					t.Fatal(err)
				}
				fake.Advance(tt.advance)
			}
			total, err := io.Copy(io.Discard, resp.Body)
			if !errors.Is(err, provider.ErrLimit) || !errors.Is(err, provider.ErrIncomplete) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want a client limit: %s", err, tt.want)
			}
			if tt.total >= 0 && total != tt.total {
				t.Errorf("read %d bytes, want exactly the cap %d", total, tt.total)
			}
			if _, err := resp.Body.Read(make([]byte, 8)); !errors.Is(err, provider.ErrLimit) {
				t.Errorf("a read after the failure: %v", err)
			}
			resp.Body.Close()
			if n := fake.Waiters(); n != 0 {
				t.Errorf("%d clock waits left after Close", n)
			}
		})
	}
}

// TestBodyOfExactlyTheCap: a body as long as the cap is not over it.
func TestBodyOfExactlyTheCap(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "0123456789") }))
	defer srv.Close()
	resp, err := (&Client{MaxReplyBytes: 10}).Post(context.Background(), srv.URL, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if data, err := io.ReadAll(resp.Body); err != nil || string(data) != "0123456789" {
		t.Errorf("got %q, %v", data, err)
	}
}

// TestReplyDeadlineBeforeHeaders: a reply deadline shorter than the header
// timeout is a client limit even before the headers.
func TestReplyDeadlineBeforeHeaders(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(silent))
	defer srv.Close()
	fake := clock.NewFake(time.Unix(0, 0))
	c := &Client{Clock: fake, HeaderTimeout: time.Hour, ReplyTimeout: time.Minute}
	errc := waitErr(func() error { _, err := c.Post(context.Background(), srv.URL, nil, nil); return err })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fake.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	fake.Advance(time.Minute)
	if err := recv(t, errc); !errors.Is(err, provider.ErrLimit) {
		t.Fatalf("got %v", err)
	}
}

// TestErrorBodyIsWatched: an error status whose body drips forever still
// comes back as the HTTP error once the idle watchdog fires.
func TestErrorBodyIsWatched(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(503)
		io.WriteString(w, `{"error":{"message":"busy`)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	fake := clock.NewFake(time.Unix(0, 0))
	c := &Client{Clock: fake, IdleTimeout: 30 * time.Second}
	errc := waitErr(func() error { _, err := c.Post(context.Background(), srv.URL, nil, nil); return err })
	// The body's bytes may be read only after a first advance, restarting
	// the idle wait: advance whenever the watchdog waits, until it fires.
	var he *provider.HTTPError
	if err := advanceUntil(t, fake, 30*time.Second, errc); !errors.As(err, &he) || he.Status != 503 {
		t.Fatalf("got %v", err)
	}
}

// TestCap: a reader decompressed by a vendor client is capped the same way.
func TestCap(t *testing.T) {
	r := Cap(strings.NewReader(strings.Repeat("x", 5000)), 4096)
	data, err := io.ReadAll(r)
	if len(data) != 4096 || !errors.Is(err, provider.ErrLimit) || !strings.Contains(err.Error(), "4 KiB") {
		t.Fatalf("%d bytes, %v", len(data), err)
	}
	if data, err := io.ReadAll(Cap(strings.NewReader("abc"), 3)); err != nil || string(data) != "abc" {
		t.Errorf("%q %v", data, err)
	}
	if r := strings.NewReader("abc"); Cap(r, 0) != io.Reader(r) {
		t.Error("0 means no cap")
	}
}
