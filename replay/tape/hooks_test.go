package tape_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/internal/rapidchecks"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/replay"
	"github.com/openmax/openmax/replay/tape"
)

func firstHooks(hs []core.Hooks) core.Hooks {
	if len(hs) == 0 {
		return nil
	}
	return hs[0]
}

// policyHooks blocks prompts containing "secret", refuses the first
// refusals turn_end calls, and reports every turn_start observer as
// failed.
type policyHooks struct {
	mu       sync.Mutex
	refusals int
	turnEnds int
}

func (p *policyHooks) Intercept(_ context.Context, event core.HookEvent, payload any) (core.HookVerdict, []core.HookFailure) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch event {
	case core.HookUserPromptSubmit:
		if strings.Contains(payload.(core.PromptPayload).Prompt, "secret") {
			return core.HookVerdict{Refused: true, Hook: "guard", Reason: "no secrets"}, nil
		}
	case core.HookTurnEnd:
		p.turnEnds++
		if p.turnEnds <= p.refusals {
			return core.HookVerdict{Refused: true, Hook: "verify", Reason: "run the tests"}, nil
		}
	}
	return core.HookVerdict{}, nil
}

func (p *policyHooks) Observe(_ context.Context, event core.HookEvent, _ any) []core.HookFailure {
	if event == core.HookTurnStart {
		return []core.HookFailure{{Hook: "audit", Event: event, Detail: "exited 1"}}
	}
	return nil
}

func (p *policyHooks) Close() error { return nil }

