package provider

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The failures a vendor client reports, as the Err of an Error part. The
// retry policy (provider/retry) decides from these types alone, so every
// vendor classifies its failures into them.

// HTTPError is a response with a non-2xx status.
type HTTPError struct {
	Status int
	// Code is the vendor's machine-readable error code or type, when the
	// body carried one (insufficient_quota, rate_limit_error, overloaded_error).
	Code string
	// Message is the vendor's human-readable message, or a cut of the body.
	Message string
	// RetryAfter is the server's requested wait, when it gave one.
	RetryAfter    time.Duration
	HasRetryAfter bool
}

func (e *HTTPError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %d", e.Status)
	if t := StatusText(e.Status); t != "" {
		b.WriteString(" " + t)
	}
	if e.Code != "" {
		b.WriteString(": " + e.Code)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	switch {
	case e.HasRetryAfter && e.RetryAfter == MaxWait:
		b.WriteString(" (server asked to wait 292 years or more)")
	case e.HasRetryAfter:
		fmt.Fprintf(&b, " (server asked to wait %s)", e.RetryAfter)
	}
	return b.String()
}

// StreamError is a failure the provider reported inside a successful
// response: an SSE error event or an error frame of an OpenAI-compatible
// server.
type StreamError struct {
	// Type is the vendor's error type or code (overloaded_error, api_error,
	// rate_limit_error, server_error, ...).
	Type    string
	Message string
}

func (e *StreamError) Error() string {
	switch {
	case e.Type != "" && e.Message != "":
		return e.Type + ": " + e.Message
	case e.Type != "":
		return e.Type
	}
	return e.Message
}

// StreamErrorOf is the provider-reported failure err is or wraps, or a
// StreamError with err's text as its message.
func StreamErrorOf(err error) *StreamError {
	var se *StreamError
	if errors.As(err, &se) {
		return se
	}
	return &StreamError{Message: err.Error()}
}

// StatusText is the reason phrase of an HTTP status, 529 (Overloaded, the
// vendors' own status) included; empty for a status it does not know.
func StatusText(status int) string {
	if status == 529 {
		return "Overloaded"
	}
	return http.StatusText(status)
}

// TransportError is a failure to exchange the request and response at all.
// Unreachable says the request never reached the endpoint (connection
// refused, DNS failure), which matters for giving up early.
type TransportError struct {
	Err         error
	Unreachable bool
}

func (e *TransportError) Error() string { return "transport: " + e.Err.Error() }
func (e *TransportError) Unwrap() error { return e.Err }

// MaxWait is the longest wait ParseRetryAfter reports: a larger one
// (99999999999 seconds, 1e20, Inf, a huge retry-after-ms) saturates to it
// instead of overflowing to a negative duration, so it still reads as far
// too long to wait.
const MaxWait = time.Duration(math.MaxInt64)

// ParseRetryAfter reads the wait a response asks for: retry-after-ms
// (milliseconds), else Retry-After as seconds or as an HTTP-date. A date is
// taken relative to the response's own Date header when it has one (so a
// recorded response never goes stale), else relative to now. A wait too
// long for a time.Duration saturates at MaxWait; a negative or NaN one is
// no wait at all.
func ParseRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if d, ok := scaled(v, time.Millisecond); ok {
			return d, true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if d, ok := scaled(v, time.Second); ok {
		return d, true
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	if d, err := http.ParseTime(h.Get("Date")); err == nil {
		now = d
	}
	wait := at.Sub(now) // Time.Sub saturates
	if wait < 0 {
		wait = 0
	}
	return wait, true
}

// scaled parses a non-negative number of units, saturating at MaxWait.
func scaled(v string, unit time.Duration) (time.Duration, bool) {
	n, err := strconv.ParseFloat(v, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	// ParseFloat reports an overflow as ±Inf with ErrRange; NaN fails the
	// comparison.
	if !(n >= 0) {
		return 0, false
	}
	d := n * float64(unit)
	// float64(MaxWait) rounds up to 2^63, which no Duration holds.
	if d >= float64(MaxWait) {
		return MaxWait, true
	}
	return time.Duration(d), true
}

// IsQuota reports whether a vendor error code means an exhausted quota or
// billing limit, which waiting does not cure.
func IsQuota(code string) bool {
	switch strings.ToLower(code) {
	case "insufficient_quota", "quota_exceeded", "billing_hard_limit_reached", "billing_not_active",
		"exceeded_current_quota", "insufficient_balance", "credit_balance_too_low":
		return true
	}
	return false
}

// ErrMissingKey is returned by a vendor constructor without an API key.
var ErrMissingKey = errors.New("missing API key")

// ParseErrorBody reads the code and message of an error body shaped like
// OpenAI's {"error":{"message","type","code"}} or Anthropic's
// {"type":"error","error":{"type","message"}}; a string "error" is the
// message; any other body becomes the message, cut to a readable length.
func ParseErrorBody(data []byte) (code, msg string) {
	var body struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &body) == nil && len(body.Error) > 0 {
		var e struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		if json.Unmarshal(body.Error, &e) == nil {
			var c string
			if json.Unmarshal(e.Code, &c) != nil || c == "" {
				c = e.Type // a numeric code says less than the type
			}
			return c, e.Message
		}
		var s string
		if json.Unmarshal(body.Error, &s) == nil {
			return "", s
		}
	}
	msg = strings.TrimSpace(string(data))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return "", msg
}

// ErrorCode renders a JSON error code given as a string or a number (some
// servers send numbers); null, absent or anything else is "".
func ErrorCode(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// minRedact is the shortest secret Redact removes; a shorter one would
// mangle unrelated words.
const minRedact = 4

// Redact removes secret (an API key a server may echo back) from an
// error's text while keeping its type and what it wraps, so the retry
// policy still classifies it and errors.Is still sees through it.
func Redact(err error, secret string) error {
	if err == nil || len(secret) < minRedact || !strings.Contains(err.Error(), secret) {
		return err
	}
	red := func(s string) string { return strings.ReplaceAll(s, secret, "[redacted]") }
	var he *HTTPError
	var se *StreamError
	var te *TransportError
	switch {
	case errors.As(err, &he) && err == error(he):
		cp := *he
		cp.Code, cp.Message = red(cp.Code), red(cp.Message)
		return &cp
	case errors.As(err, &se) && err == error(se):
		return &StreamError{Type: red(se.Type), Message: red(se.Message)}
	case errors.As(err, &te) && err == error(te):
		return &TransportError{Err: &redacted{err: te.Err, msg: red(te.Err.Error())}, Unreachable: te.Unreachable}
	}
	return &redacted{err: err, msg: red(err.Error())}
}

// redacted is an error whose text had a secret removed; it still unwraps
// to the original.
type redacted struct {
	err error
	msg string
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }
