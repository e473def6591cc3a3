// Package hook runs openmax's hooks: external programs, configured per
// user and per project, that the turn engine consults at intercept events
// (which they may refuse) and notifies at observe events, over the AHP
// stdio binding (one JSON-RPC 2.0 object per line; docs/hooks.md). It
// knows nothing of the engine: a *Set implements core.Hooks.
package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/provider/redact"
)

// Options configure a Set.
type Options struct {
	// Exchanger delivers the messages; nil runs the hooks' processes
	// (NewProcesses over Environ).
	Exchanger Exchanger
	// Environ is openmax's environment, from which only the base
	// variables (BaseEnv) reach a hook; nil is os.Environ.
	Environ func() []string
	// OnExchange, when set, is called with every exchange, in order, once
	// it is over (for the session's recording).
	OnExchange func(Exchange)
}

// Exchange is one message to one hook and what came of it, as recorded.
// Env values are never in it.
type Exchange struct {
	Hook  string
	Event core.HookEvent
	// Request is the line sent (a hook/intercept request or a
	// hook/observe notification), without its newline.
	Request json.RawMessage
	// Response is the hook's response line (nil for a notification or
	// when none came), with env values replaced by [env NAME].
	Response json.RawMessage
	// Failure is the failure reported for the exchange ("" when none).
	Failure string
	// ProcessFailure is the part of Failure the Exchanger reported (the
	// rest is what openmax found wrong in Response); a replay answers
	// with Response and ProcessFailure.
	ProcessFailure string
}

// Set is the hooks of a session. It implements core.Hooks and is safe for
// concurrent use; exchanges with one persistent hook are serialized.
type Set struct {
	hooks      []*Hook
	redactors  map[*Hook]redactor
	ex         Exchanger
	onExchange func(Exchange)
	secrets    *strings.Replacer // openmax's own secrets, never sent to a hook

	mu  sync.Mutex
	ids map[*Hook]int64
}

var _ core.Hooks = (*Set)(nil)

// Load reads the user's hook file (userDir/hooks.json) and then the
// project's (project/.openmax/hooks.json); an empty directory is skipped
// and a missing file has no hooks. A file that cannot be read or is not
// valid is not loaded at all and is reported as a failure naming it; the
// other file still loads. The Set is never nil.
func Load(project, userDir string, opts Options) (*Set, []core.HookFailure) {
	hooks, failures := loadAll(project, userDir)
	return New(hooks, opts), failures
}

// New is a Set of the given hooks, run in order.
func New(hooks []*Hook, opts Options) *Set {
	environ := opts.Environ
	if environ == nil {
		environ = os.Environ
	}
	env := environ()
	s := &Set{
		hooks:      hooks,
		redactors:  map[*Hook]redactor{},
		ex:         opts.Exchanger,
		onExchange: opts.OnExchange,
		secrets:    secretReplacer(env),
		ids:        map[*Hook]int64{},
	}
	if s.ex == nil {
		s.ex = NewProcesses(env)
	}
	for _, h := range hooks {
		s.redactors[h] = newRedactor(h.Env)
	}
	return s
}

// Hooks are the hooks of the set, in the order they run.
func (s *Set) Hooks() []*Hook { return s.hooks }

// Len is how many hooks the set has.
func (s *Set) Len() int { return len(s.hooks) }

// Close terminates the persistent hook processes.
func (s *Set) Close() error { return s.ex.Close() }

// Intercept runs the intercept hooks of event in order until one refuses,
// then notifies the event's observe hooks. Intercepts fail open: a hook
// that fails (does not start, crashes, times out, answers malformed) is a
// HookFailure and does not refuse; the next hook still runs.
func (s *Set) Intercept(ctx context.Context, event core.HookEvent, payload any) (core.HookVerdict, []core.HookFailure) {
	var verdict core.HookVerdict
	var failures []core.HookFailure
	if event.Intercept() {
		for _, h := range s.hooks {
			if h.Event != event || h.Mode != ModeIntercept {
				continue
			}
			if ctx.Err() != nil {
				break
			}
			refused, reason, fail := s.intercept(ctx, h, event, payload)
			if fail != "" {
				failures = append(failures, core.HookFailure{Hook: h.Name, Event: event, Detail: fail})
			}
			if refused {
				verdict = core.HookVerdict{Refused: true, Reason: reason, Hook: h.Name}
				break
			}
		}
	}
	return verdict, append(failures, s.Observe(ctx, event, payload)...)
}

