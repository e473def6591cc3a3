// Command recordbench measures the cost of recording through the binary,
// the way users run it (a manual measurement, not part of CI), each figure
// beside its peer or limit from the same interleaved run:
//
//   - N requests (N = 10, 100, 1000 by default), each a streamed reply of
//     `openmax fake-provider` (a child, over loopback), sent one after the
//     other through `openmax record --proxy` (a child), beside stock go-vcr
//     v2's recorder (ModeRecording) behind the same kind of reverse proxy
//     (this program re-run as a child, `recordbench vcr-proxy`, so both
//     sides pay a process), and beside the fake alone. Each is timed from
//     the first request to the recorder's exit after SIGINT (go-vcr writes
//     its cassette then, ours finishes its file), with the recorder's CPU
//     time and the time from SIGINT to its exit; the ratio to go-vcr must
//     be at most 0.5 at every N. With -clients K the requests come from K
//     concurrent clients (requests completing out of the order they
//     started in).
//   - time to first token, turn by turn, of a session over pipes:
//     `openmax record --cassette F ...` against the unrecorded
//     `openmax --stdio ...`, both children driven alike against the fake
//     provider: p50 and p99 of each (over the turns after the first,
//     which opens the connection), what recording adds to p99 (limit
//     1 ms), the turns slower than 4 ms, and the whole session's time
//     (limit 1.2× the unrecorded one) and CPU time, at three session
//     lengths, and the peak RSS of each child (OPENMAX_PEAK_RSS).
//
// Runs of the configurations are interleaved (the machine is shared); each
// figure is the median over -runs runs.
//
// Usage:
//
//	go run ./bench/recordbench [-runs 5] [-sizes 10,100,1000] [-clients 1] [-turns 30,100,300] [-bin OPENMAX] [-base OPENMAX] [-profile DIR]
//	recordbench vcr-proxy -cassette FILE -upstream URL   (the peer, as a child)
//
// With -profile DIR each openmax child writes a CPU profile there
// (OPENMAX_CPUPROFILE), and the go-vcr child too. With -base OPENMAX (a
// build of another commit, such as main) each recording figure gets a row
// of that binary too, interleaved in the same runs: a change is measured
// against what it changes on the same machine at the same time.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	vcrrecorder "github.com/dnaeon/go-vcr/v2/recorder"

	"github.com/openmax/openmax/bench/internal/benchcli"
	"github.com/openmax/openmax/recorder/importer"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "vcr-proxy" {
		if err := vcrProxy(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "recordbench vcr-proxy:", err)
			os.Exit(1)
		}
		return
	}
	runs := flag.Int("runs", 5, "runs of each configuration (medians are reported)")
	sizes := flag.String("sizes", "10,100,1000", "request counts for the proxy measurement (empty: skip it)")
	clients := flag.Int("clients", 1, "concurrent clients sending the proxy measurement's requests")
	turns := flag.String("turns", "30,100,300", "session lengths for the time-to-first-token measurement (empty: skip it)")
	bin := flag.String("bin", "", "the openmax binary (default: built from this tree)")
	profile := flag.String("profile", "", "a folder for the children's CPU profiles")
	base := flag.String("base", "", "another openmax binary (a build of main) to record with too, interleaved")
	flag.Parse()
	if *clients < 1 {
		fmt.Fprintln(os.Stderr, "recordbench: -clients must be at least 1")
		os.Exit(2)
	}
	if err := run(*runs, benchcli.Ints(*sizes), benchcli.Ints(*turns), *bin, *base, *profile, *clients); err != nil {
		fmt.Fprintln(os.Stderr, "recordbench:", err)
		os.Exit(1)
	}
}

// bench is what a run needs: the binaries and a scratch folder.
type bench struct {
	dir, openmax, base, self, profile string
	seq                               int
	clients                           int // concurrent clients of the proxy measurement
}

