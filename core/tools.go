package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
)

// runTools dispatches the calls of a completed reply in order. It returns a
// stop reason when the turn must end (cancel, crash), else "".
//
// A call the gate refuses (a deny rule, readonly or an unknown mode, an
// approval declined, timed out or cancelled, an unapproved source) gets
// the refusal as its tool result: a policy or approval notice riding that
// result. Once the result is in the transcript, its tool_end is followed by
// a harness_note with the call's id and the same text.
func (t *turn) runTools(ctx context.Context, calls []provider.ToolCall) string {
	for i, c := range calls {
		if ctx.Err() != nil {
			// Every call needs a result in the transcript.
			for _, rest := range calls[i:] {
				if err := t.s.append(provider.Message{Role: provider.RoleTool, CallID: rest.ID, Text: "not run: the turn was cancelled", IsError: true}); err != nil {
					return t.fail(err).stop
				}
			}
			return wire.StopCancelled
		}
		_, perr, crash := t.dispatch(ctx, c, func(res tool.Result) error {
			return t.s.append(provider.Message{Role: provider.RoleTool, CallID: c.ID, Text: res.Output, IsError: !res.OK})
		})
		if perr != nil {
			return t.fail(perr).stop
		}
		if crash != nil {
			for _, rest := range calls[i+1:] {
				if err := t.s.append(provider.Message{Role: provider.RoleTool, CallID: rest.ID, Text: "not run: an earlier tool crashed", IsError: true}); err != nil {
					return t.fail(err).stop
				}
			}
			t.emit(wire.Error{Message: fmt.Sprintf("tool %s crashed: %v", c.Name, crash)})
			return wire.StopError
		}
	}
	if ctx.Err() != nil {
		return wire.StopCancelled
	}
	return ""
}

// dispatch runs one tool call with its events: tool_start, the gate (deny
// rules, approval, source check), the tool, its diffs, then keep (which
// puts the result where the model will read it), tool_end, and the
// harness_note of a refusal once it is kept. It returns the result, keep's
// error, and what the tool panicked with, if it did.
func (t *turn) dispatch(ctx context.Context, c provider.ToolCall, keep func(tool.Result) error) (res tool.Result, perr error, crash any) {
	args, argErr := objectArgs(c.Args)
	shown := displayArgs(args)
	t.emit(wire.ToolStart{CallID: c.ID, Name: c.Name, Args: shown})
	t.observe(ctx, HookToolStart, ToolStartPayload{SessionID: t.s.ID, CallID: c.ID, Name: c.Name, Args: shown})
	notice := false // the result is a policy or approval notice (gate)
	switch tl, ok := t.e.Tools.Lookup(c.Name); {
	case argErr != nil:
		res = tool.Failed("invalid arguments: %v", argErr)
	case !ok:
		res = tool.Failed("unknown tool %q", c.Name)
	default:
		if outcome := t.gate(ctx, c, tl, shown); outcome != "" {
			res = tool.Failed("not run: %s", outcome)
			notice = true
			break
		}
		res, crash = t.runTool(ctx, t.pinned(tl), args)
	}
	if ctx.Err() != nil && !res.OK && res.Output == "" {
		res.Output = "cancelled"
	}
	// One place for every tool's result: nothing below sees a secret.
	res = res.Redacted(t.e.Secrets)
	for _, d := range res.Diffs {
		t.emit(wire.Diff{CallID: c.ID, Path: d.Path, Diff: d.Unified, Added: d.Added, Removed: d.Removed})
	}
	perr = keep(res)
	t.emit(wire.ToolEnd{CallID: c.ID, OK: res.OK, Output: res.Output})
	if notice && perr == nil {
		// The refusal is the harness's words on the tool result it
		// rode, already in the transcript: reported as written.
		t.emit(wire.HarnessNote{CallID: c.ID, Text: res.Output})
	}
	t.observe(ctx, HookToolEnd, ToolEndPayload{SessionID: t.s.ID, CallID: c.ID, Name: c.Name, OK: res.OK, Output: res.Output})
	return res, perr, crash
}

