package responses_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/openai/responses"
	"github.com/openmax/openmax/provider/retry"
)

// sseOf writes events (each the JSON data of one event) as a Responses
// stream: every frame is named after its type, as the API names them.
func sseOf(t *testing.T, events ...string) string {
	t.Helper()
	var b strings.Builder
	for _, ev := range events {
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(ev), &head); err != nil {
			t.Fatalf("test event %s: %v", ev, err)
		}
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", head.Type, ev)
	}
	return b.String()
}

// Events of a stream, written the way the API writes them.
func created() string {
	return `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[]}}`
}

func textDelta(i int, s string) string {
	return fmt.Sprintf(`{"type":"response.output_text.delta","item_id":"msg_%d","output_index":%d,"content_index":0,"delta":%q,"logprobs":[]}`, i, i, s)
}

func refusalDelta(i int, s string) string {
	return fmt.Sprintf(`{"type":"response.refusal.delta","item_id":"msg_%d","output_index":%d,"content_index":0,"delta":%q}`, i, i, s)
}

func messageAdded(i int) string {
	return fmt.Sprintf(`{"type":"response.output_item.added","output_index":%d,"item":{"id":"msg_%d","type":"message","status":"in_progress","role":"assistant","content":[]}}`, i, i)
}

func messageDone(i int, text string) string {
	return fmt.Sprintf(`{"type":"response.output_item.done","output_index":%d,"item":{"id":"msg_%d","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":%q,"annotations":[]}]}}`, i, i, text)
}

func reasoningAdded(i int, enc string) string {
	return fmt.Sprintf(`{"type":"response.output_item.added","output_index":%d,"item":{"id":"rs_%d","type":"reasoning","encrypted_content":%q,"summary":[]}}`, i, i, enc)
}

func summaryDelta(i, part int, s string) string {
	return fmt.Sprintf(`{"type":"response.reasoning_summary_text.delta","item_id":"rs_%d","output_index":%d,"summary_index":%d,"delta":%q}`, i, i, part, s)
}

func reasoningDone(i int, enc string, summary ...string) string {
	var parts []string
	for _, s := range summary {
		parts = append(parts, fmt.Sprintf(`{"type":"summary_text","text":%q}`, s))
	}
	return fmt.Sprintf(`{"type":"response.output_item.done","output_index":%d,"item":{"id":"rs_%d","type":"reasoning","encrypted_content":%q,"summary":[%s]}}`, i, i, enc, strings.Join(parts, ","))
}

func callAdded(i int, callID, name string) string {
	return fmt.Sprintf(`{"type":"response.output_item.added","output_index":%d,"item":{"id":"fc_%d","type":"function_call","status":"in_progress","arguments":"","call_id":%q,"name":%q}}`, i, i, callID, name)
}

func argsDelta(i int, s string) string {
	return fmt.Sprintf(`{"type":"response.function_call_arguments.delta","item_id":"fc_%d","output_index":%d,"delta":%q}`, i, i, s)
}

func argsDone(i int, s string) string {
	return fmt.Sprintf(`{"type":"response.function_call_arguments.done","item_id":"fc_%d","output_index":%d,"arguments":%q}`, i, i, s)
}

func callDone(i int, callID, name, args string) string {
	return fmt.Sprintf(`{"type":"response.output_item.done","output_index":%d,"item":{"id":"fc_%d","type":"function_call","status":"completed","arguments":%q,"call_id":%q,"name":%q}}`, i, i, args, callID, name)
}

const usageJSON = `{"input_tokens":120,"input_tokens_details":{"cached_tokens":64},"output_tokens":40,"output_tokens_details":{"reasoning_tokens":24},"total_tokens":160}`

func completed(usage string) string {
	if usage == "" {
		usage = "null"
	}
	return `{"type":"response.completed","response":{"id":"resp_1","object":"response","status":"completed","output":[],"usage":` + usage + `}}`
}

func incomplete(reason, usage string) string {
	return fmt.Sprintf(`{"type":"response.incomplete","response":{"id":"resp_1","object":"response","status":"incomplete","incomplete_details":{"reason":%q},"output":[],"usage":%s}}`, reason, usage)
}

func failed(code, msg string) string {
	return fmt.Sprintf(`{"type":"response.failed","response":{"id":"resp_1","object":"response","status":"failed","error":{"code":%q,"message":%q},"output":[],"usage":null}}`, code, msg)
}

