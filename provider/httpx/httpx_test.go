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
