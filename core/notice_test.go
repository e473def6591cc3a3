package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
)

// fixedApprover answers every approval request with outcome; for
// cancelled it ends the turn's context first, as a cancel command does.
type fixedApprover struct {
	outcome string
	cancel  context.CancelFunc
}

func (a fixedApprover) Ask(ctx context.Context, id string, announce func()) string {
	announce()
	if a.outcome == core.OutcomeCancelled && a.cancel != nil {
		a.cancel()
		<-ctx.Done()
	}
	return a.outcome
}

// TestNoticeRidesToolResult: every call the gate refuses (a deny rule,
// readonly, a mode openmax does not know, an approval declined, timed out
// or cancelled) gets the refusal as its tool result, and right after its
// tool_end a harness_note with that call's id and exactly the text
// persisted in the transcript (and sent to the model). A call that runs,
// or fails for a reason that is no policy (bad arguments, unknown tool),
// gets no note.
func TestNoticeRidesToolResult(t *testing.T) {
	deny, err := core.ParseDenyRules([]byte(`{"deny":[{"tool":"touch","args_match":"secret","reason":"keep it"}]}`), "policy.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		mode     string
		outcome  string // the approver's answer ("" for none asked)
		args     string
		call     string // tool name called (default touch)
		deny     bool
		note     string // substring of the note; "" for no note
		wantStop string
	}{
		{name: "deny rule", mode: "auto", args: `{"path":"secret"}`, deny: true, note: "not run: denied by policy.json rule 1 (tool touch, args matching \"secret\"): keep it"},
		{name: "deny rule in ask", mode: "ask", args: `{"path":"secret"}`, deny: true, note: "not run: denied by policy.json rule 1"},
		{name: "readonly", mode: "readonly", note: "not run: touch changes the project, and the approval mode is readonly"},
		{name: "unknown mode", mode: "yolo", note: `not run: touch changes the project, and the approval mode "yolo" is not one openmax knows`},
		{name: "declined", mode: "ask", outcome: core.OutcomeDeclined, note: "not run: the call was declined"},
		{name: "timed out", mode: "ask", outcome: core.OutcomeTimedOut, note: "not run: nobody answered the approval request in time"},
		{name: "cancelled", mode: "ask", outcome: core.OutcomeCancelled, note: "not run: the call was cancelled", wantStop: wire.StopCancelled},
		{name: "approved", mode: "ask", outcome: core.OutcomeApproved},
		{name: "auto runs", mode: "auto"},
		{name: "deny rule not matching", mode: "auto", args: `{"path":"a"}`, deny: true},
		{name: "invalid arguments", mode: "readonly", args: `[1]`},
		{name: "unknown tool", mode: "readonly", call: "nosuch"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if args == "" {
				args = "{}"
			}
			name := tt.call
			if name == "" {
				name = "touch"
			}
			runs := 0
			tl := mutatingTool{Func: tool.Func{ToolSpec: provider.ToolSpec{Name: "touch", Schema: json.RawMessage(`{"type":"object"}`)},
				Fn: func(context.Context, json.RawMessage) tool.Result {
					runs++
					return tool.Result{OK: true, Output: "touched"}
				}}}
			p := mustScript(t, "replies:\n  - tool_calls: [{id: c1, name: "+name+", args: "+args+"}]\n  - text: ok\n")
			e := newEngine(t, p, tl)
			if tt.deny {
				e.Deny = deny
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var persisted []provider.Message
			sess := core.NewSessionFrom("s", nil, func(m provider.Message) error { persisted = append(persisted, m); return nil })
			var approver core.Approver
			if tt.outcome != "" {
				approver = fixedApprover{outcome: tt.outcome, cancel: cancel}
			}
			mode := tt.mode
			sess.SetApprovals(func() string { return mode }, approver)
			var rec recorder
			stop := e.RunTurn(ctx, sess, "go", rec.emit)
			if want := tt.wantStop; want != "" && stop != want || want == "" && stop != "stop" {
				t.Fatalf("stop %q, events %s", stop, rec.types())
			}
			var notes []wire.HarnessNote
			endAt := -1
			for i, ev := range rec.events {
				switch ev := ev.(type) {
				case wire.ToolEnd:
					endAt = i
				case wire.HarnessNote:
					notes = append(notes, ev)
					if i != endAt+1 {
						t.Errorf("harness_note at event %d, not right after tool_end (%d): %s", i, endAt, rec.types())
					}
				}
			}
			var result provider.Message
			for _, m := range persisted {
				if m.Role == provider.RoleTool && m.CallID == "c1" {
					result = m
				}
			}
			if tt.note == "" {
				if len(notes) != 0 {
					t.Fatalf("notes %+v for a call that is no policy refusal", notes)
				}
				return
			}
			if runs != 0 {
				t.Errorf("the refused tool ran %d times", runs)
			}
			if len(notes) != 1 {
				t.Fatalf("notes %+v; want one (events %s)", notes, rec.types())
			}
			n := notes[0]
			if n.CallID != "c1" || !strings.HasPrefix(n.Text, tt.note) {
				t.Errorf("note %+v; want call_id c1 and text starting %q", n, tt.note)
			}
			if n.Text != result.Text || !result.IsError {
				t.Errorf("note text %q, but the transcript's tool result is %q (error %v)", n.Text, result.Text, result.IsError)
			}
			if tt.wantStop == "" {
				reqs := p.Requests()
				if len(reqs) != 2 {
					t.Fatalf("%d requests", len(reqs))
				}
				sent := false
				for _, m := range reqs[1].Messages {
					sent = sent || m.Role == provider.RoleTool && m.CallID == "c1" && m.Text == n.Text
				}
				if !sent {
					t.Errorf("the model was not sent the note's text on the tool result: %+v", reqs[1].Messages)
				}
			}
		})
	}
}

