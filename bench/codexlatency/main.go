// Command codexlatency measures, in one run, how long a client waits on the
// real codex app-server beside openmax (a manual measurement, never run in
// CI):
//
//   - exec → the answer to initialize of `codex app-server`, beside exec →
//     hello of `openmax --stdio --provider echo`, interleaved round by round
//     (each round starting with the next kind, so load from other work falls
//     on all alike), with CODEX_HOME kept across runs (a user's every-day
//     start) and, as a third kind, a new CODEX_HOME each run (a first start);
//   - turn/interrupt → turn/completed (status interrupted) of codex beside
//     cancel → done (stop_reason cancelled) of `openmax --stdio --provider
//     openai --api responses`, each with the model's stream stalled
//     mid-answer by a fake of its own, over one session each, the turns
//     interleaved;
//   - per turn, the first token and the end of each turn of `openmax
//     --stdio --provider codex` beside codex app-server driven directly
//     with the same requests (turns.go), at three reply sizes, and, with
//     -before, a second openmax binary in the same interleaved run.
//
// codex runs offline: its model provider is `openmax fake-provider`
// (Responses wire) on loopback, its CODEX_HOME a scratch folder with its own
// config.toml, and the proxy variables point at a closed loopback port (see
// docs/codex.md). It talks raw JSON lines to codex, so it depends on nothing
// in provider/codex.
//
// Usage: go run ./bench/codexlatency [-n 20] [-interrupts 10] [-codex PATH] [-openmax PATH]
// [-only startup|turns|relay] [-turns 10] [-rounds 5] [-chunks 10,100,1000] [-before PATH] [-relay]
//
// Without a codex binary (-codex, $CODEX, codex on PATH, or the npm install
// under ${XDG_CACHE_HOME:-~/.cache}/openmax-npm) it says so and exits 0.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/openmax/openmax/bench/internal/benchcli"
	"github.com/openmax/openmax/bench/internal/childtime"
	"github.com/openmax/openmax/replay/codexscenario"
)

func main() {
	if log := os.Getenv(relayEnv); log != "" {
		os.Exit(runRelay(log, os.Args[1:]))
	}
	n := flag.Int("n", 20, "timed start-up rounds (after one untimed warm-up round)")
	interrupts := flag.Int("interrupts", 10, "turns to interrupt")
	codexFlag := flag.String("codex", "", "the codex binary (default: $CODEX, codex on PATH, or the npm install under the openmax-npm cache)")
	openmaxFlag := flag.String("openmax", "", "the openmax binary (default: built from this checkout into the scratch folder)")
	keep := flag.Bool("keep", false, "keep the scratch folder")
	turns := flag.Int("turns", 10, "turns a session in the per-turn part")
	rounds := flag.Int("rounds", 5, "sessions of each peer per reply size in the per-turn part")
	chunksFlag := flag.String("chunks", "10,100,1000", "reply sizes (text chunks a reply) of the per-turn part, comma-separated")
	before := flag.String("before", "", "another openmax binary to time beside -openmax in the per-turn part (a before/after comparison in one interleaved run)")
	relay := flag.Bool("relay", false, "also time openmax's own share of each turn, codex behind a relay (relay.go)")
	only := flag.String("only", "", "run only one part: startup (exec and interrupts), turns (per-turn latency of --provider codex), or relay (openmax's own share alone, -relay without the direct comparison)")
	flag.Parse()
	var sizes []int
	for _, f := range strings.Split(*chunksFlag, ",") {
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "codexlatency: -chunks: %q is not a positive number\n", f)
			os.Exit(2)
		}
		sizes = append(sizes, n)
	}
	codex := findCodex(*codexFlag)
	if codex == "" {
		fmt.Println("codexlatency: skipped: no codex binary (give -codex PATH or CODEX=PATH, put codex on PATH, or run go test ./cmd/openmax -run TestCodex once to install @openai/codex under the openmax-npm cache)")
		return
	}
	if _, err := os.Stat(codex); err != nil {
		fmt.Fprintf(os.Stderr, "codexlatency: the codex binary: %v\n", err)
		os.Exit(1)
	}
	if err := run(codex, *openmaxFlag, *n, *interrupts, *keep, *only, *before, sizes, *turns, *rounds, *relay); err != nil {
		fmt.Fprintf(os.Stderr, "codexlatency: %v\n", err)
		os.Exit(1)
	}
}