func errorEvent(code, msg string) string {
	return fmt.Sprintf(`{"type":"error","sequence_number":3,"code":%q,"message":%q,"param":null}`, code, msg)
}

func intp(n int) *int { return &n }

func call(id, name, args string) provider.ToolCallPart {
	return provider.ToolCallPart{Call: provider.ToolCall{ID: id, Name: name, Args: json.RawMessage(args)}}
}

var fullUsage = provider.Usage{PromptTokens: 120, CompletionTokens: 40, CachedTokens: intp(64), ReasoningTokens: intp(24)}

// parts collects a sequence.
func parts(seq func(func(provider.Part) bool)) []provider.Part {
	var out []provider.Part
	for p := range seq {
		out = append(out, p)
	}
	return out
}

// errOf is the error of the last part, nil when it is no Error.
func errOf(ps []provider.Part) error {
	if len(ps) == 0 {
		return nil
	}
	if e, ok := ps[len(ps)-1].(provider.Error); ok {
		return e.Err
	}
	return nil
}

// TestParseStream: what each shape of stream yields, through ParseStream.
// Errors are compared by what they are (want's Error part holds a
// StreamError to equal, or ErrIncomplete to match).
func TestParseStream(t *testing.T) {
	tests := []struct {
		name   string
		events []string
		want   []provider.Part
	}{
		{"text, usage with cached and reasoning tokens",
			[]string{created(), messageAdded(0), textDelta(0, "Hel"), textDelta(0, "lo"), messageDone(0, "Hello"), completed(usageJSON)},
			[]provider.Part{provider.TextDelta{Text: "Hel"}, provider.TextDelta{Text: "lo"}, fullUsage, provider.Finish{Reason: "completed"}}},
		{"usage without details says nothing of cached or reasoning tokens",
			[]string{created(), textDelta(0, "a"), completed(`{"input_tokens":3,"output_tokens":1,"total_tokens":4}`)},
			[]provider.Part{provider.TextDelta{Text: "a"}, provider.Usage{PromptTokens: 3, CompletionTokens: 1}, provider.Finish{Reason: "completed"}}},
		{"no usage at all",
			[]string{created(), textDelta(0, "a"), completed("")},
			[]provider.Part{provider.TextDelta{Text: "a"}, provider.Finish{Reason: "completed"}}},
		{"refusal is reply text",
			[]string{created(), messageAdded(0), refusalDelta(0, "I can't "), refusalDelta(0, "help with that."), completed("")},
			[]provider.Part{provider.TextDelta{Text: "I can't "}, provider.TextDelta{Text: "help with that."}, provider.Finish{Reason: "completed"}}},
		{"reasoning summary parts, then the done event's encrypted content",
			[]string{created(), reasoningAdded(0, "ADDED-token"),
				`{"type":"response.reasoning_summary_part.added","item_id":"rs_0","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""}}`,
				summaryDelta(0, 0, "**Plan**"), summaryDelta(0, 0, " first"),
				`{"type":"response.reasoning_summary_text.done","item_id":"rs_0","output_index":0,"summary_index":0,"text":"**Plan** first"}`,
				summaryDelta(0, 1, "then"), summaryDelta(0, 1, " act"),
				reasoningDone(0, "DONE-token", "**Plan** first", "then act"),
				messageAdded(1), textDelta(1, "Done."), completed(usageJSON)},
			[]provider.Part{provider.ThinkingDelta{Text: "**Plan**"}, provider.ThinkingDelta{Text: " first"},
				provider.ThinkingDelta{Text: "\n\n"}, provider.ThinkingDelta{Text: "then"}, provider.ThinkingDelta{Text: " act"},
				provider.ThinkingDelta{Signature: "DONE-token"}, provider.TextDelta{Text: "Done."}, fullUsage, provider.Finish{Reason: "completed"}}},
		{"reasoning text (open-weight servers)",
			[]string{created(), `{"type":"response.reasoning_text.delta","item_id":"rs_0","output_index":0,"content_index":0,"delta":"raw thought"}`,
				textDelta(1, "ok"), completed("")},
			[]provider.Part{provider.ThinkingDelta{Text: "raw thought"}, provider.TextDelta{Text: "ok"}, provider.Finish{Reason: "completed"}}},
		{"a reasoning item with no summary still signs",
			[]string{created(), reasoningAdded(0, "A"), reasoningDone(0, "B"), textDelta(1, "ok"), completed("")},
			[]provider.Part{provider.ThinkingDelta{Signature: "B"}, provider.TextDelta{Text: "ok"}, provider.Finish{Reason: "completed"}}},
		{"parallel calls, arguments across interleaved deltas, yielded in output order at the end",
			[]string{created(), callAdded(0, "call_a", "add"), callAdded(1, "call_m", "multiply"),
				argsDelta(1, `{"a":`), argsDelta(0, `{"a":`), argsDelta(0, `2,"b":3}`), argsDelta(1, `2,"b":3}`),
				callDone(1, "call_m", "multiply", `{"a":2,"b":3}`), callDone(0, "call_a", "add", `{"a":2,"b":3}`),
				completed(usageJSON)},
			[]provider.Part{call("call_a", "add", `{"a":2,"b":3}`), call("call_m", "multiply", `{"a":2,"b":3}`), fullUsage, provider.Finish{Reason: "completed"}}},
		{"the server's final arguments win over the deltas",
			[]string{created(), callAdded(0, "call_a", "add"), argsDelta(0, `{"a":2,`), argsDone(0, `{"a":2,"b":3}`), completed("")},
			[]provider.Part{call("call_a", "add", `{"a":2,"b":3}`), provider.Finish{Reason: "completed"}}},
		{"output_item.done's arguments win over arguments.done's",
			[]string{created(), callAdded(0, "call_a", "add"), argsDone(0, `{"a":1}`), callDone(0, "call_a", "add", `{"a":2}`), completed("")},
			[]provider.Part{call("call_a", "add", `{"a":2}`), provider.Finish{Reason: "completed"}}},
		{"arguments from the deltas alone; none at all is {}",
			[]string{created(), callAdded(0, "call_a", "add"), argsDelta(0, `{"a"`), argsDelta(0, `:1}`), callAdded(1, "call_n", "now"), completed("")},
			[]provider.Part{call("call_a", "add", `{"a":1}`), call("call_n", "now", `{}`), provider.Finish{Reason: "completed"}}},
		{"a call only the terminal response lists",
			[]string{created(), textDelta(0, "x"),
				`{"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[{"id":"msg_0","type":"message","role":"assistant","content":[{"type":"output_text","text":"x"}]},{"id":"fc_1","type":"function_call","call_id":"call_t","name":"now","arguments":"{\"tz\":\"UTC\"}"}]}}`},
			[]provider.Part{provider.TextDelta{Text: "x"}, call("call_t", "now", `{"tz":"UTC"}`), provider.Finish{Reason: "completed"}}},
		{"a message only its done event carries",
			[]string{created(), messageAdded(0), messageDone(0, "whole"), completed("")},
			[]provider.Part{provider.TextDelta{Text: "whole"}, provider.Finish{Reason: "completed"}}},
		{"incomplete: the reason as the finish, usage, and no tool calls",
			[]string{created(), textDelta(0, "In the bus"), callAdded(1, "call_a", "add"), argsDelta(1, `{"a":`),
				incomplete("max_output_tokens", usageJSON)},
			[]provider.Part{provider.TextDelta{Text: "In the bus"}, fullUsage, provider.Finish{Reason: "max_output_tokens"}}},
		{"incomplete for the content filter",
			[]string{created(), textDelta(0, "a"), incomplete("content_filter", "null")},
			[]provider.Part{provider.TextDelta{Text: "a"}, provider.Finish{Reason: "content_filter"}}},
		{"failed before any text",
			[]string{created(), failed("rate_limit_exceeded", "Rate limit reached for gpt-4o")},
			[]provider.Part{provider.Error{Err: &provider.StreamError{Type: "rate_limit_exceeded", Message: "Rate limit reached for gpt-4o"}}}},
		{"failed after text, nothing after it counts",
			[]string{created(), textDelta(0, "Part"), failed("server_error", "The server had an error"), textDelta(0, "more"), completed("")},
			[]provider.Part{provider.TextDelta{Text: "Part"}, provider.Error{Err: &provider.StreamError{Type: "server_error", Message: "The server had an error"}}}},
		{"failed with a null code",
			[]string{created(), `{"type":"response.failed","response":{"id":"resp_1","status":"failed","error":{"code":null,"message":"boom"}}}`},
			[]provider.Part{provider.Error{Err: &provider.StreamError{Message: "boom"}}}},
		{"an error event",
			[]string{created(), textDelta(0, "a"), errorEvent("overloaded_error", "Overloaded"), completed("")},
			[]provider.Part{provider.TextDelta{Text: "a"}, provider.Error{Err: &provider.StreamError{Type: "overloaded_error", Message: "Overloaded"}}}},
		{"an error event with the error object nested",
			[]string{created(), `{"type":"error","error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"too long"}}`},
			[]provider.Part{provider.Error{Err: &provider.StreamError{Type: "context_length_exceeded", Message: "too long"}}}},
		{"a [DONE] line some proxies add is no event",
			[]string{created(), textDelta(0, "a"), completed("")},
			[]provider.Part{provider.TextDelta{Text: "a"}, provider.Finish{Reason: "completed"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := sseOf(t, tt.events...)
			if strings.Contains(tt.name, "[DONE]") {
				body = strings.Replace(body, "event: response.completed", "data: [DONE]\n\nevent: response.completed", 1)
			}
			got := parts(responses.ParseStream(strings.NewReader(body)))
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("parts\n got %s\nwant %s", show(got), show(tt.want))
			}
		})
	}
}

