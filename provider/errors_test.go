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

// TestParseRetryAfterSaturates: a wait too long for a time.Duration, in any
// form a server may send it, saturates at MaxWait instead of overflowing
// into a negative wait (which the retry policy would honour as none).
func TestParseRetryAfterSaturates(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name, header, value string
		want                time.Duration
		ok                  bool
	}{
		{"eleven nines", "Retry-After", "99999999999", MaxWait, true},
		{"exponent", "Retry-After", "1e20", MaxWait, true},
		{"infinity", "Retry-After", "Inf", MaxWait, true},
		{"infinity spelled out", "Retry-After", "+Infinity", MaxWait, true},
		{"hex float", "Retry-After", "0x1p62", MaxWait, true},
		{"out of float range", "Retry-After", "1e400", MaxWait, true},
		{"just under the limit", "Retry-After", "9223372036", 9223372036 * time.Second, true},
		{"just over the limit", "Retry-After", "9223372037", MaxWait, true},
		{"huge milliseconds", "retry-after-ms", "99999999999999", MaxWait, true},
		{"milliseconds exponent", "retry-after-ms", "1e300", MaxWait, true},
		{"milliseconds infinity", "retry-after-ms", "inf", MaxWait, true},
		{"far future date", "Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT", time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Sub(now), true},
		{"not a number", "Retry-After", "NaN", 0, false},
		{"negative infinity", "Retry-After", "-Inf", 0, false},
		{"negative milliseconds", "retry-after-ms", "-1e30", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			h.Set(tt.header, tt.value)
			got, ok := ParseRetryAfter(h, now)
			if got != tt.want || ok != tt.ok {
				t.Errorf("%s: %s: got %v %v, want %v %v", tt.header, tt.value, got, ok, tt.want, tt.ok)
			}
			if got < 0 {
				t.Errorf("negative wait %v", got)
			}
		})
	}
	e := &HTTPError{Status: 429, RetryAfter: MaxWait, HasRetryAfter: true}
	if s := e.Error(); !strings.Contains(s, "292 years or more") {
		t.Errorf("a saturated wait reads %q", s)
	}
}
