package tape

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/hook"
	"github.com/openmax/openmax/recorder/cassette"
)

// payloadText is a hook payload as the cassette stores it.
func payloadText(payload any) string {
	b, err := json.Marshal(payload)
	if err != nil {
		return fmt.Sprintf("unencodable payload: %v", err)
	}
	return string(b)
}

func toFailures(fs []core.HookFailure) []cassette.HookFailure {
	var out []cassette.HookFailure
	for _, f := range fs {
		out = append(out, cassette.HookFailure{Hook: f.Hook, Event: string(f.Event), Detail: f.Detail})
	}
	return out
}

func fromFailures(fs []cassette.HookFailure) []core.HookFailure {
	var out []core.HookFailure
	for _, f := range fs {
		out = append(out, core.HookFailure{Hook: f.Hook, Event: core.HookEvent(f.Event), Detail: f.Detail})
	}
	return out
}

// recordingHooks runs the live hooks and notes every call in the
// cassette's session: the event and payload, the verdict, the failures and
// the stdio exchanges that happened meanwhile. The call is staged before
// it returns, so it is in the cassette before any line reporting its
// outcome (hook_failed, turn_refused, a blocked done) reaches the client.
type recordingHooks struct {
	next core.Hooks
	c    *capture

	mu        sync.Mutex
	exchanges []cassette.HookExchange // since the last call was noted
}

// exchanged notes one stdio exchange of a hook, for the call under way.
func (r *recordingHooks) exchanged(x cassette.HookExchange) {
	r.mu.Lock()
	r.exchanges = append(r.exchanges, x)
	r.mu.Unlock()
}

func (r *recordingHooks) note(call cassette.HookCall) {
	r.mu.Lock()
	call.Exchanges, r.exchanges = r.exchanges, nil
	r.mu.Unlock()
	c := r.c
	c.mu.Lock()
	c.sess.Hooks = append(c.sess.Hooks, call)
	c.stageLocked()
	c.mu.Unlock()
}

func (r *recordingHooks) Intercept(ctx context.Context, event core.HookEvent, payload any) (core.HookVerdict, []core.HookFailure) {
	v, fs := r.next.Intercept(ctx, event, payload)
	r.note(cassette.HookCall{Event: string(event), Payload: payloadText(payload),
		Refused: v.Refused, Hook: v.Hook, Reason: v.Reason, Failures: toFailures(fs)})
	return v, fs
}

func (r *recordingHooks) Observe(ctx context.Context, event core.HookEvent, payload any) []core.HookFailure {
	fs := r.next.Observe(ctx, event, payload)
	r.note(cassette.HookCall{Event: string(event), Payload: payloadText(payload), Failures: toFailures(fs)})
	return fs
}

func (r *recordingHooks) Close() error { return r.next.Close() }

// replayedHooks answer the engine's hook calls from the recording, in
// order, running nothing; a call the recording does not hold at that
// point (another event, another payload, or none left) is a problem of
// the replay and is answered with no verdict and no failure.
type replayedHooks struct {
	mu    sync.Mutex
	calls []cassette.HookCall
	next  int
	miss  []string
}

func (r *replayedHooks) take(event core.HookEvent, payload any) (cassette.HookCall, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.next + 1
	if r.next >= len(r.calls) {
		r.miss = append(r.miss, fmt.Sprintf("hook call %d (%s) is not in the recording", n, event))
		return cassette.HookCall{}, false
	}
	call := r.calls[r.next]
	r.next++
	got := payloadText(payload)
	if call.Event != string(event) || call.Payload != got {
		r.miss = append(r.miss, fmt.Sprintf("hook call %d: the replay made %s %s where the recording has %s %s", n, event, got, call.Event, call.Payload))
		return cassette.HookCall{}, false
	}
	return call, true
}

func (r *replayedHooks) Intercept(_ context.Context, event core.HookEvent, payload any) (core.HookVerdict, []core.HookFailure) {
	call, ok := r.take(event, payload)
	if !ok {
		return core.HookVerdict{}, nil
	}
	return core.HookVerdict{Refused: call.Refused, Hook: call.Hook, Reason: call.Reason}, fromFailures(call.Failures)
}

func (r *replayedHooks) Observe(_ context.Context, event core.HookEvent, payload any) []core.HookFailure {
	call, ok := r.take(event, payload)
	if !ok {
		return nil
	}
	return fromFailures(call.Failures)
}

func (r *replayedHooks) Close() error { return nil }

// problems lists the calls that did not match and the recorded calls the
// replay never made.
func (r *replayedHooks) problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]string(nil), r.miss...)
	if left := len(r.calls) - r.next; left > 0 {
		out = append(out, fmt.Sprintf("%d recorded hook call(s) never made, from call %d (%s) on", left, r.next+1, r.calls[r.next].Event))
	}
	return out
}

// exchangeOf is a hook exchange as the cassette keeps it (env values were
// already redacted by core/hook).
func exchangeOf(x hook.Exchange) cassette.HookExchange {
	return cassette.HookExchange{Hook: x.Hook, Sent: string(x.Request), Received: string(x.Response), Failure: x.Failure}
}
