// Command replayscale measures how replay scales (a manual measurement, not
// part of CI), printing stock go-vcr v2 beside openmax in the same run,
// every figure through a process of its own:
//
//   - a T-turn session (T = 10, 100, 300): `openmax replay FILE`, the
//     command a user runs (load, replay through the real harness at instant
//     pace, check every request and the transcript), beside a child of this
//     bench that serves the same file to the same harness with go-vcr's
//     recorder in replay mode (SkipRequestLatency, its best setting), and
//     beside the process floor (`openmax --version`); wall time and CPU
//     (user+sys) of each process, the median of interleaved runs;
//   - the paced 429 cassette of the library (a 429 with Retry-After, then
//     the answer): the same three, and the recorded wall time it replays;
//   - loading three cassettes (each mostly one streamed body): wall time and
//     peak RSS of a child process that only loads the file (importer.Load
//     vs go-vcr's cassette.Load), with the file size beside them
//     (bench/loadscale measures larger recordings of many interactions,
//     and the binary).
//
// The sessions are made here, offline: the harness runs against a canned
// OpenAI-shaped transport while a scripted client sends one user command
// after each done, and the exchanges are written as a cassette (Save).
//
// Usage: go run ./bench/replayscale [-runs 5] [-turns 10,100,300] [-mb 25,40,55] [-openmax BIN]
// (-cpuprofile FILE: openmax writes a CPU profile of its replay of the
// longest session, through OPENMAX_CPUPROFILE).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	vcrcassette "github.com/dnaeon/go-vcr/v2/cassette"
	vcrrecorder "github.com/dnaeon/go-vcr/v2/recorder"

	"github.com/openmax/openmax/bench/internal/benchcli"
	"github.com/openmax/openmax/bench/internal/loadchild"
	"github.com/openmax/openmax/core/harness"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/importer"
	"github.com/openmax/openmax/replay/tape"
)

const base = "http://127.0.0.1:9/v1" // never dialled: every request is served from memory

