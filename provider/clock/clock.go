// Package clock is the injectable source of time for everything that waits:
// retry backoff, scripted delays and stalls. Production code uses Real; tests
// and replay use Fake, whose waits take no wall time.
package clock

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Clock tells the time and waits.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives the clock's time once d has
	// passed on this clock.
	After(d time.Duration) <-chan time.Time
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// After is time.After.
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Sleep waits for d on c, or until ctx is done, whichever comes first. It
// reports ctx.Err() when the context ended the wait.
//
// A context already done when the wait begins or ends wins over the
// clock: when both are ready at once the outcome does not depend on which
// channel a select happens to pick, so a virtual clock gives the same
// answer every time.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	return sleep(ctx, c, d)
}

// Sleeper is Sleep on c as a function, for packages that take a wait
// without knowing clocks; nil when c is nil (they use the wall clock then).
func Sleeper(c Clock) func(ctx context.Context, d time.Duration) error {
	if c == nil {
		return nil
	}
	return func(ctx context.Context, d time.Duration) error { return sleep(ctx, c, d) }
}

func sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 || ctx.Err() != nil {
		return ctx.Err()
	}
	if f, ok := c.(*Fake); ok {
		return f.sleep(ctx, d)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-c.After(d):
		return ctx.Err()
	}
}

// Fake is a manual clock. Time moves only when Advance is called, so a wait
// of an hour costs nothing. It is safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []*waiter
	changed chan struct{} // closed and replaced whenever waiters change
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

// NewFake returns a fake clock reading start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, changed: make(chan struct{})}
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// After registers a waiter that fires once the clock has been advanced by d.
func (f *Fake) After(d time.Duration) <-chan time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- f.now
		return ch
	}
	f.waiters = append(f.waiters, &waiter{at: f.now.Add(d), ch: ch})
	f.notifyLocked()
	return ch
}

// sleep waits like Sleep but withdraws its waiter when ctx ends first, so
// Waiters counts only live waits.
func (f *Fake) sleep(ctx context.Context, d time.Duration) error {
	f.mu.Lock()
	w := &waiter{at: f.now.Add(d), ch: make(chan time.Time, 1)}
	f.waiters = append(f.waiters, w)
	f.notifyLocked()
	f.mu.Unlock()
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
		f.mu.Lock()
		for i, x := range f.waiters {
			if x == w {
				f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
				f.notifyLocked()
				break
			}
		}
		f.mu.Unlock()
		return ctx.Err()
	}
}

// Advance moves the clock forward by d and fires every waiter that is due,
// in deadline order.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	sort.SliceStable(f.waiters, func(i, j int) bool { return f.waiters[i].at.Before(f.waiters[j].at) })
	kept := f.waiters[:0]
	for _, w := range f.waiters {
		if w.at.After(f.now) {
			kept = append(kept, w)
			continue
		}
		w.ch <- f.now
	}
	f.waiters = kept
	f.notifyLocked()
}

// Waiters reports how many waits are pending.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// BlockUntil returns once at least n waits are pending, or with ctx's error.
// Tests use it to advance the clock only after the code under test is
// actually waiting, without sleeping.
func (f *Fake) BlockUntil(ctx context.Context, n int) error {
	for {
		f.mu.Lock()
		count, changed := len(f.waiters), f.changed
		f.mu.Unlock()
		if count >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

func (f *Fake) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}
