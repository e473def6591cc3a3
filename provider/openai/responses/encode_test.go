package responses

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/openmax/openmax/internal/golden"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/internal/codectest"
)

var updateGolden = flag.Bool("update", false, "rewrite the encoder's golden streams in testdata/")

// sseFrame is one SSE sseFrame the encoder wrote: its event: line and its data
// parsed as the wire's Event.
type sseFrame struct {
	name string
	ev   Event
	raw  string
}

// sseFrames cuts an encoded stream into its sseFrames, failing on anything that
// is not "event: TYPE\ndata: JSON\n\n" with TYPE the data's type.
func sseFrames(t *testing.T, body []byte) []sseFrame {
	t.Helper()
	var out []sseFrame
	rest := string(body)
	for rest != "" {
		end := strings.Index(rest, "\n\n")
		if end < 0 {
			t.Fatalf("sseFrame not ended by a blank line: %q", rest)
		}
		lines := strings.Split(rest[:end], "\n")
		rest = rest[end+2:]
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "event: ") || !strings.HasPrefix(lines[1], "data: ") {
			t.Fatalf("sseFrame is not an event line and a data line: %q", lines)
		}
		f := sseFrame{name: strings.TrimPrefix(lines[0], "event: "), raw: strings.TrimPrefix(lines[1], "data: ")}
		dec := json.NewDecoder(strings.NewReader(f.raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f.ev); err != nil {
			t.Fatalf("data does not parse as an Event: %v\n%s", err, f.raw)
		}
		if f.ev.Type != f.name {
			t.Fatalf("event line %q, data type %q", f.name, f.ev.Type)
		}
		out = append(out, f)
	}
	return out
}

func encodeParts(parts []provider.Part, argChunk int) []byte {
	e := NewEncoder("resp_fake_1", "m", 1767225600)
	e.ArgChunk = argChunk
	return codectest.Encode(e, parts)
}

func frameTypes(fs []sseFrame) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.name)
	}
	return out
}

func intp(n int) *int { return &n }