// show prints parts with the values behind their pointers.
func show(ps []provider.Part) string {
	var b strings.Builder
	for _, p := range ps {
		switch p := p.(type) {
		case provider.Usage:
			fmt.Fprintf(&b, "Usage{%d %d cached %s reasoning %s} ", p.PromptTokens, p.CompletionTokens, ref(p.CachedTokens), ref(p.ReasoningTokens))
		case provider.Error:
			fmt.Fprintf(&b, "Error{%T %v} ", p.Err, p.Err)
		case provider.ToolCallPart:
			fmt.Fprintf(&b, "Call{%s %s %s} ", p.Call.ID, p.Call.Name, p.Call.Args)
		default:
			fmt.Fprintf(&b, "%#v ", p)
		}
	}
	return b.String()
}

func ref(n *int) string {
	if n == nil {
		return "nil"
	}
	return fmt.Sprint(*n)
}

// TestTruncation: a stream that ends, before or after text, with no
// terminal event is incomplete; the calls it announced are never yielded.
func TestTruncation(t *testing.T) {
	tests := []struct {
		name   string
		events []string
		text   string
		says   string
	}{
		{"before any text", []string{created()}, "", "after 1 events (last response.created)"},
		{"after text", []string{created(), textDelta(0, "Half an ans")}, "Half an ans", "last response.output_text.delta"},
		{"with a call streamed whole", []string{created(), callAdded(0, "c", "f"), argsDone(0, `{}`), callDone(0, "c", "f", `{}`)}, "", "last response.output_item.done"},
		{"no events at all", nil, "", "no events"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parts(responses.ParseStream(strings.NewReader(sseOf(t, tt.events...))))
			err := errOf(got)
			if !errors.Is(err, provider.ErrIncomplete) || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("error %v, want an incomplete stream saying %q", err, tt.says)
			}
			var text strings.Builder
			for _, p := range got {
				switch p := p.(type) {
				case provider.TextDelta:
					text.WriteString(p.Text)
				case provider.ToolCallPart, provider.Usage, provider.Finish:
					t.Errorf("a truncated stream yielded %#v", p)
				}
			}
			if text.String() != tt.text {
				t.Errorf("text %q, want %q", text.String(), tt.text)
			}
		})
	}
}

