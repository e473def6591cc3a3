package edit

import (
	"net/http"
	"strings"
	"testing"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/openmax/openmax/recorder/cassette"
)

// TestShowLineEnds: Show reads a stream's events by the SSE rules
// (provider/sse) whatever its line ends, places each event in the chunk it
// ends in, and reads OpenAI choices in the openai package's shapes, a
// content or role that is not a string making the event unparsed.
func TestShowLineEnds(t *testing.T) {
	const hi = `{"choices":[{"index":0,"delta":{"content":"Hi"}}]}`
	tests := []struct {
		name   string
		chunks []string
		want   []string
	}{
		{"lone CR to the very end", []string{"data: " + hi + "\r\rdata: [DONE]\r\r"}, []string{
			`  chunk 0 at +0s, 72 B: text "Hi", [DONE]`, `  text: "Hi"`, "  signal: [DONE]"}},
		{"CRLF, an event split over chunks", []string{"data: " + hi + "\r\n", "\r\ndata: [DO", "NE]\r\n\r\n"}, []string{
			`  chunk 0 at +0s, 58 B: data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\r\n`,
			`  chunk 1 at +0s, 11 B: text "Hi" + 9 B of an open event: data: [DO`,
			`  chunk 2 at +0s, 7 B: [DONE]`, "  signal: [DONE]"}},
		{"mixed line ends", []string{"data: " + hi + "\n\r\n: ping\rdata: [DONE]\r\n\n"}, []string{
			`  chunk 0 at +0s, 81 B: text "Hi", [DONE]`, "  signal: [DONE]"}},
		{"an unterminated last event", []string{"data: " + hi + "\n\ndata: {\"choi"}, []string{
			`  chunk 0 at +0s, 70 B: text "Hi" + 12 B of an open event: data: {"choi`,
			"  unterminated event: 12 B", "  signal: none (no completion signal)"}},
		{"unparsed, unnamed and named", []string{"data: {\"choices\":[{\"delta\":{\"content\":[\"a\"]}}]}\n\nevent: message\ndata: {\"choices\":[{\"delta\":{\"role\":5}}]}\n\n"}, []string{
			`  chunk 0 at +0s, 106 B: unparsed , unparsed message`, "  unparsed events: 2"}},
		{"fields show does not print may hold anything", []string{"data: {\"choices\":[{\"index\":0,\"message\":5,\"delta\":{\"refusal\":5,\"content\":\"ok\"}}]}\n\n"}, []string{
			`  chunk 0 at +0s, 82 B: text "ok"`, `  text: "ok"`}},
		{"tool call arguments as a string, null and an object", []string{
			"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"read\",\"arguments\":null}}]}}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{}\"}}]}}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":{}}}]}}]}\n\n"}, []string{
			`  chunk 0 at +0s, 292 B: tool read, args "{}", unparsed `, "  tool call 0: read {} (c1)", "  unparsed events: 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it := &cassette.Interaction{
				Request:  vcr.Request{Method: "POST", URL: "https://api.openai.com/v1/chat/completions"},
				Response: vcr.Response{Code: 200, Headers: http.Header{"Content-Type": {"text/event-stream"}}},
				Stream:   &cassette.Stream{},
			}
			for _, c := range tt.chunks {
				it.Stream.Chunks = append(it.Stream.Chunks, cassette.Chunk{Data: c})
				it.Response.Body += c
			}
			hasLines(t, show(t, &cassette.File{Version: cassette.FormatVersion, Interactions: []*cassette.Interaction{it}}), tt.want)
		})
	}
}