// codexPackages names, per platform, the npm package carrying codex's
// native binary and the target triple of its vendor folder.
var codexPackages = map[string][2]string{
	"linux/amd64":  {"codex-linux-x64", "x86_64-unknown-linux-musl"},
	"linux/arm64":  {"codex-linux-arm64", "aarch64-unknown-linux-musl"},
	"darwin/amd64": {"codex-darwin-x64", "x86_64-apple-darwin"},
	"darwin/arm64": {"codex-darwin-arm64", "aarch64-apple-darwin"},
}

// findCodex returns the codex binary to time, or "" when there is none.
func findCodex(flagged string) string {
	if flagged != "" {
		return flagged
	}
	if c := os.Getenv("CODEX"); c != "" {
		return c
	}
	if c, err := exec.LookPath("codex"); err == nil {
		return c
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		cache = filepath.Join(home, ".cache")
	}
	pkg, ok := codexPackages[runtime.GOOS+"/"+runtime.GOARCH]
	if !ok {
		return ""
	}
	found, _ := filepath.Glob(filepath.Join(cache, "openmax-npm", "*", "node_modules", "@openai", pkg[0], "vendor", pkg[1], "bin", "codex"))
	if len(found) == 0 {
		return ""
	}
	return found[0]
}

func run(codex, openmax string, n, interrupts int, keep bool, only, before string, sizes []int, turns, rounds int, relay bool) error {
	scratch, err := os.MkdirTemp("", "codexlatency-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Println("keeping", scratch)
	} else {
		defer os.RemoveAll(scratch)
	}
	if openmax == "" {
		if openmax, err = benchcli.BuildOpenmax(scratch); err != nil {
			return err
		}
	}
	version, _ := exec.Command(codex, "--version").Output()
	fmt.Printf("== codex %s (%s), %s/%s, %d CPUs\n", strings.TrimSpace(string(version)), codex, runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	if only == "turns" || only == "relay" {
		return perTurn(codex, openmax, before, scratch, sizes, turns, rounds, relay || only == "relay", only == "relay")
	}

	dirs := map[string]string{}
	for _, d := range []string{"home", "codex-home", "work", "state", "config"} {
		dirs[d] = filepath.Join(scratch, d)
		if err := os.MkdirAll(dirs[d], 0o700); err != nil {
			return err
		}
	}
	// Each peer gets a fake of its own, one stalled reply per interrupted
	// turn: two text chunks, then nothing until the client hangs up.
	codexURL, stopCodexFake, err := startFake(openmax, scratch, "codex", dirs["home"], interrupts)
	if err != nil {
		return err
	}
	defer stopCodexFake()
	openmaxURL, stopOpenmaxFake, err := startFake(openmax, scratch, "openmax", dirs["home"], interrupts)
	if err != nil {
		return err
	}
	defer stopOpenmaxFake()
	cfg := codexscenario.CodexHomeConfig(codexURL, 0)
	if err := os.WriteFile(filepath.Join(dirs["codex-home"], "config.toml"), []byte(cfg), 0o600); err != nil {
		return err
	}
	codexEnv := func(codexHome string) []string {
		return append([]string{"PATH=" + os.Getenv("PATH")}, codexscenario.OfflineEnv(dirs["home"], codexHome)...)
	}
	env := append([]string{"PATH=" + os.Getenv("PATH"), "XDG_STATE_HOME=" + dirs["state"], "XDG_CONFIG_HOME=" + dirs["config"], "OPENAI_API_KEY=sk-openmax-bench"},
		codexscenario.OfflineEnv(dirs["home"], "")...)

	// 1. Start-up, interleaved.
	const initialize = `{"id":1,"method":"initialize","params":{"clientInfo":{"name":"openmax-bench","version":"0"},"capabilities":{"experimentalApi":true}}}` + "\n"
	codexArgv := []string{codex, "app-server", "-c", "check_for_update_on_startup=false"}
	isInitReply := func(l []byte) bool { return bytes.HasPrefix(l, []byte(`{"id":1,`)) }
	type kind struct {
		name string
		run  func(round int) (time.Duration, error)
	}
	kinds := []kind{
		{"openmax --stdio --provider echo: exec -> hello", func(int) (time.Duration, error) {
			return firstLine(openmaxArgv(openmax), dirs["work"], env, "", func(l []byte) bool { return bytes.HasPrefix(l, []byte(`{"type":"hello"`)) })
		}},
		{"codex app-server: exec -> initialize answered", func(int) (time.Duration, error) {
			return firstLine(codexArgv, dirs["work"], codexEnv(dirs["codex-home"]), initialize, isInitReply)
		}},
		{"codex app-server, new CODEX_HOME each run", func(round int) (time.Duration, error) {
			home := filepath.Join(scratch, fmt.Sprintf("codex-home-%d", round))
			if err := os.MkdirAll(home, 0o700); err != nil {
				return 0, err
			}
			defer os.RemoveAll(home)
			if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
				return 0, err
			}
			return firstLine(codexArgv, dirs["work"], codexEnv(home), initialize, isInitReply)
		}},
	}
	times := make([][]time.Duration, len(kinds))
	for round := 0; round <= n; round++ {
		for i := range kinds {
			k := (round + i) % len(kinds)
			d, err := kinds[k].run(round)
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", kinds[k].name, round, err)
			}
			if round > 0 { // round 0 warms the page cache
				times[k] = append(times[k], d)
			}
		}
	}

	// 2. Interrupts: one session of each, their turns interleaved.
	codexLat, openmaxLat, err := interrupts2(codexArgv, codexEnv(dirs["codex-home"]), openmax, openmaxURL, env, dirs["work"], interrupts)
	if err != nil {
		return err
	}

	fmt.Printf("== exec -> first answer, %d interleaved rounds (median, min..max)\n", n)
	for k, kd := range kinds {
		fmt.Printf("   %-48s %s\n", kd.name, summary(times[k]))
	}
	ratio := float64(median(times[1])) / float64(median(times[0]))
	fmt.Printf("   codex / openmax (medians)                        %.1fx\n", ratio)
	fmt.Printf("== cancel -> the turn's end, %d turns each, interleaved, the model's stream stalled mid-answer\n", interrupts)
	fmt.Printf("   %-48s %s\n", "openmax: cancel -> done cancelled", summary(openmaxLat))
	fmt.Printf("   %-48s %s\n", "codex: turn/interrupt -> turn/completed", summary(codexLat))
	fmt.Printf("   codex / openmax (medians)                        %.1fx\n", float64(median(codexLat))/float64(median(openmaxLat)))
	if only == "startup" {
		return nil
	}
	return perTurn(codex, openmax, before, scratch, sizes, turns, rounds, relay, false)
}

