package gemini_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/provider/gemini"
)

// TestParseEvents: the registry's reading of a recorded body splits it
// into its events with offsets that tile it (a comment belongs to the
// event after it), each with what the client yields from it as it
// streams (text, thoughts, signatures, a failure) and notes for a
// person; the calls, usage and finish come once the stream has ended
// (EndParts); data that is not a chunk is marked unparsed; an
// unterminated last event is the tail; and the reply's id, model, text,
// thinking, signatures, call, finish, usage and errors are read.
func TestParseEvents(t *testing.T) {
	e1 := "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"**Plan**\",\"thought\": true,\"thoughtSignature\": \"U0lH\"}],\"role\": \"model\"},\"index\": 0}],\"responseId\": \"r1\",\"modelVersion\": \"gemini-2.5-pro\"}\r\n\r\n"
	e2 := ": keep-alive\r\n" + "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Hi\"},{\"functionCall\": {\"name\": \"f\",\"args\": {\"a\": 1}},\"thoughtSignature\": \"Q0FMTA==\"}],\"role\": \"model\"},\"finishReason\": \"STOP\",\"finishMessage\": \"Model generated function call(s).\",\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 7,\"candidatesTokenCount\": 2,\"thoughtsTokenCount\": 3,\"totalTokenCount\": 12},\"responseId\": \"r1\",\"modelVersion\": \"gemini-2.5-pro\"}\r\n\r\n"
	e3 := "data: not json\r\n\r\n"
	e4 := "data: {\"promptFeedback\": {\"blockReason\": \"SAFETY\"}}\r\n\r\n"
	tail := "data: {\"candidates\": []}\r\n"
	body := e1 + e2 + e3 + e4 + tail
	r := gemini.Wire{}.Parse("text/event-stream", []byte(body))
	evs := r.Events
	if !r.Stream || r.Tail != len(tail) || len(evs) != 4 {
		t.Fatalf("stream %v, %d events, tail %d; want 4 and %d", r.Stream, len(evs), r.Tail, len(tail))
	}
	bounds := [][2]int{{0, len(e1)}, {len(e1), len(e1 + e2)}, {len(e1 + e2), len(e1 + e2 + e3)}, {len(e1 + e2 + e3), len(e1 + e2 + e3 + e4)}}
	for i, ev := range evs {
		if ev.Start != bounds[i][0] || ev.End != bounds[i][1] {
			t.Errorf("event %d at [%d,%d), want [%d,%d)", i, ev.Start, ev.End, bounds[i][0], bounds[i][1])
		}
	}
	want := [][]provider.Part{
		{provider.ThinkingDelta{Text: "**Plan**"}, provider.ThinkingDelta{Signature: "U0lH"}},
		{provider.TextDelta{Text: "Hi"}, provider.ThinkingDelta{Signature: gemini.CallSignature("call_r1_1", "Q0FMTA==")}},
		nil,
		nil,
	}
	for i := range want {
		if i == 2 {
			if !evs[2].Unparsed || len(evs[2].Parts) != 1 {
				t.Errorf("event 2: %+v, want unparsed with the client's error", evs[2])
			}
			continue
		}
		if !reflect.DeepEqual(evs[i].Parts, want[i]) || evs[i].Unparsed {
			t.Errorf("event %d carries %#v\nwant %#v", i, evs[i].Parts, want[i])
		}
	}
	// The client stops at the bad event: nothing after it, no EndParts.
	if len(r.EndParts) != 0 {
		t.Errorf("end parts %#v after the client stopped", r.EndParts)
	}
	if got := fmt.Sprint(evs[1].Notes); got != `[{text Hi} {call f } {args {"a": 1}} {signature } {finish STOP "Model generated function call(s)." } {usage }]` {
		t.Errorf("event 1 notes %s", got)
	}
	if got := fmt.Sprint(evs[3].Notes); got != "[{prompt blocked SAFETY }]" {
		t.Errorf("event 3 notes %s", got)
	}
	if r.MessageID != "r1" || r.Model != "gemini-2.5-pro" || r.Text != "Hi" || r.Thinking != "**Plan**" || r.Signatures != 2 ||
		!reflect.DeepEqual(r.SignatureBytes, []int{4, 8}) || r.Finish != "STOP" ||
		!reflect.DeepEqual(r.Tools, []codec.ToolCall{{ID: "call_r1_1", Name: "f", Args: `{"a": 1}`}}) ||
		!reflect.DeepEqual(r.Errors, []string{"prompt blocked SAFETY"}) {
		t.Errorf("reading %+v", r)
	}
	if u := r.Usage; u == nil || u.Input != 7 || u.Output != 5 || u.Total != 12 || u.Reasoning == nil || *u.Reasoning != 3 || u.Cached != nil {
		t.Errorf("usage %+v", u)
	}

	// Without the bad event, the finished reply's calls, usage and finish
	// come at the end.
	r = gemini.Wire{}.Parse("", []byte(e1+e2))
	call := provider.ToolCall{ID: "call_r1_1", Name: "f", Args: json.RawMessage(`{"a": 1}`)}
	if wantEnd := []provider.Part{provider.ToolCallPart{Call: call}, provider.Usage{PromptTokens: 7, CompletionTokens: 5, ReasoningTokens: intp(3)},
		provider.Finish{Reason: "STOP"}}; !r.Stream || !reflect.DeepEqual(r.EndParts, wantEnd) {
		t.Errorf("end parts %#v\nwant %#v", r.EndParts, wantEnd)
	}
	// A blocked prompt alone fails the reply in its event.
	r = gemini.Wire{}.Parse("text/event-stream", []byte(e4))
	if len(r.Events) != 1 || !reflect.DeepEqual(r.Events[0].Parts, []provider.Part{provider.Error{Err: &provider.StreamError{Type: "SAFETY", Message: "the prompt was blocked"}}}) {
		t.Errorf("blocked: %#v", r.Events)
	}
}

