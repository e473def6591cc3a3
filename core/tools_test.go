package core_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/stdio"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
)

func TestInvalidToolArgs(t *testing.T) {
	for _, args := range []string{`[1]`, `null`, `{"a":`, `"s"`} {
		p := provider.Func(func(context.Context, provider.Request) iter.Seq[provider.Part] {
			return func(yield func(provider.Part) bool) {
				yield(provider.ToolCallPart{Call: provider.ToolCall{ID: "c", Name: "echo_args", Args: json.RawMessage(args)}})
				yield(provider.Finish{Reason: "tool_calls"})
			}
		})
		e := newEngine(t, p, echoTool())
		e.MaxIterations = 1
		var rec recorder
		e.RunTurn(context.Background(), core.NewSession("s"), "go", rec.emit)
		start := rec.events[1].(wire.ToolStart)
		end := rec.events[2].(wire.ToolEnd)
		if string(start.Args) != "{}" || end.OK || !strings.HasPrefix(end.Output, "invalid arguments") {
			t.Errorf("args %s: start %+v end %+v", args, start, end)
		}
	}
}

func TestToolRegistryRejectsDuplicates(t *testing.T) {
	if _, err := tool.NewRegistry(echoTool(), echoTool()); err == nil {
		t.Error("duplicate tool accepted")
	}
	if _, err := tool.NewRegistry(tool.Func{}); err == nil {
		t.Error("nameless tool accepted")
	}
}

func TestToolDiffsBecomeDiffEvents(t *testing.T) {
	p := mustScript(t, "replies:\n  - tool_calls: [{id: c1, name: write}]\n  - text: done\n")
	write := tool.Func{ToolSpec: provider.ToolSpec{Name: "write"}, Fn: func(context.Context, json.RawMessage) tool.Result {
		return tool.Result{OK: true, Output: "wrote a.txt", Diffs: []tool.FileDiff{{Path: "a.txt", Unified: "--- a/a.txt\n+++ b/a.txt\n@@ -0,0 +1 @@\n+hi\n", Added: 1}}}
	}}
	var rec recorder
	newEngine(t, p, write).RunTurn(context.Background(), core.NewSession("s"), "go", rec.emit)
	if got := rec.types(); got != "budget tool_start diff tool_end token message_done" {
		t.Fatalf("events %s", got)
	}
	if d := rec.events[2].(wire.Diff); d.CallID != "c1" || d.Path != "a.txt" || d.Added != 1 {
		t.Errorf("diff %+v", d)
	}
}

// stuckTool blocks, ignoring its context, until release is closed; runs
// counts its calls, each of which sends on started (when it has room).
func stuckTool(release <-chan struct{}, started chan<- struct{}, runs *atomic.Int32) tool.Tool {
	return tool.Func{ToolSpec: provider.ToolSpec{Name: "stuck"}, Fn: func(context.Context, json.RawMessage) tool.Result {
		runs.Add(1)
		select {
		case started <- struct{}{}:
		default:
		}
		<-release
		return tool.Result{OK: true, Output: "finally"}
	}}
}

