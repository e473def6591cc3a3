package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/core/wire"
)

// crashChunks are the text chunks of the scripted reply, in order. The
// assistant text a turn can leave in the session is their concatenation (a
// finished turn) or, leniently, a prefix of them ending on a chunk boundary
// (a partial reply saved by a cancelled or failed turn); nothing else.
var crashChunks = func() []string {
	var c []string
	for i := range 24 {
		c = append(c, fmt.Sprintf("w%02d ", i))
	}
	return c
}()

// crashScenario streams crashChunks with tiny real-clock delays between some
// of them, then finishes.
func crashScenario() string {
	var b strings.Builder
	b.WriteString("replies:\n")
	for range 3 { // one request per process; spares in case of a retry
		b.WriteString("  - chunks:\n")
		for i, c := range crashChunks {
			fmt.Fprintf(&b, "      - text: %q\n", c)
			if i%3 == 2 {
				fmt.Fprintf(&b, "      - delay: %dms\n", 1+i%4)
			}
		}
		b.WriteString("      - finish: stop\n")
	}
	return b.String()
}

// lineReader delivers a process's stdout lines on a channel, closed at EOF.
func lineReader(r io.Reader) <-chan string {
	ch := make(chan string, 256)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// TestCrashKillAndContinue kills the real binary with SIGKILL at random
// points of a streaming turn, over and over on one session, and checks that
// every time --continue resumes it: hello continued, then a transcript line
// that passes the checker, holding a history consistent with what was sent
// (every user text in order, no garbage, assistant texts the script could
// produce) and extending the previous one. Some iterations also leave a torn
// record at the end of the transcript file, as a crash inside a write would:
// it must be dropped, not reported as corruption.
//
// OPENMAX_CRASH_SEED=N replays one run.
func TestCrashKillAndContinue(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and kills it ~15 times; skipped in -short mode")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("OPENMAX_CRASH_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("OPENMAX_CRASH_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("seed %d (replay with OPENMAX_CRASH_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	bin := buildBinary(t)
	dir := t.TempDir()
	sc := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(sc, []byte(crashScenario()), 0o644); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmdEnv := trustedBinaryEnv(t, ctx, bin, dir, state)

	full := strings.Join(crashChunks, "")
	validAssistant := map[string]bool{}
	for i := 1; i <= len(crashChunks); i++ {
		validAssistant[strings.Join(crashChunks[:i], "")] = true
	}

	var (
		sent      []string // user texts sent, in order
		confirmed []bool   // whether the turn of sent[i] was seen to start (so it must be saved)
		prev      []wire.TranscriptMessage
		sessionID string
	)

	const iterations = 15
	for it := range iterations {
		text := fmt.Sprintf("crash iteration %d: please reply", it)
		args := []string{"--stdio", "--provider", "script", "--script", sc, "--project", dir}
		if it > 0 {
			args = append(args, "--continue")
		}
		// Where to kill: 0 right after hello; k>0 k lines after the first
		// token (possibly past done, then the idle process is killed).
		killAfter := 0
		if rng.IntN(4) != 0 {
			killAfter = 1 + rng.IntN(len(crashChunks)+6)
		}

		func() {
			ictx, icancel := context.WithTimeout(ctx, 30*time.Second)
			defer icancel()
			cmd := exec.CommandContext(ictx, bin, args...)
			cmd.Env = cmdEnv
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				cmd.Process.Kill()
				cmd.Wait()
			}()
			if _, err := stdin.Write([]byte(`{"cmd":"user","text":"` + text + `"}` + "\n")); err != nil {
				t.Fatalf("iteration %d: write: %v", it, err)
			}
			sent = append(sent, text)
			confirmed = append(confirmed, false)

			lines := lineReader(stdout)
			var got []string
			next := func() (string, bool) {
				select {
				case l, ok := <-lines:
					if ok {
						got = append(got, l)
					}
					return l, ok
				case <-ictx.Done():
					t.Fatalf("iteration %d: timed out reading stdout; so far:\n%s\nstderr: %s", it, strings.Join(got, "\n"), stderr.String())
					return "", false
				}
			}
			hello, ok := next()
			if !ok {
				cmd.Wait()
				t.Fatalf("iteration %d (%v): no hello; stderr: %s", it, args, stderr.String())
			}
			if it > 0 && !strings.Contains(hello, `"continued":true`) {
				t.Fatalf("iteration %d: hello %s", it, hello)
			}
			if killAfter > 0 {
				seenToken, after := false, 0
				for after < killAfter {
					l, ok := next()
					if !ok {
						cmd.Wait()
						t.Fatalf("iteration %d: stdout ended early:\n%s\nstderr: %s", it, strings.Join(got, "\n"), stderr.String())
					}
					if strings.Contains(l, `"type":"token"`) {
						seenToken = true
						confirmed[len(confirmed)-1] = true
					}
					if seenToken {
						after++
					}
					if strings.Contains(l, `"type":"done"`) {
						if !strings.Contains(l, `"stop_reason":"stop"`) {
							t.Errorf("iteration %d: turn ended %s\nstderr: %s", it, l, stderr.String())
						}
						break // the turn is over; kill the idle process
					}
				}
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatalf("iteration %d: kill: %v", it, err)
			}
			cmd.Wait()
			stdin.Close()
			t.Logf("iteration %d: killed after %d line(s) (plan %d after the first token)", it, len(got), killAfter)
		}()

		// Sometimes leave a torn record behind, as a crash inside a write
		// of the transcript would; both kinds at least once per run.
		switch {
		case it == 3:
			tearTail(t, state, rng, false)
		case it == 7:
			tearTail(t, state, rng, true)
		case rng.IntN(3) == 0:
			tearTail(t, state, rng, rng.IntN(2) == 0)
		}

		// Resume, with no input: hello continued, then the transcript.
		cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
		cont := exec.CommandContext(cctx, bin, "--stdio", "--provider", "script", "--script", sc, "--project", dir, "--continue")
		cont.Env = cmdEnv
		cont.Stdin = strings.NewReader("")
		var cerr bytes.Buffer
		cont.Stderr = &cerr
		out, err := cont.Output()
		ccancel()
		if err != nil {
			t.Fatalf("iteration %d: --continue after a kill: %v\nstdout: %s\nstderr: %s\n%s", it, err, out, cerr.String(), describeTranscripts(state))
		}
		lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
		if len(lines) < 2 {
			t.Fatalf("iteration %d: --continue printed %q", it, out)
		}
		var hello wire.Hello
		if err := json.Unmarshal([]byte(lines[0]), &hello); err != nil || !hello.Continued || !strings.Contains(lines[0], `"type":"hello"`) {
			t.Fatalf("iteration %d: hello %s (%v)", it, lines[0], err)
		}
		if sessionID == "" {
			sessionID = hello.SessionID
		} else if hello.SessionID != sessionID {
			t.Errorf("iteration %d: session %s, want %s", it, hello.SessionID, sessionID)
		}
		if !strings.Contains(lines[1], `"type":"transcript"`) {
			t.Fatalf("iteration %d: second line %s, want a transcript", it, lines[1])
		}
		if _, err := wire.CheckStreamStrict(strings.NewReader(lines[0]+"\n"+lines[1]+"\n"), func(v wire.Verdict) {
			if v.Err != nil {
				t.Errorf("iteration %d: checker line %d: %v", it, v.Line, v.Err)
			}
		}); err != nil {
			t.Fatal(err)
		}
		var tx wire.Transcript
		if err := json.Unmarshal([]byte(lines[1]), &tx); err != nil {
			t.Fatalf("iteration %d: transcript: %v", it, err)
		}
		if tx.SessionID != sessionID || tx.Truncated {
			t.Errorf("iteration %d: transcript session %q truncated %v", it, tx.SessionID, tx.Truncated)
		}

		// Consistency with what was sent.
		si := 0 // next candidate in sent
		for i, m := range tx.Messages {
			switch m.Role {
			case "user":
				for si < len(sent) && sent[si] != m.Content {
					if confirmed[si] {
						t.Errorf("iteration %d: message %d: user %q, but %q (whose turn started) is missing before it", it, i, m.Content, sent[si])
					}
					si++
				}
				if si == len(sent) {
					t.Errorf("iteration %d: message %d: user %q was never sent, or is out of order", it, i, m.Content)
				} else {
					si++
				}
			case "assistant":
				if !validAssistant[m.Content] {
					t.Errorf("iteration %d: message %d: assistant %q is not a reply the script makes", it, i, m.Content)
				} else if m.Content != full {
					t.Logf("iteration %d: message %d: a partial reply was saved: %q", it, i, m.Content)
				}
				if i == 0 || tx.Messages[i-1].Role != "user" {
					t.Errorf("iteration %d: message %d: assistant reply with no user message before it", it, i)
				}
			default:
				t.Errorf("iteration %d: message %d: role %q", it, i, m.Role)
			}
		}
		for ; si < len(sent); si++ {
			if confirmed[si] {
				t.Errorf("iteration %d: user %q, whose turn started, is missing", it, sent[si])
			}
		}
		if len(tx.Messages) < len(prev) {
			t.Errorf("iteration %d: the transcript shrank from %d to %d messages", it, len(prev), len(tx.Messages))
		} else {
			for i := range prev {
				if tx.Messages[i] != prev[i] {
					t.Errorf("iteration %d: message %d changed from %+v to %+v", it, i, prev[i], tx.Messages[i])
				}
			}
		}
		prev = tx.Messages
		if t.Failed() {
			t.Fatalf("stopping at iteration %d; transcript:\n%s\n%s", it, lines[1], describeTranscripts(state))
		}
	}
	t.Logf("%d messages after %d kills", len(prev), iterations)
}

// tearTail appends a torn record to the session's transcript: a cut-off
// copy of its last record with no newline, or a whole line whose checksum
// does not match (badCRC).
func tearTail(t *testing.T, state string, rng *rand.Rand, badCRC bool) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(state, "openmax", "projects", "*", "sessions", "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("want one transcript file, have %v", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	rec := []byte(`{"crc":"00000000","msg":{"role":"user","text":"torn"}}`)
	if i := bytes.LastIndexByte(bytes.TrimSuffix(data, []byte("\n")), '\n'); len(data) > 0 {
		rec = bytes.TrimSuffix(data[i+1:], []byte("\n"))
	}
	var tail []byte
	if !badCRC {
		tail = rec[:1+rng.IntN(len(rec)-1)] // cut off, no newline
	} else {
		// A whole line whose checksum does not match: the first crc digit
		// changed.
		tail = append(append([]byte{}, rec...), '\n')
		d := len(`{"crc":"`)
		if tail[d] == '0' {
			tail[d] = '1'
		} else {
			tail[d] = '0'
		}
	}
	f, err := os.OpenFile(files[0], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(tail); err != nil {
		t.Fatal(err)
	}
	t.Logf("tore the tail: appended %q", tail)
}

// describeTranscripts dumps the session files, for failure messages.
func describeTranscripts(state string) string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(state, "openmax", "projects", "*", "sessions", "*.jsonl"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		fmt.Fprintf(&b, "== %s\n%s\n", f, data)
	}
	return b.String()
}
