// Command replaymeasure measures record and replay (a manual measurement,
// not part of CI): it records a paced session with a 429 and Retry-After
// from the fake provider over loopback in real time, then reports
//
//   - the recorded wall time vs our replay (instant and recorded pacing)
//     vs stock go-vcr v2 replaying the same cassette;
//   - time to first token through our recorder, without any recorder, and
//     through stock go-vcr v2's recorder, on a paced stream;
//   - whether 100 replays of the cassette give byte-identical transcripts.
//
// Usage: go run ./bench/replaymeasure
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	vcrrecorder "github.com/dnaeon/go-vcr/v2/recorder"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/harness"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/fake"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/openai"
	"github.com/openmax/openmax/provider/retry"
	"github.com/openmax/openmax/provider/script"
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/importer"
	"github.com/openmax/openmax/recorder/replay"
	"github.com/openmax/openmax/replay/tape"
)

const scenario = `
replies:
  - status: 429
    headers: {Retry-After: "1"}
    code: rate_limit_exceeded
  - chunks:
      - text: "one "
      - delay: 150ms
      - text: "two "
      - delay: 150ms
      - text: "three "
      - delay: 150ms
      - text: "four"
      - finish: stop
`

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "replaymeasure:", err)
		os.Exit(1)
	}
}

func run() error {
	dir, err := os.MkdirTemp("", "replaymeasure")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "paced.yaml")

	recWall, err := recordPaced(path)
	if err != nil {
		return err
	}
	f, _, err := importer.Load(path)
	if err != nil {
		return err
	}
	instant, first, err := timeReplay(f, replay.Pace{Mode: replay.PaceInstant})
	if err != nil {
		return err
	}
	recorded, _, err := timeReplay(f, replay.Pace{Mode: replay.PaceRecorded})
	if err != nil {
		return err
	}
	stock, err := stockReplay(path, strings.TrimSuffix(f.Interactions[0].Request.URL, "/chat/completions"))
	if err != nil {
		return err
	}
	fmt.Printf("session with a 429 (Retry-After 1s) and a 4-chunk stream paced 150ms:\n")
	fmt.Printf("  recorded live (real time)          %8.1f ms\n", ms(recWall))
	fmt.Printf("  openmax replay, instant pacing     %8.1f ms\n", ms(instant))
	fmt.Printf("  openmax replay, recorded pacing    %8.1f ms (retry wait still virtual)\n", ms(recorded))
	fmt.Printf("  stock go-vcr v2 replay, same file  %8.1f ms\n", ms(stock))

	same := 0
	for range 100 {
		_, out, err := timeReplay(f, replay.Pace{Mode: replay.PaceInstant})
		if err != nil {
			return err
		}
		if bytes.Equal(out, first) {
			same++
		}
	}
	fmt.Printf("  determinism: %d of 100 replays byte-identical (sha256 %x)\n", same, sha256.Sum256(first))

	return ttft(dir)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func newEngine(t http.RoundTripper, base string, clk clock.Clock) (*core.Engine, error) {
	c, err := openai.New(openai.Config{APIKey: "bench", BaseURL: base, Model: "gpt-bench",
		HTTP: &httpx.Client{HTTP: &http.Client{Transport: t}, Clock: clk}})
	if err != nil {
		return nil, err
	}
	reg, _ := tool.NewRegistry()
	return &core.Engine{Provider: retry.New(c, retry.Policy{Seed: 1}, clk), Tools: reg}, nil
}

