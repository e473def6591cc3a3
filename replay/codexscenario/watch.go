package codexscenario

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/openmax/openmax/provider/codex"
)

// watcher reads one client's events in the driver's goroutine, adding the
// ones a client acts on to the log as it goes.
type watcher struct {
	cl  *codex.Client
	log *log
	// The items of the running turn, by id, in the order they started.
	items map[string]*item
	order []string
}

// item is an item seen starting, with the agent text its deltas carried.
type item struct {
	typ       string
	deltas    strings.Builder
	n         int // deltas
	output    int // command output deltas
	completed bool
}

func newWatcher(cl *codex.Client, l *log) *watcher {
	return &watcher{cl: cl, log: l, items: map[string]*item{}}
}

// errEventsEnded is the client's Events closing while a driver waits.
var errEventsEnded = errors.New("the client's events ended")

// until reads events until stop returns true for one (that event is
// logged first).
func (w *watcher) until(ctx context.Context, what string, stop func(codex.Event) bool) error {
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case ev, ok := <-w.cl.Events():
			if !ok {
				return fmt.Errorf("waiting for %s: %w", what, errEventsEnded)
			}
			if err := w.note(ev); err != nil {
				return err
			}
			if stop(ev) {
				return nil
			}
		}
	}
}

// turnCompleted waits for the next turn/completed and returns its turn.
func (w *watcher) turnCompleted(ctx context.Context) (codex.Turn, error) {
	var turn codex.Turn
	err := w.until(ctx, "turn/completed", func(ev codex.Event) bool {
		if ev.Method != codex.MethodTurnCompleted {
			return false
		}
		var p codex.TurnCompletedNotification
		if json.Unmarshal(ev.Params, &p) == nil {
			turn = p.Turn
		}
		return true
	})
	return turn, err
}

// delta waits for an agent message delta carrying text.
func (w *watcher) delta(ctx context.Context, text string) error {
	return w.until(ctx, fmt.Sprintf("the agent message delta %q", text), func(ev codex.Event) bool {
		if ev.Method != codex.MethodItemAgentMessageDelta {
			return false
		}
		var p codex.AgentMessageDeltaNotification
		return json.Unmarshal(ev.Params, &p) == nil && p.Delta == text
	})
}

// note logs one event.
func (w *watcher) note(ev codex.Event) error {
	switch ev.Method {
	case codex.MethodTurnStarted:
		w.log.add("turn/started")
	case codex.MethodTurnCompleted:
		var p codex.TurnCompletedNotification
		if err := decode(ev, &p); err != nil {
			return err
		}
		line := fmt.Sprintf("turn/completed status=%s items=[%s]", p.Turn.Status, itemList(p.Turn.Items))
		if p.Turn.Error != nil {
			line += " error=" + turnError(*p.Turn.Error)
		}
		w.log.add("%s", line)
		for _, id := range w.order {
			if it := w.items[id]; !it.completed {
				w.log.add("  never completed: %s%s", it.typ, it.text(id))
			}
		}
		w.items, w.order = map[string]*item{}, nil
	case codex.MethodItemStarted:
		var p codex.ItemStartedNotification
		if err := decode(ev, &p); err != nil {
			return err
		}
		if _, dup := w.items[p.Item.ID]; !dup {
			w.order = append(w.order, p.Item.ID)
		}
		w.items[p.Item.ID] = &item{typ: p.Item.Type}
		w.log.add("item/started %s", describe(p.Item, false))
	case codex.MethodItemCompleted:
		var p codex.ItemCompletedNotification
		if err := decode(ev, &p); err != nil {
			return err
		}
		line := "item/completed " + describe(p.Item, true)
		if it, ok := w.items[p.Item.ID]; ok {
			it.completed = true
			if p.Item.Type == codex.ThreadItemTypeReasoning {
				line += fmt.Sprintf(" (its summary streamed as %d deltas: %q)", it.n, it.deltas.String())
			}
			if p.Item.Type == codex.ThreadItemTypeCommandExecution {
				// How many deltas varies with timing; that some came does not.
				line += fmt.Sprintf(" (output streamed before it completed: %v)", it.output > 0)
			}
			if p.Item.Type == codex.ThreadItemTypeAgentMessage {
				if it.deltas.String() == p.Item.Text {
					line += fmt.Sprintf(" (the text of its %d deltas)", it.n)
				} else {
					line += fmt.Sprintf(" (its %d deltas joined to %q)", it.n, it.deltas.String())
				}
			}
		} else {
			line += " (never started)"
		}
		w.log.add("%s", line)
	case codex.MethodItemAgentMessageDelta:
		var p codex.AgentMessageDeltaNotification
		if err := decode(ev, &p); err != nil {
			return err
		}
		it, ok := w.items[p.ItemID]
		if !ok {
			w.log.add("item/agentMessage/delta for an item never started: %q", p.Delta)
			return nil
		}
		it.deltas.WriteString(p.Delta)
		it.n++
	case codex.MethodItemReasoningSummaryTextDelta:
		var p codex.ReasoningSummaryTextDeltaNotification
		if err := decode(ev, &p); err != nil {
			return err
		}
		if it, ok := w.items[p.ItemID]; ok {
			it.deltas.WriteString(p.Delta)
			it.n++
		}
	case codex.MethodItemCommandExecutionOutputDelta:
		var p codex.CommandExecutionOutputDeltaNotification
		if err := decode(ev, &p); err != nil {
			return err
		}
		if it, ok := w.items[p.ItemID]; ok {
			it.output++
		}
	case codex.MethodError:
		var p codex.ErrorNotification
		if err := decode(ev, &p); err != nil {
			return err
		}
		w.log.add("error willRetry=%v %s", p.WillRetry, turnError(p.Error))
	}
	return nil
}

