package codexbackend_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/codexbackend"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/codex"
)

// silentAfter is an app-server that answers the requests before method
// and then nothing, as a hung server would; reached is closed when method
// arrives.
func silentAfter(method string, reached chan struct{}) func(ctx context.Context, o codex.Options) (*codex.Client, error) {
	return func(ctx context.Context, o codex.Options) (*codex.Client, error) {
		sr, cw := io.Pipe()
		cr, sw := io.Pipe()
		go func() {
			in := bufio.NewReader(sr)
			hung := false
			for {
				line, err := in.ReadBytes('\n')
				if err != nil {
					sw.Close()
					return
				}
				var m struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				if json.Unmarshal(line, &m) != nil || len(m.ID) == 0 {
					continue
				}
				if m.Method == method && !hung {
					hung = true
					close(reached)
				}
				if hung {
					continue
				}
				switch m.Method {
				case codex.MethodInitialize:
					io.WriteString(sw, `{"id":`+string(m.ID)+`,"result":{"userAgent":"x","codexHome":"/","platformFamily":"unix","platformOs":"linux"}}`+"\n")
				default:
					io.WriteString(sw, `{"id":`+string(m.ID)+`,"result":{"thread":{"id":"th1"},"turn":{"id":"u1"}}}`+"\n")
				}
			}
		}()
		return codex.Connect(ctx, cr, cw, o)
	}
}

// An app-server that stops answering while the turn starts (initialize,
// thread/start or turn/start) ends the turn with an error naming the wait,
// after AnswerTimeout on the backend's clock, instead of hanging it.
func TestUnansweredStartEndsTheTurn(t *testing.T) {
	for _, method := range []string{codex.MethodInitialize, codex.MethodThreadStart, codex.MethodTurnStart} {
		t.Run(method, func(t *testing.T) {
			fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			reached := make(chan struct{})
			b := codexbackend.New(codexbackend.Config{Start: silentAfter(method, reached), Clock: fake, AnswerTimeout: time.Minute})
			defer b.Close(context.Background())
			tools, err := tool.NewRegistry()
			if err != nil {
				t.Fatal(err)
			}
			eng := &core.Engine{Backend: b, Tools: tools}
			var events []wire.Event
			stopped := make(chan string, 1)
			go func() {
				stopped <- eng.RunTurn(context.Background(), core.NewSession("s1"), "hi", func(ev wire.Event) { events = append(events, ev) })
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			// The clock moves only once the unanswered request is out, so
			// the wait that ends is that request's. A fired wait is gone:
			// the next BlockUntil sees only a later one.
			select {
			case <-reached:
			case <-ctx.Done():
				t.Fatalf("%s never reached the app-server", method)
			}
			var stop string
			if err := fake.BlockUntil(ctx, 1); err != nil {
				t.Fatalf("the turn never waited on the clock: %v", err)
			}
			for stop == "" {
				fake.Advance(time.Minute)
				next := make(chan error, 1)
				go func() { next <- fake.BlockUntil(ctx, 1) }()
				select {
				case stop = <-stopped:
				case err := <-next:
					if err != nil {
						t.Fatalf("the turn neither ended nor waited again: %v", err)
					}
				}
			}
			if stop != wire.StopError {
				t.Fatalf("stop %q, want error", stop)
			}
			last, ok := events[len(events)-1].(wire.Error)
			if !ok || !strings.Contains(last.Message, "did not answer in time (1m0s)") {
				t.Fatalf("events %+v, want an error naming the wait", events)
			}
		})
	}
}
