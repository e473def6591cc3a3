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

	"pgregory.net/rapid"

	"github.com/openmax/openmax/core/config"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/internal/rapidchecks"
	"github.com/openmax/openmax/provider/codex"
)

// scriptedTurn is how the scripted app-server plays one turn.
type scriptedTurn struct {
	Deltas   int  // agent-message deltas
	Pauses   int  // waits for the driver's next command among them
	ToolCall bool // an item/tool/call for openmax.read_file mid-turn
	Retry    int  // 0 none, 1 error willRetry before any text, 2 after text
	Fail     bool // ends failed instead of completed
}

// scriptedAppServer is an in-process app-server that plays turns as
// drawn, concurrently with its client: it answers an interrupt at any
// point, and pauses until the driver has sent its next command, so
// cancels land anywhere in a turn.
type scriptedAppServer struct {
	in    *bufio.Reader
	out   io.Writer
	wmu   sync.Mutex
	turns []scriptedTurn
	step  <-chan struct{} // a token per driver command; closed at the end

	mu          sync.Mutex
	n           int                      // turns started
	interrupted map[string]chan struct{} // turn id → closed by turn/interrupt
	answers     map[string]chan []byte   // server request id → the client's answer
	active      string
}

func (f *scriptedAppServer) write(format string, a ...any) {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	fmt.Fprintf(f.out, format+"\n", a...)
}

func (f *scriptedAppServer) serve() {
	for {
		line, err := f.in.ReadBytes('\n')
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		switch m.Method {
		case codex.MethodInitialize:
			f.write(`{"id":%s,"result":{"userAgent":"scripted","codexHome":"/","platformFamily":"unix","platformOs":"linux"}}`, m.ID)
		case codex.MethodThreadStart, codex.MethodThreadResume:
			f.write(`{"id":%s,"result":{"thread":{"id":"th1"}}}`, m.ID)
		case codex.MethodTurnStart:
			f.mu.Lock()
			f.n++
			id := fmt.Sprintf("u%d", f.n)
			plan := scriptedTurn{Deltas: 1}
			if f.n <= len(f.turns) {
				plan = f.turns[f.n-1]
			}
			stop := make(chan struct{})
			f.interrupted[id], f.active = stop, id
			f.mu.Unlock()
			f.write(`{"id":%s,"result":{"turn":{"id":%q,"status":"inProgress","items":[]}}}`, m.ID, id)
			go f.play(id, plan, stop)
		case codex.MethodTurnInterrupt:
			f.mu.Lock()
			stop, ok := f.interrupted[f.active]
			if ok {
				delete(f.interrupted, f.active)
				close(stop)
			}
			f.mu.Unlock()
			if ok {
				f.write(`{"id":%s,"result":{}}`, m.ID)
			} else {
				f.write(`{"id":%s,"error":{"code":-32600,"message":"no active turn to interrupt"}}`, m.ID)
			}
		case "":
			f.mu.Lock()
			ch := f.answers[string(m.ID)]
			f.mu.Unlock()
			if ch != nil {
				ch <- m.Result
			}
		}
	}
}

// play emits one turn; it ends interrupted as soon as stop closes.
func (f *scriptedAppServer) play(id string, p scriptedTurn, stop chan struct{}) {
	ev := func(format string, a ...any) { f.write(format, a...) }
	end := func(status, errJSON string) {
		f.mu.Lock()
		if f.interrupted[id] == stop {
			delete(f.interrupted, id)
		}
		f.mu.Unlock()
		ev(`{"method":"turn/completed","params":{"threadId":"th1","turn":{"id":%q,"status":%q,"items":[],"error":%s}}}`, id, status, errJSON)
	}
	wait := func() bool { // false: interrupted
		select {
		case <-stop:
			return false
		case <-f.step:
			return true
		}
	}
	ev(`{"method":"turn/started","params":{"threadId":"th1","turn":{"id":%q,"status":"inProgress","items":[]}}}`, id)
	if p.Retry == 1 {
		ev(`{"method":"error","params":{"threadId":"th1","turnId":%q,"willRetry":true,"error":{"message":"Reconnecting... 1/2","additionalDetails":"429"}}}`, id)
	}
	pauses := p.Pauses
	for i := 0; i < p.Deltas; i++ {
		if pauses > 0 {
			pauses--
			if !wait() {
				end("interrupted", "null")
				return
			}
		}
		select {
		case <-stop:
			end("interrupted", "null")
			return
		default:
		}
		ev(`{"method":"item/agentMessage/delta","params":{"threadId":"th1","turnId":%q,"itemId":"m-%s","delta":"d%d "}}`, id, id, i)
		if i == 0 && p.Retry == 2 {
			ev(`{"method":"error","params":{"threadId":"th1","turnId":%q,"willRetry":true,"error":{"message":"Reconnecting... 1/2","additionalDetails":"stream closed"}}}`, id)
		}
	}
	if p.ToolCall {
		reqID := "req-" + id
		ch := make(chan []byte, 1)
		f.mu.Lock()
		f.answers[fmt.Sprintf("%q", reqID)] = ch
		f.mu.Unlock()
		ev(`{"id":%q,"method":"item/tool/call","params":{"threadId":"th1","turnId":%q,"callId":"call-%s","namespace":"openmax","tool":"read_file","arguments":{"path":"notes.txt"}}}`, reqID, id, id)
		select {
		case <-ch:
		case <-stop:
			end("interrupted", "null")
			return
		}
	}
	select {
	case <-stop:
		end("interrupted", "null")
		return
	default:
	}
	if p.Fail {
		end("failed", `{"message":"the scripted turn failed"}`)
		return
	}
	end("completed", "null")
}

