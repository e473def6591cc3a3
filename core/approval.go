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
	modeOf, approver := t.s.approvals()
	mode := "auto"
	if modeOf != nil {
		mode = modeOf()
	}
	switch mode {
	case "auto":
		if external {
			return autoGrant(c.Name, sg)
		}
		return ""
	case "readonly":
		return fmt.Sprintf("%s changes the project, and the approval mode is readonly", c.Name)
	case "ask":
	default:
		// A mode openmax does not know (a hand-edited settings file, say)
		// fails closed: nothing runs without the user's word.
		return fmt.Sprintf("%s changes the project, and the approval mode %q is not one openmax knows (auto, ask, readonly), so it is refused", c.Name, mode)
	}
	if external {
		// In auto (above) nothing is asked, new extension content included.
		why, asked := t.sourceGate(ctx, c, sg, approver)
		if why != "" || asked {
			return why
		}
	}
	id := "approve-" + c.ID
	announce := func() {
		t.emit(wire.ApprovalRequest{
			ApprovalID: id, Name: c.Name, Reason: "gate",
			Summary: fmt.Sprintf("%s wants to run", c.Name), Detail: string(args),
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