func main() {
	runs := flag.Int("runs", 5, "interleaved runs per size (the median is printed)")
	turns := flag.String("turns", "10,100,300", "session lengths")
	mbs := flag.String("mb", "25,40,55", "streamed body sizes of the load cassettes, MiB (files about 2.1x that: the body is kept whole and as chunks)")
	cpuprofile := flag.String("cpuprofile", "", "openmax writes a CPU profile of its replay of the longest session here")
	bin := flag.String("openmax", "", "the openmax binary (default: built from this checkout)")
	keep := flag.String("dir", "", "make the sessions in this directory and keep them (default: a temporary one, removed)")
	load := flag.String("load", "", "(child) load this cassette with -with and print the time")
	with := flag.String("with", "openmax", "(child) openmax or go-vcr")
	peer := flag.String("peer", "", "(child) serve this cassette to the harness with go-vcr and replay its commands")
	flag.Parse()
	var err error
	switch {
	case *peer != "":
		err = peerReplay(*peer)
	case *load != "" || *with == "none":
		err = loadchild.Load(*with, *load)
	default:
		err = run(*runs, benchcli.Ints(*turns), benchcli.Ints(*mbs), *cpuprofile, *bin, *keep)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "replayscale:", err)
		os.Exit(1)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func run(runs int, turns, mbs []int, cpuprofile, bin, dir string) error {
	var err error
	if dir == "" {
		if dir, err = os.MkdirTemp("", "replayscale"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	bin, self, err := benchcli.Binaries(bin, dir)
	if err != nil {
		return err
	}

	fmt.Printf("replay of a T-turn session, each a process of its own (median of %d interleaved runs; %d CPUs)\n", runs, runtime.NumCPU())
	fmt.Printf("  openmax = `openmax replay FILE`; go-vcr = the same harness served by go-vcr v2 (ModeReplaying, SkipRequestLatency); floor = `openmax --version`\n")
	fmt.Printf("  %5s %9s | %9s %9s | %9s %9s | %8s | %6s %6s | %s\n", "T", "file", "openmax", "CPU", "go-vcr", "CPU", "floor", "wall", "CPU", "target")
	for _, t := range turns {
		path := filepath.Join(dir, fmt.Sprintf("turns%d.yaml", t))
		if err := makeSession(path, t); err != nil {
			return fmt.Errorf("making the %d-turn session: %w", t, err)
		}
		var env []string
		if cpuprofile != "" && t == slices.Max(turns) {
			env = []string{"OPENMAX_CPUPROFILE=" + cpuprofile}
		}
		if err := compare(runs, fmt.Sprintf("%5d", t), path, bin, self, env); err != nil {
			return err
		}
	}
	fmt.Printf("\nthe paced 429 cassette (cassettes/%s, recorded over %s)\n", paced429, recordedWall(paced429))
	if err := compare(runs, "  429", filepath.Join(repoRoot(), "cassettes", paced429), bin, self, nil); err != nil {
		return err
	}

	_, base, err := measureLoad("", "none")
	if err != nil {
		return err
	}
	fmt.Printf("\nloading a cassette (a child process per load; median of %d interleaved runs; a child that loads nothing peaks at %.0f MiB)\n", runs, float64(base)/(1<<20))
	fmt.Printf("  %9s | %10s %10s %6s | %10s %10s %6s | %s\n", "file", "openmax", "peak RSS", "xfile", "go-vcr", "peak RSS", "xfile", "load speed-up")
	for _, mb := range mbs {
		path := filepath.Join(dir, fmt.Sprintf("big%d.yaml", mb))
		if err := makeBig(path, mb<<20); err != nil {
			return err
		}
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		var ot, st []time.Duration
		var orss, srss []int64
		for range runs {
			d, rss, err := measureLoad(path, "openmax")
			if err != nil {
				return err
			}
			ot, orss = append(ot, d), append(orss, rss)
			d, rss, err = measureLoad(path, "go-vcr")
			if err != nil {
				return err
			}
			st, srss = append(st, d), append(srss, rss)
		}
		size := float64(fi.Size())
		slices.Sort(orss)
		slices.Sort(srss)
		o, s := orss[len(orss)/2], srss[len(srss)/2]
		fmt.Printf("  %7.1fMB | %8.0fms %7.0fMiB %5.2fx | %8.0fms %7.0fMiB %5.2fx | go-vcr/openmax %.2fx\n", size/1e6,
			ms(median(ot)), float64(o)/(1<<20), float64(o)/size, ms(median(st)), float64(s)/(1<<20), float64(s)/size,
			float64(median(st))/float64(median(ot)))
	}
	return nil
}

// measureLoad runs a child that loads path, returning its load time and
// peak RSS in bytes.
func measureLoad(path, with string) (time.Duration, int64, error) {
	r, err := loadchild.Run(os.Args[0], "-load", path, "-with", with)
	if err != nil {
		return 0, 0, fmt.Errorf("%s loading %s: %w", with, path, err)
	}
	return r.D, r.RSS, nil
}

// paced429 is the library cassette of the paced 429 measurement.
const paced429 = "429_retry_after_seconds.yaml"

// repoRoot is the checkout this bench runs in (go run runs it there).
func repoRoot() string {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "."
	}
	return strings.TrimSpace(string(out))
}

// recordedWall is how long the recorded session took: until the end of
// its last exchange (when its request went out plus its last chunk).
func recordedWall(name string) string {
	f, _, err := importer.Load(filepath.Join(repoRoot(), "cassettes", name))
	if err != nil {
		return "?"
	}
	var d time.Duration
	for _, it := range f.Interactions {
		if it.Stream == nil {
			continue
		}
		end := it.Stream.Start
		if n := len(it.Stream.Chunks); n > 0 {
			end += it.Stream.Chunks[n-1].At
		}
		d = max(d, end)
	}
	return d.Round(time.Millisecond).String()
}

// proc is one timed process: wall time from exec to exit, and its CPU.
type proc struct{ wall, cpu time.Duration }

func timeProc(env []string, argv ...string) (proc, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return proc{}, fmt.Errorf("%s: %w\n%s%s", strings.Join(argv, " "), err, out.String(), errb.String())
	}
	return proc{wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}, nil
}

// compare times `openmax replay path`, the go-vcr peer and the floor,
// interleaved (each round starting with the next kind), and prints one row.
func compare(runs int, label, path, bin, self string, env []string) error {
	side, err := writePeerInput(path)
	if err != nil {
		return err
	}
	kinds := [][]string{
		{bin, "replay", path},
		{self, "-peer", side},
		{bin, "--version"},
	}
	got := make([][]proc, len(kinds))
	for r := range runs {
		for k := range kinds {
			k = (k + r) % len(kinds)
			var e []string
			if k == 0 {
				e = env
			}
			p, err := timeProc(e, kinds[k]...)
			if err != nil {
				return err
			}
			got[k] = append(got[k], p)
		}
	}
	med := func(ps []proc, cpu bool) time.Duration {
		ds := make([]time.Duration, len(ps))
		for i, p := range ps {
			ds[i] = p.wall
			if cpu {
				ds[i] = p.cpu
			}
		}
		return median(ds)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	o, oc, v, vc, fl := med(got[0], false), med(got[0], true), med(got[1], false), med(got[1], true), med(got[2], false)
	fmt.Printf("  %5s %7.2fMB | %7.1fms %7.1fms | %7.1fms %7.1fms | %6.1fms | %5.2fx %5.2fx | <=0.70x go-vcr; %.2fx floor\n", label, float64(fi.Size())/1e6,
		ms(o), ms(oc), ms(v), ms(vc), ms(fl), float64(o)/float64(v), float64(oc)/float64(vc), float64(o)/float64(fl))
	return nil
}

// peerInput is what the go-vcr peer needs beyond the cassette, which go-vcr
// loads itself: the harness configuration and the client's commands. The
// parent reads them with openmax's loader, untimed, so the peer's time is
// go-vcr's loading and serving and the harness, nothing of ours.
type peerInput struct {
	Config   harness.Config `json:"config"`
	Commands []string       `json:"commands"`
}

func writePeerInput(path string) (string, error) {
	f, _, err := importer.Load(path)
	if err != nil {
		return "", err
	}
	if f.Session == nil || f.Session.Config == nil {
		return "", fmt.Errorf("%s holds no session", path)
	}
	in := peerInput{Config: *f.Session.Config}
	for _, c := range f.Session.Commands {
		in.Commands = append(in.Commands, c.Line)
	}
	b, err := json.Marshal(in)
	if err != nil {
		return "", err
	}
	side := path + ".peer.json"
	return side, os.WriteFile(side, b, 0o600)
}

// peerReplay is the peer's child: go-vcr's recorder in replay mode, no
// latency, serving the cassette beside side (FILE.yaml.peer.json names
// FILE.yaml) to the harness, which a client drives with the recorded
// commands, one after hello and one after each done.
func peerReplay(side string) error {
	b, err := os.ReadFile(side)
	if err != nil {
		return err
	}
	var in peerInput
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	path := strings.TrimSuffix(side, ".peer.json")
	r, err := vcrrecorder.NewAsMode(strings.TrimSuffix(path, ".yaml"), vcrrecorder.ModeReplaying, nil)
	if err != nil {
		return err
	}
	r.SkipRequestLatency = true
	defer r.Stop()
	cfg := in.Config
	cfg.IdleTimeout, cfg.HeaderTimeout, cfg.ReplyTimeout = 0, 0, 0
	cfg.SessionID, cfg.Project = "s-peer", filepath.Dir(side)
	h, err := harness.New(cfg, harness.Deps{
		Transport: r, Clock: &instantClock{now: tape.Epoch}, Seed: 1,
		Getenv: func(k string) string {
			if strings.HasSuffix(k, "_API_KEY") {
				return tape.PlaceholderKey
			}
			return ""
		},
		NoBuiltin: true, PlaceholderKeys: true,
	})
	if err != nil {
		return err
	}
	c := newClient(len(in.Commands))
	c.lines = in.Commands
	if _, err := h.ServeConn(context.Background(), c, harness.ServeOptions{NoSave: true, Trusted: true, Project: filepath.Dir(side)}); err != nil {
		return err
	}
	if c.dones != len(in.Commands) {
		return fmt.Errorf("go-vcr replay ended after %d turns, want %d", c.dones, len(in.Commands))
	}
	return nil
}

// instantClock is virtual time for the peer: every wait ends at once,
// moving the clock on by its length.
type instantClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *instantClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *instantClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(max(d, 0))
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

// harnessFor builds the harness a replay builds (recorded tools only, none
// here; placeholder keys; a virtual clock).
func harnessFor(t http.RoundTripper) (*harness.Harness, harness.Config, error) {
	cfg := harness.Defaults()
	cfg.Provider, cfg.BaseURL, cfg.Model = "openai", base, "gpt-bench"
	cfg.IdleTimeout, cfg.HeaderTimeout, cfg.ReplyTimeout = 0, 0, 0
	cfg.SessionID = "s-scale"
	h, err := harness.New(cfg, harness.Deps{
		Transport: t, Clock: clock.NewFake(tape.Epoch), Seed: 1,
		Getenv: func(k string) string {
			if strings.HasSuffix(k, "_API_KEY") {
				return tape.PlaceholderKey
			}
			return ""
		},
		NoBuiltin: true, PlaceholderKeys: true,
	})
	return h, cfg, err
}

// serve runs the harness with a client that sends one user command at the
// start and after each done, turns in all, then ends its input.
func serve(t http.RoundTripper, turns int) (*client, int, error) {
	h, _, err := harnessFor(t)
	if err != nil {
		return nil, 0, err
	}
	c := newClient(turns)
	if _, err := h.ServeConn(context.Background(), c, harness.ServeOptions{NoSave: true, Trusted: true, Project: "/project"}); err != nil {
		return nil, 0, err
	}
	return c, c.dones, nil
}

// client is a stdio.Conn playing a user who types the next prompt when the
// harness is idle.
type client struct {
	turns int
	in    chan []byte
	mu    sync.Mutex
	out   strings.Builder
	sent  int
	dones int
	cmds  []cassette.Command
	lines []string // the commands to send, when given (else made up)
}

func newClient(turns int) *client { return &client{turns: turns, in: make(chan []byte, 2)} }

func (c *client) ReadLine() ([]byte, error) {
	l, ok := <-c.in
	if !ok {
		return nil, io.EOF
	}
	return l, nil
}

func (c *client) WriteLine(line []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out.Write(line)
	c.out.WriteByte('\n')
	var head struct {
		Type string `json:"type"`
	}
	json.Unmarshal(line, &head)
	var at cassette.Anchor
	switch head.Type {
	case "hello":
		at = cassette.Anchor{After: "hello", Nth: 1}
	case "done":
		c.dones++
		at = cassette.Anchor{Turn: c.dones, After: "done"}
	default:
		return nil
	}
	if c.sent == c.turns {
		close(c.in)
		c.sent++
		return nil
	}
	if c.sent > c.turns {
		return nil
	}
	cmd := fmt.Sprintf(`{"cmd":"user","text":"question %d: what comes next in the sequence, and why?"}`, c.sent)
	if c.lines != nil {
		cmd = c.lines[c.sent]
	}
	c.cmds = append(c.cmds, cassette.Command{Line: cmd, Anchor: at})
	c.sent++
	c.in <- []byte(cmd)
	return nil
}

func (c *client) Close() error { return nil }

// canned answers every chat request with a short streamed reply, and keeps
// each exchange as a cassette interaction.
type canned struct {
	mu           sync.Mutex
	interactions []*cassette.Interaction
}

func (c *canned) RoundTrip(req *http.Request) (*http.Response, error) {
	rec, err := recorder.ScrubRequest(req, nil)
	if err != nil {
		return nil, err
	}
	req.Body.Close()
	c.mu.Lock()
	n := len(c.interactions) + 1
	c.mu.Unlock()
	chunks := sse(n, []string{"Answer ", fmt.Sprintf("number %d: ", n), "the next term doubles the last one."})
	var body strings.Builder
	var cs []cassette.Chunk
	for i, ch := range chunks {
		body.WriteString(ch)
		cs = append(cs, cassette.Chunk{At: time.Duration(i) * 20 * time.Millisecond, Data: ch})
	}
	hdr := http.Header{"Content-Type": {"text/event-stream"}}
	c.mu.Lock()
	c.interactions = append(c.interactions, &cassette.Interaction{
		Request:  rec,
		Response: vcrcassette.Response{Body: body.String(), Headers: hdr, Status: "200 OK", Code: 200},
		Stream:   &cassette.Stream{Chunks: cs},
	})
	c.mu.Unlock()
	return &http.Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: hdr.Clone(), Body: io.NopCloser(strings.NewReader(body.String())), ContentLength: -1, Request: req}, nil
}

// sse is an OpenAI Chat Completions stream of the given text deltas.
func sse(n int, texts []string) []string {
	var out []string
	for i, t := range texts {
		delta := map[string]any{"content": t}
		if i == 0 {
			delta["role"] = "assistant"
		}
		out = append(out, event(n, delta, nil))
	}
	stop := "stop"
	out = append(out, event(n, map[string]any{}, &stop), "data: [DONE]\n\n")
	return out
}

func event(n int, delta map[string]any, finish *string) string {
	b, _ := json.Marshal(map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion.chunk", "created": 1767225600, "model": "gpt-bench",
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
	})
	return "data: " + string(b) + "\n\n"
}

