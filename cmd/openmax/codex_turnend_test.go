package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/codex"
)

// hungMode is how the scripted app-server of TestCodexBackendTurnAlwaysEnds
// misbehaves once its first turn has streamed text and been cut short
// (a retry after text, or the client's cancel).
type hungMode string

const (
	// hungSilent reads on but answers nothing: no turn/interrupt result,
	// no turn/completed.
	hungSilent hungMode = "silent"
	// hungDeaf asks openmax for a tool call and stops reading its input,
	// so every line openmax sends it waits in the pipe.
	hungDeaf hungMode = "deaf"
	// hungDies closes both its pipes: the connection dies.
	hungDies hungMode = "dies"
	// hungLate confirms the interrupt only after openmax has given up.
	hungLate hungMode = "late"
)

// hungScript is the app-server's script across restarts: the first turn
// misbehaves, every later one completes with one delta.
type hungScript struct {
	mode   hungMode
	cancel bool          // the client cancels the first turn (else codex retries after text)
	late   chan struct{} // closed once openmax gave up: the late server confirms then
	stuck  chan struct{} // closed at the end of the test: a deaf server returns

	mu    sync.Mutex
	turns int
}

// serve plays one app-server process over in and out.
func (s *hungScript) serve(in io.ReadCloser, out io.WriteCloser) {
	defer out.Close()
	r := bufio.NewReader(in)
	var wmu sync.Mutex
	write := func(format string, a ...any) {
		wmu.Lock()
		defer wmu.Unlock()
		fmt.Fprintf(out, format+"\n", a...)
	}
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		switch m.Method {
		case codex.MethodInitialize:
			write(`{"id":%s,"result":{"userAgent":"hung","codexHome":"/","platformFamily":"unix","platformOs":"linux"}}`, m.ID)
		case codex.MethodThreadStart, codex.MethodThreadResume:
			write(`{"id":%s,"result":{"thread":{"id":"th1"}}}`, m.ID)
		case codex.MethodTurnStart:
			s.mu.Lock()
			s.turns++
			id := fmt.Sprintf("u%d", s.turns)
			first := s.turns == 1
			s.mu.Unlock()
			write(`{"id":%s,"result":{"turn":{"id":%q,"status":"inProgress","items":[]}}}`, m.ID, id)
			write(`{"method":"turn/started","params":{"threadId":"th1","turn":{"id":%q,"status":"inProgress","items":[]}}}`, id)
			if !first {
				write(`{"method":"item/agentMessage/delta","params":{"threadId":"th1","turnId":%q,"itemId":"m-%s","delta":"again"}}`, id, id)
				write(`{"method":"turn/completed","params":{"threadId":"th1","turn":{"id":%q,"status":"completed","items":[]}}}`, id)
				continue
			}
			write(`{"method":"item/agentMessage/delta","params":{"threadId":"th1","turnId":%q,"itemId":"m-%s","delta":"Half an ans"}}`, id, id)
			if !s.cancel {
				write(`{"method":"error","params":{"threadId":"th1","turnId":%q,"willRetry":true,"error":{"message":"Reconnecting... 1/2","additionalDetails":"stream closed"}}}`, id)
			}
			switch s.mode {
			case hungDeaf:
				write(`{"id":"call-1","method":"item/tool/call","params":{"threadId":"th1","turnId":%q,"callId":"c1","namespace":"openmax","tool":"read_file","arguments":{"path":"notes.txt"}}}`, id)
				<-s.stuck
				return
			case hungDies:
				in.Close()
				return
			}
		case codex.MethodTurnInterrupt:
			if s.mode == hungLate {
				id := m.ID
				go func() {
					<-s.late
					write(`{"id":%s,"result":{}}`, id)
					write(`{"method":"turn/completed","params":{"threadId":"th1","turn":{"id":"u1","status":"interrupted","items":[]}}}`)
				}()
			}
		}
	}
}

// TestCodexBackendTurnAlwaysEnds: however codex fails to end a turn that
// openmax cut short (a retry after text, or the client's cancel), the
// turn ends with exactly one done once openmax's wait on its clock has
// passed: codex never confirms the interrupt, stops reading its input
// (while asking for a tool call), dies, or confirms too late. The next
// turn gets its own done, and quit ends the process. The clock is fake
// and moves only when openmax waits on it.
func TestCodexBackendTurnAlwaysEnds(t *testing.T) {
	cases := []struct {
		mode   hungMode
		cancel bool
		stop   string
	}{
		{hungSilent, false, wire.StopTruncated},
		{hungDeaf, false, wire.StopTruncated},
		{hungDies, false, wire.StopTruncated},
		{hungLate, false, wire.StopTruncated},
		{hungSilent, true, wire.StopCancelled},
		{hungDeaf, true, wire.StopCancelled},
		{hungLate, true, wire.StopCancelled},
	}
	for _, tc := range cases {
		name := string(tc.mode) + "/retry after text"
		if tc.cancel {
			name = string(tc.mode) + "/cancel"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runHungCodex(t, &hungScript{mode: tc.mode, cancel: tc.cancel, late: make(chan struct{}), stuck: make(chan struct{})}, tc.stop)
		})
	}
}

