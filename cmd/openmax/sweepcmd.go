package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/replay"
	"github.com/openmax/openmax/replay/sweep"
)

// runSweepCmd is `openmax cassette sweep` as the binary runs it: SIGINT
// and SIGTERM stop the sweep.
func runSweepCmd(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runSweep(ctx, args, stdout, stderr, env{clock: clock.Real{}, sweepGC: true})
}

// runSweep is `openmax cassette sweep FILE|DIR`: every single fault at
// every place of each cassette, replayed through the real engine and
// judged. The table goes to stdout (the same bytes every run), the summary
// with the elapsed time to stderr. Exit 1 when any variant broke an
// invariant, 2 on a usage error.
func runSweep(ctx context.Context, args []string, stdout, stderr io.Writer, e env) int {
	c := command{name: "openmax cassette sweep", usage: "FILE|DIR [--max-variants N] [--parallel N] [--deadline D] [--repeat N] [--json] [--shard K/N [--timings FILE]]",
		purpose: "Replay every single injected fault at every place of each cassette through the real engine; exit 1 if any breaks an invariant."}
	fs := c.flags()
	maxVariants := fs.Int("max-variants", sweep.DefaultMaxVariants, "the most variants per cassette (chosen evenly over the fault kinds and places); 0 for all")
	parallel := fs.Int("parallel", 0, "replays at once (0: GOMAXPROCS)")
	deadline := fs.Duration("deadline", sweep.DefaultDeadline, "wall-clock limit of one replay; past it the variant fails as a hang")
	repeat := fs.Int("repeat", 1, "replay every variant this many times; replays that differ fail the variant as nondeterministic")
	asJSON := fs.Bool("json", false, "print the report as JSON instead of a table")
	sf := addShardFlags(fs) // split by variant: one huge cassette spreads over every shard
	pos, code, ok := c.parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return c.usageError(stderr, "want one cassette or directory, got %d arguments", len(pos))
	}
	if *maxVariants < 0 || *parallel < 0 || *repeat < 1 || *deadline <= 0 {
		return c.usageError(stderr, "--max-variants and --parallel must not be negative, --repeat must be at least 1 and --deadline positive")
	}
	se, timings, code, ok := sf.resolveFor(c, e, stderr)
	if !ok {
		return code
	}
	cs, err := loadSweep(pos[0], *parallel, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "openmax cassette sweep: %v\n", err)
		return 1
	}
	if e.sweepGC {
		defer tuneSweepGC(e.env)()
	}
	start := time.Now()
	progress := sweepProgress(stderr)
	rep, err := sweep.Run(ctx, cs, sweepReplayer(e), sweep.Options{
		MaxVariants: *maxVariants, Parallel: *parallel, Deadline: *deadline, Repeat: *repeat,
		Progress: progress.report, Shard: se, Timings: timings,
	})
	progress.end()
	if err != nil {
		fmt.Fprintf(stderr, "openmax cassette sweep: %v\n", err)
		return 1
	}
	elapsed := time.Since(start)
	if *asJSON {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteTable(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "openmax cassette sweep: %v\n", err)
		return 1
	}
	part := ""
	if se.Spec.Sharded() {
		part = fmt.Sprintf(" (shard %s, from %s)", se.Spec, se.Source)
	}
	fmt.Fprintf(stderr, "openmax cassette sweep: %d variants over %d cassette(s)%s, %d failed, %s (%.0f variants/s)\n",
		len(rep.Rows), rep.Cassettes, part, rep.Failed, elapsed.Round(time.Millisecond), float64(len(rep.Rows))/elapsed.Seconds())
	if rep.Failed > 0 {
		fmt.Fprintf(stderr, "openmax cassette sweep: failures by kind: %s\n", rep.Summary(nil))
		return 1
	}
	return 0
}

// sweepProgressLine is what a sweep says of its progress on stderr.
type sweepProgressLine struct {
	w        io.Writer
	terminal bool // one line rewritten after every replay; else the count once
	drawn    bool
}

