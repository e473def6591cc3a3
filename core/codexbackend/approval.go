package codexbackend

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openmax/openmax/provider/codex"
)

// openmax's approval mode and deny rules govern codex's own commands and
// file changes. codex runs every thread with approval policy "untrusted",
// whatever the mode: it asks before any command it does not know to be
// read-only and before every file change, and each such request is decided
// by openmax's gate (core.TurnHost.Gate), as a mutating openmax tool's
// call would be: the deny rules first, then the mode (auto accepts,
// readonly declines, ask forwards it to the client as approval_request and
// answers as the client did). The mode's sandbox rides every turn/start:
// read-only in readonly (so even a command codex thinks read-only cannot
// write), full access otherwise (what a human approved runs as asked).

// approvalPolicy is the codex approval policy of every mode.
const approvalPolicy = codex.AskForApprovalUntrusted

// policy is codex's approval policy and sandbox for an openmax approval
// mode. A mode openmax does not know gets the read-only sandbox: it
// refuses what changes the project, as readonly does.
func policy(mode string) codex.TurnPolicy {
	p := codex.TurnPolicy{ApprovalPolicy: approvalPolicy, Sandbox: codex.SandboxModeDangerFullAccess}
	if mode != "auto" && mode != "ask" {
		p.Sandbox = codex.SandboxModeReadOnly
	}
	return p
}

// gates is what a turn keeps of codex's tool items for the gate: each
// started item's name and the arguments the gate and the deny rules see,
// which items codex asked about, and the refusals to report at their end.
type gates struct {
	names   map[string]string          // item id → tool_start name
	args    map[string]json.RawMessage // item id → the arguments rules see
	asked   map[string]int             // item id → approval requests decided
	refused map[string]string          // item id → why openmax refused it
}

func (g *gates) init() {
	if g.names == nil {
		g.names, g.args, g.asked, g.refused = map[string]string{}, map[string]json.RawMessage{}, map[string]int{}, map[string]string{}
	}
}

// request answers a server request delivered in order with the turn's
// events: an openmax tool call, or one of codex's approval requests.
func (r *turnRun) request(ctx context.Context, ev codex.Event) {
	switch ev.Method {
	case codex.MethodItemCommandExecutionRequestApproval, codex.MethodItemFileChangeRequestApproval:
		r.approve(ctx, ev)
	case codex.MethodItemPermissionsRequestApproval:
		r.permissions(ev)
	default:
		r.runCall(ctx, ev)
	}
}

// approvalParams is what the gate reads of either approval request.
type approvalParams struct {
	TurnID     string `json:"turnId"`
	ItemID     string `json:"itemId"`
	ApprovalID string `json:"approvalId"`
	Command    string `json:"command"`
	Cwd        string `json:"cwd"`
}

// approve decides one of codex's command or file-change approval
// requests through openmax's gate and answers codex: accept, decline (a
// deny rule, readonly, or the client declined or did not answer in time),
// or cancel (the turn was cancelled while it waited: codex interrupts the
// turn). A refused item's tool_end says why, followed by a harness_note.
func (r *turnRun) approve(ctx context.Context, ev codex.Event) {
	var p approvalParams
	if err := json.Unmarshal(ev.Params, &p); err != nil {
		_ = ev.Respond(nil, &codex.RPCError{Code: codex.CodeInvalidParams, Message: ev.Method + " params: " + err.Error()})
		return
	}
	if p.TurnID != r.turnID {
		decline(ev)
		fmt.Fprintf(r.b.cfg.Log, "openmax: declined codex's %s for item %s of turn %s: no openmax turn runs it\n", ev.Method, p.ItemID, p.TurnID)
		return
	}
	r.g.init()
	if _, ok := r.g.names[p.ItemID]; !ok {
		// Asked about before it started: the call is shown first, as any.
		it := codex.ThreadItem{ID: p.ItemID, Type: codex.ThreadItemTypeFileChange}
		if ev.Method == codex.MethodItemCommandExecutionRequestApproval {
			it = codex.ThreadItem{ID: p.ItemID, Type: codex.ThreadItemTypeCommandExecution, Command: p.Command, Cwd: p.Cwd}
		}
		r.itemStarted(it)
	}
	// A request about part of an item (a subcommand) or a second one
	// about it (an escalation) needs an approval id of its own.
	callID := p.ItemID
	if p.ApprovalID != "" {
		callID += "-" + p.ApprovalID
	} else if n := r.g.asked[p.ItemID]; n > 0 {
		callID += fmt.Sprintf("-%d", n+1)
	}
	r.g.asked[p.ItemID]++
	why := r.h.Gate(ctx, callID, r.g.names[p.ItemID], r.g.args[p.ItemID])
	decision := codex.CommandExecutionApprovalDecisionAccept
	switch {
	case why == "":
	case ctx.Err() != nil:
		decision = codex.CommandExecutionApprovalDecisionCancel
		r.g.refused[p.ItemID] = why
	default:
		decision = codex.CommandExecutionApprovalDecisionDecline
		r.g.refused[p.ItemID] = why
	}
	if err := respondApproval(ev, decision); err != nil {
		fmt.Fprintf(r.b.cfg.Log, "openmax: answering codex's %s for %s: %v\n", ev.Method, p.ItemID, err)
	}
}