// TestEncoderEvents: each kind of reply is written as the API writes it:
// the event types in order, sequence numbers from 0 without a gap, item
// ids and output indexes per item, and the terminal response carrying
// the items and the usage.
func TestEncoderEvents(t *testing.T) {
	call := func(id, args string) provider.Part {
		return provider.ToolCallPart{Call: provider.ToolCall{ID: id, Name: "run", Args: json.RawMessage(args)}}
	}
	msg := []string{EventItemAdded, EventContentPartAdded}
	msgDone := []string{EventTextDone, EventContentPartDone, EventItemDone}
	open := []string{EventCreated, EventInProgress}
	cat := func(lists ...[]string) []string {
		var out []string
		for _, l := range lists {
			out = append(out, l...)
		}
		return out
	}
	tests := []struct {
		name     string
		parts    []provider.Part
		argChunk int
		types    []string
		status   string // of the terminal response
		output   string // the terminal response's items, as type:id
		check    func(t *testing.T, fs []sseFrame)
	}{
		{
			name:   "text",
			parts:  []provider.Part{provider.TextDelta{Text: "Hel"}, provider.TextDelta{Text: "lo"}, provider.Finish{Reason: "stop"}},
			types:  cat(open, msg, []string{EventTextDelta, EventTextDelta}, msgDone, []string{EventCompleted}),
			status: "completed", output: "message:msg_fake_1_0",
			check: func(t *testing.T, fs []sseFrame) {
				if got := *fs[6].ev.Text; got != "Hello" {
					t.Errorf("output_text.done text %q", got)
				}
				it := fs[8].ev.Item
				if it.Status != "completed" || len(it.Content) != 1 || *it.Content[0].Text != "Hello" || it.Role != "assistant" {
					t.Errorf("message item done %s", fs[8].raw)
				}
				if !strings.Contains(fs[2].raw, `"content":[]`) {
					t.Errorf("output_item.added has no empty content list: %s", fs[2].raw)
				}
			},
		},
		{
			name: "reasoning with two summary parts and a signature, then text",
			parts: []provider.Part{provider.ThinkingDelta{Text: "a"}, provider.ThinkingDelta{Text: "\n\n"}, provider.ThinkingDelta{Text: "b"},
				provider.ThinkingDelta{Signature: "enc=="}, provider.TextDelta{Text: "x"}, provider.Finish{Reason: "stop"}},
			types: cat(open, []string{EventItemAdded,
				EventSummaryPartAdded, EventSummaryTextDelta, EventSummaryTextDone, EventSummaryPartDone,
				EventSummaryPartAdded, EventSummaryTextDelta, EventSummaryTextDone, EventSummaryPartDone,
				EventItemDone}, msg, []string{EventTextDelta}, msgDone, []string{EventCompleted}),
			status: "completed", output: "reasoning:rs_fake_1_0 message:msg_fake_1_1",
			check: func(t *testing.T, fs []sseFrame) {
				it := fs[11].ev.Item
				if it.EncryptedContent == nil || *it.EncryptedContent != "enc==" || len(it.Summary) != 2 ||
					*it.Summary[0].Text != "a" || *it.Summary[1].Text != "b" {
					t.Errorf("reasoning item done %s", fs[11].raw)
				}
				if fs[2].ev.Item.EncryptedContent != nil || !strings.Contains(fs[2].raw, `"summary":[]`) {
					t.Errorf("reasoning item added %s", fs[2].raw)
				}
				if *fs[7].ev.SummaryIndex != 1 {
					t.Errorf("second summary part at index %d", *fs[7].ev.SummaryIndex)
				}
			},
		},
		{
			name:  "a trailing blank line stays reasoning text",
			parts: []provider.Part{provider.ThinkingDelta{Text: "a"}, provider.ThinkingDelta{Text: "\n\n"}, provider.Finish{Reason: "stop"}},
			types: cat(open, []string{EventItemAdded, EventSummaryPartAdded, EventSummaryTextDelta, EventSummaryTextDelta,
				EventSummaryTextDone, EventSummaryPartDone, EventItemDone, EventCompleted}),
			status: "completed", output: "reasoning:rs_fake_1_0",
			check: func(t *testing.T, fs []sseFrame) {
				if got := *fs[6].ev.Text; got != "a\n\n" {
					t.Errorf("summary text %q", got)
				}
			},
		},
		{
			name:   "a signature alone is a reasoning item with an empty summary",
			parts:  []provider.Part{provider.ThinkingDelta{Signature: "s"}, provider.Finish{Reason: "stop"}},
			types:  cat(open, []string{EventItemAdded, EventItemDone, EventCompleted}),
			status: "completed", output: "reasoning:rs_fake_1_0",
			check: func(t *testing.T, fs []sseFrame) {
				if !strings.Contains(fs[3].raw, `"summary":[]`) || !strings.Contains(fs[3].raw, `"encrypted_content":"s"`) {
					t.Errorf("reasoning item done %s", fs[3].raw)
				}
			},
		},
		{
			name:     "parallel tool calls, arguments in chunks",
			parts:    []provider.Part{call("call_1", `{"a":"bc"}`), call("call_2", `{}`), provider.Finish{Reason: "tool_calls"}},
			argChunk: 4,
			types: cat(open, []string{EventItemAdded, EventArgumentsDelta, EventArgumentsDelta, EventArgumentsDelta, EventArgumentsDone, EventItemDone},
				[]string{EventItemAdded, EventArgumentsDelta, EventArgumentsDone, EventItemDone, EventCompleted}),
			status: "completed", output: "function_call:fc_fake_1_0 function_call:fc_fake_1_1",
			check: func(t *testing.T, fs []sseFrame) {
				added := fs[2].ev.Item
				if added.CallID != "call_1" || added.Name != "run" || *added.Arguments != "" || added.Status != "in_progress" {
					t.Errorf("function_call added %s", fs[2].raw)
				}
				var args string
				for _, f := range fs[3:6] {
					args += *f.ev.Delta
				}
				if args != `{"a":"bc"}` || *fs[6].ev.Arguments != args || *fs[7].ev.Item.Arguments != args {
					t.Errorf("arguments %q, done %s, item %s", args, fs[6].raw, fs[7].raw)
				}
				if *fs[8].ev.OutputIndex != 1 || fs[8].ev.ItemID != "fc_fake_1_1" || fs[8].ev.Item.CallID != "call_2" {
					t.Errorf("second call added %s", fs[8].raw)
				}
			},
		},
		{
			name: "usage, also after the finish, rides on the terminal event",
			parts: []provider.Part{provider.TextDelta{Text: "x"}, provider.Finish{Reason: "stop"},
				provider.Usage{PromptTokens: 10, CompletionTokens: 3, CachedTokens: intp(4), ReasoningTokens: intp(2)}},
			types:  cat(open, msg, []string{EventTextDelta}, msgDone, []string{EventCompleted}),
			status: "completed", output: "message:msg_fake_1_0",
			check: func(t *testing.T, fs []sseFrame) {
				u := fs[len(fs)-1].ev.Response.Usage
				want := &Usage{InputTokens: 10, InputTokensDetails: &InputDetails{CachedTokens: 4}, OutputTokens: 3,
					OutputTokensDetails: &OutputDetails{ReasoningTokens: 2}, TotalTokens: 13}
				if !reflect.DeepEqual(u, want) {
					t.Errorf("usage %s", fs[len(fs)-1].raw)
				}
			},
		},
		{
			name:   "length is incomplete: max_output_tokens",
			parts:  []provider.Part{provider.TextDelta{Text: "x"}, provider.Finish{Reason: "length"}},
			types:  cat(open, msg, []string{EventTextDelta}, msgDone, []string{EventIncomplete}),
			status: "incomplete", output: "message:msg_fake_1_0",
			check: func(t *testing.T, fs []sseFrame) {
				if d := fs[len(fs)-1].ev.Response.IncompleteDetails; d == nil || d.Reason != "max_output_tokens" {
					t.Errorf("incomplete %s", fs[len(fs)-1].raw)
				}
			},
		},
		{
			name:   "content_filter is incomplete",
			parts:  []provider.Part{provider.Finish{Reason: "content_filter"}},
			types:  cat(open, []string{EventIncomplete}),
			status: "incomplete", output: "",
			check: func(t *testing.T, fs []sseFrame) {
				if d := fs[len(fs)-1].ev.Response.IncompleteDetails; d == nil || d.Reason != "content_filter" {
					t.Errorf("incomplete %s", fs[len(fs)-1].raw)
				}
			},
		},
		{
			name: "an error is response.failed, the message left open",
			parts: []provider.Part{provider.TextDelta{Text: "x"},
				provider.Error{Err: &provider.StreamError{Type: "server_error", Message: "boom"}}},
			types:  cat(open, msg, []string{EventTextDelta, EventFailed}),
			status: "failed", output: "",
			check: func(t *testing.T, fs []sseFrame) {
				r := fs[len(fs)-1].ev.Response
				if r.Error == nil || string(r.Error.Code) != `"server_error"` || r.Error.Message != "boom" {
					t.Errorf("failed %s", fs[len(fs)-1].raw)
				}
			},
		},
		{
			name:   "an untyped error has a null code",
			parts:  []provider.Part{provider.Error{Err: errors.New("lost")}},
			types:  cat(open, []string{EventFailed}),
			status: "failed", output: "",
			check: func(t *testing.T, fs []sseFrame) {
				if !strings.Contains(fs[2].raw, `"error":{"code":null,"message":"lost"}`) {
					t.Errorf("failed %s", fs[2].raw)
				}
			},
		},
		{
			name:  "no finish: the stream just stops",
			parts: []provider.Part{provider.TextDelta{Text: "x"}, provider.Retry{Attempt: 2}},
			types: cat(open, msg, []string{EventTextDelta}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := encodeParts(tt.parts, tt.argChunk)
			fs := sseFrames(t, body)
			if got := frameTypes(fs); !reflect.DeepEqual(got, tt.types) {
				t.Fatalf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.types, "\n"))
			}
			for i, f := range fs {
				if f.ev.SequenceNumber != int64(i) {
					t.Errorf("event %d (%s) has sequence_number %d", i, f.name, f.ev.SequenceNumber)
				}
				if f.ev.Response != nil && (f.ev.Response.ID != "resp_fake_1" || f.ev.Response.Model != "m" || string(f.ev.Response.CreatedAt) != "1767225600") {
					t.Errorf("event %d response %s", i, f.raw)
				}
				if f.ev.Item != nil && (f.ev.Item.ID != f.ev.ItemID || f.ev.OutputIndex == nil) {
					t.Errorf("event %d: item id %q, event item_id %q", i, f.ev.Item.ID, f.ev.ItemID)
				}
			}
			if fs[0].ev.Response.Status != "in_progress" || !strings.Contains(fs[0].raw, `"output":[]`) {
				t.Errorf("response.created %s", fs[0].raw)
			}
			last := fs[len(fs)-1].ev
			if tt.status == "" {
				if last.Response != nil && last.Type != EventInProgress {
					t.Errorf("a reply with no finish ended with %s", last.Type)
				}
			} else {
				if last.Response.Status != tt.status {
					t.Errorf("terminal status %q, want %q", last.Response.Status, tt.status)
				}
				var out []string
				for _, it := range last.Response.Output {
					out = append(out, it.Type+":"+it.ID)
				}
				if got := strings.Join(out, " "); got != tt.output {
					t.Errorf("terminal output %q, want %q", got, tt.output)
				}
			}
			if tt.check != nil {
				tt.check(t, fs)
			}
			if again := encodeParts(tt.parts, tt.argChunk); !bytes.Equal(again, body) {
				t.Errorf("a second encoding differs")
			}
		})
	}
}

