package retry

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
)

// attempts scripts an inner provider: the n-th call yields attempts[n].
func attempts(calls *atomic.Int32, script ...[]provider.Part) provider.Provider {
	return provider.Func(func(context.Context, provider.Request) iter.Seq[provider.Part] {
		n := int(calls.Add(1)) - 1
		return func(yield func(provider.Part) bool) {
			if n >= len(script) {
				yield(provider.Error{Err: errors.New("no more attempts scripted")})
				return
			}
			for _, p := range script[n] {
				if !yield(p) {
					return
				}
			}
		}
	})
}

var (
	ok       = []provider.Part{provider.TextDelta{Text: "hi"}, provider.Finish{Reason: "stop"}}
	fail     = func(err error) []provider.Part { return []provider.Part{provider.Error{Err: err}} }
	textFail = func(err error) []provider.Part {
		return []provider.Part{provider.TextDelta{Text: "par"}, provider.Error{Err: err}}
	}
	died          = fmt.Errorf("%w: connection reset", provider.ErrIncomplete)
	refused       = &provider.TransportError{Err: errors.New("dial tcp: connection refused"), Unreachable: true}
	overloaded    = &provider.StreamError{Type: "overloaded_error", Message: "Overloaded"}
	http429       = &provider.HTTPError{Status: 429, Code: "rate_limit_exceeded"}
	quota         = &provider.HTTPError{Status: 429, Code: "insufficient_quota"}
	badRequest    = &provider.HTTPError{Status: 400, Code: "invalid_request_error"}
	retryAfter5   = &provider.HTTPError{Status: 503, RetryAfter: 5 * time.Second, HasRetryAfter: true}
	retryAfter2   = &provider.HTTPError{Status: 429, RetryAfter: 2 * time.Minute, HasRetryAfter: true}
	limit         = &provider.LimitError{Limit: "--max-reply-bytes", Detail: "the response body passed 1 KiB"}
	headerTimeout = &provider.TransportError{Err: errors.New("no response headers within 2m0s (--header-timeout)")}
)

// run drives one Stream with a fake clock, advancing it whenever the
// policy waits, and returns the parts, the inner call count and the total
// virtual time waited.
func run(t *testing.T, pol Policy, script ...[]provider.Part) ([]provider.Part, int, time.Duration) {
	t.Helper()
	var calls atomic.Int32
	start := time.Unix(0, 0)
	fake := clock.NewFake(start)
	p := New(attempts(&calls, script...), pol, fake)
	parts := make(chan provider.Part)
	go func() {
		for part := range p.Stream(context.Background(), provider.Request{}) {
			parts <- part
		}
		close(parts)
	}()
	var out []provider.Part
	for part := range parts {
		out = append(out, part)
		if _, isRetry := part.(provider.Retry); isRetry {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := fake.BlockUntil(ctx, 1); err != nil {
				t.Fatal("the retry never waited")
			}
			cancel()
			fake.Advance(time.Hour)
		}
	}
	return out, int(calls.Load()), fake.Now().Sub(start)
}

func kinds(parts []provider.Part) string {
	var s []string
	for _, p := range parts {
		switch p := p.(type) {
		case provider.Retry:
			s = append(s, fmt.Sprintf("retry%d/%d", p.Attempt, p.MaxAttempts))
		case provider.Error:
			s = append(s, "error")
		case provider.TextDelta:
			s = append(s, "text")
		case provider.Finish:
			s = append(s, "finish")
		default:
			s = append(s, fmt.Sprintf("%T", p))
		}
	}
	return strings.Join(s, " ")
}

