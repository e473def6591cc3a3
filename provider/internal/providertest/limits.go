package providertest

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/internal/hostiletest"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/httpx"
)

// streamAsync runs one stream in the background while the test moves the
// fake clock; the reply arrives on the channel.
func streamAsync(t *testing.T, c provider.Provider) <-chan reply {
	t.Helper()
	out := make(chan reply, 1)
	go func() { out <- collect(t, context.Background(), c, nil) }()
	return out
}

func recv(t *testing.T, c <-chan reply) reply {
	t.Helper()
	select {
	case r := <-c:
		return r
	case <-time.After(guard):
		t.Fatal("the stream never ended")
		return reply{}
	}
}

func blockUntil(t *testing.T, fake *clock.Fake) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if err := fake.BlockUntil(ctx, 1); err != nil {
		t.Fatalf("nothing waits on the clock: %v", err)
	}
}

// testHeaderTimeout: a server that takes the request and never answers
// fails the attempt, once the header timeout passed on the injected clock
// and not before, as a transport failure (the retry policy resends it like
// a dead connection).
func testHeaderTimeout(t *testing.T, v Vendor) {
	srv, _ := serve(t, silent)
	fake := clock.NewFake(time.Unix(0, 0))
	done := streamAsync(t, v.client(t, srv.URL, &httpx.Client{Clock: fake, HeaderTimeout: 2 * time.Minute, ReplyTimeout: time.Hour}))
	blockUntil(t, fake)
	fake.Advance(2*time.Minute - time.Nanosecond)
	select {
	case r := <-done:
		t.Fatalf("the stream ended before the header timeout: %s", r)
	default:
	}
	fake.Advance(time.Nanosecond)
	r := recv(t, done)
	var te *provider.TransportError
	if !errors.As(r.err, &te) || te.Unreachable || !strings.Contains(r.err.Error(), "header timeout") {
		t.Fatalf("error %v (%T), want a TransportError naming the header timeout", r.err, r.err)
	}
	checkParts(t, r, []provider.Part{provider.Error{Err: r.err}})
	if n := fake.Waiters(); n != 0 {
		t.Errorf("%d clock waits left", n)
	}
}

// testReplyTimeout: a reply still running at the reply deadline is cut
// off as a client limit (incomplete, never retried), before its headers
// as after some text.
func testReplyTimeout(t *testing.T, v Vendor) {
	t.Run("before the headers", func(t *testing.T) {
		srv, _ := serve(t, silent)
		fake := clock.NewFake(time.Unix(0, 0))
		done := streamAsync(t, v.client(t, srv.URL, &httpx.Client{Clock: fake, HeaderTimeout: time.Hour, ReplyTimeout: time.Minute}))
		blockUntil(t, fake)
		fake.Advance(time.Minute)
		r := recv(t, done)
		checkLimit(t, r.err, "reply timeout")
		checkParts(t, r, []provider.Part{provider.Error{Err: r.err}})
	})
	t.Run("mid-reply", func(t *testing.T) {
		srv, _ := serve(t, stall(v.encode([]provider.Part{provider.TextDelta{Text: "partial"}}, false), nil))
		fake := clock.NewFake(time.Unix(0, 0))
		hc := &httpx.Client{Clock: fake, IdleTimeout: time.Hour, ReplyTimeout: time.Minute}
		r := collect(t, context.Background(), v.client(t, srv.URL, hc), func(p provider.Part) bool {
			if _, ok := p.(provider.TextDelta); ok {
				blockUntil(t, fake)
				fake.Advance(time.Minute)
			}
			return true
		})
		checkLimit(t, r.err, "reply timeout")
		checkParts(t, r, []provider.Part{provider.TextDelta{Text: "partial"}, provider.Error{Err: r.err}})
		if n := fake.Waiters(); n != 0 {
			t.Errorf("%d clock waits left", n)
		}
	})
}