func runHungCodex(t *testing.T, s *hungScript, stop string) {
	// The watchdog only catches a hang; nothing waits on wall time.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	defer close(s.stuck)
	project := t.TempDir()
	if err := os.WriteFile(filepath.Join(project, "notes.txt"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func(turnCtx context.Context, o codex.Options) (*codex.Client, error) {
		sr, cw := io.Pipe()
		cr, sw := io.Pipe()
		go s.serve(sr, sw)
		return codex.Connect(turnCtx, cr, cw, o)
	}
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr syncBuffer
	exited := make(chan int, 1)
	go func() {
		code := run(ctx, []string{"--stdio", "--session-id", "s1", "--project", project, "--provider", "codex"}, inR, outW, &stderr,
			env{clock: fake, getenv: trustedEnv(t, testEnv, project), codexStart: start})
		outW.Close()
		exited <- code
	}()
	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var got, sent bytes.Buffer
	send := func(line string) {
		sent.WriteString(line + "\n")
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// until reads stdout until a line contains want ("" waits for its
	// end). With n > 0, each time openmax has n waits pending on the
	// clock the clock moves 10 s on.
	until := func(want string, n int) string {
		t.Helper()
		for {
			var waiting chan struct{}
			wctx, stopWait := context.WithCancel(ctx)
			if n > 0 {
				waiting = make(chan struct{})
				go func() {
					if fake.BlockUntil(wctx, n) == nil {
						close(waiting)
					}
				}()
			}
			select {
			case l, ok := <-lines:
				stopWait()
				if !ok {
					if want == "" {
						return ""
					}
					t.Fatalf("stdout ended before %s\nstdout:\n%s\nstderr:\n%s", want, got.String(), stderr.String())
				}
				got.WriteString(l + "\n")
				if want != "" && strings.Contains(l, want) {
					return l
				}
			case <-waiting:
				stopWait()
				fake.Advance(10 * time.Second)
			case <-ctx.Done():
				stopWait()
				t.Fatalf("no %q: openmax hangs\nstdout:\n%s\nstderr:\n%s", want, got.String(), stderr.String())
			}
		}
	}

	send(`{"cmd":"user","text":"go"}`)
	if s.cancel {
		until(`"type":"token"`, 0)
		send(`{"cmd":"cancel"}`)
	} else {
		until(`"type":"error"`, 0)
	}
	// openmax now waits for codex to end the turn (its interrupt's answer
	// and the turn's end: two waits on the clock); codex never ends it in
	// time.
	waits := 2
	if s.mode == hungDies {
		waits = 0 // the connection's end ends the wait
	}
	if done := until(`"type":"done"`, waits); !strings.Contains(done, `"stop_reason":"`+stop+`"`) {
		t.Fatalf("first turn: %s, want stop_reason %s\nstdout:\n%s\nstderr:\n%s", done, stop, got.String(), stderr.String())
	}
	close(s.late)
	send(`{"cmd":"user","text":"again"}`)
	if s.mode == hungDeaf {
		// The deaf app-server never reads the next turn/start: openmax's
		// answer timeout (on the clock) ends that turn.
		if done := until(`"type":"done"`, 1); !strings.Contains(done, `"stop_reason":"error"`) {
			t.Fatalf("second turn: %s\nstdout:\n%s\nstderr:\n%s", done, got.String(), stderr.String())
		}
	} else if done := until(`"type":"done"`, 0); !strings.Contains(done, `"stop_reason":"completed"`) {
		t.Fatalf("second turn: %s\nstdout:\n%s\nstderr:\n%s", done, got.String(), stderr.String())
	}
	send(`{"cmd":"quit"}`)
	// quit ends the process; a deaf app-server is given up on after a
	// wait on the clock.
	until("", 1)
	select {
	case <-exited:
	case <-ctx.Done():
		t.Fatalf("openmax did not return after its stdout ended\nstderr:\n%s", stderr.String())
	}
	inW.Close()
	if users, dones := strings.Count(sent.String(), `"cmd":"user"`), strings.Count(got.String(), `"type":"done"`); dones != users {
		t.Fatalf("%d user commands, %d done lines\nstdout:\n%s\nstderr:\n%s", users, dones, got.String(), stderr.String())
	}
	c := wire.NewChecker(wire.Strict())
	c.SetInput(sent.Bytes())
	if _, err := c.Stream(bytes.NewReader(got.Bytes()), func(v wire.Verdict) {
		if v.Err != nil {
			t.Errorf("checker: line %d: %v", v.Line, v.Err)
		}
	}); err != nil {
		t.Fatal(err)
	}
}
