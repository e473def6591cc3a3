package edit

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ParseOp reads a fault as a command line gives it:
//
//	KIND@N[:KEY=VALUE[,KEY=VALUE...]]
//
// N is a 0-based interaction index; KIND and the keys it takes are
//
//	429@N            insert a 429 before interaction N; optional keys
//	                 retry-after=SECONDS|HTTP-DATE|RFC3339 and
//	                 retry-after-ms=MILLISECONDS
//	500@N 502@N 503@N 504@N 529@N
//	                 insert that status before interaction N; the same
//	                 optional keys
//	truncate@N       keep the first K chunks of interaction N's body and
//	                 end it cleanly; chunk=K required, or event=K: keep
//	                 its first K events (however the bytes were chunked)
//	reset@N          keep the first B bytes of interaction N's body, then
//	                 reset the connection; byte=B required
//	stream-error@N   replace chunk K of interaction N's body with an
//	                 in-stream error event and drop the rest; chunk=K
//	                 required, or event=K: the error event follows the
//	                 body's first K events (stream_error is accepted too); optional
//	                 code=CODE, the error's code, such as
//	                 rate_limit_exceeded (default server_error, or
//	                 overloaded_error on Anthropic's wire)
//
// truncate, reset and stream-error also take recover=true: the fault is
// served once, as a copy of interaction N inserted before it, and the
// client's next identical request (the engine's retry) gets the recorded
// reply. 429 and 5xx always work that way.
//
// For example "429@2:retry-after=5", "529@0", "truncate@1:chunk=3",
// "reset@1:byte=400,recover=true", "stream-error@1:chunk=2",
// "stream-error@0:chunk=3,code=rate_limit_exceeded", and
// "503@0:retry-after=Thu, 01 Jan 2026 00:00:07 GMT,retry-after-ms=1500".
//
// Kinds and keys are case-insensitive, and space around the spec, the
// keys and the values is ignored. Options are separated by commas; a
// comma that is not followed by KEY= belongs to the value, so an HTTP-date
// needs no escaping. A retry-after must be seconds or a date: seconds
// (whole, which is what HTTP allows, or with a fraction such as 1.5, which
// clients read too) and an HTTP-date are kept verbatim; an RFC 3339 time
// (2026-01-01T00:00:07Z, easier to type) becomes the HTTP-date it stands
// for. A retry-after-ms must be a non-negative number. A key the kind does not
// take, a key given twice, a missing required key and a value that does
// not parse are errors that name the problem. The index is not checked
// against a cassette here; Inject does that.
//
// Op.String renders an op in this syntax.
func ParseOp(spec string) (Op, error) {
	s := strings.TrimSpace(spec)
	fail := func(format string, args ...any) (Op, error) {
		return Op{}, fmt.Errorf("edit: fault %q: %s", spec, fmt.Sprintf(format, args...))
	}
	if s == "" {
		return Op{}, errors.New(`edit: empty fault: want KIND@N[:KEY=VALUE,...], such as "429@2:retry-after=5" or "reset@1:byte=400"`)
	}
	kind, rest, ok := strings.Cut(s, "@")
	kind = strings.ToLower(strings.TrimSpace(kind))
	if !ok {
		return fail("no @N naming the interaction (want KIND@N, such as %s@0)", kind)
	}
	target, opts, hasOpts := strings.Cut(rest, ":")
	target = strings.TrimSpace(target)
	var op Op
	switch kind {
	case "429":
		op = Op{Kind: KindRateLimit, Status: http.StatusTooManyRequests}
	case "truncate":
		op = Op{Kind: KindTruncate}
	case "reset":
		op = Op{Kind: KindReset}
	case "stream-error", "stream_error":
		op = Op{Kind: KindStreamError}
	case "5xx":
		return fail("name the status: %s", statusList())
	case "":
		return fail("no kind before @ (want 429, %s, truncate, reset or stream-error)", statusList())
	default:
		code, err := strconv.Atoi(kind)
		switch {
		case err == nil && isServerError(code):
			op = Op{Kind: KindServerError, Status: code}
		case err == nil:
			return fail("status %d cannot be injected: use 429 or %s", code, statusList())
		default:
			return fail("unknown kind %q: want 429, %s, truncate, reset or stream-error", kind, statusList())
		}
	}
	if target == "" {
		return fail("no interaction index after @")
	}
	n, err := strconv.Atoi(target)
	if err != nil || n < 0 {
		return fail("interaction index %q is not a non-negative integer", target)
	}
	if op.Kind == KindRateLimit || op.Kind == KindServerError {
		op.Before = n
	} else {
		op.Interaction = n
	}

	var allowed []string
	var required string
	switch op.Kind {
	case KindRateLimit, KindServerError:
		allowed = []string{"retry-after", "retry-after-ms"}
	case KindTruncate:
		allowed, required = []string{"chunk", "event", "recover"}, "chunk"
	case KindStreamError:
		allowed, required = []string{"chunk", "event", "code", "recover"}, "chunk"
	case KindReset:
		allowed, required = []string{"byte", "recover"}, "byte"
	}
	seen := map[string]bool{}
	if hasOpts {
		if strings.TrimSpace(opts) == "" {
			return fail("nothing after ':' (want KEY=VALUE)")
		}
		for _, kv := range splitOptions(opts) {
			key, val, ok := strings.Cut(kv, "=")
			key = strings.ToLower(strings.TrimSpace(key))
			val = strings.TrimSpace(val)
			if !ok {
				return fail("option %q is not KEY=VALUE", strings.TrimSpace(kv))
			}
			if key == "" {
				return fail("option %q has no key", strings.TrimSpace(kv))
			}
			if !contains(allowed, key) {
				return fail("%s does not take %s (it takes %s)", displayKind(op), key, strings.Join(allowed, ", "))
			}
			if seen[key] {
				return fail("%s given twice", key)
			}
			seen[key] = true
			if val == "" {
				return fail("%s has no value", key)
			}
			switch key {
			case "retry-after":
				v, err := retryAfter(val)
				if err != nil {
					return fail("%v", err)
				}
				op.RetryAfter = v
			case "retry-after-ms":
				f, err := strconv.ParseFloat(val, 64)
				if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
					return fail("retry-after-ms=%s is not a non-negative number of milliseconds", val)
				}
				op.RetryAfterMs = val
			case "code":
				if !validCode(val) {
					return fail("code=%s is not a code: letters, digits, '_', '-' and '.' only", val)
				}
				op.Code = val
			case "recover":
				b, err := strconv.ParseBool(val)
				if err != nil {
					return fail("recover=%s is not true or false", val)
				}
				op.Recover = b
			case "chunk", "byte", "event":
				v, err := strconv.Atoi(val)
				if err != nil || v < 0 {
					return fail("%s=%s is not a non-negative integer", key, val)
				}
				switch key {
				case "chunk":
					op.Chunk = v
				case "event":
					op.Event, op.ByEvent = v, true
				default:
					op.Byte = v
				}
			}
		}
	}
	if seen["chunk"] && seen["event"] {
		return fail("give chunk or event, not both")
	}
	if required == "chunk" && seen["event"] {
		required = "" // event=K cuts instead
	}
	if required != "" && !seen[required] {
		return fail("%s needs %s=N (%s)", displayKind(op), required, requiredHint(op.Kind))
	}
	return op, nil
}

