package providertest

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/retry"
)

// testHTTPErrors: a non-2xx answer is one Error part holding a
// provider.HTTPError with the status, the vendor's code and message and
// the wait the server asked for, from one request (a client never retries
// by itself). Through provider/retry, exactly the statuses the contract
// retries are sent again.
func testHTTPErrors(t *testing.T, v Vendor) {
	const date = "Sun, 05 Apr 2026 14:28:55 GMT"
	tests := []struct {
		name   string
		status int
		header map[string]string
		// raw, when set, is the body as is (Content-Type text/plain);
		// otherwise the body is the vendor's HTTPErrorBody(status, code, msg).
		raw       string
		code, msg string
		wantMsg   string // "": msg
		wait      time.Duration
		hasWait   bool
		quota     bool
		retried   bool
	}{
		{name: "429 rate limit, Retry-After in seconds", status: 429, header: map[string]string{"Retry-After": "7"},
			code: "rate_limit_error", msg: "Number of request tokens has exceeded your per-minute rate limit", wait: 7 * time.Second, hasWait: true, retried: true},
		{name: "429, retry-after-ms wins over Retry-After", status: 429, header: map[string]string{"Retry-After": "20", "retry-after-ms": "1500"},
			code: "rate_limit_error", msg: "slow down", wait: 1500 * time.Millisecond, hasWait: true, retried: true},
		{name: "429, Retry-After as an HTTP-date, from the response's Date", status: 429,
			header: map[string]string{"Date": date, "Retry-After": "Sun, 05 Apr 2026 14:29:05 GMT"},
			code:   "rate_limit_error", msg: "slow down", wait: 10 * time.Second, hasWait: true, retried: true},
		{name: "429, a Retry-After that is no wait", status: 429, header: map[string]string{"Retry-After": "soon"},
			code: "rate_limit_error", msg: "slow down", retried: true},
		{name: "429 without Retry-After", status: 429, code: "rate_limit_error", msg: "slow down", retried: true},
		{name: "429 quota exhausted is not retried", status: 429, header: map[string]string{"Retry-After": "7"},
			code: "insufficient_quota", msg: "You exceeded your current quota, please check your plan and billing details.",
			wait: 7 * time.Second, hasWait: true, quota: true},
		{name: "529 overloaded", status: 529, header: map[string]string{"Retry-After": "3"},
			code: "overloaded_error", msg: "Overloaded", wait: 3 * time.Second, hasWait: true, retried: true},
		{name: "500 without a JSON body", status: 500, raw: "upstream connect error", wantMsg: "upstream connect error", retried: true},
		{name: "502 with an HTML body", status: 502, raw: "  <html><body>Bad gateway</body></html>\n", wantMsg: "<html><body>Bad gateway</body></html>", retried: true},
		{name: "503", status: 503, code: "server_error", msg: "The server is overloaded", retried: true},
		{name: "504", status: 504, code: "timeout", msg: "Gateway timeout", retried: true},
		{name: "400 is not retried", status: 400, code: "invalid_request_error", msg: "messages: field required"},
		{name: "401 is not retried", status: 401, code: "authentication_error", msg: "invalid x-api-key"},
		{name: "404 is not retried", status: 404, code: "not_found_error", msg: "model: claude-nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, n := serve(t, func(w http.ResponseWriter, r *http.Request) {
				for k, val := range tt.header {
					w.Header().Set(k, val)
				}
				if tt.raw != "" {
					w.Header().Set("Content-Type", "text/plain")
					w.WriteHeader(tt.status)
					w.Write([]byte(tt.raw))
					return
				}
				w.Header().Set("Content-Type", "application/json")
				v.errorHeader(w, tt.status, tt.code)
				w.WriteHeader(tt.status)
				w.Write(v.HTTPErrorBody(tt.status, tt.code, tt.msg))
			})
			want := provider.HTTPError{Status: tt.status, Code: tt.code, Message: tt.msg, RetryAfter: tt.wait, HasRetryAfter: tt.hasWait}
			if tt.wantMsg != "" {
				want.Message = tt.wantMsg
			}
			c := v.client(t, srv.URL, nil)
			r := collect(t, context.Background(), c, nil)
			var he *provider.HTTPError
			if !errors.As(r.err, &he) {
				t.Fatalf("error %v (%T), want *provider.HTTPError", r.err, r.err)
			}
			if *he != want {
				t.Fatalf("HTTPError %+v, want %+v", *he, want)
			}
			if provider.IsQuota(he.Code) != tt.quota {
				t.Errorf("IsQuota(%q) = %v", he.Code, !tt.quota)
			}
			checkParts(t, r, []provider.Part{provider.Error{Err: r.err}})
			if got := n.Load(); got != 1 {
				t.Fatalf("%d requests for one Stream, want 1", got)
			}

			// The same through the retry policy, two attempts at most.
			fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			ctx, cancel := context.WithTimeout(context.Background(), guard)
			defer cancel()
			retries := 0
			rr := collect(t, ctx, retry.New(c, retry.Policy{MaxAttempts: 2}, fake), func(p provider.Part) bool {
				if _, ok := p.(provider.Retry); ok {
					retries++
					go func() {
						if fake.BlockUntil(ctx, 1) == nil {
							fake.Advance(2 * time.Minute)
						}
					}()
				}
				return true
			})
			wantRetries, wantRequests := 0, int32(2)
			if tt.retried {
				wantRetries, wantRequests = 1, 3
			}
			if retries != wantRetries || n.Load() != wantRequests {
				t.Fatalf("through provider/retry: %d retries, %d requests; want %d, %d", retries, n.Load()-1, wantRetries, wantRequests-1)
			}
			if !errors.As(rr.err, &he) || he.Status != tt.status {
				t.Fatalf("through provider/retry: error %v", rr.err)
			}
		})
	}
}

