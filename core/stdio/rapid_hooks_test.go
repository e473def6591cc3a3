package stdio_test

// TestRapidHooksKeepDoneExactlyOnce: whatever the session's hooks do on
// each call (allow, refuse, fail, crash, or take an hour on the fake clock
// before answering, the turn sometimes cancelled meanwhile), every user command
// is answered by exactly one done, turn_refused never exceeds the 8
// continuations, and wire.Checker accepts the whole stdout.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/stdio"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/internal/rapidchecks"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
)

// rhAct is what a hook does on one call.
type rhAct int

const (
	rhAllow rhAct = iota
	rhRefuse
	rhFail
	rhSlow  // an hour on the fake clock, then allow (or refuse, for an intercept)
	rhPanic // the hook implementation crashes
)

// rhHooks plays a drawn list of acts, one per call, cyclically.
type rhHooks struct {
	clk  clock.Clock
	mu   sync.Mutex
	acts []rhAct
	n    int
}

func (h *rhHooks) act() rhAct {
	h.mu.Lock()
	defer h.mu.Unlock()
	a := h.acts[h.n%len(h.acts)]
	h.n++
	return a
}

func (h *rhHooks) Intercept(ctx context.Context, event core.HookEvent, _ any) (core.HookVerdict, []core.HookFailure) {
	refuse := core.HookVerdict{Refused: true, Hook: "rapid", Reason: "again: " + string(event)}
	switch h.act() {
	case rhPanic:
		panic("rapid hook crash")
	case rhRefuse:
		return refuse, nil
	case rhFail:
		return core.HookVerdict{}, []core.HookFailure{{Hook: "rapid", Event: event, Detail: "crashed"}}
	case rhSlow:
		if err := clock.Sleep(ctx, h.clk, time.Hour); err != nil {
			return core.HookVerdict{}, []core.HookFailure{{Hook: "rapid", Event: event, Detail: "cancelled"}}
		}
		return refuse, nil
	}
	return core.HookVerdict{}, nil
}

func (h *rhHooks) Observe(ctx context.Context, event core.HookEvent, _ any) []core.HookFailure {
	switch h.act() {
	case rhPanic:
		panic("rapid observer crash")
	case rhFail, rhRefuse:
		return []core.HookFailure{{Hook: "rapid-observer", Event: event, Detail: "exited 3"}}
	case rhSlow:
		_ = clock.Sleep(ctx, h.clk, time.Hour)
	}
	return nil
}

func (h *rhHooks) Close() error { return nil }

func TestRapidHooksKeepDoneExactlyOnce(t *testing.T) {
	// A session is a few turns over an in-memory pipe: about a
	// millisecond, ten times that under the race detector.
	rapidchecks.Use(t, rapidchecks.Pick(300, 30))
	rapid.Check(t, func(rt *rapid.T) {
		clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		hooks := &rhHooks{clk: clk, acts: rapid.SliceOfN(rapid.SampledFrom([]rhAct{rhAllow, rhRefuse, rhFail, rhSlow, rhPanic}), 1, 12).Draw(rt, "acts")}
		// Which model requests ask for a tool (cyclically), so tool
		// observers run too.
		toolAt := rapid.SliceOfN(rapid.Bool(), 1, 5).Draw(rt, "tool_at")
		var reqs int
		var reqMu sync.Mutex
		echo := tool.Func{ToolSpec: provider.ToolSpec{Name: "echo", Schema: json.RawMessage(`{"type":"object"}`)},
			Fn: func(context.Context, json.RawMessage) tool.Result { return tool.Result{OK: true, Output: "echoed"} }}
		reg, err := tool.NewRegistry(echo)
		if err != nil {
			rt.Fatal(err)
		}
		eng := &core.Engine{Tools: reg, Model: "m", Hooks: hooks,
			Provider: provider.Func(func(context.Context, provider.Request) iter.Seq[provider.Part] {
				reqMu.Lock()
				n := reqs
				reqs++
				reqMu.Unlock()
				return func(yield func(provider.Part) bool) {
					if toolAt[n%len(toolAt)] {
						_ = yield(provider.ToolCallPart{Call: provider.ToolCall{ID: fmt.Sprintf("c%d", n), Name: "echo", Args: json.RawMessage(`{}`)}}) &&
							yield(provider.Finish{Reason: "tool_calls"})
						return
					}
					_ = yield(provider.TextDelta{Text: fmt.Sprintf("reply %d", n)}) && yield(provider.Finish{Reason: "stop"})
				}
			})}
		server, client := stdio.NewPipe()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		served := make(chan error, 1)
		go func() {
			_, err := stdio.ServeConn(ctx, server, stdio.Options{Engine: eng, SessionID: "s-hooks", Version: "0", Project: "/p", Clock: clk})
			served <- err
		}()
		// The hour-long hooks pass as soon as they sleep.
		pumpCtx, stopPump := context.WithCancel(ctx)
		defer stopPump()
		go func() {
			for clk.BlockUntil(pumpCtx, 1) == nil {
				clk.Advance(time.Hour)
			}
		}()

		var stdin, stdout bytes.Buffer
		send := func(line string) {
			stdin.WriteString(line + "\n")
			if err := client.WriteLine([]byte(line)); err != nil {
				rt.Fatal(err)
			}
		}
		read := func() rpObs {
			l, err := client.ReadLine(ctx)
			if err != nil {
				rt.Fatalf("reading stdout: %v\n%s", err, stdout.String())
			}
			stdout.Write(l)
			stdout.WriteByte('\n')
			return rpParse(l)
		}
		if o := read(); o.Type != "hello" {
			rt.Fatalf("first line %s", o.Type)
		}
		turns := rapid.IntRange(1, 4).Draw(rt, "turns")
		for i := 0; i < turns; i++ {
			send(fmt.Sprintf(`{"cmd":"user","text":"turn %d"}`, i))
			if rapid.IntRange(0, 4).Draw(rt, "cancel") == 0 {
				send(`{"cmd":"cancel"}`)
			}
			refused := 0
			for {
				o := read()
				if o.Type == "turn_refused" {
					refused++
				}
				if o.Type == "done" {
					if refused > core.MaxContinuations {
						rt.Fatalf("%d turn_refused in one turn", refused)
					}
					if o.StopReason == wire.StopUnverified && refused != core.MaxContinuations {
						rt.Fatalf("unverified after %d refusals", refused)
					}
					break
				}
			}
		}
		if err := client.CloseWrite(); err != nil {
			rt.Fatal(err)
		}
		for {
			l, err := client.ReadLine(ctx)
			if err != nil {
				break
			}
			stdout.Write(l)
			stdout.WriteByte('\n')
		}
		if err := <-served; err != nil {
			rt.Fatalf("serve: %v", err)
		}
		c := wire.NewChecker(wire.Strict())
		c.SetInput(stdin.Bytes())
		if _, err := c.Stream(bytes.NewReader(stdout.Bytes()), func(v wire.Verdict) {
			if v.Err != nil {
				rt.Fatalf("checker: line %d: %v\n%s", v.Line, v.Err, stdout.String())
			}
		}); err != nil {
			rt.Fatal(err)
		}
		if n, want := strings.Count(stdout.String(), `"type":"done"`), turns; n != want {
			rt.Fatalf("%d done lines for %d user commands:\n%s", n, want, stdout.String())
		}
	})
}
