package codex

// Clauses of the app-server protocol (docs/codex-app-server.md) that the
// other tests of the package do not pin on their own.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// With no Command the client runs `codex` from PATH, with codex's
// arguments appended.
func TestStartRunsCodexFromPath(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in codex is a shell script")
	}
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "codex"), []byte("#!/bin/sh\n"+launchScript), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := Start(ctx, Options{Env: []string{"SEEN=" + filepath.Join(t.TempDir(), "initialized")}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close(ctx)
	if args, _, _ := strings.Cut(cl.Init.UserAgent, "|"); args != "app-server -c check_for_update_on_startup=false" {
		t.Fatalf("codex from PATH ran with %q", args)
	}
}

// The active turn is tracked from turn/started too (a turn the client did
// not start with Send, such as compaction's), and turn/completed clears it.
func TestActiveTurnFollowsTurnStarted(t *testing.T) {
	cl, p := connectPeer(t, Options{})
	ctx := context.Background()
	go func() { _, _ = cl.StartThread(ctx, ThreadOptions{}) }()
	p.startThread("th1")
	s := &Session{ID: "th1", cl: cl}
	p.notify(MethodTurnStarted, `{"threadId":"th1","turn":{"id":"tu9","status":"inProgress","items":[]}}`)
	takeEvent(t, cl)
	if got := s.ActiveTurn(); got != "tu9" {
		t.Fatalf("active turn after turn/started = %q, want tu9", got)
	}
	done := make(chan error, 1)
	go func() { done <- s.Interrupt(ctx) }()
	m := p.expect(MethodTurnInterrupt)
	var ip TurnInterruptParams
	if err := json.Unmarshal(m.Params, &ip); err != nil || ip.TurnID != "tu9" {
		t.Fatalf("turn/interrupt = %s (%v), want turnId tu9", m.Params, err)
	}
	p.reply(m.ID, `{}`)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	p.notify(MethodTurnCompleted, `{"threadId":"th1","turn":{"id":"tu9","status":"interrupted","items":[]}}`)
	takeEvent(t, cl)
	if got := s.ActiveTurn(); got != "" {
		t.Fatalf("active turn after turn/completed = %q", got)
	}
}

// Every turn/start carries the reminder, and thread/resume and
// thread/fork carry the thread's settings (resume without the tools).
func TestReminderOnEveryTurnAndSettingsOnResumeAndFork(t *testing.T) {
	h := func(context.Context, ToolCall) (string, error) { return "", nil }
	cl, p := connectPeer(t, Options{Tools: []Namespace{{Name: "openmax", Tools: []Tool{{Name: "t", Handler: h}}}}})
	ctx := context.Background()
	o := ThreadOptions{Cwd: "/w", Model: "gpt-x", DeveloperInstructions: "be brief", Reminder: "stay in /w"}
	done := make(chan error, 1)
	var s *Session
	go func() {
		var err error
		s, err = cl.StartThread(ctx, o)
		done <- err
	}()
	p.startThread("th1")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i, text := range []string{"one", "two"} {
		go func() {
			_, err := s.Send(ctx, text)
			done <- err
		}()
		m := p.expect(MethodTurnStart)
		p.reply(m.ID, `{"turn":{"id":"tu`+text+`","status":"inProgress","items":[]}}`)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		var tp TurnStartParams
		if err := json.Unmarshal(m.Params, &tp); err != nil {
			t.Fatal(err)
		}
		if e := tp.AdditionalContext[ReminderSource]; e.Kind != AdditionalContextKindApplication || e.Value != "stay in /w" {
			t.Fatalf("turn/start %d: additionalContext = %s", i+1, m.Params)
		}
		p.notify(MethodTurnCompleted, `{"threadId":"th1","turn":{"id":"tu`+text+`","status":"completed","items":[]}}`)
		takeEvent(t, cl)
	}
	for _, method := range []string{MethodThreadResume, MethodThreadFork} {
		go func() {
			var err error
			if method == MethodThreadResume {
				_, err = cl.ResumeThread(ctx, "th1", o)
			} else {
				_, err = cl.ForkThread(ctx, "th1", "tuone", o)
			}
			done <- err
		}()
		m := p.expect(method)
		p.reply(m.ID, `{"thread":{"id":"th2"}}`)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(m.Params, &got); err != nil {
			t.Fatal(err)
		}
		for k, want := range map[string]any{"threadId": "th1", "cwd": "/w", "model": "gpt-x", "approvalPolicy": "never",
			"sandbox": "danger-full-access", "developerInstructions": "be brief"} {
			if got[k] != want {
				t.Errorf("%s %s = %v, want %v", method, k, got[k], want)
			}
		}
		if _, ok := got["dynamicTools"]; ok {
			t.Errorf("%s carries dynamicTools: %s", method, m.Params)
		}
	}
}