// TestEncoderGolden: a reply with reasoning, text, parallel calls and
// usage is byte-identical to the stream in testdata (the bytes the fake
// provider serves and goldens are recorded from).
func TestEncoderGolden(t *testing.T) {
	parts := []provider.Part{
		provider.ThinkingDelta{Text: "Look"}, provider.ThinkingDelta{Text: " first."}, provider.ThinkingDelta{Text: "\n\n"},
		provider.ThinkingDelta{Text: "Then act."}, provider.ThinkingDelta{Signature: "gAAAA=="},
		provider.TextDelta{Text: "Running "}, provider.TextDelta{Text: "both."},
		provider.ToolCallPart{Call: provider.ToolCall{ID: "call_1_1", Name: "read_file", Args: json.RawMessage(`{"path":"a.txt"}`)}},
		provider.ToolCallPart{Call: provider.ToolCall{ID: "call_1_2", Name: "run_command", Args: json.RawMessage(`{"command":"ls"}`)}},
		provider.Usage{PromptTokens: 120, CompletionTokens: 45, CachedTokens: intp(100), ReasoningTokens: intp(30)},
		provider.Finish{Reason: "tool_calls"},
	}
	body := encodeParts(parts, 8)
	if err := golden.File(filepath.Join("testdata", "stream.sse"), "encoded", body, *updateGolden); err != nil {
		t.Fatal(err)
	}
	whole, ok := Whole("resp_fake_1", "m", 1767225600, parts)
	if !ok {
		t.Fatal("Whole: not ok for a finished reply")
	}
	if err := golden.File(filepath.Join("testdata", "whole.json"), "whole", append(whole, '\n'), *updateGolden); err != nil {
		t.Fatal(err)
	}
	// The whole response is the terminal event's response.
	fs := sseFrames(t, body)
	var r Response
	if err := json.Unmarshal(whole, &r); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&r, fs[len(fs)-1].ev.Response) {
		t.Errorf("Whole %s\nterminal response %s", whole, fs[len(fs)-1].raw)
	}
}

