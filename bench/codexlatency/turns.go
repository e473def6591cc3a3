package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/openmax/openmax/replay/codexscenario"
)

// The per-turn part: a client's wait for the first token and for the end
// of each turn, through `openmax --stdio --provider codex` beside the same
// codex app-server driven directly with the same requests, each against a
// fake provider of its own playing the same scripted replies.
//
// A round is one session of each peer, T turns each. Turn 1 is timed from
// exec (openmax: exec, hello, the user command sent at once; codex:
// exec, initialize, thread/start, turn/start), so an app-server openmax
// starts late shows; turns 2..T from the command (openmax: the user line;
// codex: turn/start). The peers take turns going first, turn by turn and
// round by round, so load from other work falls on both alike.

// turnTimes are one turn's waits.
type turnTimes struct {
	first, done time.Duration
	sent        time.Time // when the command went out
}

// peerTimes collects a peer's turns: turn 1 apart, the later ones pooled.
type peerTimes struct {
	first1, done1 []time.Duration
	firstN, doneN []time.Duration
}

func (p *peerTimes) add(turn int, t turnTimes) {
	if turn == 0 {
		p.first1, p.done1 = append(p.first1, t.first), append(p.done1, t.done)
		return
	}
	p.firstN, p.doneN = append(p.firstN, t.first), append(p.doneN, t.done)
}

// turnScenario is T*rounds replies of chunks text chunks each, then a
// finish: what one peer's fake plays over all its sessions.
func turnScenario(replies, chunks int) string {
	var sc strings.Builder
	sc.WriteString("replies:\n")
	for range replies {
		sc.WriteString("  - chunks:\n")
		for c := range chunks {
			fmt.Fprintf(&sc, "      - text: \"w%d \"\n", c)
		}
		sc.WriteString("      - usage: {prompt_tokens: 10, completion_tokens: 4}\n      - finish: stop\n")
	}
	return sc.String()
}

// startScenarioFake serves scenario with `openmax fake-provider` and
// returns its base URL and a function that stops it.
func startScenarioFake(openmax, scratch, name, home, scenario string) (string, func(), error) {
	path := filepath.Join(scratch, name+"-scenario.yaml")
	if err := os.WriteFile(path, []byte(scenario), 0o600); err != nil {
		return "", nil, err
	}
	fake := exec.Command(openmax, "fake-provider", "--scenario", path)
	fake.Env = append([]string{"PATH=" + os.Getenv("PATH")}, codexscenario.OfflineEnv(home, "")...)
	fake.Stderr = io.Discard
	out, err := fake.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := fake.Start(); err != nil {
		return "", nil, fmt.Errorf("fake-provider: %w", err)
	}
	stop := func() {
		fake.Process.Signal(os.Interrupt)
		fake.Wait()
	}
	url, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(url, "http://127.0.0.1:") {
		stop()
		return "", nil, fmt.Errorf("fake-provider printed %q: %v", url, err)
	}
	return strings.TrimSpace(url), stop, nil
}

// turnSetup is what both peers of one reply size share.
type turnSetup struct {
	codex, openmax string
	work           string
	codexEnv       []string // direct codex: CODEX_HOME pointing at its fake
	openmaxEnv     []string // openmax: CODEX_HOME pointing at its fake
	// The params openmax sends, which the direct driver sends too, so
	// both peers ask codex for the same work (the same dynamic tools and
	// developer instructions in every model request).
	initParams, threadParams, turnParams map[string]any
}

// newCodexHome writes a CODEX_HOME for the fake at url.
func newCodexHome(dir, url string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.toml"), []byte(codexscenario.CodexHomeConfig(url, 0)), 0o600)
}