// testMaxReplyBytes: a body exactly as long as the cap is a whole reply;
// one that passes it is cut off as a client limit, keeping the text that
// came before the cut.
func testMaxReplyBytes(t *testing.T, v Vendor) {
	parts := []provider.Part{provider.TextDelta{Text: "one "}}
	for range 50 {
		parts = append(parts, provider.TextDelta{Text: "more "})
	}
	parts = append(parts, provider.Finish{Reason: v.Stop})
	body := v.encode(parts, true)
	first := v.encode(parts[:1], false)
	srv := sseServer(t, body)

	r := collect(t, context.Background(), v.client(t, srv.URL, &httpx.Client{MaxReplyBytes: int64(len(body))}), nil)
	if r.err != nil || r.finish == nil || r.text != "one "+strings.Repeat("more ", 50) {
		t.Fatalf("a body of exactly the cap: %s", r)
	}

	r = collect(t, context.Background(), v.client(t, srv.URL, &httpx.Client{MaxReplyBytes: int64(len(first)) + 10}), nil)
	checkLimit(t, r.err, "max reply bytes")
	checkParts(t, r, []provider.Part{provider.TextDelta{Text: "one "}, provider.Error{Err: r.err}})
}

// testEndless: bodies that never end (issue 9) end the reply with a
// client-limit error, an incomplete reply the engine reports as truncated
// and the retry policy never resends, whether the transport or the client
// undoes their gzip.
func testEndless(t *testing.T, v Vendor) {
	const capBytes = 1 << 20
	e := v.Encoder(nil)
	open := string(e.Open())
	head := open + string(e.Part(provider.TextDelta{Text: "tok "}))
	token := string(e.Part(provider.TextDelta{Text: "tok "}))
	type endless = Endless
	tests := []endless{
		{"data lines with no blank line", open, "data: " + strings.Repeat("x", 1000) + "\n", false, false, 0, "SSE event cap", false},
		{"one endless line", open + "data: ", "yyyyyyyyyyyyyyyy", false, false, 0, "SSE line cap", false},
		{"endless comments", open, ": keepalive\n", false, false, capBytes, "max reply bytes", false},
		{"endless blank lines", open, "\n", false, false, capBytes, "max reply bytes", false},
		{"endless tokens", head, token, false, false, capBytes, "max reply bytes", true},
		{"gzip of newlines, decoded by the transport", open, "\n\n\n\n\n\n\n\n", true, false, capBytes, "max reply bytes", false},
		{"gzip of newlines, decoded by the client", open, "\n\n\n\n\n\n\n\n", true, true, capBytes, "max reply bytes", false},
		{"gzip of data lines, decoded by the client", open, "data: zzzzzzzzzzzzzzzzzzzzzzzzz\n", true, true, capBytes, "max reply bytes", false},
	}
	if v.Binary {
		// No SSE lines: only the bodies made of the encoder's events.
		tests = []endless{
			{"endless tokens", head, token, false, false, capBytes, "max reply bytes", true},
			{"gzip of tokens, decoded by the transport", head, token, true, false, capBytes, "max reply bytes", true},
			{"gzip of tokens, decoded by the client", head, token, true, true, capBytes, "max reply bytes", true},
		}
	}
	if v.Ping != nil {
		tests = append(tests, endless{"endless keep-alive events", open, string(v.Ping), false, false, capBytes, "max reply bytes", false})
	}
	tests = append(tests, v.Endless...)
	for _, tt := range tests {
		t.Run(tt.Name, func(t *testing.T) {
			srv := hostiletest.EndlessServer(t, tt.Head, tt.Unit, tt.Zip)
			hc := &httpx.Client{MaxReplyBytes: tt.Max}
			if tt.DecodeSelf {
				hc.HTTP = &http.Client{Transport: &http.Transport{DisableCompression: true}}
			}
			r := collect(t, context.Background(), v.client(t, srv.URL, hc), nil)
			checkLimit(t, r.err, tt.Want)
			if (r.text != "") != tt.Text || r.finish != nil {
				t.Errorf("%s", r)
			}
		})
	}
}