func requiredHint(kind string) string {
	switch kind {
	case KindTruncate:
		return "how many chunks to keep, or event=N: how many events"
	case KindStreamError:
		return "the chunk the error event replaces, or event=N: how many events come before it"
	}
	return "how many bytes to keep before the reset"
}

func displayKind(op Op) string {
	switch op.Kind {
	case KindRateLimit, KindServerError:
		return strconv.Itoa(op.Status)
	case KindStreamError:
		return "stream-error"
	}
	return op.Kind
}

// splitOptions splits at the commas that are followed by KEY=.
func splitOptions(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == ',' && startsKey(s[i+1:]) {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// startsKey reports whether s starts with an option key and "=".
func startsKey(s string) bool {
	s = strings.TrimLeft(s, " ")
	i := 0
	for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || s[i] == '-' || s[i] == '_' || i > 0 && s[i] >= '0' && s[i] <= '9') {
		i++
	}
	return i > 0 && strings.HasPrefix(strings.TrimLeft(s[i:], " "), "=")
}

// retryAfter checks a Retry-After value: seconds (whole, or with a
// fraction) or an HTTP-date are kept, an RFC 3339 time becomes an
// HTTP-date.
func retryAfter(v string) (string, error) {
	if n, err := strconv.ParseUint(v, 10, 63); err == nil {
		return strconv.FormatUint(n, 10), nil
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && !math.IsInf(f, 0) && strings.Trim(v, "0123456789.") == "" {
		return v, nil // fractional seconds: not HTTP, but clients read them
	}
	if _, err := http.ParseTime(v); err == nil {
		return v, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t.UTC().Format(http.TimeFormat), nil
	}
	return "", fmt.Errorf("retry-after=%s is neither seconds nor a date (an HTTP-date such as %q, or RFC 3339 such as 2026-01-01T00:00:07Z)", v, "Thu, 01 Jan 2026 00:00:07 GMT")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// cut is the option saying where a truncate or stream-error cuts.
func (op Op) cut() string {
	if op.ByEvent {
		return "event=" + strconv.Itoa(op.Event)
	}
	return "chunk=" + strconv.Itoa(op.Chunk)
}

// String renders op in ParseOp's syntax.
func (op Op) String() string {
	var opts []string
	var kind string
	var n int
	switch op.Kind {
	case KindRateLimit, KindServerError:
		kind, n = strconv.Itoa(op.Status), op.Before
		if op.Kind == KindRateLimit {
			kind = "429"
		}
		if op.RetryAfter != "" {
			opts = append(opts, "retry-after="+op.RetryAfter)
		}
		if op.RetryAfterMs != "" {
			opts = append(opts, "retry-after-ms="+op.RetryAfterMs)
		}
	case KindTruncate:
		kind, n = "truncate", op.Interaction
		opts = append(opts, op.cut())
	case KindReset:
		kind, n = "reset", op.Interaction
		opts = append(opts, "byte="+strconv.Itoa(op.Byte))
	case KindStreamError:
		kind, n = "stream-error", op.Interaction
		opts = append(opts, op.cut())
		if op.Code != "" {
			opts = append(opts, "code="+op.Code)
		}
	default:
		return fmt.Sprintf("%s@%d", op.Kind, op.Interaction)
	}
	if op.Recover {
		opts = append(opts, "recover=true")
	}
	s := kind + "@" + strconv.Itoa(n)
	if len(opts) > 0 {
		s += ":" + strings.Join(opts, ",")
	}
	return s
}
