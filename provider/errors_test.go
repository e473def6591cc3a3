package provider

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		h    map[string]string
		want time.Duration
		ok   bool
	}{
		{map[string]string{"Retry-After": "3"}, 3 * time.Second, true},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond, true},
		{map[string]string{"retry-after-ms": "1500", "Retry-After": "9"}, 1500 * time.Millisecond, true},
		{map[string]string{"Retry-After": "Thu, 01 Jan 2026 00:00:30 GMT"}, 30 * time.Second, true},
		// A date is read against the response's own Date, never the wall clock.
		{map[string]string{"Date": "Mon, 01 Jan 2024 00:00:00 GMT", "Retry-After": "Mon, 01 Jan 2024 00:01:05 GMT"}, 65 * time.Second, true},
		{map[string]string{"Retry-After": "Wed, 31 Dec 2025 23:00:00 GMT"}, 0, true},
		{map[string]string{"Retry-After": "soon"}, 0, false},
		{map[string]string{"Retry-After": "-4"}, 0, false},
		{nil, 0, false},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.h {
			h.Set(k, v)
		}
		got, ok := ParseRetryAfter(h, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%v: got %v %v, want %v %v", tt.h, got, ok, tt.want, tt.ok)
		}
	}
}

func TestErrorTexts(t *testing.T) {
	e := &HTTPError{Status: 529, Code: "overloaded_error", Message: "Overloaded", RetryAfter: 2 * time.Second, HasRetryAfter: true}
	if got := e.Error(); got != "HTTP 529 Overloaded: overloaded_error: Overloaded (server asked to wait 2s)" {
		t.Errorf("got %q", got)
	}
	if !IsQuota("insufficient_quota") || IsQuota("rate_limit_exceeded") {
		t.Error("IsQuota")
	}
	if s := (&StreamError{Type: "api_error"}).Error(); s != "api_error" {
		t.Errorf("got %q", s)
	}
	if s := (&TransportError{Err: errString("refused")}).Error(); !strings.Contains(s, "refused") {
		t.Errorf("got %q", s)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestRedactKeepsTypeAndWrapping(t *testing.T) {
	const key = "sk-secret-123"
	he := Redact(&HTTPError{Status: 401, Message: "bad key " + key}, key).(*HTTPError)
	if he.Status != 401 || strings.Contains(he.Error(), key) {
		t.Errorf("HTTPError: %v", he)
	}
	inc := Redact(errWrap{ErrIncomplete, "reset echoing " + key}, key)
	if !errors.Is(inc, ErrIncomplete) || strings.Contains(inc.Error(), key) {
		t.Errorf("incomplete: %v", inc)
	}
	if plain := (&StreamError{Type: "x"}); Redact(plain, key) != plain {
		t.Error("an error without the key must come back unchanged")
	}
}

type errWrap struct {
	inner error
	msg   string
}

func (e errWrap) Error() string { return e.msg }
func (e errWrap) Unwrap() error { return e.inner }
