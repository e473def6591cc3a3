package harness_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/harness"
	"github.com/openmax/openmax/core/wire"
)

// scriptedHooks refuses the events in refuse and counts Close.
type scriptedHooks struct {
	mu     sync.Mutex
	refuse map[core.HookEvent]bool
	closed int
}

func (s *scriptedHooks) Intercept(_ context.Context, event core.HookEvent, _ any) (core.HookVerdict, []core.HookFailure) {
	if s.refuse[event] {
		return core.HookVerdict{Refused: true, Hook: "h", Reason: "not yet"}, nil
	}
	return core.HookVerdict{}, nil
}

func (s *scriptedHooks) Observe(_ context.Context, event core.HookEvent, _ any) []core.HookFailure {
	if event == core.HookTurnStart {
		return []core.HookFailure{{Hook: "audit", Event: event, Detail: "exited 1"}}
	}
	return nil
}

func (s *scriptedHooks) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed++
	return nil
}

func TestPromptReportsHooksAndStops(t *testing.T) {
	for _, tc := range []struct {
		name   string
		refuse core.HookEvent
		stop   string
		log    []string
		out    string
	}{
		{"blocked", core.HookUserPromptSubmit, wire.StopBlocked,
			[]string{`openmax: [openmax] A user prompt was blocked by hook "h" and was not sent: not yet`}, ""},
		{"unverified", core.HookTurnEnd, wire.StopUnverified,
			[]string{"openmax: hook audit (turn_start) failed: exited 1", "openmax: hook h refused the reply (continuation 0, 8 left): not yet",
				"openmax: hook h refused the reply (continuation 7, 1 left): not yet"}, "hello\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, true)
			hooks := &scriptedHooks{refuse: map[core.HookEvent]bool{tc.refuse: true}}
			var log bytes.Buffer
			cfg := harness.Defaults()
			cfg.Provider, cfg.Project = "echo", w.project
			h, err := harness.New(cfg, harness.Deps{Getenv: w.getenv, Hooks: hooks, Log: &log})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			stop, err := h.Prompt(context.Background(), "hello", &out)
			if err != nil || stop != tc.stop {
				t.Fatalf("Prompt = %q, %v; want %q", stop, err, tc.stop)
			}
			for _, l := range tc.log {
				if !strings.Contains(log.String(), l+"\n") {
					t.Errorf("log lacks %q:\n%s", l, log.String())
				}
			}
			if tc.out != "" && !strings.HasPrefix(out.String(), tc.out) {
				t.Errorf("stdout %q", out.String())
			}
			if hooks.closed != 1 {
				t.Errorf("hooks closed %d times, want 1", hooks.closed)
			}
		})
	}
}

func TestServeWithNoHooksIgnoresDepsHooks(t *testing.T) {
	w := newWorld(t, true)
	hooks := &scriptedHooks{refuse: map[core.HookEvent]bool{core.HookUserPromptSubmit: true}}
	cfg := harness.Defaults()
	cfg.Provider, cfg.Project = "echo", w.project
	for _, tc := range []struct {
		noHooks bool
		want    string
	}{
		{false, "hello budget harness_note done"},
		{true, "hello budget token message_done done"},
	} {
		h, err := harness.New(cfg, harness.Deps{Getenv: w.getenv, Hooks: hooks, NoHooks: tc.noHooks})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if _, err := h.Serve(context.Background(), strings.NewReader(`{"cmd":"user","text":"hi"}`+"\n"), &out); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(types(t, out.Bytes()), " "); got != tc.want {
			t.Errorf("NoHooks %v: %s, want %s", tc.noHooks, got, tc.want)
		}
		if _, err := wire.CheckStreamStrict(bytes.NewReader(out.Bytes()), func(v wire.Verdict) {
			if v.Err != nil {
				t.Errorf("checker: line %d: %v", v.Line, v.Err)
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// A hook file that is not valid is reported once, as hook_failed naming
// the file, with the first turn; both turns proceed.
func TestInvalidHookFileIsReportedOnce(t *testing.T) {
	w := newWorld(t, true)
	dir := filepath.Join(w.project, ".openmax")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "hooks.json")
	if err := os.WriteFile(file, []byte(`{"hooks": [{"name": "x"`), 0o644); err != nil {
		t.Fatal(err)
	}
	h := w.harness(t, nil)
	var out bytes.Buffer
	if _, err := h.Serve(context.Background(), strings.NewReader(`{"cmd":"user","text":"one"}`+"\n"), &out); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(types(t, out.Bytes()), " "), "hello hook_failed budget token message_done done"; got != want {
		t.Errorf("lines %s, want %s\n%s", got, want, out.String())
	}
	if !strings.Contains(out.String(), `"hook":"`+file+`"`) {
		t.Errorf("hook_failed does not name %s:\n%s", file, out.String())
	}
	// Once per harness: later turns run without the report.
	h = w.harness(t, nil)
	var failed []string
	for _, text := range []string{"one", "two"} {
		stop := h.Engine().RunTurn(context.Background(), core.NewSession("s"), text, func(ev wire.Event) {
			if f, ok := ev.(wire.HookFailed); ok {
				failed = append(failed, text+":"+f.Hook)
			}
		})
		if stop != "stop" {
			t.Errorf("turn %s: %s", text, stop)
		}
	}
	if want := []string{"one:" + file}; strings.Join(failed, " ") != strings.Join(want, " ") {
		t.Errorf("hook_failed %q, want %q", failed, want)
	}
}

func TestNoHookFilesMeansNoHooks(t *testing.T) {
	w := newWorld(t, true)
	if hooks := w.harness(t, nil).Engine().Hooks; hooks != nil {
		t.Errorf("Engine.Hooks = %T with no hook file, want nil", hooks)
	}
	if harness.LoadHooks(w.project, "", nil) != nil {
		t.Errorf("LoadHooks of a project without hooks is not nil")
	}
}