// TestCancelAbandonsAToolThatIgnoresIt: a tool that ignores its context
// cannot hold a cancelled turn past the grace period; its result is
// recorded as cancelled, and until it returns the session refuses to run
// it again (one stuck goroutine at most), after which it runs as before.
func TestCancelAbandonsAToolThatIgnoresIt(t *testing.T) {
	p := mustScript(t, `
replies:
  - tool_calls: [{id: c1, name: stuck}, {id: c2, name: echo_args}]
  - tool_calls: [{id: c3, name: stuck}]
  - text: "refused, fine"
  - tool_calls: [{id: c4, name: stuck}]
  - text: "ran"
`)
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	var runs atomic.Int32
	e := newEngine(t, p, stuckTool(release, started, &runs), echoTool())
	fake := clock.NewFake(time.Unix(0, 0))
	e.Clock, e.ToolGrace = fake, 3*time.Second
	s := core.NewSession("s")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var rec recorder
	stopc := make(chan string, 1)
	go func() { stopc <- e.RunTurn(ctx, s, "go", rec.emit) }()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	select {
	case <-started:
	case <-wctx.Done():
		t.Fatal("the stuck tool never ran")
	}
	cancel()
	if err := fake.BlockUntil(wctx, 1); err != nil {
		t.Fatal("the engine never started the grace wait:", err)
	}
	select {
	case <-stopc:
		t.Fatal("the turn ended before the grace period")
	default:
	}
	fake.Advance(3 * time.Second)
	var stop string
	select {
	case stop = <-stopc:
	case <-wctx.Done():
		t.Fatal("the cancelled turn still waits for the stuck tool")
	}
	if stop != wire.StopCancelled {
		t.Fatalf("stop %q", stop)
	}
	if got := rec.types(); got != "budget tool_start tool_end" {
		t.Errorf("events %s", got)
	}
	end := rec.events[2].(wire.ToolEnd)
	if end.OK || !strings.HasPrefix(end.Output, "cancelled: stuck did not stop within 3s") {
		t.Errorf("tool_end %+v", end)
	}
	var results []string
	for _, m := range s.Messages() {
		if m.Role == provider.RoleTool {
			results = append(results, m.CallID+"="+m.Text)
		}
	}
	if len(results) != 2 || !strings.HasPrefix(results[0], "c1=cancelled:") || results[1] != "c2=not run: the turn was cancelled" {
		t.Errorf("tool results %q", results)
	}

	// The stuck call is still running: the next call of that tool is
	// refused at once, without starting another.
	var second recorder
	if stop := e.RunTurn(context.Background(), s, "again", second.emit); stop != "stop" {
		t.Fatalf("second turn: stop %q", stop)
	}
	if end := second.events[2].(wire.ToolEnd); end.OK || end.Output != "not run: an earlier stuck call ignored its cancellation and is still running" {
		t.Errorf("second turn's tool_end %+v", end)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the stuck tool was started %d times, want 1", n)
	}

	// Once it returns, the tool runs again.
	close(release)
	if err := s.WaitAbandoned(wctx); err != nil {
		t.Fatal("the released tool call never ended:", err)
	}
	var third recorder
	if stop := e.RunTurn(context.Background(), s, "once more", third.emit); stop != "stop" {
		t.Fatalf("third turn: stop %q", stop)
	}
	if end := third.events[2].(wire.ToolEnd); !end.OK || end.Output != "finally" {
		t.Errorf("third turn's tool_end %+v", end)
	}
}

// TestCancelledToolResultWithinGraceIsKept: a tool that stops when
// cancelled keeps the result it returns (run_command's output and kill note).
func TestCancelledToolResultWithinGraceIsKept(t *testing.T) {
	p := mustScript(t, "replies:\n  - tool_calls: [{id: c1, name: wait}]\n")
	wait := tool.Func{ToolSpec: provider.ToolSpec{Name: "wait"}, Fn: func(ctx context.Context, _ json.RawMessage) tool.Result {
		<-ctx.Done()
		return tool.Result{Output: "partial\n[killed: cancelled]"}
	}}
	e := newEngine(t, p, wait)
	e.Clock = clock.NewFake(time.Unix(0, 0)) // the grace never runs out
	ctx, cancel := context.WithCancel(context.Background())
	var rec recorder
	stop := e.RunTurn(ctx, core.NewSession("s"), "go", func(ev wire.Event) {
		rec.emit(ev)
		if _, ok := ev.(wire.ToolStart); ok {
			cancel()
		}
	})
	if stop != wire.StopCancelled {
		t.Fatalf("stop %q", stop)
	}
	if end := rec.events[2].(wire.ToolEnd); end.OK || end.Output != "partial\n[killed: cancelled]" {
		t.Errorf("tool_end %+v", end)
	}
}