// Observe notifies the observe hooks of event in order. Nothing they do
// affects the turn; each failure is returned.
func (s *Set) Observe(ctx context.Context, event core.HookEvent, payload any) []core.HookFailure {
	var failures []core.HookFailure
	for _, h := range s.hooks {
		if h.Event != event || h.Mode != ModeObserve {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		line, err := s.message(h, event, 0, payload)
		if err != nil {
			failures = append(failures, core.HookFailure{Hook: h.Name, Event: event, Detail: err.Error()})
			continue
		}
		reply := s.ex.Exchange(ctx, h, Message{Line: line})
		red := s.redactors[h]
		fail := red.text(reply.Failure)
		s.record(Exchange{Hook: h.Name, Event: event, Request: line, Failure: fail, ProcessFailure: fail})
		if fail != "" {
			failures = append(failures, core.HookFailure{Hook: h.Name, Event: event, Detail: fail})
		}
	}
	return failures
}

// intercept runs one intercept hook.
func (s *Set) intercept(ctx context.Context, h *Hook, event core.HookEvent, payload any) (refused bool, reason, fail string) {
	s.mu.Lock()
	s.ids[h]++
	id := s.ids[h]
	s.mu.Unlock()
	line, err := s.message(h, event, id, payload)
	if err != nil {
		return false, "", err.Error()
	}
	reply := s.ex.Exchange(ctx, h, Message{ID: id, Line: line})
	red := s.redactors[h]
	var problems []string
	if reply.Failure != "" {
		problems = append(problems, reply.Failure)
	}
	if reply.Response != nil {
		got, r, err := parseResponse(reply.Response)
		switch {
		case err != nil:
			problems = append(problems, err.Error())
		case got != id:
			problems = append(problems, fmt.Sprintf("malformed output: the response has id %d, the request %d", got, id))
		default:
			res, err := decide(r)
			if err != nil {
				problems = append(problems, err.Error())
			} else if res.Decision == DecisionRefuse {
				refused, reason = true, red.text(res.Reason)
			}
		}
	} else if len(problems) == 0 {
		problems = append(problems, "no response")
	}
	fail = red.text(strings.Join(problems, "; "))
	s.record(Exchange{Hook: h.Name, Event: event, Request: line, Response: red.bytes(reply.Response), Failure: fail,
		ProcessFailure: red.text(reply.Failure)})
	return refused, reason, fail
}

// message encodes the message for h. The payload is sent as the engine
// gave it, except that openmax's own secrets (provider keys, tokens in its
// environment) are replaced by [redacted].
func (s *Set) message(h *Hook, event core.HookEvent, id int64, payload any) ([]byte, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("the %s payload cannot be encoded: %v", event, err)
	}
	var sid struct {
		SessionID string `json:"session_id"`
	}
	_ = json.Unmarshal(raw, &sid) // a payload without one has none
	line, err := encodeMessage(id, Params{Version: Version, Hook: h.Name, Event: string(event), SessionID: sid.SessionID, Payload: raw})
	if err != nil {
		return nil, err
	}
	if s.secrets != nil {
		line = []byte(s.secrets.Replace(string(line)))
	}
	// Invalid UTF-8 can only sit inside strings (a raw payload part such
	// as a tool's arguments): replacing it keeps the line valid JSON.
	return bytes.ToValidUTF8(line, []byte("\uFFFD")), nil
}

func (s *Set) record(e Exchange) {
	if s.onExchange != nil {
		s.onExchange(e)
	}
}

// secretReplacer replaces the values of openmax's credential variables
// (redact.Credentials), raw and as written inside a JSON string, by
// [redacted].
func secretReplacer(environ []string) *strings.Replacer {
	var pairs []string
	for _, v := range redact.Credentials(environ) {
		pairs = append(pairs, jsonInner(v), redact.Marker)
	}
	if len(pairs) == 0 {
		return nil
	}
	return strings.NewReplacer(pairs...)
}
