package main

import (
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

// TestSweepGCSettings: a sweep lets the heap grow to five times the live
// heap, under a limit of four times the loaded cassettes' heap and at
// least 256 MiB; a GOGC or GOMEMLIMIT in the environment leaves the
// runtime's reading of it alone.
func TestSweepGCSettings(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		live    uint64
		ok      bool
		percent int
		limit   int64
	}{
		{"a small library", nil, 3 << 20, true, 400, 256 << 20},
		{"nothing loaded", nil, 0, true, 400, 256 << 20},
		{"at the floor", nil, 64 << 20, true, 400, 256 << 20},
		{"a large library", nil, 1 << 30, true, 400, 4 << 30},
		{"a live heap past any limit", nil, 1 << 62, true, 400, 1<<63 - 1},
		{"GOGC set", map[string]string{"GOGC": "100"}, 3 << 20, false, 0, 0},
		{"GOGC off", map[string]string{"GOGC": "off"}, 3 << 20, false, 0, 0},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "1GiB"}, 3 << 20, false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			percent, limit, ok := sweepGCSettings(func(k string) string { return tt.env[k] }, tt.live)
			if ok != tt.ok || percent != tt.percent || limit != tt.limit {
				t.Fatalf("got (%d, %d, %v), want (%d, %d, %v)", percent, limit, ok, tt.percent, tt.limit, tt.ok)
			}
		})
	}
}

// TestTuneSweepGCRestores: tuneSweepGC sets the running collector as
// sweepGCSettings says, and what it returns puts the previous settings
// back; with GOGC in the environment it changes nothing.
func TestTuneSweepGCRestores(t *testing.T) {
	read := func() (int64, int64) {
		s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
		metrics.Read(s)
		return int64(s[0].Value.Uint64()), int64(s[1].Value.Uint64())
	}
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(1 << 40))
	none := func(string) string { return "" }

	restore := tuneSweepGC(none)
	percent, limit := read()
	if percent != sweepGCPercent || limit < sweepLimitFloor {
		t.Errorf("during the sweep: GOGC %d, limit %d; want %d and at least %d", percent, limit, sweepGCPercent, sweepLimitFloor)
	}
	restore()
	if percent, limit := read(); percent != 100 || limit != 1<<40 {
		t.Errorf("after: GOGC %d, limit %d; want the previous 100 and %d", percent, limit, int64(1<<40))
	}

	restore = tuneSweepGC(func(k string) string { return map[string]string{"GOGC": "50"}[k] })
	percent, limit = read()
	restore()
	if percent != 100 || limit != 1<<40 {
		t.Errorf("with GOGC set: GOGC %d, limit %d; want them left at 100 and %d", percent, limit, int64(1<<40))
	}
}
