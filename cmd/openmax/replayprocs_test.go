package main

import (
	"runtime"
	"testing"
)

// TestReplayOnOneProc: the binary's replay runs on one P and puts the
// setting back after; an environment that sets GOMAXPROCS, or a test's
// in-process run, keeps the process's setting.
func TestReplayOnOneProc(t *testing.T) {
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
		{"the binary", env{replayProcs: true, getenv: func(string) string { return "" }}, 1},
		{"GOMAXPROCS set", env{replayProcs: true, getenv: func(k string) string {
			if k == "GOMAXPROCS" {
				return "2"
			}
			return ""
		}}, before},
		{"in process", env{getenv: func(string) string { return "" }}, before},
	} {
		restore := replayOnOneProc(tt.e)
		got := runtime.GOMAXPROCS(0)
		restore()
		if got != tt.want {
			t.Errorf("%s: GOMAXPROCS %d during the replay, want %d", tt.name, got, tt.want)
		}
		if after := runtime.GOMAXPROCS(0); after != before {
			t.Fatalf("%s: GOMAXPROCS %d after, want %d back", tt.name, after, before)
		}
	}
}
