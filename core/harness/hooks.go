package harness

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/config"
	"github.com/openmax/openmax/core/hook"
	"github.com/openmax/openmax/core/wire"
)

// sessionHooks are the hooks the engine runs: Deps.Hooks when set, none
// with Deps.NoHooks, else those of the user's hook file (hooks.json in the
// configuration directory) and the project's (.openmax/hooks.json), see
// core/hook and docs/hooks.md. nil when there are none and nothing failed
// to load, so a session without hook files runs exactly as before.
func sessionHooks(project string, deps Deps) core.Hooks {
	switch {
	case deps.NoHooks:
		return nil
	case deps.Hooks != nil:
		return deps.Hooks
	}
	userDir, err := config.Dir(deps.getenv)
	if err != nil {
		userDir = "" // no configuration directory: no user hooks
	}
	return loadHooks(project, userDir, deps.HookExchange, deps.Log)
}

// LoadHooks loads the hooks of the hook files under project
// (.openmax/hooks.json) and userDir (hooks.json), either "" to skip it,
// with onExchange (when set) told of every exchange with a hook. It
// returns nil when neither file defines a hook and neither failed to
// load; a file that failed is reported as hook_failed with the first
// hook call (see withLoadFailures). `openmax replay --live-hooks DIR`
// uses it to run a project's hooks against a recording.
func LoadHooks(project, userDir string, onExchange func(hook.Exchange)) core.Hooks {
	return loadHooks(project, userDir, onExchange, io.Discard)
}

// loadHooks is LoadHooks writing a line to log for each hook file that
// failed to load, as it fails (the wire hears of it at the first hook
// call).
func loadHooks(project, userDir string, onExchange func(hook.Exchange), log io.Writer) core.Hooks {
	set, failed := hook.Load(project, userDir, hook.Options{OnExchange: onExchange})
	for _, f := range failed {
		fmt.Fprintf(log, "openmax: hook file %s: %s; not loaded (hook_failed follows at the first hook call)\n", f.Hook, f.Detail)
	}
	switch {
	case set.Len() == 0 && len(failed) == 0:
		_ = set.Close()
		return nil
	case set.Len() == 0:
		_ = set.Close()
		return &withLoadFailures{pending: failed}
	case len(failed) == 0:
		return set
	}
	return &withLoadFailures{next: set, pending: failed}
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
