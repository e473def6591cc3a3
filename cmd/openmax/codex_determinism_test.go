package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openmax/openmax/internal/rapidchecks"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/codex"
	"github.com/openmax/openmax/replay/appserver"
)

// TestCodexBackendReplayIsDeterministic plays every codex case many times
// (a case with hooks, a few times) in process (the harness with the recorded app-server served over pipes
// through the Deps.CodexStart seam, the steps over in-memory stdin and
// stdout), concurrently: every run must end with the whole recording
// replayed and print exactly the golden bytes.
func TestCodexBackendReplayIsDeterministic(t *testing.T) {
	runs := rapidchecks.Pick(40, 20)
	hookProgram(t) // built here, not in a run's goroutine
	for _, path := range codexCases(t) {
		c := loadCodexCase(t, path)
		tr, err := appserver.Parse(bytes.NewReader(c.appServer), 0)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		want := c.transcript
		n := runs
		if _, hooked := c.project[".openmax/hooks.json"]; hooked {
			// Each run starts real hook processes (up to one per
			// event): fewer runs, so a loaded machine still answers
			// every step in time.
			n = rapidchecks.Pick(5, 3)
		}
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			t.Parallel()
			var wg sync.WaitGroup
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got, err := runCodexInProcess(t, c, tr)
					if err != nil {
						t.Errorf("run %d: %v", i, err)
						return
					}
					if !bytes.Equal(got, want) {
						t.Errorf("run %d printed other bytes:\n%s", i, got)
					}
				}()
			}
			wg.Wait()
		})
	}
}

// runCodexInProcess plays case c against the recording tr in process and
// returns the transcript as the golden has it.
func runCodexInProcess(t *testing.T, c codexCase, tr *appserver.Transcript) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	project, err := os.MkdirTemp(t.TempDir(), "project-")
	if err != nil {
		return nil, err
	}
	if project, err = filepath.EvalSymlinks(project); err != nil {
		return nil, err
	}
	var hooks caseHooks // each run its own {{STATE}}
	if err := writeCodexProject(t, c, project, &hooks); err != nil {
		return nil, err
	}
	var served []*appserver.Conn
	var mu sync.Mutex
	start := func(turnCtx context.Context, o codex.Options) (*codex.Client, error) {
		// The fake lives as long as the run, not the turn that started it.
		fake := appserver.Start(ctx, tr, appserver.Options{})
		mu.Lock()
		served = append(served, fake)
		mu.Unlock()
		return codex.Connect(turnCtx, fake.Stdout, fake.Stdin, o)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	// Many runs at once under -race on a loaded machine: no wait of the
	// test's (the context is the watchdog) nor of openmax's (a fake clock
	// nobody moves: codex's answers come from the recording) is on wall
	// time, so only a hang can fail a run.
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := &session{t: t, stdin: inW, lines: make(chan string, 1024), result: make(chan int, 1), clock: fake, untimed: true}
	var stderr syncBuffer
	args := []string{"--stdio", "--session-id", "s1", "--project", project, "--provider", "codex"}
	go func() {
		code := run(ctx, args, inR, outW, &stderr, env{clock: fake, getenv: trustedEnv(t, testEnv, project), codexStart: start})
		outW.Close()
		s.result <- code
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	for i, step := range strings.Split(strings.TrimSpace(string(c.steps)), "\n") {
		if err := s.step(ctx, strings.TrimRight(step, "\r")); err != nil {
			return nil, fmt.Errorf("step %d %q: %w\nstdout so far:\n%s\nstderr:\n%s", i+1, step, err, strings.Join(s.got, "\n"), stderr.String())
		}
	}
	got, err := s.end(ctx)
	if err != nil {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	for _, fake := range served {
		if err := fake.Wait(); err != nil {
			return nil, fmt.Errorf("the fake app-server: %w", err)
		}
	}
	return hooks.normalise(bytes.ReplaceAll(got, []byte(project), []byte("$PROJECT"))), nil
}