// openmaxArgv is the openmax start-up timed beside codex's.
func openmaxArgv(bin string) []string { return []string{bin, "--stdio", "--provider", "echo"} }

// firstLine times argv from exec to the first stdout line want accepts,
// with stdin written at the start (bench/internal/childtime).
func firstLine(argv []string, dir string, env []string, stdin string, want func([]byte) bool) (time.Duration, error) {
	return childtime.FirstLine(childtime.Spawn{Argv: argv, Dir: dir, Env: env, Stdin: stdin,
		Skip: func(l []byte) bool { return !want(l) }}, func([]byte) error { return nil })
}

// message is the part of a JSON-RPC line from codex this program reads.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// received is a line from codex and when it was read.
type received struct {
	msg message
	at  time.Time
}

// session is one codex app-server child spoken to in JSON lines.
type session struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan received
	nextID int
}

func startSession(argv []string, dir string, env []string) (*session, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	lines := make(chan received, 1<<16)
	in, err := spawnLines(cmd, func(line []byte, at time.Time) {
		if len(bytes.TrimSpace(line)) > 0 {
			var m message
			if json.Unmarshal(line, &m) == nil {
				lines <- received{m, at}
			}
		}
	}, func() { close(lines) })
	if err != nil {
		return nil, err
	}
	return &session{cmd: cmd, in: in, lines: lines}, nil
}

// spawnLines starts cmd and hands each line of its stdout to got, with
// the time it was read (before got looks at it), from a goroutine that
// calls end when stdout ends. It returns cmd's stdin.
func spawnLines(cmd *exec.Cmd, got func(line []byte, at time.Time), end func()) (io.WriteCloser, error) {
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		defer end()
		br := bufio.NewReaderSize(out, 1<<16)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				got(line, time.Now())
			}
			if err != nil {
				return
			}
		}
	}()
	return in, nil
}

// send writes one JSON line and returns when it was written.
func (s *session) send(v any) (time.Time, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return time.Time{}, err
	}
	at := time.Now()
	_, err = s.in.Write(append(b, '\n'))
	return at, err
}

// request sends a request and returns its id and when it went out.
func (s *session) request(method string, params any) (int, time.Time, error) {
	s.nextID++
	at, err := s.send(map[string]any{"id": s.nextID, "method": method, "params": params})
	return s.nextID, at, err
}