func run(runs int, sizes, turns []int, bin, base, profile string, clients int) error {
	dir, err := os.MkdirTemp("", "recordbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, self, err := benchcli.Binaries(bin, dir)
	if err != nil {
		return err
	}
	b := &bench{dir: dir, openmax: bin, base: base, self: self, profile: profile, clients: clients}
	fmt.Printf("recordbench: %s, %d run(s) per figure, interleaved, medians\n", bin, runs)
	if base != "" {
		fmt.Printf("base (rows marked base): %s\n", base)
	}
	for _, n := range sizes {
		if err := b.proxyBench(n, runs); err != nil {
			return err
		}
	}
	if len(turns) > 0 {
		fmt.Printf("\ntime to first token over pipes, `openmax record` vs `openmax --stdio` (median of %d runs):\n", runs)
		fmt.Printf("  %-6s %-10s %9s %9s %12s %11s %13s %11s\n", "turns", "", "p50 ms", "p99 ms", "turns >4ms", "session ms", "session CPU", "peak RSS")
		for _, t := range turns {
			if err := b.ttftBench(t, runs); err != nil {
				return err
			}
		}
	}
	return nil
}

// scenario writes a fake-provider scenario of n streamed replies of a few
// chunks each and returns its path.
func (b *bench) scenario(n int) (string, error) {
	path := filepath.Join(b.dir, fmt.Sprintf("scenario-%d.yaml", n))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	var s strings.Builder
	s.WriteString("replies:\n")
	for i := range n {
		fmt.Fprintf(&s, "  - chunks:\n      - text: \"reply %d, \"\n      - text: \"a few words \"\n      - text: \"of text\"\n      - finish: stop\n", i)
	}
	return path, os.WriteFile(path, []byte(s.String()), 0o600)
}

// child is a running child process that printed its URL.
type child struct {
	cmd    *exec.Cmd
	url    string
	stderr strings.Builder
}

// startServer starts argv and waits for the URL it prints on its first
// stdout line.
func startServer(env []string, argv ...string) (*child, error) {
	c := &child{cmd: exec.Command(argv[0], argv[1:]...)}
	c.cmd.Env = env
	c.cmd.Stderr = &c.stderr
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		c.cmd.Process.Kill()
		c.cmd.Wait()
		return nil, fmt.Errorf("%s printed no URL: %w (stderr: %s)", argv[0], err, c.stderr.String())
	}
	c.url = strings.TrimSpace(line)
	go io.Copy(io.Discard, out)
	return c, nil
}

// stop sends SIGINT and waits for the exit; it returns the child's CPU
// time.
func (c *child) stop() (time.Duration, error) {
	c.cmd.Process.Signal(os.Interrupt)
	err := c.cmd.Wait()
	if err != nil {
		return 0, fmt.Errorf("%s: %w (stderr: %s)", c.cmd.Path, err, c.stderr.String())
	}
	return cpu(c.cmd.ProcessState), nil
}

func cpu(ps *os.ProcessState) time.Duration { return ps.UserTime() + ps.SystemTime() }

// env is the environment of every child: a home of its own, a fake key.
func (b *bench) env(extra ...string) []string {
	home := filepath.Join(b.dir, "home")
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_STATE_HOME=" + filepath.Join(home, ".state"),
		"OPENAI_API_KEY=sk-bench-0123456789abcdef"}, extra...)
}

// profEnv is OPENMAX_CPUPROFILE for the next child, when profiling.
func (b *bench) profEnv(name string) []string {
	if b.profile == "" {
		return nil
	}
	b.seq++
	return []string{fmt.Sprintf("OPENMAX_CPUPROFILE=%s/%s-%03d.pprof", b.profile, name, b.seq)}
}

type proxyResult struct {
	total, cpu time.Duration
	stop       time.Duration // SIGINT to the recorder's exit
}