// respondApproval answers a command or file-change approval request with
// decision (accept, decline or cancel: the same words in both).
func respondApproval(ev codex.Event, decision string) error {
	if ev.Method == codex.MethodItemFileChangeRequestApproval {
		return ev.Respond(codex.FileChangeRequestApprovalResponse{Decision: codex.FileChangeApprovalDecision(decision)}, nil)
	}
	return ev.Respond(codex.CommandExecutionRequestApprovalResponse{Decision: json.RawMessage(`"` + decision + `"`)}, nil)
}

// decline answers an approval request nobody can decide (no openmax turn
// runs it, or the turn ended) with a refusal; it reports whether ev was
// one.
func decline(ev codex.Event) bool {
	switch ev.Method {
	case codex.MethodItemCommandExecutionRequestApproval, codex.MethodItemFileChangeRequestApproval:
		_ = respondApproval(ev, codex.CommandExecutionApprovalDecisionDecline)
	case codex.MethodItemPermissionsRequestApproval:
		_ = ev.Respond(codex.PermissionsRequestApprovalResponse{}, nil)
	default:
		return false
	}
	return true
}

// permissions answers codex's request for permissions beyond its sandbox
// by granting none: the approval mode chose the sandbox, and openmax has
// no wire request for widening it. The wire says so.
func (r *turnRun) permissions(ev codex.Event) {
	var p codex.PermissionsRequestApprovalParams
	_ = json.Unmarshal(ev.Params, &p)
	decline(ev)
	r.flush()
	why := "codex asked for permissions beyond its sandbox"
	if p.Reason != "" {
		why += " (" + p.Reason + ")"
	}
	r.g.init()
	callID := p.ItemID // the note rides the item when it was reported
	if _, started := r.g.names[callID]; !started {
		callID = ""
	}
	r.h.Note(callID, "[openmax] "+why+"; openmax grants none: codex's sandbox follows the approval mode ("+r.h.Mode()+")")
}

// startTool reports a tool item codex started, and keeps what the gate
// and the deny rules see of it: a command as {command, cwd}, a file change
// as {paths, diff} (the unified diffs it would apply), anything else as
// its tool_start arguments.
func (r *turnRun) startTool(it codex.ThreadItem, name string, args json.RawMessage) {
	r.g.init()
	r.reply = "" // the reply that ends the turn is the text after the last tool
	rules := args
	if it.Type == codex.ThreadItemTypeFileChange {
		rules = r.changeArgs(it)
	}
	r.g.names[it.ID], r.g.args[it.ID] = name, rules
	r.h.ToolStarted(it.ID, name, args)
}

// changeArgs is a file change as the gate shows it: its paths and the
// unified diffs of its changes.
func (r *turnRun) changeArgs(it codex.ThreadItem) json.RawMessage {
	paths := []string{}
	var diff strings.Builder
	for _, c := range it.Changes {
		if c.Kind.MovePath != "" {
			c.Kind.MovePath = r.rel(c.Kind.MovePath)
		}
		p := r.rel(c.Path)
		paths = append(paths, p)
		diff.WriteString(fileDiff(it.ID, p, c).Diff)
	}
	raw, _ := json.Marshal(map[string]any{"paths": paths, "diff": diff.String()})
	return raw
}

// applied reports whether a completed file change's diffs happened: not
// when codex declined it.
func (r *turnRun) applied(id, status string) bool {
	return status != "declined" && r.g.refused[id] == ""
}

// endTool reports the end of codex's tool item id. An item openmax
// refused ends ok false with the refusal, which a harness_note repeats.
// An item codex ran without asking that a deny rule matches could not be
// refused, and the harness_note says so; so does an MCP tool call outside
// auto, which openmax's approval mode cannot gate.
func (r *turnRun) endTool(id string, ok bool, output string) {
	r.g.init()
	name := r.g.names[id]
	var note string
	switch why := r.g.refused[id]; {
	case why != "":
		ok, output = false, "not run: "+why
		note = output
	case r.g.asked[id] > 0:
	case name == "":
	default:
		if why := r.h.Denied(name, r.g.args[id]); why != "" {
			note = fmt.Sprintf("[openmax] codex ran %s without asking openmax, so it could not be refused although a deny rule matches it: %s", name, why)
		} else if name == ToolMCP && r.h.Mode() != "auto" {
			note = fmt.Sprintf("[openmax] codex ran an MCP tool of its own configuration without asking openmax: the approval mode (%s) does not gate codex's MCP tools", r.h.Mode())
		}
	}
	delete(r.g.refused, id)
	delete(r.g.asked, id)
	delete(r.g.args, id)
	delete(r.g.names, id)
	r.h.ToolEnded(id, name, ok, output, note)
}