// await returns the first line match accepts, answering any server request
// on the way with an error (none is expected with approvals off).
func (s *session) await(match func(message) bool) (received, error) {
	timeout := time.After(30 * time.Second)
	for {
		select {
		case r, ok := <-s.lines:
			if !ok {
				return received{}, errors.New("codex closed its stdout")
			}
			if r.msg.Method != "" && len(r.msg.ID) > 0 {
				if _, err := s.send(map[string]any{"id": r.msg.ID, "error": map[string]any{"code": -32601, "message": "not supported by codexlatency"}}); err != nil {
					return received{}, err
				}
				continue
			}
			if match(r.msg) {
				return r, nil
			}
		case <-timeout:
			return received{}, errors.New("no answer within 30 s")
		}
	}
}

// call sends a request and returns its result.
func (s *session) call(method string, params any) (json.RawMessage, error) {
	id, _, err := s.request(method, params)
	if err != nil {
		return nil, err
	}
	want := fmt.Sprint(id)
	r, err := s.await(func(m message) bool { return m.Method == "" && string(m.ID) == want })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if r.msg.Error != nil {
		return nil, fmt.Errorf("%s: %d %s", method, r.msg.Error.Code, r.msg.Error.Message)
	}
	return r.msg.Result, nil
}

// close ends the session by closing stdin.
func (s *session) close() error {
	s.in.Close()
	for range s.lines {
	}
	return s.cmd.Wait()
}

// startFake starts `openmax fake-provider` on a scenario of turns stalled
// replies (two text chunks, then nothing until the client hangs up) and
// returns its base URL and a function that stops it.
func startFake(openmax, scratch, name, home string, turns int) (string, func(), error) {
	var sc strings.Builder
	sc.WriteString("replies:\n")
	for range turns {
		sc.WriteString("  - chunks:\n      - text: \"Streaming\"\n      - text: \" and then\"\n      - stall: true\n")
	}
	return startScenarioFake(openmax, scratch, name, home, sc.String())
}

// interrupts2 opens a codex app-server session and an openmax --stdio
// session (the Responses wire, against its own fake) and, turns times,
// starts a turn in each, waits for its second text delta (the fake then
// stalls) and times the cancel to the turn's end, alternating which peer
// goes first.
func interrupts2(codexArgv, codexEnv []string, openmax, openmaxURL string, openmaxEnv []string, dir string, turns int) (codexLat, openmaxLat []time.Duration, err error) {
	c, err := startCodexTurns(codexArgv, dir, codexEnv)
	if err != nil {
		return nil, nil, fmt.Errorf("codex: %w", err)
	}
	defer c.s.close()
	o, err := startOpenmaxTurns(openmax, openmaxURL, dir, openmaxEnv)
	if err != nil {
		return nil, nil, fmt.Errorf("openmax: %w", err)
	}
	defer o.close()
	for i := range turns {
		for k := range 2 {
			if (i+k)%2 == 0 {
				d, err := c.interrupt(i)
				if err != nil {
					return nil, nil, fmt.Errorf("codex, turn %d: %w", i, err)
				}
				codexLat = append(codexLat, d)
			} else {
				d, err := o.cancel(i)
				if err != nil {
					return nil, nil, fmt.Errorf("openmax, turn %d: %w", i, err)
				}
				openmaxLat = append(openmaxLat, d)
			}
		}
	}
	return codexLat, openmaxLat, nil
}

// codexTurns is a codex app-server session with one thread.
type codexTurns struct {
	s      *session
	thread string
}

func startCodexTurns(argv []string, dir string, env []string) (*codexTurns, error) {
	s, err := startSession(argv, dir, env)
	if err != nil {
		return nil, err
	}
	c := &codexTurns{s: s}
	if err := c.open(dir); err != nil {
		s.close()
		return nil, err
	}
	return c, nil
}

// open initializes the session and starts the thread.
func (c *codexTurns) open(dir string) error {
	if _, err := c.s.call("initialize", map[string]any{
		"clientInfo":   map[string]any{"name": "openmax-bench", "version": "0"},
		"capabilities": map[string]any{"experimentalApi": true},
	}); err != nil {
		return err
	}
	if _, err := c.s.send(map[string]any{"method": "initialized"}); err != nil {
		return err
	}
	res, err := c.s.call("thread/start", map[string]any{"cwd": dir, "approvalPolicy": "never", "sandbox": "danger-full-access"})
	if err != nil {
		return err
	}
	var started struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := json.Unmarshal(res, &started); err != nil || started.Thread.ID == "" {
		return fmt.Errorf("thread/start answered %.200s", res)
	}
	c.thread = started.Thread.ID
	return nil
}

