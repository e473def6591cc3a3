package tape

import (
	"bytes"
	"context"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/stdio"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/recorder/cassette"
)

// waitingProvider announces a retry, then waits an hour on the replay's
// clock before answering: like a backoff wait.
func waitingProvider(clk clock.Clock) provider.Provider {
	return provider.Func(func(ctx context.Context, _ provider.Request) iter.Seq[provider.Part] {
		return func(yield func(provider.Part) bool) {
			if !yield(provider.Retry{Attempt: 2, MaxAttempts: 3, Reason: "HTTP 503"}) {
				return
			}
			if clock.Sleep(ctx, clk, time.Hour) != nil {
				return
			}
			if yield(provider.TextDelta{Text: "after the wait"}) {
				yield(provider.Finish{Reason: "stop"})
			}
		}
	})
}

func run(t *testing.T, cmds []cassette.Command) string {
	t.Helper()
	f := cassette.New()
	f.Session = &cassette.Session{SessionID: "s", Commands: cmds}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := player{cmds: f.Session.Commands, stdout: &out}
	code, err := p.play(ctx, func(ctx context.Context, conn stdio.Conn, h hooks) (int, error) {
		reg, _ := tool.NewRegistry()
		return stdio.ServeConn(ctx, conn, stdio.Options{
			Engine: &core.Engine{Provider: waitingProvider(h.clock), Tools: reg}, SessionID: "s",
			Version: "test", Project: "/p", Clock: h.clock, Handled: h.handled, Stepped: h.stepped,
		})
	})
	if err != nil || code != 0 {
		t.Fatalf("Run: %d, %v\n%s", code, err, out.String())
	}
	return out.String()
}

