package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/wire/view"
	"github.com/openmax/openmax/internal/golden"
	"github.com/openmax/openmax/internal/report"
	"github.com/openmax/openmax/internal/shard"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/mode"
	"github.com/openmax/openmax/recorder/replay"
	"github.com/openmax/openmax/replay/tape"
)

var replayCommand = command{
	name:    "openmax replay",
	usage:   "CASSETTE|DIR [--view] [--golden FILE|DIR [--update]] [--pace instant|recorded|xN] [--allow-unused] [--junit FILE] [--json FILE] [--overwrite] [--durations] [--shard K/N [--timings FILE]] [--live-hooks DIR] [--mode " + mode.Names() + " [--base-url URL] [--passthrough HOST]]",
	purpose: "Replay recorded sessions through the real turn engine and stdio wire, offline, on virtual time.",
}

// runReplay is `openmax replay CASSETTE|DIR`.
func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer, e env) int {
	c := replayCommand
	fs := c.flags()
	golden := fs.String("golden", "", "compare the transcript with this golden file (for a directory: the folder of golden files, default DIR/../golden/<DIR's name>)")
	update := fs.Bool("update", false, "write the transcript as the new golden file (with --golden, or a directory's default golden folder)")
	paceFlag := fs.String("pace", "instant", "response pacing: instant, recorded, or xN (recorded, N times faster)")
	ignore := addMatchFlags(fs) // the same matching flags as fake-provider --cassette
	allowUnused := fs.Bool("allow-unused", false, "accept recorded interactions the replay never requested (a refused command or a missed request still fails)")
	viewFlag := fs.Bool("view", false, "show the replay for people (prompts, text, retries and their virtual waits, stop reasons, a summary) instead of the JSONL transcript")
	colorFlag := fs.String("color", "auto", "with --view: colour when stdout is a terminal (auto), always or never")
	junitFlag := fs.String("junit", "", "for a directory: also write the results as JUnit XML to this file (- for stdout)")
	jsonFlag := fs.String("json", "", "for a directory: also write the results as one JSON document to this file (- for stdout)")
	overwrite := fs.Bool("overwrite", false, "replace an existing --junit or --json file (without it, one is refused and left as it is; a report never replaces a cassette or golden file)")
	durations := fs.Bool("durations", false, "for a directory: put each replay's wall time in the --junit and --json reports (what --timings and CircleCI's split by timings read; the reports then differ run to run)")
	sf := addShardFlags(fs)
	liveHooks := fs.String("live-hooks", "", "run the hooks of this project directory (DIR/.openmax/hooks.json) live instead of the recorded hook calls, to try a hook against a recorded session")
	modeF := addModeFlag(fs)
	baseURL := fs.String("base-url", "", "with --mode missing or refresh: where the requests that go live are sent (default: the recorded base URL); the key comes from the environment")
	passthrough := addPassthroughFlag(fs)
	pos, code, ok := c.parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	m, _, err := mode.Resolve(modeF.m, e.env)
	if err != nil {
		return c.usageError(stderr, "%v", err)
	}
	if policy, live := tape.PolicyOf(m); live {
		if len(pos) != 1 {
			return c.usageError(stderr, "want one cassette, got %d arguments", len(pos))
		}
		if fi, err := os.Stat(pos[0]); err == nil && fi.IsDir() {
			return c.usageError(stderr, "--mode %s records into one cassette, not a directory", m)
		}
		if *golden != "" || *viewFlag || *junitFlag != "" || *jsonFlag != "" || *liveHooks != "" || sf.set() {
			return c.usageError(stderr, "--mode %s records: --golden, --view, --junit, --json, --shard and --live-hooks are for replays", m)
		}
		return replayLive(ctx, pos[0], policy, m, *baseURL, passthrough.p, ignore, stdout, stderr, e)
	}
	if *baseURL != "" {
		return c.usageError(stderr, "--base-url is where --mode missing or refresh sends requests; mode %s never sends any", m)
	}
	if len(pos) != 1 {
		return c.usageError(stderr, "want one cassette or directory, got %d arguments", len(pos))
	}
	pace, err := replay.ParsePace(*paceFlag)
	if err != nil {
		return c.usageError(stderr, "%v", err)
	}
	if _, err := colorFor(*colorFlag, stdout); err != nil {
		return c.usageError(stderr, "%v", err)
	}
	fi, err := os.Stat(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "openmax replay: %v\n", err)
		return 1
	}
	if *junitFlag == "-" && *jsonFlag == "-" {
		return c.usageError(stderr, "--junit and --json cannot both go to stdout")
	}
	if fi.IsDir() {
		if *liveHooks != "" {
			return c.usageError(stderr, "--live-hooks tries hooks against one cassette, not a directory")
		}
		if *viewFlag {
			return c.usageError(stderr, "--view shows one cassette, not a directory")
		}
		se, timings, code, ok := sf.resolveFor(c, e, stderr)
		if !ok {
			return code
		}
		// The whole directory, loads too: its cassettes are usually small,
		// and switching for each costs more than it saves (oneproc.go).
		defer onOneProc(e)()
		return replayDir(ctx, pos[0], dirOptions{golden: *golden, update: *update, allowUnused: *allowUnused, junit: *junitFlag, json: *jsonFlag, overwrite: *overwrite,
			durations: *durations, shard: se, timings: timings}, pace, ignore, stdout, stderr, e)
	}
	if *junitFlag != "" || *jsonFlag != "" || *durations {
		return c.usageError(stderr, "--junit, --json and --durations report on a directory of cassettes")
	}
	if sf.set() {
		return c.usageError(stderr, "--shard, --shards and --timings split a directory of cassettes")
	}
	if *update && *golden == "" {
		return c.usageError(stderr, "--update needs --golden FILE for a single cassette")
	}
	// One P from here when the file is read in one pass anyway: giving up
	// the second P later, after it has allocated, costs more than a small
	// replay saves (oneproc.go). A large file is read on every core first.
	restore := func() {}
	inParts := fi.Mode().IsRegular() && cassette.ReadsInParts(fi.Size())
	if !inParts {
		restore = onOneProc(e)
	}
	defer func() { restore() }()
	f, err := loadCassette(pos[0], "openmax replay", stderr)
	if err != nil {
		fmt.Fprintf(stderr, "openmax replay: %v\n", err)
		return 1
	}
	live, err := loadLiveHooks(*liveHooks)
	if err != nil {
		fmt.Fprintf(stderr, "openmax replay: %v\n", err)
		return 1
	}
	if inParts {
		restore = onOneProc(e)
	}
	r, err := replayCassetteWith(ctx, f, pace, ignore, stderr, e, live)
	if err != nil {
		fmt.Fprintf(stderr, "openmax replay: %s: %v\n", pos[0], err)
		return 1
	}
	problems := r.Problems(*allowUnused)
	for _, p := range problems {
		fmt.Fprintf(stderr, "openmax replay: %s did not reproduce the recording: %s\n", pos[0], p)
	}
	code = r.Exit
	switch {
	case *golden != "":
		ok, diff, err := compareGolden(*golden, r.Transcript(), *update)
		if err != nil {
			fmt.Fprintf(stderr, "openmax replay: %v\n", err)
			return 1
		}
		if !ok {
			fmt.Fprintf(stderr, "openmax replay: %s differs from %s:\n%s", pos[0], *golden, diff)
			return 1
		}
		verb := "matches"
		if *update {
			verb = "updated"
		}
		fmt.Fprintf(stdout, "%s: %s %s\n", pos[0], verb, *golden)
		code = 0
	case *viewFlag:
		color, _ := colorFor(*colorFlag, stdout)
		if _, err := view.Render(stdout, bytes.NewReader(r.Stdout), view.Options{Color: color, Virtual: true, Stdin: bytes.NewReader(r.Stdin)}); err != nil {
			fmt.Fprintf(stderr, "openmax replay: %v\n", err)
			return 1
		}
	default:
		stdout.Write(r.Stdout)
	}
	if len(problems) > 0 {
		return 1
	}
	return code
}