// TestShowWholeCompletion: a whole Chat Completion is read in the openai
// package's shapes; what show does not print (a role, reasoning or refusal
// of any type, a choice's index) does not stop it reading the rest.
func TestShowWholeCompletion(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
	}{
		{"text, reasoning and a tool call", `{"choices":[{"message":{"role":"assistant","content":"hi","reasoning_content":"r","tool_calls":[{"id":"c","function":{"name":"n","arguments":"{}"}}]},"finish_reason":"stop"}]}`,
			[]string{`  text: "hi"`, `  thinking: "r"`, "  tool call 0: n {} (c)", "  finish: stop"}},
		{"unread fields of any type", `{"choices":[{"index":"x","message":{"role":5,"reasoning":5,"refusal":5,"content":"c"},"delta":5}]}`,
			[]string{`  text: "c"`}},
		{"content that is not a string", `{"choices":[{"message":{"content":["a"]},"finish_reason":"stop"}]}`,
			[]string{"  body: 66 B in 1 chunk (recorded without chunk detail)", "  end: clean"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it := &cassette.Interaction{
				Request:  vcr.Request{Method: "POST", URL: "https://api.openai.com/v1/chat/completions"},
				Response: vcr.Response{Code: 200, Headers: http.Header{"Content-Type": {"application/json"}}, Body: tt.body},
			}
			out := show(t, &cassette.File{Version: cassette.FormatVersion, Interactions: []*cassette.Interaction{it}})
			hasLines(t, out, tt.want)
			if tt.name == "content that is not a string" && (strings.Contains(out, "text:") || strings.Contains(out, "finish:")) {
				t.Errorf("a body that does not decode says something:\n%s", out)
			}
		})
	}
}

// TestShowStatus: the status line is the recorded one, code first; with
// no recorded text, the code and the text a vendor sends for it.
func TestShowStatus(t *testing.T) {
	tests := []struct {
		code   int
		status string
		want   string
	}{
		{200, "", "200 OK"},
		{200, "OK", "200 OK"},
		{503, "503 Service Unavailable", "503 Service Unavailable"},
		{529, "", "529 Overloaded"},
		{529, "  529  ", "529"},
		{599, "", "599"},
	}
	for _, tt := range tests {
		it := &cassette.Interaction{
			Request:  vcr.Request{Method: "POST", URL: "https://api.openai.com/v1/chat/completions"},
			Response: vcr.Response{Code: tt.code, Status: tt.status},
		}
		hasLines(t, show(t, &cassette.File{Version: cassette.FormatVersion, Interactions: []*cassette.Interaction{it}}), []string{"  status: " + tt.want})
	}
}

