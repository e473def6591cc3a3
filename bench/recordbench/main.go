// Command recordbench measures the cost of recording (a manual measurement,
// not part of CI), each figure beside its peer from the same run:
//
//   - N requests (N = 10, 100, 1000) streamed from the fake provider over
//     loopback through the recording reverse proxy that `openmax record
//     --proxy` serves (recorder.NewProxy), beside stock go-vcr v2's
//     recorder behind the same kind of reverse proxy, and beside the fake
//     alone: total, per request, and per request over the last hundred (a
//     cost that grows with what came before shows there);
//   - time to first token, turn by turn, of the harness serving a session
//     over pipes, recorded (tape.Record, what `openmax record` runs) and
//     not (the same harness, nothing saved): the median over the runs at
//     turns 1, 15 and 300, and what recording adds.
//
// Runs of the configurations are interleaved (the machine is shared); each
// figure is the median of -runs runs.
//
// Usage: go run ./bench/recordbench [-runs 3] [-sizes 10,100,1000] [-turns 300]
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	vcrrecorder "github.com/dnaeon/go-vcr/v2/recorder"

	"github.com/openmax/openmax/core/harness"
	"github.com/openmax/openmax/core/stdio"
	"github.com/openmax/openmax/provider/fake"
	"github.com/openmax/openmax/provider/script"
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/importer"
	"github.com/openmax/openmax/replay/tape"
)

func main() {
	runs := flag.Int("runs", 3, "runs of each configuration (medians are reported)")
	sizes := flag.String("sizes", "10,100,1000", "request counts for the proxy measurement")
	turns := flag.Int("turns", 300, "turns of the time-to-first-token session (0 skips it)")
	profile := flag.String("cpuprofile", "", "write a CPU profile to this file")
	flag.Parse()
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "recordbench:", err)
			os.Exit(1)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if err := run(*runs, *sizes, *turns); err != nil {
		fmt.Fprintln(os.Stderr, "recordbench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(runs int, sizes string, turns int) error {
	dir, err := os.MkdirTemp("", "recordbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Printf("recordbench: %d run(s) per figure, medians; temp dir %s\n", runs, dir)
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("bad size %q", s)
		}
		if err := proxyBench(dir, n, runs); err != nil {
			return err
		}
	}
	if turns > 0 {
		return ttftBench(dir, turns, runs)
	}
	return nil
}

// scenario is n streamed replies of a few chunks each.
func scenario(n int) (*script.Scenario, error) {
	var b strings.Builder
	b.WriteString("replies:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - chunks:\n      - text: \"reply %d, \"\n      - text: \"a few words \"\n      - text: \"of text\"\n      - finish: stop\n", i)
	}
	return script.Parse([]byte(b.String()))
}

type result struct {
	total, last time.Duration // last: the last hundred (or fewer) requests
	n, lastN    int
}

func (r result) per() float64     { return ms(r.total) / float64(r.n) }
func (r result) perLast() float64 { return ms(r.last) / float64(r.lastN) }

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// proxyBench sends n requests through each configuration, runs times,
// interleaved.
func proxyBench(dir string, n, runs int) error {
	configs := []struct {
		name string
		run  func(path, upstream string) (http.Handler, func() error, error)
	}{
		{"fake alone (no proxy)", nil},
		{"openmax record --proxy", func(path, upstream string) (http.Handler, func() error, error) {
			up, _ := url.Parse(upstream)
			rec, err := recorder.New(recorder.Options{Path: path})
			if err != nil {
				return nil, nil, err
			}
			return recorder.NewProxy(up, rec), rec.Close, nil
		}},
		{"stock go-vcr v2 recorder", func(path, upstream string) (http.Handler, func() error, error) {
			up, _ := url.Parse(upstream)
			r, err := vcrrecorder.NewAsMode(strings.TrimSuffix(path, ".yaml"), vcrrecorder.ModeRecording, http.DefaultTransport)
			if err != nil {
				return nil, nil, err
			}
			rp := &httputil.ReverseProxy{
				Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(up); pr.Out.Header.Del("Accept-Encoding") },
				Transport:     r,
				FlushInterval: -1,
			}
			return rp, r.Stop, nil
		}},
	}
	res := make([][]result, len(configs))
	for r := range runs {
		for i, c := range configs {
			got, err := proxyOnce(dir, fmt.Sprintf("p%d-%d-%d.yaml", n, r, i), n, c.run)
			if err != nil {
				return fmt.Errorf("%s, N=%d: %w", c.name, n, err)
			}
			res[i] = append(res[i], got)
		}
	}
	fmt.Printf("\n%d requests through a recording proxy (median of %d):\n", n, runs)
	fmt.Printf("  %-26s %10s %14s %22s %12s\n", "", "total ms", "ms/request", fmt.Sprintf("ms/request, last %d", min(n, 100)), "× go-vcr")
	vcrTotal := median(res[2], func(r result) float64 { return ms(r.total) })
	for i, c := range configs {
		total := median(res[i], func(r result) float64 { return ms(r.total) })
		fmt.Printf("  %-26s %10.1f %14.3f %22.3f %12.2f\n", c.name, total,
			median(res[i], result.per), median(res[i], result.perLast), total/vcrTotal)
	}
	return nil
}