// TestVirtualTimeWaitsForDueCommands: a cancel recorded after the retry
// line lands during the wait, as it did live; without it the wait passes
// in no wall time.
func TestVirtualTimeWaitsForDueCommands(t *testing.T) {
	for _, tc := range []struct {
		name         string
		user, cancel cassette.Command
	}{
		{"anchored",
			cassette.Command{Anchor: cassette.Anchor{After: "hello", Nth: 1}, Line: `{"cmd":"user","text":"go"}`},
			cassette.Command{Anchor: cassette.Anchor{After: "retry", Nth: 1}, Line: `{"cmd":"cancel"}`}},
		{"legacy line counts",
			cassette.Command{AfterLines: 1, Line: `{"cmd":"user","text":"go"}`},
			cassette.Command{AfterLines: 3, Line: `{"cmd":"cancel"}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cancelled := run(t, []cassette.Command{tc.user, tc.cancel})
			if !strings.Contains(cancelled, `"stop_reason":"cancelled"`) || strings.Contains(cancelled, "after the wait") {
				t.Errorf("the cancel did not land in the wait:\n%s", cancelled)
			}
			// The hour passes on the virtual clock: run's 10 s context would
			// end a real one.
			waited := run(t, []cassette.Command{tc.user})
			if !strings.Contains(waited, "after the wait") || !strings.Contains(waited, `"stop_reason":"stop"`) {
				t.Errorf("the virtual hour did not pass:\n%s", waited)
			}
		})
	}
}

func TestNoSession(t *testing.T) {
	if _, err := Replay(context.Background(), cassette.New(), ReplayOptions{}); err != ErrNoSession {
		t.Errorf("got %v", err)
	}
}

// tokenProvider streams ten tokens, stopping early once ctx is done, as a
// real stream does when its request is cancelled.
func tokenProvider() provider.Provider {
	return provider.Func(func(ctx context.Context, _ provider.Request) iter.Seq[provider.Part] {
		return func(yield func(provider.Part) bool) {
			for i := range 10 {
				if ctx.Err() != nil {
					return
				}
				if !yield(provider.TextDelta{Text: string(rune('a' + i))}) {
					return
				}
			}
			yield(provider.Finish{Reason: "stop"})
		}
	})
}

// TestCommandsLandAtTheirAnchor: a cancel anchored after the third token
// and a user command refused mid-turn after the fifth land exactly there,
// every time, although the turn streams on its own goroutine.
func TestCommandsLandAtTheirAnchor(t *testing.T) {
	f := cassette.New()
	f.Session = &cassette.Session{SessionID: "s", Commands: []cassette.Command{
		{Anchor: cassette.Anchor{After: "hello", Nth: 1}, Line: `{"cmd":"user","text":"go"}`},
		{Anchor: cassette.Anchor{After: "token", Nth: 2}, Line: `{"cmd":"user","text":"too soon"}`},
		{Anchor: cassette.Anchor{After: "token", Nth: 3}, Line: `{"cmd":"cancel"}`},
		{Anchor: cassette.Anchor{Turn: 1, After: "done"}, Line: `{"cmd":"user","text":"again"}`},
	}}
	var first string
	for i := range 50 {
		var out, stdin bytes.Buffer
		p := player{cmds: f.Session.Commands, stdout: &out, stdin: &stdin}
		code, err := p.play(context.Background(), func(ctx context.Context, conn stdio.Conn, h hooks) (int, error) {
			reg, _ := tool.NewRegistry()
			return stdio.ServeConn(ctx, conn, stdio.Options{
				Engine: &core.Engine{Provider: tokenProvider(), Tools: reg}, SessionID: "s",
				Version: "test", Project: "/p", Clock: h.clock, Handled: h.handled, Stepped: h.stepped,
			})
		})
		if err != nil || code != 0 {
			t.Fatalf("Run: %d, %v\n%s", code, err, out.String())
		}
		got := out.String()
		if i == 0 {
			first = got
			if n := strings.Count(got, `"type":"token"`); n != 3+10 {
				t.Fatalf("%d tokens, want 3 before the cancel and 10 in the second turn:\n%s", n, got)
			}
			refused := strings.Index(got, `"type":"protocol_error"`)
			if refused < 0 || strings.Count(got[:refused], `"type":"token"`) != 2 {
				t.Fatalf("the mid-turn user was not refused right after the second token:\n%s", got)
			}
			if !strings.Contains(got, `"stop_reason":"cancelled"`) || !strings.HasSuffix(got, "{\"session_id\":\"s\",\"type\":\"done\",\"stop_reason\":\"stop\"}\n") {
				t.Fatalf("want a cancelled turn, then a full one:\n%s", got)
			}
			var want strings.Builder
			for _, c := range f.Session.Commands {
				want.WriteString(c.Line + "\n")
			}
			if stdin.String() != want.String() {
				t.Fatalf("delivered stdin %q, want %q", stdin.String(), want.String())
			}
		} else if got != first {
			t.Fatalf("run %d differs:\n%s\nfirst:\n%s", i, got, first)
		}
	}
}

// TestGatedClockPassesOnlyWhenQuiet: a wait on the replay's clock passes
// its virtual time at once when no command is due or in flight, and
// otherwise only once the harness has acted on the command: then the time
// it returns is the time the wait ends, and Now agrees.
func TestGatedClockPassesOnlyWhenQuiet(t *testing.T) {
	user := cassette.Command{Anchor: cassette.Anchor{After: "hello", Nth: 1}, Line: `{"cmd":"user","text":"go"}`}
	tests := []struct {
		name  string
		setup func(t *testing.T, f *feeder) // leaves the feeder in the state under test
		quiet bool
		act   func(f *feeder) // what makes it quiet, when it is not
	}{
		{"nothing to send", func(*testing.T, *feeder) {}, true, nil},
		{"every command acted on", func(t *testing.T, f *feeder) {
			if _, ok := f.nextCommand(); !ok {
				t.Fatal("no command")
			}
			f.handled(1, false)
		}, true, nil},
		{"a command due", func(*testing.T, *feeder) {}, false, func(f *feeder) {
			f.nextCommand()
			f.handled(1, false)
		}},
		{"a command in flight", func(_ *testing.T, f *feeder) { f.nextCommand() }, false, func(f *feeder) { f.handled(1, false) }},
		{"a command in flight, the player stopped", func(_ *testing.T, f *feeder) { f.nextCommand() }, false, func(f *feeder) { f.stop() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cmds []cassette.Command
			if tt.name != "nothing to send" {
				cmds = []cassette.Command{user}
			}
			f := newFeeder(cmds, nil) // the harness idle: a command is due
			tt.setup(t, f)
			clk := &gatedClock{now: Epoch, f: f}
			ch := clk.After(time.Minute)
			select {
			case got := <-ch:
				if !tt.quiet {
					t.Fatalf("the wait ended at %v with a command due or in flight", got)
				}
				if want := Epoch.Add(time.Minute); !got.Equal(want) || !clk.Now().Equal(want) {
					t.Fatalf("the wait ended at %v, Now %v; want %v", got, clk.Now(), want)
				}
				return
			default:
				if tt.quiet {
					t.Fatal("a wait with nothing due or in flight did not pass at once")
				}
			}
			if !clk.Now().Equal(Epoch) {
				t.Fatalf("time passed to %v before the command was acted on", clk.Now())
			}
			tt.act(f)
			if got, want := <-ch, Epoch.Add(time.Minute); !got.Equal(want) {
				t.Fatalf("the wait ended at %v, want %v", got, want)
			}
		})
	}
}
