package hook

import (
	"bytes"
	"context"
	"sync"
)

// Recorded is an Exchanger that answers from recorded exchanges instead of
// running the hooks: each message to a hook gets the next exchange
// recorded for that hook, in order. A message that is not the recorded
// request, or one past the end of the recording, is a failure. No process
// is started, so a recorded session replays without the hook binaries.
func Recorded(exchanges []Exchange) Exchanger {
	r := &recorded{next: map[string][]Exchange{}}
	for _, e := range exchanges {
		r.next[e.Hook] = append(r.next[e.Hook], e)
	}
	return r
}

type recorded struct {
	mu   sync.Mutex
	next map[string][]Exchange
}

func (r *recorded) Exchange(_ context.Context, h *Hook, m Message) Reply {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.next[h.Name]
	if len(q) == 0 {
		return Reply{Failure: "replay: the recording has no more exchanges of this hook"}
	}
	e := q[0]
	r.next[h.Name] = q[1:]
	if !bytes.Equal(e.Request, m.Line) {
		return Reply{Failure: "replay: the message differs from the recorded one"}
	}
	return Reply{Response: e.Response, Failure: e.ProcessFailure}
}

func (r *recorded) Close() error { return nil }
