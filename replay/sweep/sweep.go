// Package sweep replays a cassette once per single fault, every kind at
// every place (every interaction, every chunk boundary), and judges each
// replay against the harness's invariants: every user command gets exactly
// one done, no panic, no hang past a deadline, no violation of the stdio
// checker, no tool dispatched from a reply that was cut, no retry after
// reply text was shown, and every turn the unmodified cassette runs also
// runs with the fault in it.
//
// The package does not replay anything itself: a Replayer does (the
// binary's replay through the real engine, or a fake in tests). The sweep
// injects the faults (recorder/edit), runs the variants in parallel, and
// reports rows in a fixed order, so its table is the same bytes every run.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/openmax/openmax/internal/shard"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/edit"
)

// Result is what one replay produced.
type Result struct {
	// Stdout is the harness's stdout: the protocol lines.
	Stdout []byte
	// Exit is the harness's exit code.
	Exit int
	// Stdin is what the harness read: the command lines delivered, in
	// order. Nil means the sweep reconstructs it from the cassette's
	// recorded commands (StdinOf).
	Stdin []byte
	// Panics are the crashes the harness recovered from during the
	// replay (it reports them and goes on; each is still a bug).
	Panics []string
}

// Replayer replays a cassette through the harness. It must return when ctx
// is done; one that does not is abandoned and reported as a hang.
type Replayer func(ctx context.Context, f *cassette.File) (Result, error)

// Cassette is one cassette to sweep.
type Cassette struct {
	Name string // how rows name it (a file name)
	File *cassette.File
}

// DefaultDeadline is how long one variant may take by default. A replay
// runs on virtual time and takes milliseconds, so reaching it is a hang.
const DefaultDeadline = 30 * time.Second

// DefaultMaxVariants bounds the variants per cassette by default.
const DefaultMaxVariants = 400

// Options configure Run.
type Options struct {
	// MaxVariants bounds the variants per cassette, the unmodified replay
	// not counted; 0 means every variant. See Select for which are kept.
	MaxVariants int
	// Parallel is how many replays run at once; 0 means GOMAXPROCS.
	Parallel int
	// Deadline is the wall-clock limit of one replay; 0 means
	// DefaultDeadline.
	Deadline time.Duration
	// Kinds is the fault table; nil means Kinds.
	Kinds []Kind
	// Repeat replays every variant this many times (0 means once) and
	// fails it when the replays differ: a replay is deterministic, so a
	// difference is a race in the harness or the replay.
	Repeat int
	// Progress, when set, is called once the replays are chosen, with 0
	// done and the total (the unmodified replays and the variants), and
	// then after every replay. Never two calls at once.
	Progress func(done, total int)
	// Shard, when it is a part of the run, keeps only that part's rows:
	// the rows are keyed "CASSETTE VARIANT" (the unmodified replay's
	// variant is "none"), filtered by the environment's test filter, then
	// split by Timings (nil: by hash). A variant's cassette still replays
	// unmodified on its shard, to judge it against; the unmodified row
	// itself belongs to one shard. The N shards' rows together are the
	// unsharded sweep's.
	Shard   shard.Env
	Timings shard.Timings

	// OnReplay, when set, is called once a variant (or an unmodified
	// replay) is judged, with its row, the cassette it replayed (the fault
	// injected) and what the replay returned (zero when it did not
	// return): what a report shows beside the verdict. Calls may come from
	// several goroutines at once.
	OnReplay func(row Row, f *cassette.File, res Result)

	// after starts the deadline of one replay (tests substitute it);
	// nil means a real timer.
	after func(c, v string, d time.Duration) (<-chan time.Time, func())
}

// Row is the verdict on one variant.
type Row struct {
	Cassette string   `json:"cassette"`
	Variant  string   `json:"variant"` // the op, or "none"
	Kind     string   `json:"kind"`
	Stops    []string `json:"stops"`   // stop_reason of every done, in order
	Retries  int      `json:"retries"` // retry lines
	Exit     int      `json:"exit"`
	Failures []string `json:"failures,omitempty"` // the invariants broken; none means pass
}

// OK reports whether the variant broke no invariant.
func (r Row) OK() bool { return len(r.Failures) == 0 }

// Report is the outcome of a sweep: one row per variant, each cassette's
// unmodified replay first, then its variants in enumeration order.
type Report struct {
	Rows      []Row
	Cassettes int
	Failed    int // rows with a failure
}

