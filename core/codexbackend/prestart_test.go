package codexbackend_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/codexbackend"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider/codex"
)

// gatedServers starts in-process app-servers that answer every turn with
// one delta and completed, each start held until gate is closed (or the
// start's context ends: the start then fails). It counts the starts and
// the servers still running.
type gatedServers struct {
	gate   chan struct{}
	fail   atomic.Int32 // starts left to fail, after the gate
	starts atomic.Int32
	live   atomic.Int32
}

func (g *gatedServers) start(ctx context.Context, o codex.Options) (*codex.Client, error) {
	g.starts.Add(1)
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	if g.fail.Add(-1) >= 0 {
		return nil, errors.New("no such model provider")
	}
	g.live.Add(1)
	// A server ends when its stdin is closed, as codex does: counted
	// then, when the client closes it.
	stdin := func(w io.WriteCloser) io.WriteCloser { return &stdinOf{WriteCloser: w, live: &g.live} }
	n := 0
	return pipeServer(ctx, o, stdin, func(m clientLine, write func(string)) {
		n++
		id := string(m.ID)
		switch m.Method {
		case codex.MethodInitialize:
			write(`{"id":` + id + `,"result":{"userAgent":"x","codexHome":"/","platformFamily":"unix","platformOs":"linux"}}`)
		case codex.MethodTurnStart:
			var p struct {
				ThreadID string `json:"threadId"`
			}
			_ = json.Unmarshal(m.Params, &p)
			th, turn := p.ThreadID, fmt.Sprintf("u%d", n)
			write(`{"id":` + id + `,"result":{"turn":{"id":"` + turn + `","status":"inProgress","items":[]}}}`)
			write(`{"method":"turn/started","params":{"threadId":"` + th + `","turn":{"id":"` + turn + `","status":"inProgress","items":[]}}}`)
			write(`{"method":"item/agentMessage/delta","params":{"threadId":"` + th + `","turnId":"` + turn + `","itemId":"m1","delta":"hi"}}`)
			write(`{"method":"turn/completed","params":{"threadId":"` + th + `","turn":{"id":"` + turn + `","status":"completed","items":[]}}}`)
		default: // thread/start, thread/resume: a thread per request
			write(`{"id":` + id + `,"result":{"thread":{"id":"th` + id + `"}}}`)
		}
	})
}

// stdinOf is a server's stdin: closing it ends the server.
type stdinOf struct {
	io.WriteCloser
	live *atomic.Int32
	once sync.Once
}

func (s *stdinOf) Close() error {
	s.once.Do(func() { s.live.Add(-1) })
	return s.WriteCloser.Close()
}

// runTurn runs one turn of session s and returns its stop reason and events.
func runTurn(ctx context.Context, eng *core.Engine, s *core.Session) (string, []wire.Event) {
	var mu sync.Mutex
	var events []wire.Event
	stop := eng.RunTurn(ctx, s, "hi", func(ev wire.Event) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	})
	return stop, events
}

// TestPrestart: an app-server started ahead of the first turn (Prestart)
// while, concurrently, its start is let through, turns run, a turn is
// cancelled, or the backend closes. Each start serves the turns that come
// (one start for every turn that finds it), a failed one is the first
// turn's error and the next turn starts again, and once Close returns no
// server runs and no start is under way. Run under -race many times.
func TestPrestart(t *testing.T) {
	tools, err := tool.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		fail   int32
		run    func(t *testing.T, ctx context.Context, eng *core.Engine, open func())
		starts int32 // the starts the run makes; 0: any
	}{
		{name: "close during the start", run: func(t *testing.T, ctx context.Context, eng *core.Engine, open func()) {
			go open() // races with Close
		}},
		{name: "turns race the start", starts: 1, run: func(t *testing.T, ctx context.Context, eng *core.Engine, open func()) {
			var wg sync.WaitGroup
			for i := range 3 {
				wg.Go(func() {
					s := core.NewSession(fmt.Sprintf("s%d", i))
					for range 2 {
						if stop, evs := runTurn(ctx, eng, s); stop != "completed" {
							t.Errorf("session %d: stop %q, events %+v", i, stop, evs)
						}
					}
				})
			}
			go open()
			wg.Wait()
		}},
		{name: "cancel while the start waits", starts: 1, run: func(t *testing.T, ctx context.Context, eng *core.Engine, open func()) {
			s := core.NewSession("s1")
			tctx, cancel := context.WithCancel(ctx)
			done := make(chan string, 1)
			go func() {
				stop, _ := runTurn(tctx, eng, s)
				done <- stop
			}()
			cancel()
			if stop := <-done; stop != wire.StopCancelled {
				t.Errorf("the cancelled turn stopped %q", stop)
			}
			go open()
			if stop, evs := runTurn(ctx, eng, s); stop != "completed" {
				t.Errorf("the next turn: stop %q, events %+v", stop, evs)
			}
		}},
		{name: "the start fails", fail: 1, starts: 2, run: func(t *testing.T, ctx context.Context, eng *core.Engine, open func()) {
			s := core.NewSession("s1")
			go open()
			stop, evs := runTurn(ctx, eng, s)
			if stop != wire.StopError || !strings.Contains(fmt.Sprint(evs), "start codex app-server: no such model provider") {
				t.Errorf("the first turn: stop %q, events %+v", stop, evs)
			}
			if stop, evs := runTurn(ctx, eng, s); stop != "completed" {
				t.Errorf("the turn after: stop %q, events %+v", stop, evs)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard
			defer cancel()
			g := &gatedServers{gate: make(chan struct{})}
			g.fail.Store(tc.fail)
			b := codexbackend.New(codexbackend.Config{Start: g.start})
			eng := &core.Engine{Backend: b, Tools: tools}
			b.Prestart(tools.Specs())
			var once sync.Once
			tc.run(t, ctx, eng, func() { once.Do(func() { close(g.gate) }) })
			if err := b.Close(ctx); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if n := g.live.Load(); n != 0 {
				t.Fatalf("%d app-servers still run after Close", n)
			}
			if n := g.starts.Load(); tc.starts > 0 && n != tc.starts {
				t.Fatalf("%d starts, want %d", n, tc.starts)
			}
			b.Prestart(tools.Specs()) // after Close: nothing starts
			if n := g.starts.Load(); tc.starts > 0 && n != tc.starts {
				t.Fatalf("Prestart after Close started an app-server")
			}
		})
	}
}