// TestMalformedEvent: an event that is not JSON ends the reply with a
// plain error (resending would get the same), after the text before it.
func TestMalformedEvent(t *testing.T) {
	body := sseOf(t, created(), textDelta(0, "ok")) + "event: response.output_text.delta\ndata: {\"type\":\"response.out\n\n" + sseOf(t, completed(""))
	got := parts(responses.ParseStream(strings.NewReader(body)))
	err := errOf(got)
	if err == nil || errors.Is(err, provider.ErrIncomplete) || !strings.Contains(err.Error(), "responses: bad response.output_text.delta event") {
		t.Fatalf("error %v", err)
	}
	if len(got) != 2 || got[0] != (provider.TextDelta{Text: "ok"}) {
		t.Fatalf("parts %s", show(got))
	}
}

// server answers each request with the next of replies (status,
// Content-Type, body), the last one again when they run out, and counts
// the requests.
func server(t *testing.T, replies ...reply) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := int(n.Add(1)) - 1
		if k >= len(replies) {
			k = len(replies) - 1
		}
		rp := replies[k]
		for key, v := range rp.header {
			w.Header().Set(key, v)
		}
		w.Header().Set("Content-Type", rp.ctype)
		w.WriteHeader(rp.status)
		w.Write([]byte(rp.body))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