// runTool runs one call of tl. The call runs on a goroutine of its own so
// that a cancelled turn never waits on a tool that ignores its context
// beyond the grace period (Engine.ToolGrace): such a call is abandoned and
// reported cancelled. A tool whose abandoned call is still running is not
// run again in this session, so at most one goroutine per tool is ever left
// behind.
func (t *turn) runTool(ctx context.Context, tl tool.Tool, args json.RawMessage) (res tool.Result, crash any) {
	name := tl.Spec().Name
	t.s.mu.Lock()
	prev := t.s.abandoned[name]
	t.s.mu.Unlock()
	if prev != nil {
		select {
		case <-prev:
		default:
			return tool.Failed("not run: an earlier %s call ignored its cancellation and is still running", name), nil
		}
	}
	type outcome struct {
		res   tool.Result
		crash any
	}
	ended := make(chan outcome, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		o := outcome{}
		defer func() {
			if r := recover(); r != nil {
				t.e.panicked(r)
				o = outcome{tool.Failed("tool crashed: %v", r), r}
			}
			ended <- o
		}()
		o.res = tl.Run(ctx, args)
	}()
	select {
	case o := <-ended:
		return o.res, o.crash
	case <-ctx.Done():
	}
	grace := t.e.ToolGrace
	if grace <= 0 {
		grace = DefaultToolGrace
	}
	c := t.e.Clock
	if c == nil {
		c = clock.Real{}
	}
	// A wait of its own, not tied to ctx (which is already done).
	waitCtx, stop := context.WithCancel(context.Background())
	defer stop()
	timedOut := make(chan struct{})
	go func() {
		if clock.Sleep(waitCtx, c, grace) == nil {
			close(timedOut)
		}
	}()
	select {
	case o := <-ended:
		return o.res, o.crash
	case <-timedOut:
	}
	t.s.mu.Lock()
	if t.s.abandoned == nil {
		t.s.abandoned = map[string]chan struct{}{}
	}
	t.s.abandoned[name] = finished
	t.s.mu.Unlock()
	return tool.Failed("cancelled: %s did not stop within %v of the cancel and was abandoned", name, grace), nil
}

// Display caps for a call's arguments on the wire (tool_start args,
// approval_request detail): past maxShownArgs bytes, every member longer
// than maxShownMember is cut.
const (
	maxShownArgs   = 1 << 20
	maxShownMember = 64 << 10
)

// displayArgs is args (a compact JSON object) as shown to the client: as
// is up to maxShownArgs bytes, else with each member longer than
// maxShownMember cut, a string to its first maxShownMember bytes followed by
// a note, any other value to a string saying how long it was. The tool
// itself always gets the whole arguments.
func displayArgs(args json.RawMessage) json.RawMessage {
	if len(args) <= maxShownArgs {
		return args
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return args
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return args
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return args
		}
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		buf.Write(k)
		buf.WriteByte(':')
		if len(raw) <= maxShownMember {
			buf.Write(raw)
			continue
		}
		note := fmt.Sprintf("[cut for display: %d bytes of JSON]", len(raw))
		var str string
		if json.Unmarshal(raw, &str) == nil {
			cut := strings.ToValidUTF8(str[:maxShownMember], "")
			note = cut + fmt.Sprintf("\n[cut for display: %d bytes, showing the first %d]", len(str), len(cut))
		}
		v, _ := json.Marshal(note)
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes()
}

// objectArgs returns the call's arguments as a JSON object. Missing
// arguments are the empty object; anything else that is not an object is an
// error, with {} standing in for display.
func objectArgs(raw json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return json.RawMessage("{}"), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil || obj == nil {
		if err == nil {
			err = errors.New("arguments are null, not an object")
		}
		return json.RawMessage("{}"), err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, trimmed); err != nil {
		return json.RawMessage("{}"), err
	}
	return buf.Bytes(), nil
}