func TestRetryClasses(t *testing.T) {
	tests := []struct {
		name   string
		script [][]provider.Part
		want   string
		calls  int
		errHas string
	}{
		{"429 then ok", [][]provider.Part{fail(http429), ok}, "retry2/4 text finish", 2, ""},
		{"5xx and 529", [][]provider.Part{fail(&provider.HTTPError{Status: 500}), fail(&provider.HTTPError{Status: 502}), fail(&provider.HTTPError{Status: 529}), ok}, "retry2/4 retry3/4 retry4/4 text finish", 4, ""},
		{"504 then 503", [][]provider.Part{fail(&provider.HTTPError{Status: 504}), fail(&provider.HTTPError{Status: 503}), ok}, "retry2/4 retry3/4 text finish", 3, ""},
		{"transport failure", [][]provider.Part{fail(&provider.TransportError{Err: errors.New("reset")}), ok}, "retry2/4 text finish", 2, ""},
		{"died before text", [][]provider.Part{fail(died), ok}, "retry2/4 text finish", 2, ""},
		{"died after text", [][]provider.Part{textFail(died)}, "text error", 1, "connection reset"},
		{"overload before text", [][]provider.Part{fail(overloaded), ok}, "retry2/4 text finish", 2, ""},
		{"overload after text", [][]provider.Part{textFail(overloaded)}, "text error", 1, "overloaded_error"},
		{"quota", [][]provider.Part{fail(quota)}, "error", 1, "insufficient_quota"},
		{"400", [][]provider.Part{fail(badRequest)}, "error", 1, "HTTP 400"},
		{"other stream error", [][]provider.Part{fail(&provider.StreamError{Type: "invalid_request_error"})}, "error", 1, "invalid_request_error"},
		{"Google statuses before text", [][]provider.Part{fail(&provider.StreamError{Type: "RESOURCE_EXHAUSTED"}), fail(&provider.StreamError{Type: "DEADLINE_EXCEEDED"}),
			fail(&provider.StreamError{Type: "UNAVAILABLE"}), ok}, "retry2/4 retry3/4 retry4/4 text finish", 4, ""},
		{"Google INVALID_ARGUMENT", [][]provider.Part{fail(&provider.StreamError{Type: "INVALID_ARGUMENT"})}, "error", 1, "INVALID_ARGUMENT"},
		{"throttling before text", [][]provider.Part{fail(&provider.StreamError{Type: "throttlingException"}), ok}, "retry2/4 text finish", 2, ""},
		{"throttling after text", [][]provider.Part{textFail(&provider.StreamError{Type: "throttlingException"})}, "text error", 1, "throttlingException"},
		{"retry-after over a minute", [][]provider.Part{fail(retryAfter2)}, "error", 1, "(server asked to wait 2m0s); not retried: that wait is over the 1m0s limit"},
		{"client limit before text", [][]provider.Part{fail(limit), ok}, "error", 1, "--max-reply-bytes"},
		{"client limit after text", [][]provider.Part{textFail(limit)}, "text error", 1, "--max-reply-bytes"},
		{"header timeout", [][]provider.Part{fail(headerTimeout), ok}, "retry2/4 text finish", 2, ""},
		{"retry-after saturated", [][]provider.Part{fail(&provider.HTTPError{Status: 429, RetryAfter: provider.MaxWait, HasRetryAfter: true})}, "error", 1, "292 years or more); not retried: that wait is over the 1m0s limit"},
		{"budget exhausted", [][]provider.Part{fail(http429), fail(http429), fail(http429), fail(http429)}, "retry2/4 retry3/4 retry4/4 error", 4, "after 4 attempts"},
		{"three refusals give up early", [][]provider.Part{fail(refused), fail(refused), fail(refused), ok}, "retry2/4 retry3/4 error", 3, "3 attempts in a row that never reached the endpoint"},
		{"refusals not in a row", [][]provider.Part{fail(refused), fail(refused), fail(http429), ok}, "retry2/4 retry3/4 retry4/4 text finish", 4, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts, calls, _ := run(t, Policy{}, tt.script...)
			if got := kinds(parts); got != tt.want {
				t.Errorf("parts %s, want %s", got, tt.want)
			}
			if calls != tt.calls {
				t.Errorf("%d attempts, want %d", calls, tt.calls)
			}
			if tt.errHas != "" {
				e := parts[len(parts)-1].(provider.Error)
				if !strings.Contains(e.Err.Error(), tt.errHas) {
					t.Errorf("error %q, want it to contain %q", e.Err, tt.errHas)
				}
			}
		})
	}
}

