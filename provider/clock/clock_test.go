package clock

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestFakeFiresInOrderOnlyWhenAdvanced(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := NewFake(start)
	late, early := f.After(2*time.Hour), f.After(time.Hour)
	select {
	case <-early:
		t.Fatal("fired before Advance")
	default:
	}
	f.Advance(90 * time.Minute)
	if got := <-early; !got.Equal(start.Add(90 * time.Minute)) {
		t.Errorf("early fired at %v", got)
	}
	select {
	case <-late:
		t.Fatal("late fired too soon")
	default:
	}
	if f.Waiters() != 1 {
		t.Errorf("%d waiters, want 1", f.Waiters())
	}
	f.Advance(time.Hour)
	<-late
	if now := f.Now(); !now.Equal(start.Add(150 * time.Minute)) {
		t.Errorf("now %v", now)
	}
	select {
	case <-f.After(0):
	default:
		t.Error("After(0) did not fire at once")
	}
}

func TestSleepWithdrawsOnCancel(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- Sleep(ctx, f, time.Minute) }()
	wait, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if err := f.BlockUntil(wait, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep returned %v", err)
	}
	if f.Waiters() != 0 {
		t.Errorf("a cancelled sleep left %d waiters", f.Waiters())
	}

	done := make(chan error, 1)
	go func() { done <- Sleep(context.Background(), f, time.Minute) }()
	if err := f.BlockUntil(wait, 1); err != nil {
		t.Fatal(err)
	}
	f.Advance(time.Minute)
	if err := <-done; err != nil {
		t.Errorf("Sleep returned %v after Advance", err)
	}
}

func TestBlockUntilHonoursContext(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.BlockUntil(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("BlockUntil returned %v", err)
	}
}
