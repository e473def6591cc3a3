// Command replayscale measures how replay scales (a manual measurement, not
// part of CI), printing stock go-vcr v2 beside openmax in the same run:
//
//   - a T-turn session (T = 10, 100, 300) loaded and replayed through the
//     real harness (importer.Load, which every command loads through, and
//     tape.Replay at instant pace) vs the same
//     harness served by go-vcr's recorder in replay mode
//     (SkipRequestLatency), which loads the same file; the median of
//     several interleaved runs, per turn and in all;
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
// Usage: go run ./bench/replayscale [-runs 5] [-turns 10,100,300] [-mb 25,40,55]
// (-cpuprofile FILE profiles openmax's replays of the longest session).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
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
	"github.com/openmax/openmax/recorder/replay"
	"github.com/openmax/openmax/replay/tape"
)

const base = "http://127.0.0.1:9/v1" // never dialled: every request is served from memory

func main() {
	runs := flag.Int("runs", 5, "interleaved runs per size (the median is printed)")
	turns := flag.String("turns", "10,100,300", "session lengths")
	mbs := flag.String("mb", "25,40,55", "streamed body sizes of the load cassettes, MiB (files about 2.1x that: the body is kept whole and as chunks)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of openmax's replays of the longest session")
	load := flag.String("load", "", "(child) load this cassette with -with and print the time")
	with := flag.String("with", "openmax", "(child) openmax or go-vcr")
	flag.Parse()
	var err error
	if *load != "" || *with == "none" {
		err = loadchild.Load(*with, *load)
	} else {
		err = run(*runs, benchcli.Ints(*turns), benchcli.Ints(*mbs), *cpuprofile)
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

func run(runs int, turns, mbs []int, cpuprofile string) error {
	dir, err := os.MkdirTemp("", "replayscale")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	fmt.Printf("replay of a T-turn session (median of %d interleaved runs; %d CPUs)\n", runs, runtime.NumCPU())
	fmt.Printf("  %5s %9s | %10s %8s | %10s %8s | %6s\n", "T", "file", "openmax", "per turn", "go-vcr", "per turn", "ratio")
	for _, t := range turns {
		path := filepath.Join(dir, fmt.Sprintf("turns%d.yaml", t))
		if err := makeSession(path, t); err != nil {
			return fmt.Errorf("making the %d-turn session: %w", t, err)
		}
		var ours, stock []time.Duration
		profile := cpuprofile != "" && t == slices.Max(turns)
		for range runs {
			if profile {
				pf, err := os.Create(cpuprofile)
				if err != nil {
					return err
				}
				pprof.StartCPUProfile(pf)
				defer func() { pprof.StopCPUProfile(); pf.Close() }()
				profile = false
			}
			d, err := replayOurs(path)
			if err != nil {
				return err
			}
			ours = append(ours, d)
			d, err = replayStock(path, t)
			if err != nil {
				return err
			}
			stock = append(stock, d)
		}
		fi, _ := os.Stat(path)
		o, s := median(ours), median(stock)
		fmt.Printf("  %5d %7.1fMB | %8.1fms %6.2fms | %8.1fms %6.2fms | %5.2fx\n", t, float64(fi.Size())/1e6,
			ms(o), ms(o)/float64(t), ms(s), ms(s)/float64(t), float64(o)/float64(s))
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

// replayOurs loads the file and replays the session through the harness,
// as `openmax replay` does.
func replayOurs(path string) (time.Duration, error) {
	start := time.Now()
	f, _, err := importer.Load(path)
	if err != nil {
		return 0, err
	}
	r, err := tape.Replay(context.Background(), f, tape.ReplayOptions{Serving: replay.Options{Pace: replay.Pace{Mode: replay.PaceInstant}}})
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if p := r.Problems(false); len(p) > 0 {
		return 0, fmt.Errorf("the replay did not reproduce the session: %q", p[0])
	}
	return d, nil
}

// replayStock serves the same file to the same harness with go-vcr's
// recorder in replay mode (it matches method and URL, in recorded order).
func replayStock(path string, turns int) (time.Duration, error) {
	start := time.Now()
	r, err := vcrrecorder.NewAsMode(strings.TrimSuffix(path, ".yaml"), vcrrecorder.ModeReplaying, nil)
	if err != nil {
		return 0, err
	}
	r.SkipRequestLatency = true
	defer r.Stop()
	conn, done, err := serve(r, turns)
	if err != nil {
		return 0, err
	}
	d := time.Since(start)
	if n := strings.Count(conn.out.String(), `"type":"done"`); n != turns || done != turns {
		return 0, fmt.Errorf("go-vcr replay ended after %d turns, want %d", n, turns)
	}
	return d, nil
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
