// Package retry resends model requests exactly as the openmax-stdio/6
// contract allows: transport failures, HTTP 429 and 500/502/503/504/529,
// and, only before any reply text arrived, a stream that died or a
// provider-reported rate limit, overload or server fault. A reply cut off by
// a client limit (provider.ErrLimit) is never resent. It wraps any
// vendor client that classifies its failures with the types in package
// provider, and waits only through the injected clock.
package retry

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
)

// Policy shapes the retries. Zero fields take the defaults.
type Policy struct {
	// MaxAttempts is the attempt budget of one request, the first included
	// (default 4).
	MaxAttempts int
	// Base and Max bound the exponential backoff: attempt n waits up to
	// Base*2^(n-2), capped at Max, with full jitter (defaults 1s and 30s).
	Base, Max time.Duration
	// MaxRetryAfter is the longest server-requested wait honoured; a longer
	// Retry-After fails the request at once (default 60s).
	MaxRetryAfter time.Duration
	// Seed makes the jitter reproducible.
	Seed uint64
}

func (p Policy) withDefaults() Policy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 4
	}
	if p.Base <= 0 {
		p.Base = time.Second
	}
	if p.Max <= 0 {
		p.Max = 30 * time.Second
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = 60 * time.Second
	}
	return p
}

// unreachableLimit is how many attempts in a row that never reached the
// endpoint make a request give up before its budget.
const unreachableLimit = 3

// Provider is a provider.Provider that retries Inner's failed attempts.
type Provider struct {
	Inner  provider.Provider
	Policy Policy
	Clock  clock.Clock // nil means real time

	mu  sync.Mutex
	rng *rand.Rand
}

// New wraps inner with policy p, waiting on c.
func New(inner provider.Provider, p Policy, c clock.Clock) *Provider {
	return &Provider{Inner: inner, Policy: p, Clock: c}
}

// Stream forwards the attempts' parts. When an attempt fails in a way the
// contract retries, it yields a Retry part (before the wait), waits, and
// starts over; the engine voids what that attempt streamed. A cancel during
// the wait ends the sequence and the next attempt is never sent.
func (p *Provider) Stream(ctx context.Context, req provider.Request) iter.Seq[provider.Part] {
	pol := p.Policy.withDefaults()
	clk := p.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	return func(yield func(provider.Part) bool) {
		unreachable := 0
		for attempt := 1; ; attempt++ {
			sawText := false
			var failure error
			for part := range p.Inner.Stream(ctx, req) {
				if e, ok := part.(provider.Error); ok {
					failure = e.Err
					break
				}
				if _, ok := part.(provider.TextDelta); ok {
					sawText = true
				}
				if !yield(part) {
					return
				}
			}
			if failure == nil || ctx.Err() != nil {
				return
			}
			d := classify(failure, sawText)
			var te *provider.TransportError
			if errors.As(failure, &te) && te.Unreachable {
				unreachable++
			} else {
				unreachable = 0
			}
			switch {
			case !d.retry:
				yield(provider.Error{Err: failure})
				return
			case d.hasWait && d.wait > pol.MaxRetryAfter:
				yield(provider.Error{Err: fmt.Errorf("%w; not retried: that wait is over the %s limit", failure, pol.MaxRetryAfter)})
				return
			case unreachable >= unreachableLimit:
				yield(provider.Error{Err: fmt.Errorf("%w; gave up after %d attempts in a row that never reached the endpoint", failure, unreachable)})
				return
			case attempt >= pol.MaxAttempts:
				if attempt == 1 {
					yield(provider.Error{Err: failure}) // nothing was retried
				} else {
					yield(provider.Error{Err: fmt.Errorf("%w (after %d attempts)", failure, attempt)})
				}
				return
			}
			wait := p.backoff(pol, attempt+1)
			if d.hasWait && d.wait > wait {
				wait = d.wait
			}
			if !yield(provider.Retry{Attempt: attempt + 1, MaxAttempts: pol.MaxAttempts, Reason: failure.Error()}) {
				return
			}
			if clock.Sleep(ctx, clk, wait) != nil {
				return
			}
		}
	}
}

// backoff is the jittered exponential wait before attempt n (n >= 2).
func (p *Provider) backoff(pol Policy, n int) time.Duration {
	ceiling := pol.Base << (n - 2)
	if ceiling > pol.Max || ceiling <= 0 {
		ceiling = pol.Max
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rng == nil {
		p.rng = rand.New(rand.NewPCG(pol.Seed, pol.Seed^0x9e3779b97f4a7c15))
	}
	// Full jitter, but never less than half the ceiling.
	return ceiling/2 + time.Duration(p.rng.Int64N(int64(ceiling/2)+1))
}

type decision struct {
	retry   bool
	wait    time.Duration
	hasWait bool
}

// classify decides whether a failed attempt is retried.
func classify(err error, sawText bool) decision {
	var he *provider.HTTPError
	var se *provider.StreamError
	var te *provider.TransportError
	switch {
	case errors.Is(err, provider.ErrLimit):
		// A client limit (reply deadline, size cap): the same request
		// would most likely hit it again.
		return decision{}
	case errors.As(err, &he):
		d := decision{wait: he.RetryAfter, hasWait: he.HasRetryAfter}
		switch he.Status {
		case 429:
			d.retry = !provider.IsQuota(he.Code)
		case 500, 502, 503, 504, 529:
			d.retry = true
		}
		return d
	case errors.As(err, &te):
		return decision{retry: !sawText}
	case sawText:
		// Reply text already reached the client: never start over.
		return decision{}
	case errors.Is(err, provider.ErrIncomplete):
		return decision{retry: true}
	case errors.As(err, &se):
		return decision{retry: transientStreamError(se)}
	}
	return decision{}
}

// transientStreamError reports a provider-reported rate limit (Bedrock's
// throttlingException among them), overload or server fault (and not an
// exhausted quota). Google's status names (RESOURCE_EXHAUSTED, INTERNAL,
// UNAVAILABLE, DEADLINE_EXCEEDED) count as the HTTP statuses they stand for
// (429, 500, 503, 504).
func transientStreamError(se *provider.StreamError) bool {
	t := strings.ToLower(se.Type)
	if provider.IsQuota(t) {
		return false
	}
	for _, s := range []string{"rate_limit", "overloaded", "api_error", "server_error", "internal", "unavailable", "timeout",
		"resource_exhausted", "deadline_exceeded", "throttl"} {
		if strings.Contains(t, s) {
			return true
		}
	}
	return false
}
