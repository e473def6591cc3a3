package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
)

// earlyBackend signals started as soon as its turn runs, then waits for
// proceed (or its context's end) and reports a token, calls a tool and keeps
// its reply, noting what each host method gave it.
type earlyBackend struct {
	started, proceed chan struct{}
	tool             bool  // the tool call ran
	reply            error // Reply's error
}

func (b *earlyBackend) RunTurn(ctx context.Context, h *core.TurnHost, text string) string {
	close(b.started)
	select {
	case <-b.proceed:
	case <-ctx.Done():
	}
	h.Emit(wire.Token{Text: "hi"})
	b.tool = h.CallTool(ctx, "c1", "read_file", json.RawMessage(`{"path":"x"}`)).OK
	b.reply = h.Reply("hi")
	if ctx.Err() != nil {
		return wire.StopCancelled
	}
	return "completed"
}

// TestBackendStartsWhileThePromptIsWritten: a backend's turn starts while
// the session is still writing the prompt, and nothing it reports reaches
// the wire or the session before the prompt is written: budget comes
// first, then its events. When the prompt cannot be written, the turn ends
// with budget, the error and stop error; the backend's turn is cancelled
// and what it reports is dropped. Concurrent: run under -race many times.
func TestBackendStartsWhileThePromptIsWritten(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("write fails=%v", fail), func(t *testing.T) {
			p := mustScript(t, "replies: []\n")
			e := newEngine(t, p)
			b := &earlyBackend{started: make(chan struct{}), proceed: make(chan struct{})}
			e.Backend = b
			var mu sync.Mutex
			var log []string
			gate := make(chan struct{})
			s := core.NewSessionFrom("s", nil, func(m provider.Message) error {
				<-gate // the write takes as long as the test says
				mu.Lock()
				defer mu.Unlock()
				if fail {
					log = append(log, "write failed: "+m.Text)
					return errors.New("disk full")
				}
				log = append(log, "written: "+m.Text)
				return nil
			})
			emit := func(ev wire.Event) {
				mu.Lock()
				defer mu.Unlock()
				log = append(log, fmt.Sprintf("%T", ev))
			}
			stopped := make(chan string, 1)
			go func() { stopped <- e.RunTurn(context.Background(), s, "go", emit) }()
			<-b.started // the backend runs while the write waits
			close(b.proceed)
			mu.Lock()
			early := len(log)
			mu.Unlock()
			close(gate)
			stop := <-stopped
			if early != 0 {
				t.Errorf("%d lines before the prompt was written", early)
			}
			want := "[written: go wire.Budget wire.Token wire.ToolStart wire.ToolEnd written: hi]"
			wantStop := "completed"
			if fail {
				want, wantStop = "[write failed: go wire.Budget wire.Error]", wire.StopError
			}
			if got := fmt.Sprint(log); got != want || stop != wantStop {
				t.Fatalf("stop %q, log %s\nwant stop %q, log %s", stop, got, wantStop, want)
			}
			if fail && (b.tool || b.reply == nil) {
				t.Errorf("after the failed write the tool ran (%v) or the reply was kept (error %v)", b.tool, b.reply)
			}
		})
	}
}
