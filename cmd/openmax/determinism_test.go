package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/replay"
)

// replayRuns is how many times TestReplayIsDeterministic replays each
// library cassette; OPENMAX_REPLAY_RUNS overrides it.
func replayRuns(t *testing.T) int {
	if s := os.Getenv("OPENMAX_REPLAY_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("OPENMAX_REPLAY_RUNS=%q is not a positive number", s)
		}
		return n
	}
	return 200
}

// TestReplayIsDeterministic replays every library cassette 200 times,
// concurrently (so the scheduler interleaves the replays' goroutines in
// as many ways as it will), and requires every transcript to equal the
// golden byte for byte: a replay must not depend on goroutine timing.
func TestReplayIsDeterministic(t *testing.T) {
	t.Parallel() // CPU-bound: overlaps the tests that wait on child processes
	paths, _ := filepath.Glob(filepath.Join(libraryDir, "*.yaml"))
	if len(paths) == 0 {
		t.Fatal("no cassettes in " + libraryDir)
	}
	runs := replayRuns(t)
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".yaml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want, err := os.ReadFile(filepath.Join("../../golden/cassettes", name+".golden"))
			if err != nil {
				t.Fatal(err)
			}
			f, err := cassette.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var wg sync.WaitGroup
			sem := make(chan struct{}, 2*runtime.GOMAXPROCS(0))
			var mu sync.Mutex
			diffs := 0
			for i := 0; i < runs; i++ {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer func() { <-sem; wg.Done() }()
					got, err := replayFile(ctx, f, p, replay.Pace{Mode: replay.PaceInstant}, nil, io.Discard, env{})
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						t.Errorf("run %d: %v", i, err)
						return
					}
					if !bytes.Equal(got, want) {
						diffs++
						if diffs == 1 {
							t.Errorf("run %d differs from the golden:\n%s", i, got)
						}
					}
				}()
			}
			wg.Wait()
			if diffs > 0 {
				t.Errorf("%d of %d replays differed", diffs, runs)
			}
		})
	}
}