// Run sweeps every cassette: it replays each unmodified, then every
// selected variant, in parallel, and judges each. The error is non-nil only
// when ctx ended the sweep early.
func Run(ctx context.Context, cs []Cassette, replay Replayer, o Options) (*Report, error) {
	if o.Parallel <= 0 {
		o.Parallel = runtime.GOMAXPROCS(0)
	}
	if o.Deadline <= 0 {
		o.Deadline = DefaultDeadline
	}
	if o.Kinds == nil {
		o.Kinds = Kinds
	}
	if o.after == nil {
		o.after = func(_, _ string, d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTimer(d)
			return t.C, func() { t.Stop() }
		}
	}
	rep := &Report{Cassettes: len(cs)}

	// Every cassette's variants, then the ones of this shard. Enumerating
	// injects every candidate fault to see whether it applies: the same
	// pool does it, a cassette per job (each list lands in its own slot,
	// so the order is the cassettes' whatever the scheduling).
	selected := make([][]Variant, len(cs))
	runAll(ctx, o, len(cs), func(i int) {
		selected[i] = Select(Enumerate(cs[i].File, o.Kinds), o.MaxVariants)
	})
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	var keys []string
	for i, c := range cs {
		keys = append(keys, Key(c.Name, None))
		for _, v := range selected[i] {
			keys = append(keys, Key(c.Name, v.Name()))
		}
	}
	mine := map[string]bool{}
	for _, k := range o.Shard.Spec.Pick(o.Shard.Filter(keys), o.Timings) {
		mine[k] = true
	}
	need := make([]bool, len(cs)) // the unmodified replay is needed here
	for i, c := range cs {
		selected[i] = slices.DeleteFunc(selected[i], func(v Variant) bool { return !mine[Key(c.Name, v.Name())] })
		need[i] = mine[Key(c.Name, None)] || len(selected[i]) > 0
	}

	// One pool runs the unmodified replays first (every variant is judged
	// against its cassette's), then the variants; a variant waits only for
	// its own cassette's unmodified replay, so no worker idles between the
	// two (a barrier there left one core waiting on the slowest cassette).
	type job struct {
		c int
		v Variant
	}
	bases := make([]Row, len(cs))
	baseObs := make([]*observed, len(cs))
	baseDone := make([]chan struct{}, len(cs))
	rows := make([][]Row, len(cs))
	var jobs []job
	for i, c := range cs {
		bases[i] = Row{Cassette: c.Name, Variant: None, Kind: None}
		baseDone[i] = make(chan struct{})
		if need[i] {
			jobs = append(jobs, job{c: i, v: Variant{Kind: None}})
		}
	}
	nBase := len(jobs)
	for i, c := range cs {
		if !need[i] {
			continue
		}
		rows[i] = make([]Row, len(selected[i]))
		for k, v := range selected[i] {
			rows[i][k] = Row{Cassette: c.Name, Variant: v.Name(), Kind: v.Kind}
			jobs = append(jobs, job{c: i, v: v})
		}
	}
	vindex := make([]int, len(jobs)) // a variant job's index in its cassette's rows
	for j, n := nBase, make([]int, len(cs)); j < len(jobs); j++ {
		vindex[j] = n[jobs[j].c]
		n[jobs[j].c]++
	}
	var progressMu sync.Mutex
	done := 0
	progress := func() {
		if o.Progress == nil {
			return
		}
		progressMu.Lock()
		defer progressMu.Unlock()
		done++
		o.Progress(done, len(jobs))
	}
	if o.Progress != nil {
		o.Progress(0, len(jobs))
	}
	runAll(ctx, o, len(jobs), func(j int) {
		defer progress()
		jb := jobs[j]
		c := cs[jb.c]
		if j < nBase {
			defer close(baseDone[jb.c])
			bo := o
			if !mine[Key(c.Name, None)] {
				bo.OnReplay = nil // replayed only to judge this shard's variants: not its row
			}
			baseObs[jb.c] = judge(ctx, bo, replay, c, jb.v, c.File, nil, &bases[jb.c])
			return
		}
		row := &rows[jb.c][vindex[j]]
		select {
		case <-baseDone[jb.c]:
		case <-ctx.Done():
			return
		}
		if baseObs[jb.c] == nil {
			return // it did not replay: every variant would fail the same way (no rows, below)
		}
		f, err := edit.Inject(c.File, *jb.v.Op)
		if err != nil {
			row.Failures = []string{"inject: " + err.Error()}
			return
		}
		judge(ctx, o, replay, c, jb.v, f, baseObs[jb.c], row)
	})
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	for i := range cs {
		if baseObs[i] == nil {
			rows[i] = nil
		}
	}
	for i, c := range cs {
		if mine[Key(c.Name, None)] {
			rep.Rows = append(rep.Rows, bases[i])
		}
		rep.Rows = append(rep.Rows, rows[i]...)
	}
	for _, r := range rep.Rows {
		if !r.OK() {
			rep.Failed++
		}
	}
	return rep, nil
}

// Key is how a shard plan and a timings report name a row: its cassette
// and variant.
func Key(cassette, variant string) string { return cassette + " " + variant }