// TestBodyDetection tells the wire's bodies from other wires'.
func TestBodyDetection(t *testing.T) {
	enc := gemini.NewEncoder("r", "m")
	stream := string(enc.Part(provider.TextDelta{Text: "a"})) + string(enc.Part(provider.Finish{Reason: "STOP"}))
	whole, _ := gemini.Whole("r", "m", []provider.Part{provider.TextDelta{Text: "a"}, provider.Finish{Reason: "STOP"}})
	for _, tt := range []struct {
		name          string
		body          string
		stream, whole bool
	}{
		{"our stream", stream, true, false},
		{"an error event", string(gemini.ErrorEvent(&provider.StreamError{Type: "INTERNAL", Message: "x"})), true, false},
		{"our whole reply", string(whole), false, true},
		{"a JSON array of chunks", "[" + string(whole) + "]", false, true},
		{"an error body", string(gemini.HTTPErrorBody(429, "", "")), false, true},
		{"Chat Completions", "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[]}\n\ndata: [DONE]\n\n", false, false},
		{"Anthropic", "event: message_start\ndata: {\"type\":\"message_start\"}\n\n", false, false},
		{"OpenAI's error body", `{"error":{"message":"m","type":"server_error","code":null}}`, false, false},
	} {
		if s, w := gemini.IsStreamBody(tt.body), gemini.IsWholeBody(tt.body); s != tt.stream || w != tt.whole {
			t.Errorf("%s: stream %v whole %v, want %v %v", tt.name, s, w, tt.stream, tt.whole)
		}
	}
}

// TestStreamFailure: the in-stream failure of each status name, with the
// API's message where it has one, and the default.
func TestStreamFailure(t *testing.T) {
	for _, tt := range []struct {
		code string
		want provider.StreamError
		ok   bool
	}{
		{"", provider.StreamError{Type: "UNAVAILABLE", Message: "The model is overloaded. Please try again later."}, true},
		{"RESOURCE_EXHAUSTED", provider.StreamError{Type: "RESOURCE_EXHAUSTED", Message: "Resource has been exhausted (e.g. check quota)."}, true},
		{"INTERNAL", provider.StreamError{Type: "INTERNAL", Message: gemini.StatusMessage(500)}, true},
		{"NOT_FOUND", provider.StreamError{Type: "NOT_FOUND"}, false},
		{"overloaded_error", provider.StreamError{Type: "overloaded_error"}, false},
	} {
		f, ok := gemini.StreamFailure(tt.code)
		if *f != tt.want || ok != tt.ok {
			t.Errorf("StreamFailure(%q) = %+v, %v; want %+v, %v", tt.code, *f, ok, tt.want, tt.ok)
		}
	}
	for status, name := range map[int]string{400: "INVALID_ARGUMENT", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE", 502: "INTERNAL", 418: "FAILED_PRECONDITION"} {
		if got := gemini.StatusName(status); got != name {
			t.Errorf("StatusName(%d) = %s, want %s", status, got, name)
		}
	}
	for _, r := range [][2]string{{"stop", "STOP"}, {"tool_calls", "STOP"}, {"end_turn", "STOP"}, {"length", "MAX_TOKENS"}, {"content_filter", "SAFETY"}, {"RECITATION", "RECITATION"}} {
		if got := gemini.FinishReason(r[0]); got != r[1] {
			t.Errorf("FinishReason(%q) = %q, want %q", r[0], got, r[1])
		}
	}
}