// sweepProgress reports a sweep's progress on stderr: on a terminal one
// line, redrawn after every replay; otherwise a single line with the
// count of replays once the variants are chosen.
func sweepProgress(stderr io.Writer) *sweepProgressLine {
	p := &sweepProgressLine{w: stderr}
	if f, ok := stderr.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.terminal = true
		}
	}
	return p
}

func (p *sweepProgressLine) report(done, total int) {
	switch {
	case p.terminal:
		fmt.Fprintf(p.w, "\r\x1b[Kopenmax cassette sweep: %d/%d replays", done, total)
		p.drawn = true
	case done == 0:
		fmt.Fprintf(p.w, "openmax cassette sweep: %d replays to run\n", total)
	}
}

// end clears the terminal's progress line before the summary.
func (p *sweepProgressLine) end() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

// loadSweep loads one recording, or every *.yaml of a directory in name
// order: an openmax cassette as it is, another tool's recording (an
// imported OpenAI Responses API one, say) converted in memory as the other
// cassette commands do, which a stderr line says. The files are read and
// parsed on parallel goroutines (0: GOMAXPROCS); what they say on stderr,
// and the first that fails, come in name order as a serial load gives
// them.
func loadSweep(path string, parallel int, stderr io.Writer) ([]sweep.Cassette, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	paths := []string{path}
	if fi.IsDir() {
		paths, _ = filepath.Glob(filepath.Join(path, "*.yaml"))
		sort.Strings(paths)
		if len(paths) == 0 {
			return nil, fmt.Errorf("no cassettes (*.yaml) in %s", path)
		}
	}
	type loaded struct {
		f    *cassette.File
		err  error
		said bytes.Buffer // its stderr lines
	}
	out := make([]loaded, len(paths))
	if parallel <= 0 {
		parallel = runtime.GOMAXPROCS(0)
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(parallel, len(paths)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i].f, out[i].err = loadCassette(paths[i], "openmax cassette sweep", &out[i].said)
			}
		}()
	}
	for i := range paths {
		next <- i
	}
	close(next)
	wg.Wait()
	cs := make([]sweep.Cassette, 0, len(paths))
	for i, p := range paths {
		stderr.Write(out[i].said.Bytes())
		if out[i].err != nil {
			return nil, out[i].err
		}
		cs = append(cs, sweep.Cassette{Name: filepath.Base(p), File: out[i].f})
	}
	return cs, nil
}

// sweepReplayer replays a cassette as `openmax replay` does, instantly, and
// collects the crashes the harness recovered from off its diagnostics.
func sweepReplayer(e env) sweep.Replayer {
	return func(ctx context.Context, f *cassette.File) (sweep.Result, error) {
		var log syncBuffer
		r, err := replayCassette(ctx, f, replay.Pace{Mode: replay.PaceInstant}, nil, &log, e)
		if err != nil {
			return sweep.Result{}, err
		}
		for _, p := range r.Problems(false) {
			fmt.Fprintf(&log, "openmax replay: variant: %s\n", p)
		}
		return sweep.Result{Stdout: r.Stdout, Exit: r.Exit, Panics: recoveredPanics(log.Bytes())}, nil
	}
}

// recoveredPanics are the crashes a replay's diagnostics report: the
// engine's "recovered from a crash" and the stdio server's "turn crashed".
func recoveredPanics(log []byte) []string {
	var out []string
	for _, l := range strings.Split(string(log), "\n") {
		for _, p := range []string{"openmax: recovered from a crash inside a turn: ", "openmax: turn crashed: "} {
			if rest, ok := strings.CutPrefix(l, p); ok {
				out = append(out, rest)
			}
		}
	}
	return out
}

// syncBuffer is a bytes.Buffer safe for concurrent writes (a replay's
// diagnostics, a served command's log) and for reading meanwhile.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

func (s *syncBuffer) String() string { return string(s.Bytes()) }