// testUnreachable: an endpoint nothing listens on is one Error part, an
// unreachable provider.TransportError.
func testUnreachable(t *testing.T, v Vendor) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	r := collect(t, context.Background(), v.client(t, "http://"+addr, nil), nil)
	var te *provider.TransportError
	if !errors.As(r.err, &te) || !te.Unreachable {
		t.Fatalf("error %v (%T), want an unreachable TransportError", r.err, r.err)
	}
	checkParts(t, r, []provider.Part{provider.Error{Err: r.err}})
}

// testStreamErrors: an error the vendor reports inside a 200 response (an
// error event after some text, or an error body sent with status 200) is a
// provider.StreamError with its type and message, not an incomplete
// stream, and ends the reply there whatever follows.
func testStreamErrors(t *testing.T, v Vendor) {
	se := &provider.StreamError{Type: "overloaded_error", Message: "Overloaded"}
	t.Run("error event after text", func(t *testing.T) {
		e := v.Encoder(nil)
		body := append(e.Open(), e.Part(provider.TextDelta{Text: "Partial"})...)
		body = append(body, v.ErrorEvent(se)...)
		body = append(body, e.Part(provider.TextDelta{Text: " more"})...)
		body = append(body, e.Part(provider.Finish{Reason: v.Stop})...)
		body = append(body, e.Close()...)
		srv := sseServer(t, body)
		r := collect(t, context.Background(), v.client(t, srv.URL, nil), nil)
		checkParts(t, r, []provider.Part{provider.TextDelta{Text: "Partial"}, provider.Error{Err: se}})
		if errors.Is(r.err, provider.ErrIncomplete) {
			t.Errorf("a reported error is ErrIncomplete: %v", r.err)
		}
	})
	t.Run("error body with status 200", func(t *testing.T) {
		srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			v.errorHeader(w, 529, se.Type)
			w.Write(v.HTTPErrorBody(529, se.Type, se.Message))
		})
		r := collect(t, context.Background(), v.client(t, srv.URL, nil), nil)
		checkParts(t, r, []provider.Part{provider.Error{Err: se}})
	})
}

// testKeyNeverLeaks has servers echo the key back everywhere an error's
// text comes from; every error keeps its type and fields with the key
// [redacted]. (collect fails any test whose parts or errors show the key,
// and testRequest checks the key goes out only in the vendor's headers.)
func testKeyNeverLeaks(t *testing.T, v Vendor) {
	tests := []struct {
		name   string
		status int
		ctype  string
		code   string // the error type the headers name, for a JSON body
		body   []byte
		want   error
	}{
		{"JSON error body", 401, "application/json", "invalid_api_key",
			v.HTTPErrorBody(401, "invalid_api_key", "Incorrect API key provided: "+Key+"."),
			&provider.HTTPError{Status: 401, Code: "invalid_api_key", Message: "Incorrect API key provided: [redacted]."}},
		{"plain-text error body", 403, "text/plain", "", []byte("bad key " + Key),
			&provider.HTTPError{Status: 403, Message: "bad key [redacted]"}},
		{"error event", 200, "text/event-stream", "",
			append(v.Encoder(nil).Open(), v.ErrorEvent(&provider.StreamError{Type: "api_error", Message: "key " + Key + " revoked"})...),
			&provider.StreamError{Type: "api_error", Message: "key [redacted] revoked"}},
		{"error body with status 200", 200, "application/json", "authentication_error",
			v.HTTPErrorBody(401, "authentication_error", "no such key: "+Key),
			&provider.StreamError{Type: "authentication_error", Message: "no such key: [redacted]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.ctype)
				if tt.code != "" {
					v.errorHeader(w, tt.status, tt.code)
				}
				w.WriteHeader(tt.status)
				w.Write(tt.body)
			})
			r := collect(t, context.Background(), v.client(t, srv.URL, nil), nil)
			checkParts(t, r, []provider.Part{provider.Error{Err: tt.want}})
		})
	}
}
