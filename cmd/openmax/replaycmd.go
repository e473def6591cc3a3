package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/replay"
	replaysession "github.com/openmax/openmax/replay/session"
)

// replayKey stands in for API keys on replay: nothing is sent anywhere.
const replayKey = "replay-no-key"

// runReplay is `openmax replay CASSETTE|DIR`.
func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer, e env) int {
	fs := flag.NewFlagSet("openmax replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	golden := fs.String("golden", "", "compare the transcript with this golden file (for a directory: the folder of golden files, default DIR/../golden/<DIR's name>)")
	update := fs.Bool("update", false, "with --golden: write the transcript as the new golden file")
	paceFlag := fs.String("pace", "instant", "response pacing: instant, recorded, or xN (recorded, N times faster)")
	var ignore multiFlag
	fs.Var(&ignore, "ignore", "a request-body field to ignore when matching, as a dotted path (metadata.user_id, messages.*.cache_control); repeatable")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: openmax replay CASSETTE|DIR [--golden FILE|DIR] [--update] [--pace instant|recorded|xN]")
		fs.PrintDefaults()
	}
	// Accept flags after the positional argument too.
	var pos []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return 2
		}
		args = fs.Args()
		if len(args) > 0 {
			pos, args = append(pos, args[0]), args[1:]
		}
	}
	if len(pos) != 1 {
		fs.Usage()
		return 2
	}
	pace, err := replay.ParsePace(*paceFlag)
	if err != nil {
		fmt.Fprintf(stderr, "openmax replay: %v\n", err)
		return 2
	}
	if *update && *golden == "" {
		fmt.Fprintln(stderr, "openmax replay: --update needs --golden")
		return 2
	}
	fi, err := os.Stat(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "openmax replay: %v\n", err)
		return 2
	}
	if fi.IsDir() {
		return replayDir(ctx, pos[0], *golden, *update, pace, ignore, stdout, stderr, e)
	}
	transcript, err := replayOne(ctx, pos[0], pace, ignore, stderr, e)
	if err != nil {
		fmt.Fprintf(stderr, "openmax replay: %v\n", err)
		return 1
	}
	if *golden == "" {
		stdout.Write(transcriptBody(transcript))
		return exitOf(transcript)
	}
	ok, diff, err := compareGolden(*golden, transcript, *update)
	if err != nil {
		fmt.Fprintf(stderr, "openmax replay: %v\n", err)
		return 1
	}
	if !ok {
		fmt.Fprintf(stderr, "openmax replay: %s differs from %s:\n%s", pos[0], *golden, diff)
		return 1
	}
	fmt.Fprintf(stdout, "%s: matches %s\n", pos[0], *golden)
	return 0
}

// replayOne replays a cassette and returns its transcript: the stdout
// lines, then "exit: N".
func replayOne(ctx context.Context, path string, pace replay.Pace, ignore []string, stderr io.Writer, e env) ([]byte, error) {
	f, err := loadCassette(path, "openmax replay", stderr)
	if err != nil {
		return nil, err
	}
	return replayFile(ctx, f, path, pace, ignore, stderr, e)
}