// TestShowAnthropicEvents: Anthropic events are read in the anthropic
// package's shape (anthropic.Event). A block start's text or thinking
// that is not a string makes the event unparsed; what show does not print
// (a redacted block's data, the usage) may hold anything.
func TestShowAnthropicEvents(t *testing.T) {
	ev := func(data string) string { return "event: x\ndata: " + data + "\n\n" }
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"text and thinking at a block's start", ev(`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"hm"}}`) +
			ev(`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":"Hi"}}`) +
			ev(`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" there"}}`),
			[]string{`  chunk 0 at +0s, 313 B: thinking block, thinking "hm", text block, text "Hi there"`, `  text: "Hi there"`, `  thinking: "hm"`}},
		{"a start's text that is not a string", ev(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":5}}`) +
			ev(`{"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":["a"]}}`),
			[]string{`  chunk 0 at +0s, 208 B: unparsed x, unparsed x`, "  unparsed events: 2"}},
		{"unread fields of any type", ev(`{"type":"message_start","message":{"usage":{"input_tokens":"x"}}}`) +
			ev(`{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":5}}`) +
			ev(`{"type":"message_delta","delta":{"stop_reason":null},"usage":"x"}`) +
			ev(`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":[]}}`),
			[]string{`  chunk 0 at +0s, 380 B: message_start, redacted_thinking block, message_delta, stop end_turn`, "  finish: end_turn"}},
		{"tool calls with and without an index", ev(`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"a","name":"read","input":{}}}`) +
			ev(`{"type":"content_block_start","content_block":{"type":"tool_use","id":"b","name":"ls","input":{"p":1}}}`) +
			ev(`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}`),
			[]string{"  tool call 0: read {} (a)", `  tool call 1: ls {"p":1} (b)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it := &cassette.Interaction{
				Request:  vcr.Request{Method: "POST", URL: "https://api.anthropic.com/v1/messages"},
				Response: vcr.Response{Code: 200, Headers: http.Header{"Content-Type": {"text/event-stream"}}, Body: tt.body},
				Stream:   &cassette.Stream{Chunks: []cassette.Chunk{{Data: tt.body}}},
			}
			hasLines(t, show(t, &cassette.File{Version: cassette.FormatVersion, Interactions: []*cassette.Interaction{it}}), tt.want)
		})
	}
}

// TestShowWholeMessage: a whole Messages reply is read in the anthropic
// package's shapes; a block's text that is not a string makes the body say
// nothing, a redacted block's data of any type does not.
func TestShowWholeMessage(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
		silent     bool
	}{
		{"text, thinking and a tool call", `{"type":"message","content":[{"type":"thinking","thinking":"r"},{"type":"redacted_thinking","data":5},{"type":"text","text":"hi"},{"type":"tool_use","id":"t","name":"n","input":{}}],"stop_reason":"tool_use"}`,
			[]string{`  text: "hi"`, `  thinking: "r"`, "  tool call 0: n {} (t)", "  finish: tool_use"}, false},
		{"text that is not a string", `{"type":"message","content":[{"type":"text","text":5}],"stop_reason":"end_turn"}`,
			[]string{"  end: clean"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it := &cassette.Interaction{
				Request:  vcr.Request{Method: "POST", URL: "https://api.anthropic.com/v1/messages"},
				Response: vcr.Response{Code: 200, Headers: http.Header{"Content-Type": {"application/json"}}, Body: tt.body},
			}
			out := show(t, &cassette.File{Version: cassette.FormatVersion, Interactions: []*cassette.Interaction{it}})
			hasLines(t, out, tt.want)
			if tt.silent && (strings.Contains(out, "text:") || strings.Contains(out, "finish:")) {
				t.Errorf("a body that does not decode says something:\n%s", out)
			}
		})
	}
}

// TestShowSaysWhatWasRecorded: every wire's stream shows its message id and
// model and its usage; Anthropic signatures show their lengths, a tool
// call with no input shows {}, and a Responses message shows its phase.
func TestShowSaysWhatWasRecorded(t *testing.T) {
	ev := func(data string) string { return "event: x\ndata: " + data + "\n\n" }
	tests := []struct {
		name, url, body string
		want            []string
	}{
		{"anthropic", "https://api.anthropic.com/v1/messages",
			ev(`{"type":"message_start","message":{"id":"msg_01A","model":"claude-x","usage":{"input_tokens":12,"cache_read_input_tokens":4,"output_tokens":1}}}`) +
				ev(`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`) +
				ev(`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}`) +
				ev(`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2lnbmF0dXJl"}}`) +
				ev(`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"now","input":{}}}`) +
				ev(`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":30}}`),
			[]string{"  message: msg_01A, model claude-x", `  thinking: "hm" (1 signature: 12 B)`, "  tool call 0: now {} (t1)",
				"  usage: 12 in (4 cached), 30 out, 42 total"}},
		{"openai", "https://api.openai.com/v1/chat/completions",
			"data: " + `{"id":"chatcmpl-1","model":"gpt-x","choices":[{"index":0,"delta":{"content":"Hi"}}]}` + "\n\n" +
				"data: " + `{"id":"chatcmpl-1","model":"gpt-x","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11,"prompt_tokens_details":{"cached_tokens":3}}}` + "\n\n" +
				"data: [DONE]\n\n",
			[]string{"  message: chatcmpl-1, model gpt-x", "  usage: 9 in (3 cached), 2 out, 11 total"}},
		{"responses", "https://api.openai.com/v1/responses",
			ev(`{"type":"response.created","response":{"id":"resp_1","model":"gpt-5","status":"in_progress","output":[]}}`) +
				ev(`{"type":"response.output_item.done","output_index":0,"item":{"id":"msg_1","type":"message","role":"assistant","phase":"commentary","content":[{"type":"output_text","text":"Hi"}]}}`) +
				ev(`{"type":"response.completed","response":{"id":"resp_1","model":"gpt-5","status":"completed","output":[],"usage":{"input_tokens":5,"output_tokens":1,"total_tokens":6}}}`),
			[]string{"  message: resp_1, model gpt-5", "  phase: commentary", "  usage: 5 in, 1 out, 6 total"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it := &cassette.Interaction{
				Request:  vcr.Request{Method: "POST", URL: tt.url},
				Response: vcr.Response{Code: 200, Headers: http.Header{"Content-Type": {"text/event-stream"}}, Body: tt.body},
				Stream:   &cassette.Stream{Chunks: []cassette.Chunk{{Data: tt.body}}},
			}
			hasLines(t, show(t, &cassette.File{Version: cassette.FormatVersion, Interactions: []*cassette.Interaction{it}}), tt.want)
		})
	}
}