func (it *item) text(id string) string {
	s := ""
	if !isUUID(id) {
		s = " " + id
	}
	if it.n > 0 {
		s += fmt.Sprintf(" after %d deltas %q", it.n, it.deltas.String())
	}
	return s
}

func decode(ev codex.Event, v any) error {
	if err := json.Unmarshal(ev.Params, v); err != nil {
		return fmt.Errorf("%s params: %w", ev.Method, err)
	}
	return nil
}

var uuidRe = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// isUUID reports whether id is one the app-server made up for this run
// (threads, turns, user messages, compactions), as opposed to one it took
// from the model's stream (agent messages, tool calls).
func isUUID(id string) bool { return uuidRe.MatchString(id) }

// describe renders an item's type and key fields; done adds what only a
// completed item carries.
func describe(it codex.ThreadItem, done bool) string {
	var b strings.Builder
	b.WriteString(it.Type)
	if !isUUID(it.ID) && it.ID != "" {
		b.WriteString(" " + it.ID)
	}
	switch it.Type {
	case codex.ThreadItemTypeUserMessage:
		fmt.Fprintf(&b, " %s", userText(it.Content))
	case codex.ThreadItemTypeAgentMessage:
		if done {
			fmt.Fprintf(&b, " %q", it.Text)
		}
	case codex.ThreadItemTypeDynamicToolCall:
		fmt.Fprintf(&b, " %s.%s %s status=%s", it.Namespace, raw(it.Tool), compact(it.Arguments), raw(it.Status))
		if done {
			fmt.Fprintf(&b, " success=%v content=%s", it.Success, contentItems(it.ContentItems))
		}
	case codex.ThreadItemTypeMcpToolCall:
		fmt.Fprintf(&b, " %s.%s %s status=%s", it.Server, raw(it.Tool), compact(it.Arguments), raw(it.Status))
		if it.PluginID != "" {
			fmt.Fprintf(&b, " plugin=%s", it.PluginID)
		}
		if done {
			fmt.Fprintf(&b, " result=%s", mcpResult(it.Result))
			if it.Error != nil {
				fmt.Fprintf(&b, " error=%q", it.Error.Message)
			}
		}
	case codex.ThreadItemTypeCommandExecution:
		fmt.Fprintf(&b, " %q status=%s", it.Command, raw(it.Status))
		if done {
			fmt.Fprintf(&b, " exitCode=%d output=%q", it.ExitCode, it.AggregatedOutput)
		}
	case codex.ThreadItemTypeReasoning:
		if done {
			fmt.Fprintf(&b, " summary=%q", it.Summary)
		}
	}
	return b.String()
}

// userText renders a userMessage's content: its texts, and "<image>" for
// each image.
func userText(content json.RawMessage) string {
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(content, &parts) != nil {
		return compact(content)
	}
	var out []string
	for _, p := range parts {
		if p.Type == "text" {
			out = append(out, fmt.Sprintf("%q", p.Text))
		} else {
			out = append(out, "<"+p.Type+">")
		}
	}
	return strings.Join(out, " ")
}

func contentItems(items []codex.DynamicToolCallOutputContentItem) string {
	var out []string
	for _, c := range items {
		if c.Type == codex.DynamicToolCallOutputContentItemTypeInputText {
			out = append(out, fmt.Sprintf("%q", c.Text))
		} else {
			out = append(out, "<"+c.Type+">")
		}
	}
	return "[" + strings.Join(out, " ") + "]"
}

// mcpResult renders an mcpToolCall's result (McpToolCallResult): the
// texts of its content, "<type>" for other content; null when there is
// none (a failed call carries an error instead).
func mcpResult(result json.RawMessage) string {
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if len(result) == 0 || string(result) == "null" || json.Unmarshal(result, &r) != nil {
		return compact(result)
	}
	var out []string
	for _, c := range r.Content {
		if c.Type == "text" {
			out = append(out, fmt.Sprintf("%q", c.Text))
		} else {
			out = append(out, "<"+c.Type+">")
		}
	}
	return "[" + strings.Join(out, " ") + "]"
}

// itemList names a turn's items: type and, when not made up per run, id.
func itemList(items []codex.ThreadItem) string {
	var out []string
	for _, it := range items {
		s := it.Type
		if !isUUID(it.ID) && it.ID != "" {
			s += " " + it.ID
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

func turnError(e codex.TurnError) string {
	s := fmt.Sprintf("%q info=%s", e.Message, compact(e.CodexErrorInfo))
	if e.AdditionalDetails != "" {
		s += fmt.Sprintf(" details=%q", e.AdditionalDetails)
	}
	return s
}

// raw renders a JSON value: a string as its text, anything else compact.
func raw(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return compact(v)
}

func compact(v json.RawMessage) string {
	if len(v) == 0 {
		return "null"
	}
	var buf bytes.Buffer
	if json.Compact(&buf, v) != nil {
		return string(v)
	}
	return buf.String()
}