// TestRapidCodexBackendOneDonePerUser: whatever the client sends (turns,
// cancels at any point, blank and broken lines, quit or EOF) and however
// the app-server plays each turn (deltas, pauses, a tool call, a retry
// before or after text, failure), every user command gets exactly one
// done and the stream passes the checker.
func TestRapidCodexBackendOneDonePerUser(t *testing.T) {
	rapidchecks.Use(t, rapidchecks.Pick(100, 20))
	rapid.Check(t, func(rt *rapid.T) {
		turns := rapid.SliceOfN(rapid.Custom(func(rt *rapid.T) scriptedTurn {
			return scriptedTurn{
				Deltas:   rapid.IntRange(0, 4).Draw(rt, "deltas"),
				Pauses:   rapid.IntRange(0, 3).Draw(rt, "pauses"),
				ToolCall: rapid.Bool().Draw(rt, "tool"),
				Retry:    rapid.IntRange(0, 2).Draw(rt, "retry"),
				Fail:     rapid.Bool().Draw(rt, "fail"),
			}
		}), 0, 5).Draw(rt, "turns")
		cmds := rapid.SliceOfN(rapid.SampledFrom([]string{
			`{"cmd":"user","text":"go"}`, `{"cmd":"user","text":"go"}`, `{"cmd":"cancel"}`, ``, `{not json`, `{"cmd":"reload"}`,
		}), 1, 8).Draw(rt, "commands")
		quit := rapid.Bool().Draw(rt, "quit")
		runScriptedCodex(rt, turns, cmds, quit)
	})
}

func runScriptedCodex(rt *rapid.T, turns []scriptedTurn, cmds []string, quit bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	project, err := os.MkdirTemp("", "codex-rapid-")
	if err != nil {
		rt.Fatal(err)
	}
	defer os.RemoveAll(project)
	if err := os.WriteFile(filepath.Join(project, "notes.txt"), []byte("hi\n"), 0o644); err != nil {
		rt.Fatal(err)
	}
	step := make(chan struct{}, 64)
	start := func(turnCtx context.Context, o codex.Options) (*codex.Client, error) {
		sr, cw := io.Pipe()
		cr, sw := io.Pipe()
		f := &scriptedAppServer{in: bufio.NewReader(sr), out: sw, turns: turns, step: step,
			interrupted: map[string]chan struct{}{}, answers: map[string]chan []byte{}}
		go func() {
			f.serve()
			sw.Close()
		}()
		return codex.Connect(turnCtx, cr, cw, o)
	}
	inR, inW := io.Pipe()
	// openmax may still be writing when the watchdog reads what it wrote.
	var out, stderr syncBuffer
	done := make(chan int, 1)
	home, err := os.MkdirTemp("", "codex-rapid-home-")
	if err != nil {
		rt.Fatal(err)
	}
	defer os.RemoveAll(home)
	settings, err := config.Open(filepath.Join(home, "openmax"))
	if err != nil {
		rt.Fatal(err)
	}
	if err := settings.Trust(project); err != nil {
		rt.Fatal(err)
	}
	getenv := func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return home
		}
		return testEnv(k)
	}
	go func() {
		done <- run(ctx, []string{"--stdio", "--session-id", "s1", "--project", project, "--provider", "codex"}, inR, &out, &stderr, env{getenv: getenv, codexStart: start})
	}()
	var sent bytes.Buffer
	for _, c := range cmds {
		line := c + "\n"
		sent.WriteString(line)
		if _, err := io.WriteString(inW, line); err != nil {
			rt.Fatal(err)
		}
		select {
		case step <- struct{}{}:
		default:
		}
	}
	if quit {
		sent.WriteString(`{"cmd":"quit"}` + "\n")
		io.WriteString(inW, `{"cmd":"quit"}`+"\n")
	}
	close(step) // every pause ends: the turns run out
	inW.Close()
	select {
	case <-done:
	case <-ctx.Done():
		rt.Fatalf("openmax did not exit\nstdout:\n%s\nstderr:\n%s", out.String(), stderr.String())
	}
	users := strings.Count(sent.String(), `"cmd":"user"`)
	dones := strings.Count(out.String(), `"type":"done"`)
	c := wire.NewChecker(wire.Strict())
	c.SetInput(sent.Bytes())
	if _, err := c.Stream(bytes.NewReader(out.Bytes()), func(v wire.Verdict) {
		if v.Err != nil {
			rt.Errorf("checker: line %d: %v", v.Line, v.Err)
		}
	}); err != nil {
		rt.Fatal(err)
	}
	// A user sent while a turn runs is answered by a protocol_error alone.
	refusedInFlight := strings.Count(out.String(), "a turn is already in flight and owns the next done")
	if dones+refusedInFlight != users {
		rt.Fatalf("%d user commands, %d done lines and %d refused in flight\nstdout:\n%s\nstderr:\n%s", users, dones, refusedInFlight, out.String(), stderr.String())
	}
}