// captureParams runs one openmax --provider codex turn with
// --codex-transcript and returns the params of its initialize,
// thread/start and turn/start.
func captureParams(s *turnSetup, scratch string) error {
	tr := filepath.Join(scratch, "capture.jsonl")
	o, err := startOpenmaxCodex(s, s.openmax, "--codex-transcript", tr)
	if err != nil {
		return err
	}
	if _, err := o.turn(0, time.Now()); err != nil {
		o.close()
		return err
	}
	if err := o.close(); err != nil {
		return fmt.Errorf("openmax: %w", err)
	}
	b, err := os.ReadFile(tr)
	if err != nil {
		return err
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		var line struct {
			Dir string `json:"dir"`
			Msg struct {
				Method string         `json:"method"`
				Params map[string]any `json:"params"`
			} `json:"msg"`
		}
		if json.Unmarshal(l, &line) != nil || line.Dir != "send" {
			continue
		}
		switch line.Msg.Method {
		case "initialize":
			s.initParams = line.Msg.Params
		case "thread/start":
			s.threadParams = line.Msg.Params
		case "turn/start":
			s.turnParams = line.Msg.Params
		}
	}
	if s.initParams == nil || s.threadParams == nil || s.turnParams == nil {
		return fmt.Errorf("the transcript %s lacks initialize, thread/start or turn/start", tr)
	}
	return nil
}