type reply struct {
	status int
	ctype  string
	header map[string]string
	body   string
}

func sseReply(body string) reply { return reply{status: 200, ctype: "text/event-stream", body: body} }

func newClient(t *testing.T, base string) *responses.Client {
	t.Helper()
	c, err := responses.New(responses.Config{APIKey: "sk-test", BaseURL: base, Model: "gpt-test"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// throughRetry streams one request through provider/retry (three attempts
// at most) on a fake clock that jumps past every wait, and returns the
// parts and the number of Retry parts.
func throughRetry(t *testing.T, c provider.Provider) ([]provider.Part, int) {
	t.Helper()
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []provider.Part
	retries := 0
	for p := range retry.New(c, retry.Policy{MaxAttempts: 3}, fake).Stream(ctx, provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}}) {
		out = append(out, p)
		if _, ok := p.(provider.Retry); ok {
			retries++
			go func() {
				if fake.BlockUntil(ctx, 1) == nil {
					fake.Advance(2 * time.Minute)
				}
			}()
		}
	}
	return out, retries
}

// TestRetries: what provider/retry resends on this wire, exactly as on the
// others: in-stream rate limits, overloads and server faults before any
// text, truncation before text; not a quota, not a bad request, nothing
// after text; HTTP statuses by their status and Retry-After.
func TestRetries(t *testing.T) {
	ok := sseReply(sseOf(t, created(), textDelta(0, "fine"), completed("")))
	tests := []struct {
		name    string
		first   reply
		retries int
		// text is the reply text at the end; "" when the request failed.
		text string
	}{
		{"response.failed rate_limit_exceeded before text", sseReply(sseOf(t, created(), failed("rate_limit_exceeded", "slow down"))), 1, "fine"},
		{"response.failed server_error before text", sseReply(sseOf(t, created(), failed("server_error", "oops"))), 1, "fine"},
		{"response.failed insufficient_quota", sseReply(sseOf(t, created(), failed("insufficient_quota", "You exceeded your current quota"))), 0, ""},
		{"response.failed invalid_prompt", sseReply(sseOf(t, created(), failed("invalid_prompt", "no"))), 0, ""},
		{"response.failed server_error after text", sseReply(sseOf(t, created(), textDelta(0, "x"), failed("server_error", "oops"))), 0, ""},
		{"error event overloaded before text", sseReply(sseOf(t, created(), errorEvent("overloaded_error", "Overloaded"))), 1, "fine"},
		{"truncated before text", sseReply(sseOf(t, created())), 1, "fine"},
		{"truncated after text", sseReply(sseOf(t, created(), textDelta(0, "x"))), 0, ""},
		{"429 Retry-After seconds", reply{status: 429, ctype: "application/json", header: map[string]string{"Retry-After": "20"},
			body: string(responses.HTTPErrorBody(429, "rate_limit_exceeded", "slow down"))}, 1, "fine"},
		{"429 Retry-After over 60 s", reply{status: 429, ctype: "application/json", header: map[string]string{"Retry-After": "120"},
			body: string(responses.HTTPErrorBody(429, "rate_limit_exceeded", "slow down"))}, 0, ""},
		{"429 retry-after-ms", reply{status: 429, ctype: "application/json", header: map[string]string{"retry-after-ms": "1500"},
			body: string(responses.HTTPErrorBody(429, "rate_limit_exceeded", "slow down"))}, 1, "fine"},
		{"429 insufficient_quota", reply{status: 429, ctype: "application/json",
			body: string(responses.HTTPErrorBody(429, "insufficient_quota", "You exceeded your current quota"))}, 0, ""},
		{"500", reply{status: 500, ctype: "application/json", body: string(responses.HTTPErrorBody(500, "server_error", "oops"))}, 1, "fine"},
		{"400", reply{status: 400, ctype: "application/json", body: string(responses.HTTPErrorBody(400, "invalid_request_error", "bad"))}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, n := server(t, tt.first, ok)
			got, retries := throughRetry(t, newClient(t, srv.URL))
			if retries != tt.retries || int(n.Load()) != tt.retries+1 {
				t.Fatalf("%d retries, %d requests; want %d, %d: %s", retries, n.Load(), tt.retries, tt.retries+1, show(got))
			}
			last := got[len(got)-1]
			if tt.text != "" {
				if last != (provider.Finish{Reason: "completed"}) || got[len(got)-2] != (provider.TextDelta{Text: tt.text}) {
					t.Fatalf("parts %s, want the second reply", show(got))
				}
				return
			}
			if _, failed := last.(provider.Error); !failed {
				t.Fatalf("parts %s, want a failure", show(got))
			}
		})
	}
}

