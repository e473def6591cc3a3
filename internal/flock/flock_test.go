package flock

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestExclusive: a second Acquire of a held lock fails (at once with wait
// 0, after the wait otherwise) with ErrHeld; once released it succeeds.
func TestExclusive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	l, err := Acquire(path, 0o600, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(path, 0o600, 0); !errors.Is(err, ErrHeld) {
		t.Fatalf("second Acquire: %v, want ErrHeld", err)
	}
	if _, err := Acquire(path, 0o600, 5*time.Millisecond); !errors.Is(err, ErrHeld) {
		t.Fatalf("second Acquire with a wait: %v, want ErrHeld", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l2, err := Acquire(path, 0o600, 0)
	if err != nil {
		t.Fatalf("after Release: %v", err)
	}
	l2.Release()
	if _, err := Acquire(filepath.Join(t.TempDir(), "missing", "x.lock"), 0o600, 0); err == nil {
		t.Error("a lock in a missing folder was taken")
	}
}