// TestNoNoticeWhenResultNotPersisted: a refused call whose tool result
// could not be written to the session gets its tool_end and the error,
// but no harness_note: the note reports what was written.
func TestNoNoticeWhenResultNotPersisted(t *testing.T) {
	tl := mutatingTool{Func: tool.Func{ToolSpec: provider.ToolSpec{Name: "touch", Schema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(context.Context, json.RawMessage) tool.Result { return tool.Result{OK: true} }}}
	e := newEngine(t, mustScript(t, "replies:\n  - tool_calls: [{id: c1, name: touch, args: {}}]\n  - text: ok\n"), tl)
	sess := core.NewSessionFrom("s", nil, func(m provider.Message) error {
		if m.Role == provider.RoleTool {
			return errors.New("disk full")
		}
		return nil
	})
	sess.SetApprovals(func() string { return "readonly" }, nil)
	var rec recorder
	if stop := e.RunTurn(context.Background(), sess, "go", rec.emit); stop != wire.StopError {
		t.Fatalf("stop %q", stop)
	}
	if got := rec.types(); strings.Contains(got, "harness_note") || !strings.Contains(got, "tool_end error") {
		t.Errorf("events %s; want tool_end then error and no harness_note", got)
	}
}

// TestModeNote: the settings notice names both modes and what calls of
// the new one meet.
func TestModeNote(t *testing.T) {
	for _, tt := range []struct{ from, to, want string }{
		{"ask", "auto", "[openmax] The approval mode of this project was changed from ask to auto: calls run without asking (deny rules still apply)."},
		{"auto", "ask", "[openmax] The approval mode of this project was changed from auto to ask: calls that change the project, and external tools, wait for a human's approval."},
		{"ask", "readonly", "[openmax] The approval mode of this project was changed from ask to readonly: calls that change the project are refused without asking."},
		{"ask", "yolo", "[openmax] The approval mode of this project was changed from ask to yolo: calls that change the project are refused (a mode openmax does not know)."},
	} {
		if got := core.ModeNote(tt.from, tt.to); got != tt.want {
			t.Errorf("ModeNote(%q, %q) = %q; want %q", tt.from, tt.to, got, tt.want)
		}
	}
}
