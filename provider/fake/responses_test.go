package fake

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/openai/responses"
	"github.com/openmax/openmax/provider/sse"
)

// responsesEvents reads a Responses stream: each event's type and its
// data parsed as the wire's Event. Every event's sequence_number must be
// its position and its event: line its type.
func responsesEvents(t *testing.T, body string) ([]string, []responses.Event) {
	t.Helper()
	r := sse.NewReader(strings.NewReader(body))
	var types []string
	var events []responses.Event
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return types, events
		}
		if err != nil {
			t.Fatal(err)
		}
		var e responses.Event
		if err := json.Unmarshal([]byte(ev.Data), &e); err != nil {
			t.Fatalf("event %d: %v: %s", len(events), err, ev.Data)
		}
		if e.Type != ev.Type || e.SequenceNumber != int64(len(events)) {
			t.Errorf("event %d: event line %q, type %q, sequence_number %d", len(events), ev.Type, e.Type, e.SequenceNumber)
		}
		types = append(types, e.Type)
		events = append(events, e)
	}
}

func lastData(body string) string {
	frames := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
	return frames[len(frames)-1]
}

// The shorthand reply with reasoning, text, two calls and usage; a reply
// cut by max_output_tokens with its usage scripted after the finish; a
// named finish; each on both paths.
func TestResponsesStream(t *testing.T) {
	h := start(t, `replies:`+tooly+`
  - chunks:
      - text: Hel
      - text: lo
      - finish: length
      - usage: {prompt_tokens: 5, completion_tokens: 2}
  - {text: x, finish: end_turn}
`)
	resp, body := h.read("/v1/responses", stream)
	eq(t, "content type", resp.Header.Get("Content-Type"), "text/event-stream; charset=utf-8")
	types, evs := responsesEvents(t, body)
	want := []string{
		responses.EventCreated, responses.EventInProgress,
		responses.EventItemAdded, responses.EventSummaryPartAdded, responses.EventSummaryTextDelta,
		responses.EventSummaryTextDone, responses.EventSummaryPartDone, responses.EventItemDone,
		responses.EventItemAdded, responses.EventContentPartAdded, responses.EventTextDelta,
		responses.EventTextDone, responses.EventContentPartDone, responses.EventItemDone,
		responses.EventItemAdded, responses.EventArgumentsDelta, responses.EventArgumentsDone, responses.EventItemDone,
		responses.EventItemAdded, responses.EventArgumentsDelta, responses.EventArgumentsDone, responses.EventItemDone,
		responses.EventCompleted,
	}
	eq(t, "reply 1 events", strings.Join(types, " "), strings.Join(want, " "))
	eq(t, "reply 1 created", strings.SplitN(body, "\n\n", 2)[0], "event: response.created\n"+
		`data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_fake_1","object":"response","created_at":1767225600,"status":"in_progress","model":"m1","output":[]}}`)
	eq(t, "reply 1 completed", lastData(body), "event: response.completed\n"+
		`data: {"type":"response.completed","sequence_number":22,"response":{"id":"resp_fake_1","object":"response","created_at":1767225600,"status":"completed","model":"m1","output":[`+
		`{"id":"rs_fake_1_0","type":"reasoning","summary":[{"type":"summary_text","text":"hmm"}]},`+
		`{"id":"msg_fake_1_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"hi","annotations":[]}]},`+
		`{"id":"fc_fake_1_2","type":"function_call","status":"completed","call_id":"call_1_1","name":"read","arguments":"{\"path\":\"a.txt\"}"},`+
		`{"id":"fc_fake_1_3","type":"function_call","status":"completed","call_id":"c9","name":"u","arguments":"{\"bad"}],`+
		`"usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":4},"output_tokens":3,"total_tokens":13}}}`)
	if evs[14].Item.CallID != "call_1_1" || *evs[14].Item.Arguments != "" || *evs[15].Delta != `{"path":"a.txt"}` {
		t.Errorf("the first call's added and delta: %+v %+v", evs[14].Item, evs[15])
	}

	// Usage scripted after the finish still rides on the terminal event;
	// finish length is response.incomplete.
	_, body = h.read("/responses", `{"model":"m2","stream":true}`)
	eq(t, "reply 2 incomplete", lastData(body), "event: response.incomplete\n"+
		`data: {"type":"response.incomplete","sequence_number":9,"response":{"id":"resp_fake_2","object":"response","created_at":1767225600,"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"model":"m2","output":[`+
		`{"id":"msg_fake_2_0","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello","annotations":[]}]}],`+
		`"usage":{"input_tokens":5,"output_tokens":2,"total_tokens":7}}}`)

	// Any other finish completes; no usage scripted, none sent.
	_, body = h.read("/v1/responses", `{"stream":true}`)
	eq(t, "reply 3 completed", lastData(body), "event: response.completed\n"+
		`data: {"type":"response.completed","sequence_number":8,"response":{"id":"resp_fake_3","object":"response","created_at":1767225600,"status":"completed","model":"fake-model","output":[`+
		`{"id":"msg_fake_3_0","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"x","annotations":[]}]}]}}`)

	reqs := h.srv.Requests()
	if len(reqs) != 3 || reqs[0].Wire != responses.WireName || reqs[1].Wire != responses.WireName || reqs[1].Path != "/responses" {
		t.Errorf("requests %+v", reqs)
	}
}