// proxyBench sends n requests through each configuration, runs times,
// interleaved.
func (b *bench) proxyBench(n, runs int) error {
	type config struct {
		name  string
		start func(cassette, upstream string) (*child, error)
	}
	configs := []config{
		{"fake alone (no proxy)", nil},
		{"openmax record --proxy", func(cassette, upstream string) (*child, error) {
			return startServer(b.env(b.profEnv(fmt.Sprintf("proxy-%d", n))...), b.openmax, "record", "--proxy", "--cassette", cassette, "--upstream", upstream)
		}},
		{"go-vcr v2 ModeRecording", func(cassette, upstream string) (*child, error) {
			args := []string{b.self, "vcr-proxy", "-cassette", cassette, "-upstream", upstream}
			if b.profile != "" {
				b.seq++
				args = append(args, "-cpuprofile", fmt.Sprintf("%s/vcr-%d-%03d.pprof", b.profile, n, b.seq))
			}
			return startServer(b.env(), args...)
		}},
	}
	const ours, peerAt = 1, 2
	if b.base != "" {
		configs = append(configs, config{"base: record --proxy", func(cassette, upstream string) (*child, error) {
			return startServer(b.env(b.profEnv(fmt.Sprintf("baseproxy-%d", n))...), b.base, "record", "--proxy", "--cassette", cassette, "--upstream", upstream)
		}})
	}
	scen, err := b.scenario(n)
	if err != nil {
		return err
	}
	res := make([][]proxyResult, len(configs))
	for r := range runs {
		for i, c := range configs {
			got, err := b.proxyOnce(scen, filepath.Join(b.dir, fmt.Sprintf("p%d-%d-%d.yaml", n, r, i)), n, c.start)
			if err != nil {
				return fmt.Errorf("%s, N=%d: %w", c.name, n, err)
			}
			res[i] = append(res[i], got)
		}
	}
	fmt.Printf("\nN=%d streamed requests through a recording proxy from %d client(s), first request to the recorder's exit (median of %d):\n", n, b.clients, runs)
	fmt.Printf("  %-26s %10s %12s %14s %10s %12s %8s\n", "", "total ms", "ms/request", "recorder CPU", "exit ms", "× go-vcr", "limit")
	peer := median(res[peerAt], func(r proxyResult) float64 { return ms(r.total) })
	for i, c := range configs {
		total := median(res[i], func(r proxyResult) float64 { return ms(r.total) })
		limit := ""
		if i == ours {
			limit = "≤ 0.50"
		}
		fmt.Printf("  %-26s %10.1f %12.3f %11.1f ms %10.1f %12.2f %8s\n", c.name, total, total/float64(n),
			median(res[i], func(r proxyResult) float64 { return ms(r.cpu) }),
			median(res[i], func(r proxyResult) float64 { return ms(r.stop) }), total/peer, limit)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func (b *bench) proxyOnce(scen, cassette string, n int, start func(cassette, upstream string) (*child, error)) (proxyResult, error) {
	fake, err := startServer(b.env(), b.openmax, "fake-provider", "--scenario", scen)
	if err != nil {
		return proxyResult{}, err
	}
	defer fake.stop() //nolint:errcheck // the fake's exit is not measured
	target := fake.url
	var rec *child
	if start != nil {
		if rec, err = start(cassette, fake.url); err != nil {
			return proxyResult{}, err
		}
		target = rec.url
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: max(4, b.clients)}}
	defer client.CloseIdleConnections()
	body := `{"model":"gpt-bench","stream":true,"messages":[{"role":"user","content":"go"}]}`
	one := func(i int) error {
		req, _ := http.NewRequest("POST", target+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sk-bench-0123456789abcdef")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || !strings.Contains(string(got), "of text") {
			return fmt.Errorf("request %d: %d %v %.200q", i, resp.StatusCode, err, got)
		}
		return nil
	}
	begin := time.Now()
	// The requests go out from b.clients goroutines, each taking the next.
	next := make(chan int)
	errs := make(chan error, b.clients)
	for range b.clients {
		go func() {
			var first error
			for i := range next {
				if err := one(i); err != nil && first == nil {
					first = err
				}
			}
			errs <- first
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	var failed error
	for range b.clients {
		if err := <-errs; err != nil && failed == nil {
			failed = err
		}
	}
	if failed != nil {
		return proxyResult{}, failed
	}
	var r proxyResult
	if rec != nil {
		client.CloseIdleConnections()
		t := time.Now()
		if r.cpu, err = rec.stop(); err != nil {
			return r, err
		}
		r.stop = time.Since(t)
	}
	r.total = time.Since(begin)
	if rec != nil {
		if f, _, err := importer.Load(cassette); err != nil || len(f.Interactions) != n {
			return r, fmt.Errorf("the cassette %s: %v (%d interactions)", cassette, err, len(f.Interactions))
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

// session is one session's figures.
type session struct {
	ttft       []time.Duration // per turn, user command to first token line
	total, cpu time.Duration   // hello to the last done; the child's CPU
	rssKB      float64         // the child's peak RSS (OPENMAX_PEAK_RSS)
}

// peakRSS is the peak RSS openmax said on stderr (OPENMAX_PEAK_RSS=1), in kB.
func peakRSS(stderr string) (float64, error) {
	for _, l := range strings.Split(stderr, "\n") {
		if v, ok := strings.CutPrefix(l, "openmax: peak RSS "); ok {
			var kb float64
			if _, err := fmt.Sscanf(v, "%f kB", &kb); err == nil {
				return kb, nil
			}
		}
	}
	return 0, fmt.Errorf("no peak RSS on stderr: %q", stderr)
}

// pct is the p quantile of the turns after the first (the first request
// opens the connection, unrecorded or not).
func (s session) pct(p float64) float64 {
	v := slices.Clone(s.ttft[min(1, len(s.ttft)-1):])
	slices.Sort(v)
	return ms(v[min(len(v)-1, int(p*float64(len(v))))])
}

func (s session) slow() float64 {
	n := 0
	for _, d := range s.ttft[min(1, len(s.ttft)-1):] {
		if d > 4*time.Millisecond {
			n++
		}
	}
	return float64(n)
}

// ttftBench serves sessions of turns user commands, recorded and not,
// interleaved, and prints their figures.
func (b *bench) ttftBench(turns, runs int) error {
	scen, err := b.scenario(turns)
	if err != nil {
		return err
	}
	var plain, recorded, based []session
	for r := range runs {
		p, err := b.ttftOnce(b.openmax, scen, turns, "")
		if err != nil {
			return fmt.Errorf("unrecorded: %w", err)
		}
		plain = append(plain, p)
		c, err := b.ttftOnce(b.openmax, scen, turns, filepath.Join(b.dir, fmt.Sprintf("ttft-%d-%d.yaml", turns, r)))
		if err != nil {
			return fmt.Errorf("recorded: %w", err)
		}
		recorded = append(recorded, c)
		if b.base != "" {
			c, err := b.ttftOnce(b.base, scen, turns, filepath.Join(b.dir, fmt.Sprintf("ttft-base-%d-%d.yaml", turns, r)))
			if err != nil {
				return fmt.Errorf("recorded by the base: %w", err)
			}
			based = append(based, c)
		}
	}
	m := func(set []session, f func(session) float64) float64 { return median(set, f) }
	p50 := func(s session) float64 { return s.pct(0.50) }
	p99 := func(s session) float64 { return s.pct(0.99) }
	tot := func(s session) float64 { return ms(s.total) }
	cpuf := func(s session) float64 { return ms(s.cpu) }
	rss := func(s session) float64 { return s.rssKB / 1024 }
	row := func(name string, set []session) {
		fmt.Printf("  %-6d %-10s %9.3f %9.3f %12.0f %11.1f %10.1f ms %8.1f MB\n", turns, name, m(set, p50), m(set, p99), m(set, session.slow), m(set, tot), m(set, cpuf), m(set, rss))
	}
	added := func(name string, set []session, limits string) {
		fmt.Printf("  %-6d %-10s %9.3f %9.3f %12s %10.2f× %10.2f× %10.2f×   %s\n", turns, name, m(set, p50)-m(plain, p50),
			m(set, p99)-m(plain, p99), "", m(set, tot)/m(plain, tot), m(set, cpuf)/m(plain, cpuf), m(set, rss)/m(plain, rss), limits)
	}
	row("--stdio", plain)
	row("record", recorded)
	if b.base != "" {
		row("base rec", based)
	}
	added("added", recorded, "limits: p99 +1 ms, session 1.2×")
	if b.base != "" {
		added("base added", based, "")
	}
	return nil
}

// ttftOnce runs one session of turns commands through the binary; cassette
// "" runs it unrecorded (--stdio).
func (b *bench) ttftOnce(bin, scen string, turns int, cassette string) (session, error) {
	fake, err := startServer(b.env(), b.openmax, "fake-provider", "--scenario", scen)
	if err != nil {
		return session{}, err
	}
	defer fake.stop() //nolint:errcheck // the fake's exit is not measured
	project, err := os.MkdirTemp(b.dir, "project")
	if err != nil {
		return session{}, err
	}
	trust := exec.Command(b.openmax, "trust", project)
	trust.Env = b.env()
	if out, err := trust.CombinedOutput(); err != nil {
		return session{}, fmt.Errorf("openmax trust: %w: %s", err, out)
	}
	flags := []string{"--provider", "openai", "--model", "gpt-bench", "--base-url", fake.url + "/v1", "--project", project, "--session-id", "s-bench"}
	var argv []string
	var env []string
	if cassette == "" {
		argv = append([]string{b.openmax, "--stdio"}, flags...)
		env = b.env(b.profEnv(fmt.Sprintf("stdio-%d", turns))...)
	} else {
		name := "record"
		if bin != b.openmax {
			name = "baserecord"
		}
		argv = append([]string{bin, "record", "--cassette", cassette}, flags...)
		env = b.env(b.profEnv(fmt.Sprintf("%s-%d", name, turns))...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = append(env, "OPENMAX_PEAK_RSS=1"), project
	var stderr strings.Builder
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return session{}, err
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		return session{}, err
	}
	if err := cmd.Start(); err != nil {
		return session{}, err
	}
	fail := func(err error) (session, error) {
		cmd.Process.Kill()
		cmd.Wait()
		return session{}, fmt.Errorf("%w (stderr: %s)", err, stderr.String())
	}
	lines := bufio.NewReader(outp)
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
		return fail(err)
	}
	var s session
	begin := time.Now()
	for t := range turns {
		line := fmt.Sprintf(`{"cmd":"user","text":"turn %d"}`+"\n", t+1)
		start := time.Now()
		if _, err := io.WriteString(in, line); err != nil {
			return fail(err)
		}
		if err := next("token"); err != nil {
			return fail(fmt.Errorf("turn %d: %w", t+1, err))
		}
		s.ttft = append(s.ttft, time.Since(start))
		if err := next("done"); err != nil {
			return fail(fmt.Errorf("turn %d: %w", t+1, err))
		}
	}
	s.total = time.Since(begin)
	in.Close()
	io.Copy(io.Discard, lines)
	if err := cmd.Wait(); err != nil {
		return session{}, fmt.Errorf("%v: %w (stderr: %s)", argv, err, stderr.String())
	}
	s.cpu = cpu(cmd.ProcessState)
	if s.rssKB, err = peakRSS(stderr.String()); err != nil {
		return s, err
	}
	if cassette != "" {
		f, _, err := importer.Load(cassette)
		if err != nil {
			return s, err
		}
		if len(f.Interactions) != turns || f.Session == nil || len(f.Session.Commands) != turns {
			return s, fmt.Errorf("the cassette holds %d interactions and the session %v", len(f.Interactions), f.Session != nil)
		}
	}
	return s, nil
}

// vcrProxy is the peer: stock go-vcr v2 in ModeRecording as the transport
// of a reverse proxy to -upstream, on loopback; it prints its URL and, on
// SIGINT, stops (go-vcr saves its cassette then) and exits.
func vcrProxy(args []string) error {
	fs := flag.NewFlagSet("vcr-proxy", flag.ExitOnError)
	cassette := fs.String("cassette", "", "the cassette file (.yaml)")
	upstream := fs.String("upstream", "", "the API to forward to")
	profile := fs.String("cpuprofile", "", "write a CPU profile here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cassette == "" || *upstream == "" {
		return errors.New("-cassette and -upstream are required")
	}
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			return err
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	up, err := url.Parse(*upstream)
	if err != nil {
		return err
	}
	r, err := vcrrecorder.NewAsMode(strings.TrimSuffix(*cassette, ".yaml"), vcrrecorder.ModeRecording, http.DefaultTransport)
	if err != nil {
		return err
	}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(up); pr.Out.Header.Del("Accept-Encoding") },
		Transport:     r,
		FlushInterval: -1,
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: rp}
	go srv.Serve(l)
	fmt.Printf("http://%s\n", l.Addr())
	<-stop
	srv.Close()
	return r.Stop()
}