// TestStuckToolCancelGivesExactlyOneDone drives the stdio server: cancel
// during a tool that ignores its context still ends the turn with exactly
// one done (cancelled), and EOF then ends the session.
func TestStuckToolCancelGivesExactlyOneDone(t *testing.T) {
	p := mustScript(t, "replies:\n  - tool_calls: [{id: c1, name: stuck}]\n")
	release := make(chan struct{})
	defer close(release)
	var runs atomic.Int32
	e := newEngine(t, p, stuckTool(release, nil, &runs))
	fake := clock.NewFake(time.Unix(0, 0))
	e.Clock = fake
	conn, client := stdio.NewPipe()
	served := make(chan error, 1)
	go func() {
		_, err := stdio.ServeConn(context.Background(), conn, stdio.Options{Engine: e, SessionID: "s1"})
		served <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var lines []string
	next := func(typ string) {
		t.Helper()
		for {
			l, err := client.ReadLine(ctx)
			if err != nil {
				t.Fatalf("no %s line (%v); got:\n%s", typ, err, strings.Join(lines, "\n"))
			}
			lines = append(lines, string(l))
			if strings.Contains(string(l), `"type":"`+typ+`"`) {
				return
			}
		}
	}
	client.WriteLine([]byte(`{"cmd":"user","text":"go"}`))
	next("tool_start")
	client.WriteLine([]byte(`{"cmd":"cancel"}`))
	if err := fake.BlockUntil(ctx, 1); err != nil {
		t.Fatal("no grace wait:", err)
	}
	fake.Advance(core.DefaultToolGrace)
	next("done")
	client.CloseWrite()
	for {
		l, err := client.ReadLine(ctx)
		if err != nil {
			break
		}
		lines = append(lines, string(l))
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	dones := 0
	for _, l := range lines {
		if strings.Contains(l, `"type":"done"`) {
			dones++
			if !strings.Contains(l, `"stop_reason":"cancelled"`) {
				t.Errorf("done %s", l)
			}
		}
	}
	if dones != 1 {
		t.Errorf("%d done lines, want 1:\n%s", dones, strings.Join(lines, "\n"))
	}
	if _, err := wire.CheckStreamStrict(strings.NewReader(strings.Join(lines, "\n")), func(v wire.Verdict) {
		if v.Err != nil {
			t.Errorf("line %d: %v", v.Line, v.Err)
		}
	}); err != nil {
		t.Fatal(err)
	}
}

// TestHugeToolArgsAreCutForDisplay: a call whose arguments pass 1 MiB is
// shown (tool_start) with its long members cut and a note, while the tool
// gets them whole.
func TestHugeToolArgsAreCutForDisplay(t *testing.T) {
	big := strings.Repeat("é", 600<<10) // 1.2 MB of two-byte characters
	args, _ := json.Marshal(map[string]any{"path": "a.txt", "content": big, "list": []string{big}})
	p := mustScript(t, "replies:\n  - tool_calls: [{id: c1, name: echo_args, args_json: '"+string(args)+"'}]\n  - text: ok\n")
	e := newEngine(t, p, echoTool())
	var rec recorder
	if stop := e.RunTurn(context.Background(), core.NewSession("s"), "go", rec.emit); stop != "stop" {
		t.Fatalf("stop %q", stop)
	}
	start := rec.events[1].(wire.ToolStart)
	if len(start.Args) > 200<<10 {
		t.Errorf("tool_start args are %d bytes", len(start.Args))
	}
	var shown map[string]any
	if err := json.Unmarshal(start.Args, &shown); err != nil {
		t.Fatal(err)
	}
	content, _ := shown["content"].(string)
	cut := strings.Repeat("é", 32<<10)
	if want := cut + fmt.Sprintf("\n[cut for display: %d bytes, showing the first %d]", len(big), len(cut)); content != want {
		t.Errorf("content shown as %d bytes ending %q", len(content), content[max(0, len(content)-80):])
	}
	if shown["path"] != "a.txt" || shown["list"] != fmt.Sprintf("[cut for display: %d bytes of JSON]", len(big)+4) {
		t.Errorf("path %v, list %.80v", shown["path"], shown["list"])
	}
	end := rec.events[2].(wire.ToolEnd)
	if end.Output != string(args) {
		t.Errorf("the tool got %d bytes of arguments, want %d", len(end.Output), len(args))
	}
}