// runAll calls do(0..n-1) on o.Parallel goroutines and waits.
func runAll(ctx context.Context, o Options, n int, do func(int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(o.Parallel, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				do(j)
			}
		}()
	}
	for j := 0; j < n && ctx.Err() == nil; j++ {
		next <- j
	}
	close(next)
	wg.Wait()
}

// outcome is what one replay returned, or how it did not.
type outcome struct {
	res   Result
	err   error
	panic string // the Replayer itself panicked
	hang  bool   // no result within the deadline
	// differs says how a repeated replay differed from the first.
	differs string
}

func (o outcome) ok() bool { return !o.hang && o.panic == "" && o.err == nil }

// differ says where two replays of one variant differ, or "" when they
// do not.
func differ(a, b Result) string {
	if a.Exit != b.Exit {
		return fmt.Sprintf("exit %d, then %d", a.Exit, b.Exit)
	}
	la, lb := strings.Split(string(a.Stdout), "\n"), strings.Split(string(b.Stdout), "\n")
	for i := range max(len(la), len(lb)) {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			return fmt.Sprintf("stdout line %d", i+1)
		}
	}
	return ""
}

// replayOne runs replay on f under the deadline. A replay that does not
// return in time is abandoned (its context is cancelled) and reported as a
// hang.
func replayOne(ctx context.Context, o Options, replay Replayer, c Cassette, v Variant, f *cassette.File) outcome {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- outcome{panic: fmt.Sprint(r)}
			}
		}()
		res, err := replay(ctx, f)
		done <- outcome{res: res, err: err}
	}()
	timer, stop := o.after(c.Name, v.Name(), o.Deadline)
	defer stop()
	select {
	case out := <-done:
		return out
	case <-timer:
		return outcome{hang: true}
	case <-ctx.Done():
		return outcome{err: ctx.Err()}
	}
}

// judge replays one variant and fills row; it returns what the replay
// showed, or nil when there was nothing to judge (no replay).
func judge(ctx context.Context, o Options, replay Replayer, c Cassette, v Variant, f *cassette.File, base *observed, row *Row) *observed {
	out := replayOne(ctx, o, replay, c, v, f)
	if o.OnReplay != nil {
		defer func() { o.OnReplay(*row, f, out.res) }()
	}
	for i := 2; i <= o.Repeat && out.ok(); i++ {
		again := replayOne(ctx, o, replay, c, v, f)
		if !again.ok() {
			out = again
			break
		}
		if d := differ(out.res, again.res); d != "" {
			out.differs = fmt.Sprintf("nondeterministic: replay %d differs from replay 1: %s", i, d)
			break
		}
	}
	switch {
	case out.hang:
		row.Stops = []string{"-"}
		row.Failures = []string{fmt.Sprintf("hang: no result within the %s deadline", o.Deadline)}
		return nil
	case out.panic != "":
		row.Stops = []string{"-"}
		row.Failures = []string{"panic: " + out.panic}
		return nil
	case out.err != nil:
		row.Stops = []string{"-"}
		if errors.Is(out.err, context.Canceled) && ctx.Err() != nil {
			row.Failures = []string{"interrupted"}
		} else {
			row.Failures = []string{"replay: " + firstLine(out.err.Error())}
		}
		return nil
	}
	stdin := out.res.Stdin
	if stdin == nil {
		stdin = StdinOf(f)
	}
	ob := observe(out.res.Stdout, stdin)
	row.Stops, row.Retries, row.Exit = ob.stops, ob.retries, out.res.Exit
	if row.Stops == nil {
		row.Stops = []string{}
	}
	row.Failures = invariants(ob, base, out.res, stdin, c.File, v)
	if out.differs != "" {
		row.Failures = append(row.Failures, out.differs)
	}
	return ob
}

// StdinOf is the stdin a replay of f delivers: its recorded command lines
// in order.
func StdinOf(f *cassette.File) []byte {
	if f == nil || f.Session == nil {
		return []byte{}
	}
	var b strings.Builder
	for _, c := range f.Session.Commands {
		b.WriteString(c.Line)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}

// Summary counts failures by kind, for a one-line account: "truncate 3,
// reset 1". Kinds are in table order, then any others by name.
func (r *Report) Summary(kinds []Kind) string {
	if kinds == nil {
		kinds = Kinds
	}
	count := map[string]int{}
	for _, row := range r.Rows {
		if !row.OK() {
			count[row.Kind]++
		}
	}
	var parts []string
	seen := map[string]bool{}
	for _, k := range append([]Kind{{Name: None}}, kinds...) {
		if n := count[k.Name]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k.Name, n))
		}
		seen[k.Name] = true
	}
	var rest []string
	for k := range count {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		parts = append(parts, fmt.Sprintf("%s %d", k, count[k]))
	}
	return strings.Join(parts, ", ")
}