// interrupt starts turn i, waits for its second text delta and times
// turn/interrupt → turn/completed, which must say interrupted.
func (c *codexTurns) interrupt(i int) (time.Duration, error) {
	res, err := c.s.call("turn/start", map[string]any{"threadId": c.thread, "input": []any{map[string]any{"type": "text", "text": fmt.Sprintf("Stream something (%d).", i)}}})
	if err != nil {
		return 0, err
	}
	var turn struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	if err := json.Unmarshal(res, &turn); err != nil || turn.Turn.ID == "" {
		return 0, fmt.Errorf("turn/start answered %.200s", res)
	}
	if _, err := c.s.await(func(m message) bool {
		return m.Method == "item/agentMessage/delta" && bytes.Contains(m.Params, []byte(`"delta":" and then"`))
	}); err != nil {
		return 0, fmt.Errorf("waiting for the stream: %w", err)
	}
	_, sent, err := c.s.request("turn/interrupt", map[string]any{"threadId": c.thread, "turnId": turn.Turn.ID})
	if err != nil {
		return 0, err
	}
	done, err := c.s.await(func(m message) bool { return m.Method == "turn/completed" })
	if err != nil {
		return 0, fmt.Errorf("waiting for turn/completed: %w", err)
	}
	var completed struct {
		Turn struct {
			Status string `json:"status"`
		} `json:"turn"`
	}
	if err := json.Unmarshal(done.msg.Params, &completed); err != nil || completed.Turn.Status != "interrupted" {
		return 0, fmt.Errorf("turn completed as %.300s", done.msg.Params)
	}
	return done.at.Sub(sent), nil
}

// openmaxTurns is an openmax --stdio session on the Responses wire.
type openmaxTurns struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan timedLine
}

// timedLine is a stdout line and when it was read.
type timedLine struct {
	line []byte
	at   time.Time
}

func startOpenmaxTurns(bin, url, dir string, env []string) (*openmaxTurns, error) {
	return startOpenmax(bin, dir, env, "--stdio", "--provider", "openai", "--api", "responses", "--base-url", url+"/v1")
}

// startOpenmax trusts dir (turns run only in trusted projects), execs bin
// with args there and waits for hello.
func startOpenmax(bin, dir string, env []string, args ...string) (*openmaxTurns, error) {
	trust := exec.Command(bin, "trust", dir)
	trust.Dir, trust.Env = dir, env
	if out, err := trust.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("openmax trust: %w: %s", err, out)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, env
	o, err := startLines(cmd)
	if err != nil {
		return nil, err
	}
	if _, err := o.await(func(l []byte) bool { return bytes.HasPrefix(l, []byte(`{"type":"hello"`)) }); err != nil {
		o.close()
		return nil, err
	}
	return o, nil
}

// await returns the first line want accepts.
func (o *openmaxTurns) await(want func([]byte) bool) (timedLine, error) {
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-o.lines:
			if !ok {
				return timedLine{}, errors.New("openmax closed its stdout")
			}
			if want(l.line) {
				return l, nil
			}
		case <-timeout:
			return timedLine{}, errors.New("no answer within 30 s")
		}
	}
}

// cancel sends user turn i, waits for its second token and times cancel →
// done, which must say cancelled.
func (o *openmaxTurns) cancel(i int) (time.Duration, error) {
	if _, err := fmt.Fprintf(o.in, `{"cmd":"user","text":"Stream something (%d)."}`+"\n", i); err != nil {
		return 0, err
	}
	if _, err := o.await(func(l []byte) bool {
		return bytes.Contains(l, []byte(`"type":"token"`)) && bytes.Contains(l, []byte(`"text":" and then"`))
	}); err != nil {
		return 0, fmt.Errorf("waiting for the stream: %w", err)
	}
	sent := time.Now()
	if _, err := io.WriteString(o.in, `{"cmd":"cancel"}`+"\n"); err != nil {
		return 0, err
	}
	done, err := o.await(func(l []byte) bool { return bytes.Contains(l, []byte(`"type":"done"`)) })
	if err != nil {
		return 0, fmt.Errorf("waiting for done: %w", err)
	}
	if !bytes.Contains(done.line, []byte(`"stop_reason":"cancelled"`)) {
		return 0, fmt.Errorf("the turn ended with %.200s", done.line)
	}
	return done.at.Sub(sent), nil
}

// close ends the session by closing stdin (a quit).
func (o *openmaxTurns) close() error {
	o.in.Close()
	for range o.lines {
	}
	return o.cmd.Wait()
}

// median is the middle of ds (the mean of the two middle values when their
// number is even).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// summary formats the median and the range of ds in milliseconds.
func summary(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }
	return fmt.Sprintf("%7s ms  (%s..%s, n=%d)", ms(median(s)), ms(s[0]), ms(s[len(s)-1]), len(s))
}