// Reasoning in summary parts, closed by the signature as its
// encrypted_content; content_filter is incomplete.
func TestResponsesReasoning(t *testing.T) {
	h := start(t, `
replies:
  - chunks:
      - thinking: "First."
      - thinking: "\n\n"
      - thinking: "Second."
      - signature: gAAAAenc
      - text: Answer
      - finish: content_filter
`)
	_, body := h.read("/v1/responses", stream)
	_, evs := responsesEvents(t, body)
	var done *responses.Item
	var parts []int
	for _, e := range evs {
		if e.Type == responses.EventItemDone && e.Item.Type == "reasoning" {
			done = e.Item
		}
		if e.Type == responses.EventSummaryPartAdded {
			parts = append(parts, *e.SummaryIndex)
		}
	}
	if done == nil || done.EncryptedContent == nil || *done.EncryptedContent != "gAAAAenc" || len(done.Summary) != 2 ||
		*done.Summary[0].Text != "First." || *done.Summary[1].Text != "Second." || len(parts) != 2 || parts[1] != 1 {
		t.Errorf("reasoning item %+v, summary parts %v\n%s", done, parts, body)
	}
	last := evs[len(evs)-1]
	if last.Type != responses.EventIncomplete || last.Response.IncompleteDetails.Reason != "content_filter" {
		t.Errorf("terminal %s", lastData(body))
	}
}

// In-stream failures are response.failed and end the stream; a death or
// a reply with no finish ends it with no terminal event.
func TestResponsesStreamErrorsAndDeath(t *testing.T) {
	h := start(t, `
replies:
  - chunks: [{text: a}, {stream_error: {type: server_error, message: The server had an error}}, {text: never}]
  - chunks: [{error: boom}]
  - chunks: [{text: a}, {died: reset}, {text: never}]
  - chunks: [{text: a}]
`)
	_, body := h.read("/v1/responses", stream)
	eq(t, "stream_error", lastData(body), "event: response.failed\n"+
		`data: {"type":"response.failed","sequence_number":5,"response":{"id":"resp_fake_1","object":"response","created_at":1767225600,"status":"failed",`+
		`"error":{"code":"server_error","message":"The server had an error"},"model":"m1","output":[]}}`)
	if strings.Contains(body, "never") || strings.Contains(body, "output_text.done") {
		t.Errorf("the stream went on after its error: %s", body)
	}
	_, body = h.read("/v1/responses", stream)
	eq(t, "error", lastData(body), "event: response.failed\n"+
		`data: {"type":"response.failed","sequence_number":2,"response":{"id":"resp_fake_2","object":"response","created_at":1767225600,"status":"failed",`+
		`"error":{"code":null,"message":"boom"},"model":"m1","output":[]}}`)
	for _, n := range []string{"3", "4"} {
		_, body = h.read("/v1/responses", stream)
		eq(t, "no terminal event", lastData(body), "event: response.output_text.delta\n"+
			`data: {"type":"response.output_text.delta","sequence_number":4,"output_index":0,"item_id":"msg_fake_`+n+`_0","content_index":0,"delta":"a","logprobs":[]}`)
	}
}

