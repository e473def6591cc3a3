package main

import (
	"runtime"
	"testing"
)

// TestOnOneProc: the binary's replays run on one P, and the
// setting is put back after; an environment that sets GOMAXPROCS, or a test's
// in-process run, keeps the process's setting.
func TestOnOneProc(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	if before == 1 {
		runtime.GOMAXPROCS(2)
		defer runtime.GOMAXPROCS(1)
		before = 2
	}
	for _, tt := range []struct {
		name string
		e    env
		want int
	}{
		{"the binary", env{oneProc: true, getenv: func(string) string { return "" }}, 1},
		{"GOMAXPROCS set", env{oneProc: true, getenv: func(k string) string {
			if k == "GOMAXPROCS" {
				return "2"
			}
			return ""
		}}, before},
		{"in process", env{getenv: func(string) string { return "" }}, before},
	} {
		restore := onOneProc(tt.e)
		got := runtime.GOMAXPROCS(0)
		restore()
		if got != tt.want {
			t.Errorf("%s: GOMAXPROCS %d during the run, want %d", tt.name, got, tt.want)
		}
		if after := runtime.GOMAXPROCS(0); after != before {
			t.Fatalf("%s: GOMAXPROCS %d after, want %d back", tt.name, after, before)
		}
	}
}