// replayLive is `openmax replay CASSETTE --mode missing|refresh`: the
// recorded session replayed with the requests the mode names sent live
// and recorded into the cassette, in place (atomically, then appended to
// as each interaction completes). Missing keeps every interaction the
// cassette had, byte for byte, and appends the new; refresh records all of
// them again.
func replayLive(ctx context.Context, path string, policy tape.Policy, m mode.Mode, baseURL string, pass mode.Passthrough, ignore *matchFlags, stdout, stderr io.Writer, e env) int {
	f, items, err := loadItems(path, "openmax replay", stderr)
	if err != nil {
		fmt.Fprintf(stderr, "openmax replay: %v\n", err)
		return 1
	}
	so := replay.Options{OnRequest: func(ev replay.Event) {
		if ev.Fallback {
			fmt.Fprintf(stderr, "openmax replay: %s\n", ev)
		}
	}}
	ignore.apply(&so)
	r, err := tape.Replay(ctx, f, tape.ReplayOptions{Serving: so, Log: stderr, Live: &tape.Live{
		Policy: policy, Items: items, BaseURL: baseURL, Getenv: e.env, Passthrough: pass,
		Cassette: recorder.Options{Path: path, Overwrite: true, Transport: e.transport, Clock: e.clock},
	}})
	if errors.Is(err, tape.ErrNoSession) {
		err = fmt.Errorf("%w\n%s", err, tape.NoSessionNextStep(path))
	}
	if err != nil {
		fmt.Fprintf(stderr, "openmax replay: %s: %v\n", path, err)
		return 1
	}
	if r.Live.Written {
		fmt.Fprintf(stderr, "openmax replay: mode %s: %s: kept %d interaction(s) byte for byte, recorded %d live\n", m, path, len(r.Live.Kept), r.Live.Sent)
	} else {
		fmt.Fprintf(stderr, "openmax replay: mode %s: %s: every request was in the cassette; nothing written\n", m, path)
	}
	return liveResult(r, "openmax replay", path, stdout, stderr)
}