// replayFile replays the cassette f (named name in diagnostics) and
// returns its transcript as replayOne does.
func replayFile(ctx context.Context, f *cassette.File, name string, pace replay.Pace, ignore []string, stderr io.Writer, e env) ([]byte, error) {
	var paceClock clock.Clock = clock.Real{}
	if e.clock != nil {
		paceClock = e.clock
	}
	// The tool list is the harness's, not the conversation's: matching
	// ignores it so a cassette survives a change of tools.
	rp := replay.New(f, replay.Options{Clock: paceClock, Pace: pace, MissAsResponse: true, Ignore: append([]string{"tools"}, ignore...),
		Scrub: recorder.ScrubFunc(nil), InOrder: f.Session != nil && f.Session.Imported})
	var out bytes.Buffer
	var project string
	build := func(t http.RoundTripper, clk clock.Clock, seed uint64, args []string) (*core.Engine, error) {
		o, err := parse(append([]string{"--stdio"}, args...), stderr)
		if err != nil {
			return nil, fmt.Errorf("recorded flags: %w", err)
		}
		project, o.project = o.project, "" // the recorded path, printed as recorded
		o.idleTimeout = 0                  // recorded endings replay as recorded
		re := e
		re.transport, re.clock, re.seed = t, clk, seed
		re.getenv = func(k string) string {
			if strings.HasSuffix(k, "_API_KEY") {
				return replayKey
			}
			return ""
		}
		re.tools, re.noBuiltin = recordedTools(f.Session), true
		return buildReplayEngine(o, re, f, stderr)
	}
	code, err := replaysession.Run(ctx, replaysession.Options{
		Cassette: f, Transport: rp, Build: build, Version: Version, Stdout: &out, Log: stderr,
		Project: func() string { return project },
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(&out, "exit: %d\n", code)
	if unused := rp.Unused(); len(unused) > 0 {
		fmt.Fprintf(stderr, "openmax replay: %s: %d recorded interaction(s) never requested: %v\n", name, len(unused), unused)
	}
	return out.Bytes(), nil
}

func transcriptBody(t []byte) []byte {
	if i := bytes.LastIndex(t, []byte("exit: ")); i >= 0 {
		return t[:i]
	}
	return t
}

func exitOf(t []byte) int {
	var code int
	if i := bytes.LastIndex(t, []byte("exit: ")); i >= 0 {
		fmt.Sscanf(string(t[i:]), "exit: %d", &code)
	}
	return code
}

// compareGolden compares (or with update writes) a golden file.
func compareGolden(path string, got []byte, update bool) (bool, string, error) {
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return false, "", err
		}
		return true, "", os.WriteFile(path, got, 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		return false, "", fmt.Errorf("golden file: %w (run with --update to create it)", err)
	}
	if bytes.Equal(want, got) {
		return true, "", nil
	}
	diff, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(want)), B: difflib.SplitLines(string(got)),
		FromFile: path, ToFile: "replay", Context: 2,
	})
	return false, diff, nil
}

// replayDir replays every cassette of dir against its golden file and
// prints a pass/fail table.
func replayDir(ctx context.Context, dir, goldenDir string, update bool, pace replay.Pace, ignore []string, stdout, stderr io.Writer, e env) int {
	if goldenDir == "" {
		abs, _ := filepath.Abs(dir)
		goldenDir = filepath.Join(filepath.Dir(abs), "golden", filepath.Base(abs))
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	sort.Strings(paths)
	if len(paths) == 0 {
		fmt.Fprintf(stderr, "openmax replay: no cassettes (*.yaml) in %s\n", dir)
		return 2
	}
	failed := 0
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".yaml")
		golden := filepath.Join(goldenDir, name+".golden")
		verdict := "pass"
		transcript, err := replayOne(ctx, p, pace, ignore, io.Discard, e)
		if err == nil {
			var ok bool
			var diff string
			ok, diff, err = compareGolden(golden, transcript, update)
			if err == nil && !ok {
				err = errors.New("differs from " + golden)
				fmt.Fprintf(stderr, "== %s\n%s", name, diff)
			}
		}
		if err != nil {
			verdict = "FAIL  " + err.Error()
			failed++
		} else if update {
			verdict = "updated"
		}
		fmt.Fprintf(stdout, "%-40s %s\n", name, verdict)
	}
	fmt.Fprintf(stdout, "%d passed, %d failed\n", len(paths)-failed, failed)
	if failed > 0 {
		return 1
	}
	return 0
}

// recordedTools stands in for the recorded session's tools: each call is
// answered with the next recorded result of that tool, and nothing runs.
func recordedTools(s *cassette.Session) []tool.Tool {
	queues := map[string][]cassette.ToolResult{}
	for _, r := range s.ToolResults {
		queues[r.Name] = append(queues[r.Name], r)
	}
	var mu sync.Mutex
	var out []tool.Tool
	for _, t := range s.Tools {
		spec := provider.ToolSpec{Name: t.Name, Description: t.Description, Schema: json.RawMessage(t.Schema)}
		out = append(out, tool.Func{ToolSpec: spec, Fn: func(context.Context, json.RawMessage) tool.Result {
			mu.Lock()
			defer mu.Unlock()
			q := queues[spec.Name]
			if len(q) == 0 {
				return tool.Failed("replay: the recording has no further result for %s", spec.Name)
			}
			queues[spec.Name] = q[1:]
			return tool.Result{OK: q[0].OK, Output: q[0].Output}
		}})
	}
	return out
}