// TestWholeResponse: a server that ignores stream:true answers one JSON
// response, read as a whole; an error object sent with status 200 is a
// StreamError.
func TestWholeResponse(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []provider.Part
	}{
		{"completed with reasoning, text and a call",
			`{"id":"resp_1","object":"response","status":"completed","error":null,"incomplete_details":null,"output":[` +
				`{"id":"rs_0","type":"reasoning","summary":[{"type":"summary_text","text":"one"},{"type":"summary_text","text":"two"}],"encrypted_content":"ENC"},` +
				`{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi.","annotations":[]}]},` +
				`{"id":"fc_2","type":"function_call","call_id":"call_x","name":"now","arguments":"{}"}],"usage":` + usageJSON + `}`,
			[]provider.Part{provider.ThinkingDelta{Text: "one\n\ntwo"}, provider.ThinkingDelta{Signature: "ENC"}, provider.TextDelta{Text: "Hi."},
				call("call_x", "now", `{}`), fullUsage, provider.Finish{Reason: "completed"}}},
		{"incomplete",
			`{"id":"resp_1","object":"response","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[` +
				`{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"Cut"}]},` +
				`{"id":"fc_2","type":"function_call","call_id":"call_x","name":"now","arguments":"{"}]}`,
			[]provider.Part{provider.TextDelta{Text: "Cut"}, provider.Finish{Reason: "max_output_tokens"}}},
		{"failed",
			`{"id":"resp_1","object":"response","status":"failed","error":{"code":"server_error","message":"oops"},"output":[]}`,
			[]provider.Part{provider.Error{Err: &provider.StreamError{Type: "server_error", Message: "oops"}}}},
		{"an error body with status 200",
			string(responses.HTTPErrorBody(500, "server_error", "The server had an error")),
			[]provider.Part{provider.Error{Err: &provider.StreamError{Type: "server_error", Message: "The server had an error"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := server(t, reply{status: 200, ctype: "application/json", body: tt.body})
			got := parts(newClient(t, srv.URL).Stream(context.Background(), provider.Request{}))
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("parts\n got %s\nwant %s", show(got), show(tt.want))
			}
			if !reflect.DeepEqual(parts(responses.ParseResponse(strings.NewReader(tt.body))), tt.want) {
				t.Errorf("ParseResponse differs from the client")
			}
		})
	}
	t.Run("still in progress", func(t *testing.T) {
		got := parts(responses.ParseResponse(strings.NewReader(`{"id":"resp_1","object":"response","status":"in_progress","output":[]}`)))
		if err := errOf(got); !errors.Is(err, provider.ErrIncomplete) || len(got) != 1 {
			t.Fatalf("parts %s", show(got))
		}
	})
}

// TestUnsupportedEncoding: a body in an encoding the client cannot undo is
// refused by name rather than parsed as garbage.
func TestUnsupportedEncoding(t *testing.T) {
	srv, _ := server(t, reply{status: 200, ctype: "text/event-stream", header: map[string]string{"Content-Encoding": "br"}, body: "xx"})
	got := parts(newClient(t, srv.URL).Stream(context.Background(), provider.Request{}))
	if err := errOf(got); err == nil || !strings.Contains(err.Error(), `unsupported Content-Encoding "br"`) {
		t.Fatalf("parts %s", show(got))
	}
}
