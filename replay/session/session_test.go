package session

import (
	"bytes"
	"context"
	"iter"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/core"
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
	code, err := Run(ctx, Options{
		Cassette: f, Stdout: &out, Version: "test", Project: func() string { return "/p" },
		Build: func(_ http.RoundTripper, clk clock.Clock, _ uint64, _ []string) (*core.Engine, error) {
			reg, _ := tool.NewRegistry()
			return &core.Engine{Provider: waitingProvider(clk), Tools: reg}, nil
		},
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
	user := cassette.Command{AfterLines: 1, Line: `{"cmd":"user","text":"go"}`}
	cancelled := run(t, []cassette.Command{user, {AfterLines: 3, Line: `{"cmd":"cancel"}`}})
	if !strings.Contains(cancelled, `"stop_reason":"cancelled"`) || strings.Contains(cancelled, "after the wait") {
		t.Errorf("the cancel did not land in the wait:\n%s", cancelled)
	}
	// The hour passes on the virtual clock: run's 10 s context would end
	// a real one.
	waited := run(t, []cassette.Command{user})
	if !strings.Contains(waited, "after the wait") || !strings.Contains(waited, `"stop_reason":"stop"`) {
		t.Errorf("the virtual hour did not pass:\n%s", waited)
	}
}

func TestNoSession(t *testing.T) {
	if _, err := Run(context.Background(), Options{Cassette: cassette.New()}); err != ErrNoSession {
		t.Errorf("got %v", err)
	}
}