// perTurn runs rounds sessions of turns turns of each peer for each reply
// size and prints the medians.
//
// relayOnly (-only relay) runs the relay part alone: no direct codex and
// no timing of the turns through the pipes alone.
func perTurn(codex, openmax, before, scratch string, sizes []int, turns, rounds int, relay, relayOnly bool) error {
	home := filepath.Join(scratch, "turns-home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	fmt.Printf("== per turn: %d turns a session, %d sessions of each peer per size, interleaved; medians (min..max)\n", turns, rounds)
	fmt.Printf("   turn 1 from exec; turns 2-%d from the command (openmax: user line; codex: turn/start)\n", turns)
	// The peers: openmax, the openmax of -before when given, and codex
	// driven directly (always last).
	bins := []string{openmax}
	names := []string{"openmax --provider codex"}
	if before != "" {
		bins = append(bins, before)
		names = append(names, "-before openmax")
	}
	type row struct {
		size  int
		peers []peerTimes  // bins..., then codex
		relay []relayTimes // bins..., through the relay
	}
	var rows []row
	for _, size := range sizes {
		// One fake for codex and one for the openmax peers; the capture
		// turn and every round draw replies from them in order.
		replies := len(bins)*rounds*turns + 1
		if relay {
			replies += len(bins) * rounds * turns
		}
		cxURL, stopCx, err := startScenarioFake(openmax, scratch, fmt.Sprintf("cx-%d", size), home, turnScenario(replies, size))
		if err != nil {
			return err
		}
		omURL, stopOm, err := startScenarioFake(openmax, scratch, fmt.Sprintf("om-%d", size), home, turnScenario(replies, size))
		if err != nil {
			stopCx()
			return err
		}
		s := &turnSetup{codex: codex, openmax: openmax, work: filepath.Join(scratch, "work")}
		cxHome, omHome := filepath.Join(scratch, fmt.Sprintf("cx-home-%d", size)), filepath.Join(scratch, fmt.Sprintf("om-home-%d", size))
		err = errors.Join(newCodexHome(cxHome, cxURL), newCodexHome(omHome, omURL))
		base := []string{"PATH=" + os.Getenv("PATH")}
		s.codexEnv = append(base, codexscenario.OfflineEnv(home, cxHome)...)
		s.openmaxEnv = append(append(base, "XDG_STATE_HOME="+filepath.Join(scratch, "state"), "XDG_CONFIG_HOME="+filepath.Join(scratch, "config")),
			codexscenario.OfflineEnv(home, omHome)...)
		if err == nil {
			// The capture turn uses openmax's fake: one reply of it.
			err = captureParams(s, scratch)
		}
		r := row{size: size, peers: make([]peerTimes, len(bins)+1)}
		for round := 0; err == nil && !relayOnly && round < rounds; round++ {
			err = turnRound(s, bins, turns, round, r.peers)
		}
		if err == nil && relay {
			r.relay, err = relayShares(s, scratch, bins, size, turns, rounds)
		}
		stopCx()
		stopOm()
		if err != nil {
			return fmt.Errorf("%d chunks: %w", size, err)
		}
		rows = append(rows, r)
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }
	// added is the median of the differences of the pairs (the same turn
	// of the same round of each peer, run next to each other), which
	// cancels load that lasts longer than a turn; the difference of the
	// medians is beside it.
	diff := func(a, b []time.Duration) string {
		d := make([]time.Duration, len(a))
		for i := range a {
			d[i] = a[i] - b[i]
		}
		return fmt.Sprintf("%+6.1f (%+.1f)", float64(median(d).Microseconds())/1000, float64((median(a)-median(b)).Microseconds())/1000)
	}
	if !relayOnly {
		fmt.Printf("   added: over codex app-server driven directly, the median of the paired differences (the difference of the medians)\n")
		fmt.Printf("   %-7s %-22s %-26s %-26s %-16s %s\n", "chunks", "what", "peer", "median (min..max) ms", "added", "limit")
	}
	for _, r := range rows {
		if relayOnly {
			break
		}
		cx := r.peers[len(r.peers)-1]
		whats := []struct {
			what  string
			of    func(peerTimes) []time.Duration
			limit string
		}{
			{"turn 1 exec->token", func(p peerTimes) []time.Duration { return p.first1 }, "no app-server start"},
			{"turn 1 exec->done", func(p peerTimes) []time.Duration { return p.done1 }, "no app-server start"},
			{fmt.Sprintf("turns 2-%d ->token", turns), func(p peerTimes) []time.Duration { return p.firstN }, "+2.0 ms"},
			{fmt.Sprintf("turns 2-%d ->done", turns), func(p peerTimes) []time.Duration { return p.doneN }, "+2.0 ms"},
		}
		for _, w := range whats {
			for k := range bins {
				fmt.Printf("   %-7d %-22s %-26s %-26s %-16s %s\n", r.size, w.what, names[k], span(w.of(r.peers[k]), ms), diff(w.of(r.peers[k]), w.of(cx)), w.limit)
			}
			fmt.Printf("   %-7d %-22s %-26s %-26s\n", r.size, w.what, "codex app-server direct", span(w.of(cx), ms))
		}
	}
	if relay {
		fmt.Printf("== openmax's own share of turns 2-%d (-relay: codex behind a relay that notes turn/start, the first delta and turn/completed; %d sessions a size, the binaries' turns interleaved)\n", turns, rounds)
		fmt.Printf("   parts: start = user -> turn/start, token = first delta -> token, done = completed -> done; cpu = openmax's CPU time a turn (its threads only)\n")
		if len(bins) > 1 {
			fmt.Printf("   vs -before (on the -before rows): -openmax less -before, the median of the paired differences (the same turn of the same round)\n")
		}
		fmt.Printf("   %-7s %-26s %-24s %-24s %-10s %s\n", "chunks", "peer", "what", "median (min..max) ms", "vs -before", "limit")
		for _, r := range rows {
			for k := range bins {
				rt := r.relay[k]
				lines := []struct {
					what  string
					ds    []time.Duration
					of    func(relayTimes) []time.Duration
					limit string
				}{
					{"start + token", rt.first, func(t relayTimes) []time.Duration { return t.first }, "+2.0 ms"},
					{"start + done", rt.done, func(t relayTimes) []time.Duration { return t.done }, "+2.0 ms"},
					{"  start", rt.toStart, func(t relayTimes) []time.Duration { return t.toStart }, ""},
					{"  token", rt.toToken, func(t relayTimes) []time.Duration { return t.toToken }, ""},
					{"  done", rt.toDone, func(t relayTimes) []time.Duration { return t.toDone }, ""},
					{"cpu a turn", rt.cpu, func(t relayTimes) []time.Duration { return t.cpu }, ""},
				}
				for _, l := range lines {
					if len(l.ds) == 0 {
						continue
					}
					vs := ""
					if k > 0 {
						vs = paired(r.relay[0], r.relay[k], l.of)
					}
					fmt.Printf("   %-7d %-26s %-24s %-24s %-10s %s\n", r.size, names[k], l.what, span(l.ds, ms), vs, l.limit)
				}
			}
		}
	}
	return nil
}

// paired is the median of a's figures less b's, pair by pair, in
// milliseconds.
func paired(a, b relayTimes, of func(relayTimes) []time.Duration) string {
	x, y := of(a), of(b)
	d := make([]time.Duration, 0, len(x))
	for i := range min(len(x), len(y)) {
		d = append(d, x[i]-y[i])
	}
	if len(d) == 0 {
		return ""
	}
	return fmt.Sprintf("%+.2f", float64(median(d).Microseconds())/1000)
}

// span is a median with its range, in milliseconds.
func span(ds []time.Duration, ms func(time.Duration) string) string {
	lo, hi := ds[0], ds[0]
	for _, d := range ds {
		lo, hi = min(lo, d), max(hi, d)
	}
	return fmt.Sprintf("%7s (%s..%s)", ms(median(ds)), ms(lo), ms(hi))
}

// turnSession is one peer's session: a turn timed from start when it is
// set, else from its command.
type turnSession interface {
	turn(i int, start time.Time) (turnTimes, error)
	close() error
}

// turnRound runs one session of each peer (the openmax binaries bins,
// then codex driven directly), their turns interleaved, the first peer of
// each turn rotating.
func turnRound(s *turnSetup, bins []string, turns, round int, times []peerTimes) error {
	sessions := make([]turnSession, len(times))
	defer func() {
		for _, ss := range sessions {
			if ss != nil {
				ss.close()
			}
		}
	}()
	for i := range turns {
		for k := range times {
			p := (i + k + round) % len(times)
			var t turnTimes
			var err error
			if i == 0 {
				start := time.Now()
				if p < len(bins) {
					var o *openmaxCodex
					o, err = startOpenmaxCodex(s, bins[p])
					if o != nil {
						sessions[p] = o
					}
				} else {
					var c *directCodex
					c, err = startDirectCodex(s)
					if c != nil {
						sessions[p] = c
					}
				}
				if err != nil {
					return fmt.Errorf("peer %d: %w", p, err)
				}
				t, err = sessions[p].turn(i, start)
			} else {
				t, err = sessions[p].turn(i, time.Time{})
			}
			if err != nil {
				return fmt.Errorf("peer %d, turn %d: %w", p, i+1, err)
			}
			times[p].add(i, t)
		}
	}
	return nil
}

// openmaxCodex is an `openmax --stdio --provider codex` session.
type openmaxCodex struct{ *openmaxTurns }

// startOpenmaxCodex execs openmax and waits for hello.
func startOpenmaxCodex(s *turnSetup, bin string, extra ...string) (*openmaxCodex, error) {
	if err := os.MkdirAll(s.work, 0o700); err != nil {
		return nil, err
	}
	o, err := startOpenmax(bin, s.work, s.openmaxEnv, append([]string{"--stdio", "--provider", "codex", "--codex", s.codex}, extra...)...)
	if err != nil {
		return nil, err
	}
	return &openmaxCodex{o}, nil
}

// startLines starts cmd with its stdout read line by line.
func startLines(cmd *exec.Cmd) (*openmaxTurns, error) {
	lines := make(chan timedLine, 1<<16)
	in, err := spawnLines(cmd, func(line []byte, at time.Time) { lines <- timedLine{line, at} }, func() { close(lines) })
	if err != nil {
		return nil, err
	}
	return &openmaxTurns{cmd: cmd, in: in, lines: lines}, nil
}

// turn sends user turn i and times its first token and its done, from
// start (the exec) when it is set, else from the command.
func (o *openmaxCodex) turn(i int, start time.Time) (turnTimes, error) {
	sent := time.Now()
	if _, err := fmt.Fprintf(o.in, `{"cmd":"user","text":"Say something (%d)."}`+"\n", i); err != nil {
		return turnTimes{}, err
	}
	if !start.IsZero() {
		sent = start
	}
	tok, err := o.await(func(l []byte) bool {
		return bytes.Contains(l, []byte(`"type":"token"`)) || bytes.Contains(l, []byte(`"type":"done"`))
	})
	if err != nil {
		return turnTimes{}, fmt.Errorf("waiting for a token: %w", err)
	}
	if !bytes.Contains(tok.line, []byte(`"type":"token"`)) {
		return turnTimes{}, fmt.Errorf("the turn ended with no token: %.300s", tok.line)
	}
	done, err := o.await(func(l []byte) bool { return bytes.Contains(l, []byte(`"type":"done"`)) })
	if err != nil {
		return turnTimes{}, fmt.Errorf("waiting for done: %w", err)
	}
	if !bytes.Contains(done.line, []byte(`"stop_reason":"completed"`)) {
		return turnTimes{}, fmt.Errorf("the turn ended with %.300s", done.line)
	}
	return turnTimes{tok.at.Sub(sent), done.at.Sub(sent), sent}, nil
}

// close ends the session (closing the app-server's stdin).
func (c *directCodex) close() error { return c.s.close() }

// directCodex is codex app-server driven directly, one thread.
type directCodex struct {
	s      *session
	setup  *turnSetup
	thread string
}

// startDirectCodex execs codex app-server, initializes it and starts a
// thread with openmax's params.
func startDirectCodex(s *turnSetup) (*directCodex, error) {
	argv := []string{s.codex, "app-server", "-c", "check_for_update_on_startup=false"}
	sess, err := startSession(argv, s.work, s.codexEnv)
	if err != nil {
		return nil, err
	}
	c := &directCodex{s: sess, setup: s}
	if _, err := sess.call("initialize", s.initParams); err != nil {
		sess.close()
		return nil, err
	}
	if _, err := sess.send(map[string]any{"method": "initialized"}); err != nil {
		sess.close()
		return nil, err
	}
	res, err := sess.call("thread/start", s.threadParams)
	if err != nil {
		sess.close()
		return nil, err
	}
	var started struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := json.Unmarshal(res, &started); err != nil || started.Thread.ID == "" {
		sess.close()
		return nil, fmt.Errorf("thread/start answered %.200s", res)
	}
	c.thread = started.Thread.ID
	return c, nil
}

// turn starts turn i and times its first delta and turn/completed, from
// start when it is set, else from turn/start.
func (c *directCodex) turn(i int, start time.Time) (turnTimes, error) {
	p := map[string]any{}
	for k, v := range c.setup.turnParams {
		p[k] = v
	}
	p["threadId"] = c.thread
	p["input"] = []any{map[string]any{"type": "text", "text": fmt.Sprintf("Say something (%d).", i), "text_elements": []any{}}}
	id, sent, err := c.s.request("turn/start", p)
	if err != nil {
		return turnTimes{}, err
	}
	if !start.IsZero() {
		sent = start
	}
	want := fmt.Sprint(id)
	var first time.Time
	for {
		r, err := c.s.await(func(m message) bool {
			return m.Method == "item/agentMessage/delta" || m.Method == "turn/completed" || (m.Method == "" && string(m.ID) == want)
		})
		if err != nil {
			return turnTimes{}, err
		}
		switch {
		case r.msg.Method == "" && r.msg.Error != nil:
			return turnTimes{}, fmt.Errorf("turn/start: %s", r.msg.Error.Message)
		case r.msg.Method == "item/agentMessage/delta":
			if first.IsZero() {
				first = r.at
			}
		case r.msg.Method == "turn/completed":
			if !bytes.Contains(r.msg.Params, []byte(`"status":"completed"`)) {
				return turnTimes{}, fmt.Errorf("turn completed as %.300s", r.msg.Params)
			}
			if first.IsZero() {
				return turnTimes{}, errors.New("the turn completed with no delta")
			}
			return turnTimes{first.Sub(sent), r.at.Sub(sent), sent}, nil
		}
	}
}