// A session whose hooks block a prompt, refuse completions and fail
// replays from its cassette with no hook at all, byte for byte: blocked,
// turn_refused with its numbers, unverified at the ninth refusal,
// hook_failed.
func TestHookedSessionReplaysWithoutItsHooks(t *testing.T) {
	for _, tc := range []struct {
		name     string
		refusals int
		replies  int
		want     []string
	}{
		{"blocked and two refusals", 2, 3, []string{`"stop_reason":"blocked"`, `"continuation":1,"continuations_left":7`, `"type":"hook_failed"`, `"stop_reason":"stop"`}},
		{"unverified", 100, 9, []string{`"continuation":7,"continuations_left":1`, `"stop_reason":"unverified"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			replies := make([]string, tc.replies)
			for i := range replies {
				replies[i] = "done it"
			}
			steps := []clientStep{
				{line: `{"cmd":"user","text":"my secret"}`, wait: true},
				{line: `{"cmd":"user","text":"fix it"}`, wait: true},
			}
			want := live(t, dir, replies, steps, false, &policyHooks{refusals: tc.refusals})
			for _, w := range tc.want {
				if !strings.Contains(string(want), w) {
					t.Fatalf("live session lacks %s:\n%s", w, want)
				}
			}
			path := filepath.Join(dir, "c.yaml")
			if got := replayOf(t, path); !bytes.Equal(got, want) {
				t.Fatalf("replay differs from the live session:\n--- live\n%s--- replay\n%s", want, got)
			}
			f, err := cassette.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(f.Session.Hooks); n < 4 || f.Session.Hooks[0].Event != "user_prompt_submit" || !f.Session.Hooks[0].Refused {
				t.Fatalf("recorded hook calls %+v", f.Session.Hooks)
			}
		})
	}
}

// A replay that makes a hook call the recording does not hold at that
// point says so; live hooks replace the recorded ones and are not checked.
func TestHookReplayProblemsAndLiveHooks(t *testing.T) {
	dir := t.TempDir()
	steps := []clientStep{{line: `{"cmd":"user","text":"my secret"}`, wait: true}}
	live(t, dir, []string{"done it"}, steps, false, &policyHooks{})
	f, err := cassette.Load(filepath.Join(dir, "c.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	instant := replay.Options{Pace: replay.Pace{Mode: replay.PaceInstant}}

	tampered := *f
	tampered.Session = f.Session.Clone()
	tampered.Session.Hooks[0].Payload = `{"session_id":"s-prop","prompt":"something else"}`
	r, err := tape.Replay(ctx, &tampered, tape.ReplayOptions{Serving: instant})
	if err != nil {
		t.Fatal(err)
	}
	if p := strings.Join(r.Problems(true), "\n"); !strings.Contains(p, "hook call 1: the replay made user_prompt_submit") {
		t.Errorf("problems %q", p)
	}

	short := *f
	short.Session = f.Session.Clone()
	short.Session.Hooks = short.Session.Hooks[:1]
	short.Session.Hooks = append(short.Session.Hooks, cassette.HookCall{Event: "turn_done", Payload: "{}"}, cassette.HookCall{Event: "turn_start", Payload: "{}"})
	r, err = tape.Replay(ctx, &short, tape.ReplayOptions{Serving: instant})
	if err != nil {
		t.Fatal(err)
	}
	if p := strings.Join(r.Problems(true), "\n"); !strings.Contains(p, "1 recorded hook call(s) never made, from call 3 (turn_start) on") {
		t.Errorf("problems %q", p)
	}

	r, err = tape.Replay(ctx, f, tape.ReplayOptions{Serving: instant, LiveHooks: &policyHooks{}})
	if err != nil {
		t.Fatal(err)
	}
	if p := r.Problems(true); len(p) != 0 || !strings.Contains(string(r.Stdout), `"stop_reason":"blocked"`) {
		t.Errorf("live hooks: problems %q, stdout\n%s", p, r.Stdout)
	}
	r, err = tape.Replay(ctx, f, tape.ReplayOptions{Serving: instant, LiveHooks: allowAll{}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(r.Stdout), `"stop_reason":"blocked"`) || len(r.Hooks) != 0 {
		t.Errorf("an allowing live hook still blocked (or was checked): %q\n%s", r.Hooks, r.Stdout)
	}
}

type allowAll struct{}

func (allowAll) Intercept(context.Context, core.HookEvent, any) (core.HookVerdict, []core.HookFailure) {
	return core.HookVerdict{}, nil
}
func (allowAll) Observe(context.Context, core.HookEvent, any) []core.HookFailure { return nil }
func (allowAll) Close() error                                                    { return nil }

// drawnHooks answer each call with the next drawn act, cyclically: 0
// allow, 1 refuse, 2 fail.
type drawnHooks struct {
	mu   sync.Mutex
	acts []int
	n    int
}

func (d *drawnHooks) next() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	a := d.acts[d.n%len(d.acts)]
	d.n++
	return a
}

func (d *drawnHooks) Intercept(_ context.Context, event core.HookEvent, _ any) (core.HookVerdict, []core.HookFailure) {
	switch d.next() {
	case 1:
		return core.HookVerdict{Refused: true, Hook: "drawn", Reason: "no: " + string(event)}, nil
	case 2:
		return core.HookVerdict{}, []core.HookFailure{{Hook: "drawn", Event: event, Detail: "crashed"}}
	}
	return core.HookVerdict{}, nil
}

func (d *drawnHooks) Observe(_ context.Context, event core.HookEvent, _ any) []core.HookFailure {
	if d.next() == 2 {
		return []core.HookFailure{{Hook: "drawn-observer", Event: event, Detail: "exited 1"}}
	}
	return nil
}

func (d *drawnHooks) Close() error { return nil }

// TestRapidHookedSessionReplays: whatever the hooks answered live, the
// cassette replays the very transcript, with no hook run.
func TestRapidHookedSessionReplays(t *testing.T) {
	rapidchecks.Use(t, rapidchecks.Pick(40, 5))
	rapid.Check(t, func(t *rapid.T) {
		acts := rapid.SliceOfN(rapid.IntRange(0, 2), 1, 10).Draw(t, "acts")
		turns := rapid.IntRange(1, 3).Draw(t, "turns")
		var steps []clientStep
		for i := 0; i < turns; i++ {
			steps = append(steps, clientStep{line: fmt.Sprintf(`{"cmd":"user","text":"turn %d"}`, i), wait: true})
		}
		// Enough replies for every continuation a refusing hook allows.
		replies := make([]string, turns*(core.MaxContinuations+1))
		for i := range replies {
			replies[i] = fmt.Sprintf("reply %d", i)
		}
		dir, err := os.MkdirTemp("", "tape-hooks")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		want := live(t, dir, replies, steps, false, &drawnHooks{acts: acts})
		if got := replayOf(t, filepath.Join(dir, "c.yaml")); !bytes.Equal(got, want) {
			t.Fatalf("replay differs from the live session:\n--- live\n%s--- replay\n%s", want, got)
		}
	})
}