// HTTP faults on this wire: OpenAI's error bodies, the scripted headers,
// a refused connection, a reset after some bytes.
func TestResponsesHTTPFaults(t *testing.T) {
	h := start(t, `
replies:
  - {status: 429, headers: {Retry-After: "2"}}
  - {status: 429, code: insufficient_quota, message: You exceeded your current quota.}
  - {status: 500}
  - {refuse: true}
  - {reset_after_bytes: 300, text: "Hello, world"}
`)
	resp, body := h.read("/v1/responses", stream)
	eq(t, "429 body", body, `{"error":{"message":"Too Many Requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)
	if d, ok := provider.ParseRetryAfter(resp.Header, time.Now()); resp.StatusCode != 429 || !ok || d != 2*time.Second {
		t.Errorf("429: status %d, Retry-After %s %v", resp.StatusCode, d, ok)
	}
	resp, body = h.read("/v1/responses", stream)
	eq(t, "quota body", body, `{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`)
	if resp.StatusCode != 429 {
		t.Errorf("quota: status %d", resp.StatusCode)
	}
	resp, body = h.read("/responses", stream)
	eq(t, "500 body", body, `{"error":{"message":"Internal Server Error","type":"server_error","param":null,"code":null}}`)
	if resp.StatusCode != 500 {
		t.Errorf("500: status %d", resp.StatusCode)
	}
	if resp, err := h.post(context.Background(), "/v1/responses", stream); err == nil {
		resp.Body.Close()
		t.Errorf("refuse: got a response %d", resp.StatusCode)
	}
	resp, err := h.post(context.Background(), "/v1/responses", stream)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil || len(got) != 300 || !strings.HasPrefix(string(got), "event: response.created\n") {
		t.Errorf("reset: read %d bytes, error %v", len(got), err)
	}
}

// A request without stream gets the whole response; one that fails
// in-stream gets the error status; one that dies or never finishes gets
// no response.
func TestResponsesComplete(t *testing.T) {
	h := start(t, `
replies:
  - {thinking: hmm, text: hi, tool_calls: [{name: read, args: {path: a}}], usage: {prompt_tokens: 7, completion_tokens: 2}}
  - {text: cut, finish: length}
  - chunks: [{text: a}, {stream_error: {type: rate_limit_exceeded, message: slow}}]
  - chunks: [{text: a}, {died: x}]
  - chunks: [{text: a}]
`)
	resp, body := h.read("/v1/responses", `{"model":"gpt"}`)
	eq(t, "content type", resp.Header.Get("Content-Type"), "application/json")
	eq(t, "whole", body, `{"id":"resp_fake_1","object":"response","created_at":1767225600,"status":"completed","model":"gpt","output":[`+
		`{"id":"rs_fake_1_0","type":"reasoning","summary":[{"type":"summary_text","text":"hmm"}]},`+
		`{"id":"msg_fake_1_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"hi","annotations":[]}]},`+
		`{"id":"fc_fake_1_2","type":"function_call","status":"completed","call_id":"call_1_1","name":"read","arguments":"{\"path\":\"a\"}"}],`+
		`"usage":{"input_tokens":7,"output_tokens":2,"total_tokens":9}}`)
	_, body = h.read("/v1/responses", `{"model":"gpt"}`)
	if !strings.Contains(body, `"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}`) {
		t.Errorf("incomplete: %s", body)
	}
	resp, body = h.read("/v1/responses", `{}`)
	if resp.StatusCode != 429 || body != `{"error":{"message":"slow","type":"rate_limit_exceeded","param":null,"code":"rate_limit_exceeded"}}` {
		t.Errorf("stream_error: %d %s", resp.StatusCode, body)
	}
	for _, what := range []string{"died", "no finish"} {
		if resp, err := h.post(context.Background(), "/v1/responses", `{}`); err == nil {
			resp.Body.Close()
			t.Errorf("%s: got a response %d", what, resp.StatusCode)
		}
	}
}

// Our Responses client, pointed at the fake, gets back what each reply
// scripted, said the way this wire says it: a finish is completed or the
// incomplete reason, an incomplete reply has no calls to run, a failure
// is the typed error the retry policy decides on.
func TestResponsesThroughTheClient(t *testing.T) {
	two, three := 2, 3
	call := func(id, name, args string) provider.Part {
		return provider.ToolCallPart{Call: provider.ToolCall{ID: id, Name: name, Args: json.RawMessage(args)}}
	}
	tests := []struct {
		name string
		yaml string
		want []provider.Part
		// err, for a reply that fails: what its Error must match.
		err func(error) bool
	}{
		{
			name: "shorthand with reasoning, calls and usage",
			yaml: `{thinking: hmm, text: hi, tool_calls: [{name: read, args: {path: a.txt}}, {id: c9, name: u}], usage: {prompt_tokens: 10, completion_tokens: 5, cached_tokens: 2, reasoning_tokens: 3}}`,
			want: []provider.Part{provider.ThinkingDelta{Text: "hmm"}, provider.TextDelta{Text: "hi"},
				call("call_1_1", "read", `{"path":"a.txt"}`), call("c9", "u", `{}`),
				provider.Usage{PromptTokens: 10, CompletionTokens: 5, CachedTokens: &two, ReasoningTokens: &three},
				provider.Finish{Reason: "completed"}},
		},
		{
			name: "summary parts and a signature",
			yaml: `{chunks: [{thinking: a}, {thinking: "\n\n"}, {thinking: b}, {signature: enc}, {text: x}, {finish: stop}]}`,
			want: []provider.Part{provider.ThinkingDelta{Text: "a"}, provider.ThinkingDelta{Text: "\n\n"}, provider.ThinkingDelta{Text: "b"},
				provider.ThinkingDelta{Signature: "enc"}, provider.TextDelta{Text: "x"}, provider.Finish{Reason: "completed"}},
		},
		{
			name: "incomplete: no calls to run",
			yaml: `{chunks: [{text: cut}, {tool_call: {name: run}}, {finish: length}, {usage: {prompt_tokens: 5, completion_tokens: 5}}]}`,
			want: []provider.Part{provider.TextDelta{Text: "cut"}, provider.Usage{PromptTokens: 5, CompletionTokens: 5},
				provider.Finish{Reason: "max_output_tokens"}},
		},
		{
			name: "in-stream failure",
			yaml: `{chunks: [{text: a}, {stream_error: {type: server_error, message: boom}}]}`,
			want: []provider.Part{provider.TextDelta{Text: "a"}},
			err: func(err error) bool {
				var se *provider.StreamError
				return errors.As(err, &se) && se.Type == "server_error" && se.Message == "boom"
			},
		},
		{
			name: "truncated",
			yaml: `{chunks: [{text: a}, {died: cut}]}`,
			want: []provider.Part{provider.TextDelta{Text: "a"}},
			err:  func(err error) bool { return errors.Is(err, provider.ErrIncomplete) },
		},
		{
			name: "429 with Retry-After",
			yaml: `{status: 429, headers: {Retry-After: "7"}}`,
			err: func(err error) bool {
				var he *provider.HTTPError
				return errors.As(err, &he) && he.Status == 429 && he.HasRetryAfter && he.RetryAfter == 7*time.Second && he.Code == "rate_limit_exceeded"
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, "replies:\n  - "+tt.yaml+"\n")
			c, err := responses.New(responses.Config{APIKey: "sk-test", BaseURL: h.base + "/v1", Model: "m",
				HTTP: &httpx.Client{HTTP: h.client, Clock: h.clock}})
			if err != nil {
				t.Fatal(err)
			}
			var got []provider.Part
			var failure error
			for p := range c.Stream(context.Background(), provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}}) {
				if e, ok := p.(provider.Error); ok {
					failure = e.Err
					continue
				}
				got = append(got, p)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parts\n got %#v\nwant %#v", got, tt.want)
			}
			switch {
			case tt.err == nil && failure != nil:
				t.Errorf("failed: %v", failure)
			case tt.err != nil && (failure == nil || !tt.err(failure)):
				t.Errorf("failure %#v does not match", failure)
			}
			if reqs := h.srv.Requests(); len(reqs) != 1 || reqs[0].Wire != responses.WireName || reqs[0].Path != "/v1/responses" {
				t.Errorf("requests %+v", reqs)
			}
		})
	}
}
