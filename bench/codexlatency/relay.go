package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The relay part (-relay): openmax's own share of each turn, with codex's
// time taken out. openmax runs this program as its app-server
// (--codex "SELF CODEX"); it runs codex and passes every line through,
// noting in a log, just before it passes them on, when turn/start came
// from openmax and when the turn's first delta and turn/completed came
// from codex. openmax's share of a turn is then
//
//	to the first token: user written → turn/start noted, plus first delta
//	noted → token read;
//	to done: user written → turn/start noted, plus turn/completed noted →
//	done read;
//
// what openmax does on its side of the pipes (the relay's own hop in each
// direction included, so the share is if anything high).

// relayEnv names the log a relay writes; set, it makes this program a
// relay.
const relayEnv = "CODEXLATENCY_RELAY_LOG"

// runRelay runs codex (argv) between stdin/stdout and notes the times.
func runRelay(log string, argv []string) int {
	f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "codexlatency relay:", err)
		return 1
	}
	defer f.Close()
	var mu sync.Mutex
	note := func(what string, at time.Time) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(f, "%s %d\n", what, at.UnixNano())
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return 1
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "codexlatency relay:", err)
		return 1
	}
	var first sync.Mutex
	waiting := false // a turn/start went out and no delta came back yet
	go func() {
		br := bufio.NewReaderSize(os.Stdin, 1<<16)
		for {
			line, err := br.ReadBytes('\n')
			if bytes.Contains(line, []byte(`"method":"turn/start"`)) {
				note("start", time.Now())
				first.Lock()
				waiting = true
				first.Unlock()
			}
			if len(line) > 0 {
				if _, werr := in.Write(line); werr != nil {
					return
				}
			}
			if err != nil {
				in.Close()
				return
			}
		}
	}()
	w := bufio.NewWriterSize(os.Stdout, 1<<16)
	br := bufio.NewReaderSize(out, 1<<16)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			switch {
			case bytes.Contains(line, []byte(`"method":"item/agentMessage/delta"`)):
				first.Lock()
				if waiting {
					waiting = false
					note("delta", time.Now())
				}
				first.Unlock()
			case bytes.Contains(line, []byte(`"method":"turn/completed"`)):
				note("completed", time.Now())
			}
			w.Write(line)
			if br.Buffered() == 0 || bytes.Contains(line, []byte(`"method":"turn/completed"`)) {
				w.Flush()
			}
		}
		if err != nil {
			w.Flush()
			break
		}
	}
	if err := cmd.Wait(); err != nil {
		return 1
	}
	return 0
}

// relayLog reads the notes a relay appended to its log since offset.
type relayLog struct {
	path   string
	offset int64
}

// next returns the notes written since the last call, by name.
func (l *relayLog) next() (map[string]time.Time, error) {
	f, err := os.Open(l.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(l.offset, io.SeekStart); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	l.offset += int64(len(b))
	notes := map[string]time.Time{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		what, ns, ok := strings.Cut(line, " ")
		n, err := strconv.ParseInt(ns, 10, 64)
		if !ok || err != nil {
			continue
		}
		notes[what] = time.Unix(0, n)
	}
	return notes, nil
}

// relayTimes is one openmax binary's share of turns 2..T through the
// relay, with its parts, and the CPU time openmax spent on those turns.
type relayTimes struct {
	first, done []time.Duration // the shares (above)
	// The parts: user written -> turn/start noted, first delta noted ->
	// token read, turn/completed noted -> done read.
	toStart, toToken, toDone []time.Duration
	// cpu is openmax's own CPU time (every thread's, from
	// /proc/PID/task/*/schedstat) over turns 2..T of a session, divided by
	// the turns; nil where /proc has no schedstat.
	cpu []time.Duration
}

// relaySession is one openmax session through a relay of its own.
type relaySession struct {
	o   *openmaxCodex
	log *relayLog
	cpu time.Duration // CPU time at the end of turn 1
}

// relayShares runs rounds sessions of each openmax binary in bins through
// the relay, turns turns each, the binaries' turns interleaved (the first
// to go rotating turn by turn and round by round, as in turnRound), and
// returns each binary's share of turns 2..turns.
func relayShares(s *turnSetup, scratch string, bins []string, size, turns, rounds int) ([]relayTimes, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	out := make([]relayTimes, len(bins))
	for round := range rounds {
		sessions := make([]*relaySession, len(bins))
		closeAll := func() {
			for _, rs := range sessions {
				if rs != nil {
					rs.o.close()
				}
			}
		}
		for k, bin := range bins {
			log := &relayLog{path: filepath.Join(scratch, fmt.Sprintf("relay-%d-%d-%d.log", size, round, k))}
			rs := *s
			rs.codex = self + " " + s.codex
			rs.openmaxEnv = append(append([]string{}, s.openmaxEnv...), relayEnv+"="+log.path)
			o, err := startOpenmaxCodex(&rs, bin)
			if err != nil {
				closeAll()
				return nil, err
			}
			sessions[k] = &relaySession{o: o, log: log}
		}
		for i := range turns {
			for j := range bins {
				k := (i + j + round) % len(bins)
				if err := relayTurn(sessions[k], &out[k], i, turns); err != nil {
					closeAll()
					return nil, fmt.Errorf("%s, round %d, turn %d: %w", bins[k], round, i+1, err)
				}
			}
		}
		closeAll()
	}
	return out, nil
}

// relayTurn runs turn i of a relayed session and adds its share to rt.
func relayTurn(rs *relaySession, rt *relayTimes, i, turns int) error {
	if _, err := rs.log.next(); err != nil && !os.IsNotExist(err) {
		return err
	}
	t, err := rs.o.turn(i, time.Time{})
	if err != nil {
		return err
	}
	notes, err := rs.log.next()
	if err != nil {
		return err
	}
	cpu, cpuErr := cpuTime(rs.o.cmd.Process.Pid)
	switch {
	case i == 0:
		rs.cpu = cpu
		return nil
	case i == turns-1 && cpuErr == nil && rs.cpu > 0:
		rt.cpu = append(rt.cpu, (cpu-rs.cpu)/time.Duration(turns-1))
	}
	start, delta, completed := notes["start"], notes["delta"], notes["completed"]
	if start.IsZero() || delta.IsZero() || completed.IsZero() {
		return fmt.Errorf("the relay noted %v", notes)
	}
	toStart, toToken, toDone := start.Sub(t.sent), t.sent.Add(t.first).Sub(delta), t.sent.Add(t.done).Sub(completed)
	rt.toStart, rt.toToken, rt.toDone = append(rt.toStart, toStart), append(rt.toToken, toToken), append(rt.toDone, toDone)
	rt.first, rt.done = append(rt.first, toStart+toToken), append(rt.done, toStart+toDone)
	return nil
}

// cpuTime is the CPU time process pid has spent so far, summed over its
// threads' schedstat (nanoseconds on a CPU), so its children (the relay,
// codex) do not count.
func cpuTime(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("no schedstat for %d", pid)
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that just ended
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, err
		}
		sum += time.Duration(ns)
	}
	return sum, nil
}