// makeSession runs a live session of the given length against the canned
// transport and saves it as a cassette that tape.Replay replays.
func makeSession(path string, turns int) error {
	t := &canned{}
	c, done, err := serve(t, turns)
	if err != nil {
		return err
	}
	if done != turns {
		return fmt.Errorf("the session ended after %d turns", done)
	}
	_, cfg, err := harnessFor(t)
	if err != nil {
		return err
	}
	cfg.SessionID, cfg.Project = "", "/project"
	f := cassette.New()
	f.Interactions = t.interactions
	f.Session = &cassette.Session{SessionID: "s-scale", Seed: 1, Config: &cfg, Commands: c.cmds}
	return f.Save(path)
}

// makeBig writes a cassette whose first interaction streams a body of about
// size bytes in 4 KiB SSE chunks, followed by a short 20-turn session.
func makeBig(path string, size int) error {
	if err := makeSession(path, 20); err != nil {
		return err
	}
	f, _, err := importer.Load(path)
	if err != nil {
		return err
	}
	it := f.Interactions[0]
	var body strings.Builder
	var chunks []cassette.Chunk
	line := strings.Repeat("the quick brown fox jumps over the lazy dog; ", 90)
	for i := 0; body.Len() < size; i++ {
		ch := event(1, map[string]any{"content": fmt.Sprintf("%d %s", i, line)}, nil)
		body.WriteString(ch)
		chunks = append(chunks, cassette.Chunk{At: time.Duration(i) * time.Millisecond, Data: ch})
	}
	for _, c := range it.Stream.Chunks {
		body.WriteString(c.Data)
		c.At += time.Duration(len(chunks)) * time.Millisecond
		chunks = append(chunks, c)
	}
	it.Response.Body = body.String()
	it.Stream.Chunks = chunks
	return f.Save(path)
}