// replayOne replays a cassette and returns its transcript: the stdout
// lines, then "exit: N".
func replayOne(ctx context.Context, path string, pace replay.Pace, ignore *matchFlags, stderr io.Writer, e env) ([]byte, error) {
	f, err := loadCassette(path, "openmax replay", stderr)
	if err != nil {
		return nil, err
	}
	return replayFile(ctx, f, path, pace, ignore, stderr, e)
}

// replayFile replays the cassette f (named name in diagnostics) and
// returns its transcript as replayOne does; what did not reproduce goes to
// stderr.
func replayFile(ctx context.Context, f *cassette.File, name string, pace replay.Pace, ignore *matchFlags, stderr io.Writer, e env) ([]byte, error) {
	r, err := replayCassette(ctx, f, pace, ignore, stderr, e)
	if err != nil {
		return nil, err
	}
	for _, p := range r.Problems(false) {
		fmt.Fprintf(stderr, "openmax replay: %s: %s\n", name, p)
	}
	return r.Transcript(), nil
}

// replayCassette replays f through the real harness (package tape).
func replayCassette(ctx context.Context, f *cassette.File, pace replay.Pace, ignore *matchFlags, stderr io.Writer, e env) (tape.Result, error) {
	return replayCassetteWith(ctx, f, pace, ignore, stderr, e, nil)
}

// replayCassetteWith is replayCassette with live hooks (nil: the recorded
// hook calls answer).
func replayCassetteWith(ctx context.Context, f *cassette.File, pace replay.Pace, ignore *matchFlags, stderr io.Writer, e env, live core.Hooks) (tape.Result, error) {
	var paceClock clock.Clock = clock.Real{}
	if e.clock != nil {
		paceClock = e.clock
	}
	opts := replay.Options{Clock: paceClock, Pace: pace}
	ignore.apply(&opts)
	r, err := tape.Replay(ctx, f, tape.ReplayOptions{Serving: opts, Log: stderr, LiveHooks: live})
	if errors.Is(err, tape.ErrNoSession) {
		return r, fmt.Errorf("%w\n%s", err, tape.NoSessionNextStep("FILE"))
	}
	return r, err
}

// compareGolden compares (or with update writes) a golden file through
// the golden helper the tests use, and reports a difference as (false,
// diff) rather than as an error.
func compareGolden(path string, got []byte, update bool) (bool, string, error) {
	err := golden.File(path, "replay", got, update)
	var m *golden.MismatchError
	if errors.As(err, &m) {
		return false, m.Diff, nil
	}
	return err == nil, "", err
}

// dirOptions are replayDir's settings.
type dirOptions struct {
	golden      string // folder of golden files; "" for the default
	update      bool
	allowUnused bool
	junit, json string // report files; "-" is stdout
	overwrite   bool   // replace existing report files
	durations   bool   // put each replay's wall time in the reports
	shard       shard.Env
	timings     shard.Timings
}