func TestWaitIsBackoffOrRetryAfterWhenLonger(t *testing.T) {
	var calls atomic.Int32
	fake := clock.NewFake(time.Unix(0, 0))
	p := New(attempts(&calls, fail(retryAfter5), ok), Policy{Base: time.Second}, fake)
	done := make(chan []provider.Part)
	go func() {
		var out []provider.Part
		for part := range p.Stream(context.Background(), provider.Request{}) {
			out = append(out, part)
		}
		done <- out
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fake.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	fake.Advance(4999 * time.Millisecond)
	if calls.Load() != 1 {
		t.Fatal("the second attempt went out before the server's Retry-After")
	}
	fake.Advance(time.Millisecond)
	out := <-done
	if calls.Load() != 2 || kinds(out) != "retry2/4 text finish" {
		t.Errorf("%d calls, parts %s", calls.Load(), kinds(out))
	}
	if r := out[0].(provider.Retry); !strings.Contains(r.Reason, "HTTP 503") {
		t.Errorf("reason %q", r.Reason)
	}
}

func TestBackoffGrowsAndIsSeeded(t *testing.T) {
	pol := Policy{Base: time.Second, Max: 4 * time.Second, Seed: 7}.withDefaults()
	a, b := &Provider{}, &Provider{}
	for n := 2; n <= 6; n++ {
		wa, wb := a.backoff(pol, n), b.backoff(pol, n)
		if wa != wb {
			t.Errorf("attempt %d: %v vs %v with the same seed", n, wa, wb)
		}
		ceiling := time.Second << (n - 2)
		if ceiling > pol.Max {
			ceiling = pol.Max
		}
		if wa < ceiling/2 || wa > ceiling {
			t.Errorf("attempt %d waits %v, outside [%v, %v]", n, wa, ceiling/2, ceiling)
		}
	}
}

func TestCancelDuringWaitSendsNoAttempt(t *testing.T) {
	var calls atomic.Int32
	fake := clock.NewFake(time.Unix(0, 0))
	p := New(attempts(&calls, fail(http429), ok), Policy{}, fake)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan []provider.Part)
	go func() {
		var out []provider.Part
		for part := range p.Stream(ctx, provider.Request{}) {
			out = append(out, part)
		}
		done <- out
	}()
	wait, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if err := fake.BlockUntil(wait, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	out := <-done
	fake.Advance(time.Hour)
	if calls.Load() != 1 || kinds(out) != "retry2/4" {
		t.Errorf("%d calls, parts %s", calls.Load(), kinds(out))
	}
}

// TestHugeRetryAfterFailsAtOnce: every form of an absurd server wait
// (issue 9: they overflowed to a negative wait and were retried at once)
// fails the request on the first attempt, naming the wait.
func TestHugeRetryAfterFailsAtOnce(t *testing.T) {
	forms := []struct{ header, value string }{
		{"Retry-After", "99999999999"},
		{"Retry-After", "1e20"},
		{"Retry-After", "Inf"},
		{"Retry-After", "0x1p62"},
		{"Retry-After", "61"},
		{"retry-after-ms", "99999999999999999999"},
		{"retry-after-ms", "1e300"},
	}
	for _, f := range forms {
		t.Run(f.header+"="+f.value, func(t *testing.T) {
			h := http.Header{}
			h.Set(f.header, f.value)
			he := &provider.HTTPError{Status: 429, Code: "rate_limit_exceeded"}
			he.RetryAfter, he.HasRetryAfter = provider.ParseRetryAfter(h, time.Unix(0, 0))
			parts, calls, waited := run(t, Policy{}, fail(he), ok)
			if got := kinds(parts); got != "error" || calls != 1 || waited != 0 {
				t.Fatalf("parts %s after %d attempts and %v, want one error at once", got, calls, waited)
			}
			msg := parts[0].(provider.Error).Err.Error()
			if !strings.Contains(msg, "server asked to wait") || !strings.Contains(msg, "not retried") {
				t.Errorf("error %q does not name the wait", msg)
			}
		})
	}
}

// TestSingleAttemptKeepsTheFailure: with a budget of one attempt nothing
// is retried, and the failure is reported as it is.
func TestSingleAttemptKeepsTheFailure(t *testing.T) {
	parts, calls, _ := run(t, Policy{MaxAttempts: 1}, fail(headerTimeout))
	if got := kinds(parts); got != "error" || calls != 1 {
		t.Fatalf("parts %s after %d attempts", got, calls)
	}
	if e := parts[0].(provider.Error); e.Err != error(headerTimeout) {
		t.Errorf("error %q, want the failure itself", e.Err)
	}
}
