package main

import (
	"math"
	"runtime"
	"runtime/debug"
)

// The collector's settings for `openmax cassette sweep`.
//
// A sweep keeps little live (the cassettes, and one replay per worker)
// and every replay leaves ~160 KB of garbage behind it. At the default
// GOGC=100 the heap goal is then the runtime's floor of 4 MiB, and a
// library sweep collects ~170 times in a second or two: the collector's
// background mark workers run on the core the one worker leaves idle (a
// one-worker sweep kept ~1.3 cores busy, so two workers could not double
// it) and each cycle's start and end stop and wake every P.
const (
	// sweepGCPercent lets the heap grow to five times what is live
	// between two collections (the default lets it double).
	sweepGCPercent = 400
	// sweepLimitFactor and sweepLimitFloor bound that growth: the memory
	// limit is this many times the heap the loaded cassettes keep live,
	// and at least the floor. While the live heap stays under twice the
	// loaded one the limit is above the default's goal (twice the live
	// heap), so the collector never runs more often than it would at
	// GOGC=100; memory stays within five times the live heap and the
	// limit.
	sweepLimitFactor = 4
	sweepLimitFloor  = 256 << 20
)

// sweepGCSettings are the collector's percent and memory limit for a
// sweep whose loaded cassettes keep live bytes live; ok is false when the
// environment set either (GOGC, GOMEMLIMIT): then the runtime's own
// reading of them stands.
func sweepGCSettings(getenv func(string) string, live uint64) (percent int, limit int64, ok bool) {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return 0, 0, false
	}
	l := int64(sweepLimitFloor)
	if live < math.MaxInt64/sweepLimitFactor {
		l = max(l, int64(live)*sweepLimitFactor)
	} else {
		l = math.MaxInt64
	}
	return sweepGCPercent, l, true
}

// tuneSweepGC sets the collector for a sweep (sweepGCSettings), once the
// cassettes are loaded: it collects once to learn the heap they keep
// live. It returns what puts the previous settings back.
func tuneSweepGC(getenv func(string) string) (restore func()) {
	if _, _, ok := sweepGCSettings(getenv, 0); !ok {
		return func() {}
	}
	// Right after a collection the heap in use is what it found live.
	// (runtime/metrics says the same, but importing it costs every
	// openmax process ~1 ms at start: its init builds its table.)
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	percent, limit, _ := sweepGCSettings(getenv, m.HeapAlloc)
	oldPercent := debug.SetGCPercent(percent)
	oldLimit := debug.SetMemoryLimit(limit)
	return func() {
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	}
}