// TestWholeNeedsFinish: a reply with no finish has no whole response; an
// incomplete one says why.
func TestWholeNeedsFinish(t *testing.T) {
	if _, ok := Whole("r", "m", 0, []provider.Part{provider.TextDelta{Text: "x"}}); ok {
		t.Error("Whole ok for a reply with no finish")
	}
	body, ok := Whole("r", "m", 0, []provider.Part{provider.TextDelta{Text: "x"}, provider.Finish{Reason: "max_output_tokens"}})
	if !ok || !strings.Contains(string(body), `"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}`) {
		t.Errorf("Whole of an incomplete reply: %s", body)
	}
}

// TestFailedEvent: the spliced failure event carries the given sequence
// number and the error's code and message.
func TestFailedEvent(t *testing.T) {
	fs := sseFrames(t, FailedEvent("resp_x", 7, &provider.StreamError{Type: "rate_limit_exceeded", Message: "slow down"}))
	if len(fs) != 1 || fs[0].ev.SequenceNumber != 7 || fs[0].ev.Response.ID != "resp_x" || fs[0].ev.Response.Status != "failed" ||
		string(fs[0].ev.Response.Error.Code) != `"rate_limit_exceeded"` || fs[0].ev.Response.Error.Message != "slow down" {
		t.Errorf("FailedEvent: %+v", fs)
	}
}

// TestErrorEvent: the error event carries the type as its code, null
// when there is none.
func TestErrorEvent(t *testing.T) {
	for _, tt := range []struct {
		se   provider.StreamError
		want string
	}{
		{provider.StreamError{Type: "server_error", Message: "boom"}, `{"type":"error","sequence_number":0,"code":"server_error","message":"boom","param":null}`},
		{provider.StreamError{Message: "lost"}, `{"type":"error","sequence_number":0,"code":null,"message":"lost","param":null}`},
	} {
		fs := sseFrames(t, ErrorEvent(&tt.se))
		if len(fs) != 1 || fs[0].raw != tt.want {
			t.Errorf("ErrorEvent(%+v):\n got %s\nwant %s", tt.se, fs[0].raw, tt.want)
		}
	}
}

// TestHTTPErrorBody: the error body is the Chat Completions one, which
// the shared reader takes apart.
func TestHTTPErrorBody(t *testing.T) {
	code, msg := provider.ParseErrorBody(HTTPErrorBody(429, "", ""))
	if code != "rate_limit_exceeded" || msg == "" {
		t.Errorf("429 body reads as (%q, %q)", code, msg)
	}
}

// TestIncompleteReason: the finishes that make a reply incomplete, and
// the reason each is said with.
func TestIncompleteReason(t *testing.T) {
	for _, tt := range []struct {
		finish, reason string
		ok             bool
	}{
		{"length", "max_output_tokens", true},
		{"max_output_tokens", "max_output_tokens", true},
		{"max_tokens", "max_output_tokens", true},
		{"content_filter", "content_filter", true},
		{"stop", "", false},
		{"tool_calls", "", false},
		{"completed", "", false},
		{"end_turn", "", false},
	} {
		if reason, ok := IncompleteReason(tt.finish); reason != tt.reason || ok != tt.ok {
			t.Errorf("IncompleteReason(%q) = %q, %v; want %q, %v", tt.finish, reason, ok, tt.reason, tt.ok)
		}
	}
}