// replayDir replays every cassette of dir against its golden file and
// prints a pass/fail table (on stderr when a report goes to stdout).
func replayDir(ctx context.Context, dir string, o dirOptions, pace replay.Pace, ignore *matchFlags, stdout, stderr io.Writer, e env) int {
	goldenDir := o.golden
	if goldenDir == "" {
		abs, _ := filepath.Abs(dir)
		goldenDir = filepath.Join(filepath.Dir(abs), "golden", filepath.Base(abs))
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	sort.Strings(paths)
	if len(paths) == 0 {
		fmt.Fprintf(stderr, "openmax replay: no cassettes (*.yaml) in %s\n", dir)
		return 1
	}
	// This shard's part of the run: keyed by the cassette's name, so the
	// plan is the same wherever the folder is checked out.
	byName := map[string]string{}
	var names []string
	for _, p := range paths {
		n := strings.TrimSuffix(filepath.Base(p), ".yaml")
		byName[n] = p
		names = append(names, n)
	}
	names = o.shard.Filter(names)
	picked := o.shard.Spec.Pick(names, o.timings)
	describeShard(stderr, "openmax replay", o.shard, len(picked), len(names), "cassettes")
	all := paths
	paths = paths[:0:0]
	for _, n := range picked {
		paths = append(paths, byName[n])
	}
	goldens, _ := filepath.Glob(filepath.Join(goldenDir, "*.golden"))
	for _, out := range []string{o.junit, o.json} {
		if out == "" || out == "-" {
			continue
		}
		if err := (outputFile{path: out, overwrite: o.overwrite}).check(append(all, goldens...)...); err != nil {
			return replayCommand.usageError(stderr, "%v", err)
		}
	}
	table := stdout
	if o.junit == "-" || o.json == "-" {
		table = stderr // stdout carries the report
	}
	var rows []report.Row
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".yaml")
		golden := filepath.Join(goldenDir, name+".golden")
		row := report.Row{Name: name, File: p, Verdict: report.Pass}
		var diff string
		start := time.Now()
		err := func() error {
			f, err := loadCassette(p, "openmax replay", io.Discard)
			if err != nil {
				return err
			}
			r, err := replayCassette(ctx, f, pace, ignore, io.Discard, e)
			if err != nil {
				return err
			}
			if problems := r.Problems(o.allowUnused); len(problems) > 0 {
				return errors.New("did not reproduce the recording: " + strings.Join(problems, "; "))
			}
			ok, d, err := compareGolden(golden, r.Transcript(), o.update)
			if err == nil && !ok {
				diff = d
				fmt.Fprintf(stderr, "== %s\n%s", name, diff)
				err = errors.New("differs from " + golden)
			}
			return err
		}()
		if err != nil {
			row.Verdict, row.Reason, row.Diff = report.Fail, err.Error(), diff
		} else if o.update {
			row.Verdict = report.Updated
		}
		if o.durations {
			row.Duration = max(time.Since(start), time.Millisecond)
		}
		rows = append(rows, row)
		io.WriteString(table, row.TableLine())
	}
	io.WriteString(table, report.Totals(rows))
	suite := "openmax replay " + filepath.Base(dir)
	if err := writeReports(rows, o.junit, o.json, o.overwrite, suite, stdout); err != nil {
		fmt.Fprintf(stderr, "openmax replay: %v\n", err)
		return 1
	}
	// Under Bazel: the JUnit report where Bazel reads it (unless --junit
	// named a file) and the JSON one among the test's artifacts; both are
	// Bazel's files, replaced.
	var bazelJUnit, bazelJSON string
	if o.junit == "" {
		bazelJUnit = o.shard.XMLOutput
	}
	if o.json == "" && o.shard.OutputsDir != "" {
		bazelJSON = filepath.Join(o.shard.OutputsDir, "openmax-replay.json")
	}
	if err := writeReports(rows, bazelJUnit, bazelJSON, true, suite, stdout); err != nil {
		fmt.Fprintf(stderr, "openmax replay: %v\n", err)
		return 1
	}
	if _, failed, _ := report.Counts(rows); failed > 0 {
		return 1
	}
	return 0
}