// recordPaced records one user turn against the paced fake, in real time.
func recordPaced(path string) (time.Duration, error) {
	sc, err := script.Parse([]byte(scenario))
	if err != nil {
		return 0, err
	}
	srv := fake.New(sc, fake.Options{})
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer srv.Close()
	rec, err := recorder.New(recorder.Options{Path: path})
	if err != nil {
		return 0, err
	}
	eng, err := newEngine(rec, base+"/v1", clock.Real{})
	if err != nil {
		return 0, err
	}
	start := time.Now()
	s := core.NewSession("s-bench")
	eng.RunTurn(context.Background(), s, "count to four", func(wire.Event) {})
	wall := time.Since(start)
	cfg := harness.Defaults()
	cfg.Provider, cfg.Model, cfg.BaseURL = "openai", "gpt-bench", base+"/v1"
	if err := rec.SetSession(&cassette.Session{SessionID: "s-bench", Seed: 1, Config: &cfg,
		Commands: []cassette.Command{{Anchor: cassette.Anchor{After: "hello", Nth: 1}, Line: `{"cmd":"user","text":"count to four"}`}}}); err != nil {
		return 0, err
	}
	return wall, rec.Close()
}

// timeReplay replays the recorded session through the real stdio server.
func timeReplay(f *cassette.File, pace replay.Pace) (time.Duration, []byte, error) {
	start := time.Now()
	r, err := tape.Replay(context.Background(), f, tape.ReplayOptions{Serving: replay.Options{Pace: pace}})
	return time.Since(start), r.Stdout, err
}

// stockReplay replays the cassette with go-vcr v2's own recorder in replay
// mode, as its users would, with the harness waiting in real time.
func stockReplay(path, base string) (time.Duration, error) {
	r, err := vcrrecorder.NewAsMode(strings.TrimSuffix(path, ".yaml"), vcrrecorder.ModeReplaying, nil)
	if err != nil {
		return 0, err
	}
	defer r.Stop()
	eng, err := newEngine(r, base, clock.Real{})
	if err != nil {
		return 0, err
	}
	start := time.Now()
	var events []string
	eng.RunTurn(context.Background(), core.NewSession("s"), "count to four", func(e wire.Event) { events = append(events, e.EventType()) })
	if got := strings.Join(events, " "); !strings.Contains(got, "retry token") || strings.Count(got, "retry") != 1 {
		return 0, fmt.Errorf("stock replay went wrong: %s", got)
	}
	return time.Since(start), nil
}

// ttft measures time to the first text delta on a paced stream.
func ttft(dir string) error {
	const paced = `
replies:
  - chunks:
      - text: "first"
      - delay: 300ms
      - text: " second"
      - delay: 300ms
      - text: " third"
      - finish: stop
`
	measure := func(name string, wrap func(http.RoundTripper) (http.RoundTripper, func())) error {
		sc, _ := script.Parse([]byte(paced))
		srv := fake.New(sc, fake.Options{})
		base, err := srv.Start("127.0.0.1:0")
		if err != nil {
			return err
		}
		defer srv.Close()
		t, done := wrap(http.DefaultTransport)
		defer done()
		c, err := openai.New(openai.Config{APIKey: "bench", BaseURL: base + "/v1", Model: "m", HTTP: &httpx.Client{HTTP: &http.Client{Transport: t}}})
		if err != nil {
			return err
		}
		start := time.Now()
		var first, total time.Duration
		for p := range c.Stream(context.Background(), provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "go"}}}) {
			if _, ok := p.(provider.TextDelta); ok && first == 0 {
				first = time.Since(start)
			}
		}
		total = time.Since(start)
		fmt.Printf("  %-28s first token %7.1f ms, whole stream %7.1f ms\n", name, ms(first), ms(total))
		return nil
	}
	fmt.Printf("time to first token, stream paced 300ms between chunks:\n")
	if err := measure("no recorder", func(t http.RoundTripper) (http.RoundTripper, func()) { return t, func() {} }); err != nil {
		return err
	}
	if err := measure("openmax recorder", func(t http.RoundTripper) (http.RoundTripper, func()) {
		rec, _ := recorder.New(recorder.Options{Path: filepath.Join(dir, "ttft.yaml"), Transport: t})
		return rec, func() { rec.Close() }
	}); err != nil {
		return err
	}
	return measure("stock go-vcr v2 recorder", func(t http.RoundTripper) (http.RoundTripper, func()) {
		r, _ := vcrrecorder.NewAsMode(filepath.Join(dir, "stock"), vcrrecorder.ModeRecording, t)
		return r, func() { r.Stop() }
	})
}
