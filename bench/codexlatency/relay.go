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

// relayShares runs rounds sessions of openmax through the relay, turns
// turns each, and returns openmax's share of turns 2..turns.
func relayShares(s *turnSetup, scratch string, size, turns, rounds int) (first, done []time.Duration, err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	log := &relayLog{path: filepath.Join(scratch, fmt.Sprintf("relay-%d.log", size))}
	rs := *s
	rs.codex = self + " " + s.codex
	rs.openmaxEnv = append(append([]string{}, s.openmaxEnv...), relayEnv+"="+log.path)
	for round := range rounds {
		o, err := startOpenmaxCodex(&rs, s.openmax)
		if err != nil {
			return nil, nil, err
		}
		for i := range turns {
			if _, err := log.next(); err != nil && !os.IsNotExist(err) {
				o.close()
				return nil, nil, err
			}
			t, err := o.turn(i, time.Time{})
			if err != nil {
				o.close()
				return nil, nil, fmt.Errorf("round %d, turn %d: %w", round, i+1, err)
			}
			notes, err := log.next()
			if err != nil {
				o.close()
				return nil, nil, err
			}
			if i == 0 {
				continue
			}
			start, delta, completed := notes["start"], notes["delta"], notes["completed"]
			if start.IsZero() || delta.IsZero() || completed.IsZero() {
				o.close()
				return nil, nil, fmt.Errorf("round %d, turn %d: the relay noted %v", round, i+1, notes)
			}
			toStart := start.Sub(t.sent)
			first = append(first, toStart+t.sent.Add(t.first).Sub(delta))
			done = append(done, toStart+t.sent.Add(t.done).Sub(completed))
		}
		o.close()
	}
	return first, done, nil
}
