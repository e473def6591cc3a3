package codexbackend_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/codexbackend"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/codex"
)

// scriptedServer starts an in-process app-server that answers turn/start
// with the notifications of script, TH and TU replaced by the thread and
// the turn, each followed by nothing (the turn's end is in the script).
func scriptedServer(script []string) func(ctx context.Context, o codex.Options) (*codex.Client, error) {
	return func(ctx context.Context, o codex.Options) (*codex.Client, error) {
		ids := strings.NewReplacer("TH", "th1", "TU", "u1")
		return pipeServer(ctx, o, nil, func(m clientLine, write func(string)) {
			id := string(m.ID)
			var out []string
			switch m.Method {
			case codex.MethodInitialize:
				out = []string{`{"id":` + id + `,"result":{"userAgent":"x","codexHome":"/","platformFamily":"unix","platformOs":"linux"}}`}
			case codex.MethodTurnStart:
				out = append([]string{`{"id":` + id + `,"result":{"turn":{"id":"u1","status":"inProgress","items":[]}}}`,
					`{"method":"turn/started","params":{"threadId":"TH","turn":{"id":"TU","status":"inProgress","items":[]}}}`}, script...)
			case codex.MethodTurnInterrupt:
				out = []string{`{"id":` + id + `,"result":{}}`,
					`{"method":"turn/completed","params":{"threadId":"TH","turn":{"id":"TU","status":"interrupted","items":[]}}}`}
			default: // thread/start
				out = []string{`{"id":` + id + `,"result":{"thread":{"id":"th1"}}}`}
			}
			for _, l := range out {
				write(ids.Replace(l))
			}
		})
	}
}

// Lines of a scripted turn.
func delta(item, text string) string {
	return `{"method":"item/agentMessage/delta","params":{"threadId":"TH","turnId":"TU","itemId":"` + item + `","delta":"` + text + `"}}`
}

func messageCompleted(item, text string) string {
	return `{"method":"item/completed","params":{"threadId":"TH","turnId":"TU","item":{"type":"agentMessage","id":"` + item + `","text":"` + text + `"}}}`
}

const (
	usageLine     = `{"method":"thread/tokenUsage/updated","params":{"threadId":"TH","turnId":"TU","tokenUsage":{"last":{"inputTokens":1,"outputTokens":1,"cachedInputTokens":0,"reasoningOutputTokens":0,"totalTokens":2},"total":{"inputTokens":1,"outputTokens":1,"cachedInputTokens":0,"reasoningOutputTokens":0,"totalTokens":2}}}}`
	completedLine = `{"method":"turn/completed","params":{"threadId":"TH","turn":{"id":"TU","status":"completed","items":[]}}}`
	failedLine    = `{"method":"turn/completed","params":{"threadId":"TH","turn":{"id":"TU","status":"failed","items":[],"error":{"message":"stream died"}}}}`
	commandLine   = `{"method":"item/started","params":{"threadId":"TH","turnId":"TU","item":{"type":"commandExecution","id":"c1","command":"ls","cwd":"/","status":"inProgress","commandActions":[]}}}`
)

// TestReplyIsOnDiskBeforeMessageDone: the text of codex's reply is in the
// session (its record written) before the message_done reporting it goes
// out, and is saved as soon as codex completes the message, before what
// codex sends after it (usage, the turn's end). A message that follows a
// saved one closes it first; a turn that fails keeps only messages codex
// completed; a reply that cannot be saved gets no message_done but an
// error, and the turn ends with error.
func TestReplyIsOnDiskBeforeMessageDone(t *testing.T) {
	tools, err := tool.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		script   []string
		failSave bool
		stop     string
		want     []string // the log: saved records and events, in order
	}{
		{name: "one message", script: []string{delta("m1", "a"), delta("m1", "b"), messageCompleted("m1", "ab"), usageLine, completedLine},
			stop: "completed", want: []string{"token a", "token b", "saved ab", "usage", "message_done ab"}},
		{name: "a message that came whole", script: []string{messageCompleted("m1", "whole"), usageLine, completedLine},
			stop: "completed", want: []string{"token whole", "saved whole", "usage", "message_done whole"}},
		{name: "two messages in one run", script: []string{delta("m1", "a"), delta("m2", "b"), messageCompleted("m2", "b"), completedLine},
			stop: "completed", want: []string{"token a", "token \n\n", "token b", "saved a\n\nb", "message_done a\n\nb"}},
		{name: "a message after a completed one", script: []string{delta("m1", "a"), messageCompleted("m1", "a"), delta("m2", "b"), messageCompleted("m2", "b"), completedLine},
			stop: "completed", want: []string{"token a", "saved a", "message_done a", "token b", "saved b", "message_done b"}},
		{name: "text of a message after it completed", script: []string{delta("m1", "a"), messageCompleted("m1", "a"), delta("m1", "b"), completedLine},
			stop: "completed", want: []string{"token a", "saved a", "message_done a", "token b", "saved b", "message_done b"}},
		{name: "a tool closes the run", script: []string{delta("m1", "a"), commandLine, completedLine},
			stop: "completed", want: []string{"token a", "saved a", "message_done a", "tool_start", "tool_end"}},
		{name: "failed mid-message", script: []string{delta("m1", "a"), failedLine},
			stop: wire.StopError, want: []string{"token a", "error"}},
		{name: "failed after a completed message", script: []string{delta("m1", "a"), messageCompleted("m1", "a"), failedLine},
			stop: wire.StopError, want: []string{"token a", "saved a", "message_done a", "error"}},
		{name: "the save fails", script: []string{delta("m1", "a"), messageCompleted("m1", "a"), usageLine, completedLine},
			failSave: true, stop: wire.StopError, want: []string{"token a", "error"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard
			defer cancel()
			b := codexbackend.New(codexbackend.Config{Start: scriptedServer(tc.script)})
			defer b.Close(ctx)
			eng := &core.Engine{Backend: b, Tools: tools}
			var mu sync.Mutex
			var log []string
			add := func(s string) {
				mu.Lock()
				defer mu.Unlock()
				log = append(log, s)
			}
			s := core.NewSessionFrom("s", nil, func(m provider.Message) error {
				if m.Role != provider.RoleAssistant {
					return nil
				}
				if tc.failSave {
					return errors.New("disk full")
				}
				add("saved " + m.Text)
				return nil
			})
			stop := eng.RunTurn(ctx, s, "hi", func(ev wire.Event) {
				switch e := ev.(type) {
				case wire.Token:
					add("token " + e.Text)
				case wire.MessageDone:
					add("message_done " + e.Text)
				case wire.Budget:
				default:
					add(fmt.Sprint(ev.EventType()))
				}
			})
			mu.Lock()
			defer mu.Unlock()
			if stop != tc.stop || !slices.Equal(log, tc.want) {
				t.Errorf("stop %q, log\n%q\nwant stop %q, log\n%q", stop, log, tc.stop, tc.want)
			}
			var kept []string
			for _, m := range s.Messages() {
				if m.Role == provider.RoleAssistant {
					kept = append(kept, m.Text)
				}
			}
			var want []string
			for _, l := range tc.want {
				if text, ok := strings.CutPrefix(l, "saved "); ok {
					want = append(want, text)
				}
			}
			if !slices.Equal(kept, want) {
				t.Errorf("the session keeps %q, want %q", kept, want)
			}
		})
	}
}
