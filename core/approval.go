package core

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
)

// Approver settles approval requests.
type Approver interface {
	// Ask registers approval id, calls announce (which emits the request,
	// so an answer can never arrive before the id is known), then waits for
	// the answer and returns the outcome: approved, declined, timed_out, or
	// cancelled when ctx ends first.
	Ask(ctx context.Context, id string, announce func()) string
}

// Approval outcomes.
const (
	OutcomeApproved  = "approved"
	OutcomeDeclined  = "declined"
	OutcomeCancelled = "cancelled"
	OutcomeTimedOut  = "timed_out"
)

// gate applies the deny rules to every tool call, then the approval mode
// to a mutating one or an external one (SourceGated), whose arguments are
// shown as args. It returns why the call must not run, or "" to run it.
func (t *turn) gate(ctx context.Context, c provider.ToolCall, tl tool.Tool, args json.RawMessage) string {
	if t.e.Deny != nil {
		// The whole arguments, not the display's: a rule must see what runs.
		full, _ := objectArgs(c.Args)
		if why := t.e.Deny.Deny(c.Name, full); why != "" {
			return why
		}
	}
	sg, external := tl.(SourceGated)
	m, ok := tl.(tool.Mutator)
	if !external && (!ok || !m.Mutating()) {
		return ""
	}
	if external {
		// Only ask asks about new extension content: auto asks nothing
		// (a credential grant then needs approved bytes, autoGrant),
		// readonly and unknown modes refuse the call in approve.
		mode, approver := t.mode()
		switch mode {
		case "ask":
			why, asked := t.sourceGate(ctx, c, sg, approver)
			if why != "" || asked {
				return why
			}
		case "auto":
			return autoGrant(c.Name, sg)
		}
	}
	return t.approve(ctx, c.ID, c.Name, args)
}

// mode is the approval mode now (auto when the session has none) and the
// approver that asks the human.
func (t *turn) mode() (string, Approver) {
	modeOf, approver := t.s.approvals()
	if modeOf == nil {
		return "auto", approver
	}
	return modeOf(), approver
}

// approve applies the approval mode to a call that changes the project
// (id names the call, args is shown to the human): auto runs it, readonly
// and a mode openmax does not know refuse it, ask asks the approver. It
// returns why the call must not run, or "" to run it.
func (t *turn) approve(ctx context.Context, callID, name string, args json.RawMessage) string {
	mode, approver := t.mode()
	switch mode {
	case "auto":
		return ""
	case "readonly":
		return fmt.Sprintf("%s changes the project, and the approval mode is readonly", name)
	case "ask":
	default:
		// A mode openmax does not know (a hand-edited settings file, say)
		// fails closed: nothing runs without the user's word.
		return fmt.Sprintf("%s changes the project, and the approval mode %q is not one openmax knows (auto, ask, readonly), so it is refused", name, mode)
	}
	id := "approve-" + callID
	announce := func() {
		t.emit(wire.ApprovalRequest{
			ApprovalID: id, Name: name, Reason: "gate",
			Summary: fmt.Sprintf("%s wants to run", name), Detail: string(args),
		})
	}
	outcome := OutcomeDeclined
	if approver != nil {
		outcome = approver.Ask(ctx, id, announce)
	} else {
		announce()
	}
	t.emit(wire.ApprovalSettled{ApprovalID: id, Outcome: outcome})
	if outcome == OutcomeApproved {
		return ""
	}
	if outcome == OutcomeTimedOut {
		return "nobody answered the approval request in time"
	}
	return fmt.Sprintf("the call was %s", outcome)
}