func proxyOnce(dir, name string, n int, mk func(path, upstream string) (http.Handler, func() error, error)) (result, error) {
	sc, err := scenario(n)
	if err != nil {
		return result{}, err
	}
	srv := fake.New(sc, fake.Options{})
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		return result{}, err
	}
	defer srv.Close()
	target := base
	stop := func() error { return nil }
	path := filepath.Join(dir, name)
	if mk != nil {
		h, s, err := mk(path, base)
		if err != nil {
			return result{}, err
		}
		px := httptest.NewServer(h)
		defer px.Close()
		target, stop = px.URL, s
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	body := `{"model":"gpt-bench","stream":true,"messages":[{"role":"user","content":"go"}]}`
	lastFrom := max(0, n-100)
	var lastStart time.Time
	start := time.Now()
	for i := range n {
		if i == lastFrom {
			lastStart = time.Now()
		}
		resp, err := client.Post(target+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			return result{}, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || !strings.Contains(string(b), "of text") {
			return result{}, fmt.Errorf("request %d: %d %v %.200q", i, resp.StatusCode, err, b)
		}
	}
	if err := stop(); err != nil {
		return result{}, err
	}
	end := time.Now()
	r := result{total: end.Sub(start), last: end.Sub(lastStart), n: n, lastN: n - lastFrom}
	if mk != nil {
		if f, _, err := importer.Load(path); err != nil || len(f.Interactions) != n {
			return r, fmt.Errorf("the cassette: %v (%d interactions)", err, len(f.Interactions))
		}
	}
	return r, nil
}

func median[T any](xs []T, f func(T) float64) float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// ttftBench serves a session of turns user commands, recorded and not,
// and times each command to its first token line.
func ttftBench(dir string, turns, runs int) error {
	var plain, recorded [][]time.Duration
	for r := range runs {
		p, err := ttftOnce(dir, turns, "")
		if err != nil {
			return fmt.Errorf("unrecorded: %w", err)
		}
		plain = append(plain, p)
		c, err := ttftOnce(dir, turns, filepath.Join(dir, fmt.Sprintf("ttft-%d.yaml", r)))
		if err != nil {
			return fmt.Errorf("recorded: %w", err)
		}
		recorded = append(recorded, c)
	}
	fmt.Printf("\ntime to first token of a %d-turn session over pipes (fake provider over loopback):\n", turns)
	fmt.Printf("  median over %d runs of the turns in the window (turn 1 alone: the first request opens the connection)\n", runs)
	fmt.Printf("  %-14s %14s %14s %10s %8s\n", "turns", "unrecorded ms", "recorded ms", "added ms", "limit")
	// window pools turns [lo, hi] of every run.
	window := func(set [][]time.Duration, lo, hi int) float64 {
		var v []time.Duration
		for _, ts := range set {
			v = append(v, ts[lo-1:hi]...)
		}
		return median(v, func(d time.Duration) float64 { return ms(d) })
	}
	show := func(name string, lo, hi int) {
		u, c := window(plain, lo, hi), window(recorded, lo, hi)
		fmt.Printf("  %-14s %14.3f %14.3f %10.3f %8s\n", name, u, c, c-u, "≤ 1")
	}
	show("1", 1, 1)
	if turns >= 20 {
		show("15 (10-20)", 10, 20)
	}
	if turns > 20 {
		show(fmt.Sprintf("%d (%d-%d)", turns, turns-10, turns), turns-10, turns)
	}
	worst, at := 0.0, 0
	for lo := 1; lo+9 <= turns; lo += 10 {
		if d := window(recorded, lo, lo+9) - window(plain, lo, lo+9); d > worst {
			worst, at = d, lo
		}
	}
	fmt.Printf("  largest added over any ten turns: %.3f ms (turns %d-%d)\n", worst, at, at+9)
	return nil
}

// ttftOnce runs one session; path "" serves it unrecorded.
func ttftOnce(dir string, turns int, path string) ([]time.Duration, error) {
	sc, err := scenario(turns)
	if err != nil {
		return nil, err
	}
	srv := fake.New(sc, fake.Options{})
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	project, err := os.MkdirTemp(dir, "project")
	if err != nil {
		return nil, err
	}
	env := map[string]string{"XDG_CONFIG_HOME": filepath.Join(project, ".config"), "XDG_STATE_HOME": filepath.Join(project, ".state"), "OPENAI_API_KEY": "sk-bench"}
	getenv := func(k string) string { return env[k] }
	if _, err := harness.Trust(project, getenv); err != nil {
		return nil, err
	}
	cfg := harness.Defaults()
	cfg.Provider, cfg.Model, cfg.BaseURL, cfg.Project, cfg.SessionID = "openai", "gpt-bench", base+"/v1", project, "s-bench"
	deps := harness.Deps{Getenv: getenv}

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		var err error
		if path == "" {
			var h *harness.Harness
			if h, err = harness.New(cfg, deps); err == nil {
				_, err = h.ServeConn(context.Background(), stdio.NewStreamConn(inR, outW), harness.ServeOptions{NoSave: true})
			}
		} else {
			_, err = tape.Record(context.Background(), inR, outW, tape.RecordOptions{Config: cfg, Deps: deps, Cassette: recorder.Options{Path: path}})
		}
		outW.CloseWithError(err)
		errc <- err
	}()
	lines := bufio.NewReader(outR)
	next := func(kind string) error {
		for {
			l, err := lines.ReadString('\n')
			if err != nil {
				return fmt.Errorf("waiting for %s: %w", kind, err)
			}
			if strings.Contains(l, `"type":"`+kind+`"`) {
				return nil
			}
			if strings.Contains(l, `"type":"error"`) || strings.Contains(l, `protocol_error`) {
				return fmt.Errorf("waiting for %s: %s", kind, l)
			}
		}
	}
	if err := next("hello"); err != nil {
		return nil, err
	}
	var out []time.Duration
	for t := range turns {
		line := fmt.Sprintf(`{"cmd":"user","text":"turn %d"}`+"\n", t+1)
		start := time.Now()
		if _, err := io.WriteString(inW, line); err != nil {
			return nil, err
		}
		if err := next("token"); err != nil {
			return nil, fmt.Errorf("turn %d: %w", t+1, err)
		}
		out = append(out, time.Since(start))
		if err := next("done"); err != nil {
			return nil, fmt.Errorf("turn %d: %w", t+1, err)
		}
	}
	inW.Close()
	go io.Copy(io.Discard, lines)
	if err := <-errc; err != nil {
		return nil, err
	}
	if path != "" {
		f, _, err := importer.Load(path)
		if err != nil {
			return nil, err
		}
		if len(f.Interactions) != turns || f.Session == nil || len(f.Session.Commands) != turns {
			return nil, fmt.Errorf("the cassette holds %d interactions and the session %v", len(f.Interactions), f.Session != nil)
		}
	}
	return out, nil
}
