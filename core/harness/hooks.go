package harness

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/wire"
)

// sessionHooks are the hooks the engine runs: Deps.Hooks when set, none
// with Deps.NoHooks.
func sessionHooks(deps Deps) core.Hooks {
	if deps.NoHooks {
		return nil
	}
	return deps.Hooks
}

// withLoadFailures reports the failures of loading the hook files (an
// invalid or unreadable file) as hook_failed with the first hook call of
// the session (the first turn's user_prompt_submit), once; every call
// after that is next's alone. next may have no hooks at all (all files
// failed): the load failures are still reported.
type withLoadFailures struct {
	next core.Hooks // nil when no hook loaded

	once    sync.Once
	pending []core.HookFailure
}

func (w *withLoadFailures) take() []core.HookFailure {
	var out []core.HookFailure
	w.once.Do(func() { out, w.pending = w.pending, nil })
	return out
}

func (w *withLoadFailures) Intercept(ctx context.Context, event core.HookEvent, payload any) (core.HookVerdict, []core.HookFailure) {
	failed := w.take()
	if w.next == nil {
		return core.HookVerdict{}, failed
	}
	v, fs := w.next.Intercept(ctx, event, payload)
	return v, append(failed, fs...)
}

func (w *withLoadFailures) Observe(ctx context.Context, event core.HookEvent, payload any) []core.HookFailure {
	failed := w.take()
	if w.next == nil {
		return failed
	}
	return append(failed, w.next.Observe(ctx, event, payload)...)
}

func (w *withLoadFailures) Close() error {
	if w.next == nil {
		return nil
	}
	return w.next.Close()
}

// closeHooks stops the hooks' persistent processes once a session is over.
func closeHooks(e *core.Engine, log io.Writer) {
	if e.Hooks == nil {
		return
	}
	if err := e.Hooks.Close(); err != nil {
		fmt.Fprintf(log, "openmax: stopping hooks: %v\n", err)
	}
}

// logHookEvent writes what hooks did in a -p turn to the diagnostics log.
func logHookEvent(log io.Writer, ev wire.Event) {
	switch ev := ev.(type) {
	case wire.HookFailed:
		fmt.Fprintf(log, "openmax: hook %s (%s) failed: %s\n", ev.Hook, ev.Event, ev.Detail)
	case wire.TurnRefused:
		fmt.Fprintf(log, "openmax: hook %s refused the reply (continuation %d, %d left): %s\n", ev.Hook, ev.Continuation, ev.ContinuationsLeft, ev.Reason)
	case wire.HarnessNote:
		fmt.Fprintf(log, "openmax: %s\n", ev.Text)
	}
}
