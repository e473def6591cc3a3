package gemini_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/gemini"
	"github.com/openmax/openmax/provider/retry"
)

// testKey is the API key every test client uses; no error or part may
// ever contain it.
const testKey = "AIzaSy-test-SECRET-5c1e9a"

// guard bounds waits the tests themselves trigger; a passing run never
// waits it out.
const guard = 10 * time.Second

// captured is one request a test server took.
type captured struct {
	path, query string
	header      http.Header
	body        []byte
}

// server answers every request with reply (status 200 and an event
// stream unless reply sets its own), recording each request.
func server(t *testing.T, reply func(w http.ResponseWriter, n int)) (*httptest.Server, func() []captured) {
	t.Helper()
	var mu sync.Mutex
	var got []captured
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, captured{r.URL.Path, r.URL.RawQuery, r.Header.Clone(), b})
		n := len(got)
		mu.Unlock()
		reply(w, n)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []captured {
		mu.Lock()
		defer mu.Unlock()
		return append([]captured(nil), got...)
	}
}

func sseReply(body string) func(http.ResponseWriter, int) {
	return func(w http.ResponseWriter, _ int) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
	}
}

func newClient(t *testing.T, cfg gemini.Config) *gemini.Client {
	t.Helper()
	if cfg.APIKey == "" {
		cfg.APIKey = testKey
	}
	if cfg.Model == "" {
		cfg.Model = "gemini-2.5-flash"
	}
	c, err := gemini.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// collect runs one stream to its end, checking that no part shows the key.
func collect(t *testing.T, ctx context.Context, p provider.Provider, req provider.Request, onPart func(provider.Part)) []provider.Part {
	t.Helper()
	var parts []provider.Part
	for part := range p.Stream(ctx, req) {
		if s := fmt.Sprintf("%#v", part); strings.Contains(s, testKey) {
			t.Errorf("the key appears in a part: %s", s)
		}
		if e, ok := part.(provider.Error); ok && strings.Contains(e.Err.Error(), testKey) {
			t.Errorf("the key appears in an error: %v", e.Err)
		}
		parts = append(parts, part)
		if onPart != nil {
			onPart(part)
		}
	}
	return parts
}

var hello = provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}}

// chunk is one event as the API writes it, with its odd spacing.
func chunk(parts, finish, usage string) string {
	c := `data: {"candidates": [{"content": {"parts": [` + parts + `],"role": "model"}`
	if finish != "" {
		c += `,"finishReason": "` + finish + `"`
	}
	c += `,"index": 0}]`
	if usage != "" {
		c += `,"usageMetadata": ` + usage
	}
	return c + `,"modelVersion": "gemini-2.5-flash","responseId": "resp-9"}` + "\r\n\r\n"
}

// TestFinishReasons: every finish reason of the API completes the reply
// with that reason verbatim and the text that streamed; the calls of a
// reply run only after STOP and MAX_TOKENS, and after any other reason
// (a content stop, a failed function call, OTHER, one the API adds
// later) are shown unrun with the reason and the finish message.
func TestFinishReasons(t *testing.T) {
	runs := map[string]bool{"STOP": true, "MAX_TOKENS": true}
	for _, reason := range []string{
		"STOP", "MAX_TOKENS", "SAFETY", "RECITATION", "LANGUAGE", "OTHER", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
		"MALFORMED_FUNCTION_CALL", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_OTHER", "NO_IMAGE", "IMAGE_RECITATION",
		"UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS", "MISSING_THOUGHT_SIGNATURE", "MALFORMED_RESPONSE", "MODEL_ARMOR",
		"FINISH_REASON_UNSPECIFIED", "A_REASON_FROM_THE_FUTURE",
	} {
		t.Run(reason, func(t *testing.T) {
			body := chunk(`{"text": "Hi"}`, "", "") +
				chunk(`{"functionCall": {"name": "get_time","args": {"zone": "UTC"}}}`, "", "") +
				strings.Replace(chunk(`{"text": ""}`, reason, `{"promptTokenCount": 5,"candidatesTokenCount": 3,"totalTokenCount": 8}`),
					`"index": 0`, `"index": 0,"finishMessage": "said why"`, 1)
			srv, _ := server(t, sseReply(body))
			got := collect(t, context.Background(), newClient(t, gemini.Config{BaseURL: srv.URL}), hello, nil)
			call := provider.ToolCall{ID: "call_resp-9_1", Name: "get_time", Args: json.RawMessage(`{"zone": "UTC"}`)}
			var callPart provider.Part = provider.ToolCallPart{Call: call}
			if !runs[reason] {
				callPart = provider.UnrunCall{Call: call, Reason: "the reply finished " + reason + " (said why)"}
			}
			want := []provider.Part{provider.TextDelta{Text: "Hi"}, callPart,
				provider.Usage{PromptTokens: 5, CompletionTokens: 3}, provider.Finish{Reason: reason}}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("parts\n got %#v\nwant %#v", got, want)
			}
			if gemini.RunsCalls(reason) != runs[reason] {
				t.Errorf("RunsCalls(%q) = %v", reason, !runs[reason])
			}
		})
	}
}

// TestReplyShapes: what else a 200 reply can be. A blocked prompt is a
// failure the retry policy does not resend; a stream that ends without a
// finish reason is incomplete; usage counts come from the latest chunk
// that said each; a candidate other than the first is not read.
func TestReplyShapes(t *testing.T) {
	tests := []struct {
		name    string
		ctype   string
		body    string
		want    []provider.Part
		wantErr string // the error's text, when the reply fails
		retried bool
	}{
		{
			name:  "blocked prompt",
			ctype: "text/event-stream",
			body:  `data: {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT","blockReasonMessage": "no"},"usageMetadata": {"promptTokenCount": 9},"modelVersion": "m","responseId": "r"}` + "\r\n\r\n",
			want:  []provider.Part{provider.Error{Err: &provider.StreamError{Type: "PROHIBITED_CONTENT", Message: "the prompt was blocked: no"}}},
		},
		{
			name:    "no finish reason",
			ctype:   "text/event-stream",
			body:    chunk(`{"text": ""}`, "", `{"promptTokenCount": 5}`),
			wantErr: "stream ended before finishReason, after 1 events",
			retried: true,
		},
		{
			name:  "usage counts from the latest chunk that said each; a second candidate is not read",
			ctype: "text/event-stream",
			body: chunk(`{"text": "a"}`, "", `{"promptTokenCount": 55,"candidatesTokenCount": 4,"cachedContentTokenCount": 50}`) +
				strings.Replace(chunk(`{"text": "b"}`, "STOP", `{"promptTokenCount": 257,"candidatesTokenCount": 8,"thoughtsTokenCount": 2}`),
					`"candidates": [`, `"candidates": [{"content": {"parts": [{"text": "other"}]},"index": 1,"finishReason": "SAFETY"},`, 1),
			want: []provider.Part{provider.TextDelta{Text: "a"}, provider.TextDelta{Text: "b"},
				provider.Usage{PromptTokens: 257, CompletionTokens: 10, CachedTokens: intp(50), ReasoningTokens: intp(2)},
				provider.Finish{Reason: "STOP"}},
		},
		{
			name:  "an error event mid-stream",
			ctype: "text/event-stream",
			body:  chunk(`{"text": "a"}`, "", "") + `data: {"error": {"code": 503,"message": "The model is overloaded.","status": "UNAVAILABLE"}}` + "\r\n\r\n",
			want:  []provider.Part{provider.TextDelta{Text: "a"}, provider.Error{Err: &provider.StreamError{Type: "UNAVAILABLE", Message: "The model is overloaded."}}},
		},
		{
			name:  "a JSON array of chunks (no alt=sse)",
			ctype: "application/json",
			body:  `[{"candidates": [{"content": {"parts": [{"text": "x"}],"role": "model"},"index": 0}]},{"candidates": [{"content": {"parts": [{"text": "y"}],"role": "model"},"finishReason": "STOP","index": 0}]}]`,
			want:  []provider.Part{provider.TextDelta{Text: "x"}, provider.TextDelta{Text: "y"}, provider.Finish{Reason: "STOP"}},
		},
		{
			name:  "an error object with status 200, in an array",
			ctype: "application/json",
			body:  `[{"error": {"code": 500,"message": "boom","status": "INTERNAL"}}]`,
			want:  []provider.Part{provider.Error{Err: &provider.StreamError{Type: "INTERNAL", Message: "boom"}}},
			// A server fault before any text is resent.
			retried: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, requests := server(t, func(w http.ResponseWriter, _ int) {
				w.Header().Set("Content-Type", tt.ctype)
				io.WriteString(w, tt.body)
			})
			c := newClient(t, gemini.Config{BaseURL: srv.URL})
			got := collect(t, context.Background(), c, hello, nil)
			if tt.wantErr != "" {
				e, ok := got[len(got)-1].(provider.Error)
				if !ok || !errors.Is(e.Err, provider.ErrIncomplete) || !strings.Contains(e.Err.Error(), tt.wantErr) {
					t.Fatalf("parts %#v, want an incomplete stream saying %q", got, tt.wantErr)
				}
			} else if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("parts\n got %#v\nwant %#v", got, tt.want)
			}
			// Through the retry policy: resent or not.
			fake := clock.NewFake(time.Unix(0, 0))
			ctx, cancel := context.WithTimeout(context.Background(), guard)
			defer cancel()
			collect(t, ctx, retry.New(c, retry.Policy{MaxAttempts: 2}, fake), hello, func(p provider.Part) {
				if _, ok := p.(provider.Retry); ok {
					go func() {
						if fake.BlockUntil(ctx, 1) == nil {
							fake.Advance(time.Minute)
						}
					}()
				}
			})
			want := 2
			if tt.retried {
				want = 3
			}
			if n := len(requests()); n != want {
				t.Errorf("%d requests in all, want %d", n, want)
			}
		})
	}
}

// TestHTTPErrors: an error status is a provider.HTTPError with the
// google.rpc.Status's status name as its code, its message, and the wait
// its RetryInfo asks for, which the retry policy waits out like a
// Retry-After (a Retry-After header wins). 429, 500 and 503 are resent,
// 400 is not, nor a wait over the policy's limit. The key never shows.
func TestHTTPErrors(t *testing.T) {
	retryInfo := func(delay string) string {
		return `,"details": [{"@type": "type.googleapis.com/google.rpc.QuotaFailure","violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests"}]},` +
			`{"@type": "type.googleapis.com/google.rpc.RetryInfo","retryDelay": "` + delay + `"}]`
	}
	tests := []struct {
		name    string
		status  int
		header  map[string]string
		body    string
		want    provider.HTTPError
		retried bool
	}{
		{"429 with RetryInfo", 429, nil,
			`{"error": {"code": 429,"message": "You exceeded your current quota.","status": "RESOURCE_EXHAUSTED"` + retryInfo("7s") + `}}`,
			provider.HTTPError{Status: 429, Code: "RESOURCE_EXHAUSTED", Message: "You exceeded your current quota.", RetryAfter: 7 * time.Second, HasRetryAfter: true}, true},
		{"429, a fractional delay", 429, nil,
			`{"error": {"code": 429,"message": "slow","status": "RESOURCE_EXHAUSTED"` + retryInfo("1.25s") + `}}`,
			provider.HTTPError{Status: 429, Code: "RESOURCE_EXHAUSTED", Message: "slow", RetryAfter: 1250 * time.Millisecond, HasRetryAfter: true}, true},
		{"429, a Retry-After header wins", 429, map[string]string{"Retry-After": "3"},
			`{"error": {"code": 429,"message": "slow","status": "RESOURCE_EXHAUSTED"` + retryInfo("7s") + `}}`,
			provider.HTTPError{Status: 429, Code: "RESOURCE_EXHAUSTED", Message: "slow", RetryAfter: 3 * time.Second, HasRetryAfter: true}, true},
		{"429, a delay over the limit is not waited", 429, nil,
			`{"error": {"code": 429,"message": "tomorrow","status": "RESOURCE_EXHAUSTED"` + retryInfo("86400s") + `}}`,
			provider.HTTPError{Status: 429, Code: "RESOURCE_EXHAUSTED", Message: "tomorrow", RetryAfter: 24 * time.Hour, HasRetryAfter: true}, false},
		{"500 INTERNAL", 500, nil, string(gemini.HTTPErrorBody(500, "", "")),
			provider.HTTPError{Status: 500, Code: "INTERNAL", Message: gemini.StatusMessage(500)}, true},
		{"503 UNAVAILABLE", 503, nil, `{"error": {"code": 503,"message": "The model is overloaded. Please try again later.","status": "UNAVAILABLE"}}`,
			provider.HTTPError{Status: 503, Code: "UNAVAILABLE", Message: "The model is overloaded. Please try again later."}, true},
		{"400 INVALID_ARGUMENT", 400, nil,
			`{"error": {"code": 400,"message": "API key not valid: ` + testKey + `","status": "INVALID_ARGUMENT","details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo","reason": "API_KEY_INVALID"}]}}`,
			provider.HTTPError{Status: 400, Code: "INVALID_ARGUMENT", Message: "API key not valid: [redacted]"}, false},
		{"404 in an array", 404, nil, `[{"error": {"code": 404,"message": "models/nope is not found","status": "NOT_FOUND"}}]`,
			provider.HTTPError{Status: 404, Code: "NOT_FOUND", Message: "models/nope is not found"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, requests := server(t, func(w http.ResponseWriter, _ int) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.Header().Set("Content-Type", "application/json; charset=UTF-8")
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			})
			c := newClient(t, gemini.Config{BaseURL: srv.URL})
			got := collect(t, context.Background(), c, hello, nil)
			var he *provider.HTTPError
			if len(got) != 1 || !errors.As(got[0].(provider.Error).Err, &he) || *he != tt.want {
				t.Fatalf("parts %#v, want one HTTPError %+v", got, tt.want)
			}

			// Through the retry policy, on a fake clock: a resent request
			// goes out after the wait asked for and not before.
			fake := clock.NewFake(time.Unix(0, 0))
			ctx, cancel := context.WithTimeout(context.Background(), guard)
			defer cancel()
			retries := 0
			waited := make(chan struct{})
			collect(t, ctx, retry.New(c, retry.Policy{MaxAttempts: 2, Base: time.Millisecond, Max: time.Millisecond}, fake), hello, func(p provider.Part) {
				if _, ok := p.(provider.Retry); !ok {
					return
				}
				retries++
				go func() {
					defer close(waited)
					if fake.BlockUntil(ctx, 1) != nil {
						return
					}
					if !tt.want.HasRetryAfter {
						fake.Advance(time.Minute) // the backoff's jitter
						return
					}
					fake.Advance(tt.want.RetryAfter - time.Nanosecond)
					if fake.Waiters() != 1 {
						t.Errorf("the retry went out before the %s asked for", tt.want.RetryAfter)
					}
					fake.Advance(time.Nanosecond)
				}()
			})
			if tt.retried {
				<-waited
			}
			wantRetries, wantRequests := 0, 2
			if tt.retried {
				wantRetries, wantRequests = 1, 3
			}
			if retries != wantRetries || len(requests()) != wantRequests {
				t.Errorf("through provider/retry: %d retries, %d requests; want %d, %d", retries, len(requests()), wantRetries, wantRequests)
			}
		})
	}
}

// TestParseDelay reads google.protobuf.Duration values exactly.
func TestParseDelay(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"7s", 7 * time.Second, true},
		{"0.000007639s", 7639 * time.Nanosecond, true},
		{"1.5s", 1500 * time.Millisecond, true},
		{" 60s ", time.Minute, true},
		{"99999999999999999999s", provider.MaxWait, true},
		{"9223372036.854775808s", provider.MaxWait, true},
		{"7", 0, false},
		{"-1s", 0, false},
		{"1.0000000001s", 0, false},
		{".5s", 0, false},
		{"1e3s", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, ok := gemini.ParseDelay(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseDelay(%q) = %s, %v; want %s, %v", tt.in, got, ok, tt.want, tt.ok)
		}
		if ok && got != provider.MaxWait {
			if back, _ := gemini.ParseDelay(gemini.FormatDelay(got)); back != got {
				t.Errorf("FormatDelay(%s) = %q reads back as %s", got, gemini.FormatDelay(got), back)
			}
		}
	}
}

// TestRequest: the request body for a conversation with every kind of
// message, thought signatures back on the parts they came on, tool
// results merged into one user turn (responses first), the system
// instruction, the tools' JSON Schemas; the path, query and key header.
func TestRequest(t *testing.T) {
	req := provider.Request{
		Model:  "models/gemini-3-pro-preview",
		System: "Be brief & exact.",
		Messages: []provider.Message{
			{Role: provider.RoleUser, Text: "Weather in Florence <and> Rome?"},
			{Role: provider.RoleAssistant, Text: "Checking.",
				Thinking: []provider.Thinking{
					{Text: "**Plan**\n\nCall the tool.", Signature: "VEhPVUdIVA=="},
					{Text: "Both cities.", Signature: gemini.CallSignature("call_r_1", "Q0FMTA==")},
					{Signature: gemini.TextSignature("VEVYVA==")},
				},
				ToolCalls: []provider.ToolCall{
					{ID: "call_r_1", Name: "weather", Args: json.RawMessage(`{"location": "Florence, Italy"}`)},
					{ID: "call_r_2", Name: "weather", Args: json.RawMessage(`not json`)},
				}},
			{Role: provider.RoleTool, CallID: "call_r_1", Text: "40 C"},
			{Role: provider.RoleUser, Text: "And Rome?"},
			{Role: provider.RoleTool, CallID: "call_r_2", Text: "bad arguments", IsError: true},
			{Role: provider.RoleAssistant},
			{Role: provider.RoleUser, Text: "Thanks."},
		},
		Tools: []provider.ToolSpec{
			{Name: "weather", Description: "Weather by city", Schema: json.RawMessage(`{"type": "object", "properties": {"location": {"type": "string"}}, "additionalProperties": false}`)},
			{Name: "now"},
		},
	}
	want := `{"contents":[` +
		`{"role":"user","parts":[{"text":"Weather in Florence <and> Rome?"}]},` +
		`{"role":"model","parts":[{"text":"**Plan**\n\nCall the tool.","thought":true,"thoughtSignature":"VEhPVUdIVA=="},{"text":"Both cities.","thought":true},` +
		`{"text":"Checking.","thoughtSignature":"VEVYVA=="},` +
		`{"functionCall":{"id":"call_r_1","name":"weather","args":{"location":"Florence, Italy"}},"thoughtSignature":"Q0FMTA=="},` +
		`{"functionCall":{"id":"call_r_2","name":"weather","args":{}}}]},` +
		`{"role":"user","parts":[{"functionResponse":{"id":"call_r_1","name":"weather","response":{"output":"40 C"}}},` +
		`{"functionResponse":{"id":"call_r_2","name":"weather","response":{"error":"bad arguments"}}},{"text":"And Rome?"},{"text":"Thanks."}]}],` +
		`"systemInstruction":{"parts":[{"text":"Be brief & exact."}]},` +
		`"tools":[{"functionDeclarations":[{"name":"weather","description":"Weather by city","parametersJsonSchema":{"type":"object","properties":{"location":{"type":"string"}},"additionalProperties":false}},` +
		`{"name":"now","parametersJsonSchema":{"type":"object","properties":{}}}]}],` +
		`"generationConfig":{"thinkingConfig":{"includeThoughts":true}}}`
	srv, requests := server(t, sseReply(chunk(`{"text": "ok"}`, "STOP", "")))
	c := newClient(t, gemini.Config{BaseURL: srv.URL + "/"})
	got := collect(t, context.Background(), c, req, nil)
	if !reflect.DeepEqual(got, []provider.Part{provider.TextDelta{Text: "ok"}, provider.Finish{Reason: "STOP"}}) {
		t.Fatalf("parts %#v", got)
	}
	r := requests()[0]
	if string(r.body) != want {
		t.Errorf("body\n got %s\nwant %s", r.body, want)
	}
	if r.path != "/v1beta/models/gemini-3-pro-preview:streamGenerateContent" || r.query != "alt=sse" {
		t.Errorf("request to %s?%s", r.path, r.query)
	}
	if r.header.Get("X-Goog-Api-Key") != testKey || r.header.Get("Authorization") != "" {
		t.Errorf("headers %v", r.header)
	}
	if body, err := gemini.RequestBody(req); err != nil || string(body) != want {
		t.Errorf("RequestBody = %s, %v", body, err)
	}
}

// TestThoughtsRefused: a model that refuses the request for thought
// summaries gets the same request without it, and the client asks no
// more; a 400 about something else is the error it is.
func TestThoughtsRefused(t *testing.T) {
	srv, requests := server(t, func(w http.ResponseWriter, n int) {
		if n == 1 {
			w.WriteHeader(400)
			io.WriteString(w, `{"error": {"code": 400,"message": "Thinking is not supported by this model.","status": "INVALID_ARGUMENT"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, chunk(`{"text": "ok"}`, "STOP", ""))
	})
	c := newClient(t, gemini.Config{BaseURL: srv.URL, Model: "gemini-2.0-flash"})
	for range 2 {
		if got := collect(t, context.Background(), c, hello, nil); len(got) != 2 {
			t.Fatalf("parts %#v", got)
		}
	}
	var asked []bool
	for _, r := range requests() {
		asked = append(asked, strings.Contains(string(r.body), "includeThoughts"))
	}
	if !reflect.DeepEqual(asked, []bool{true, false, false}) {
		t.Errorf("requests asking for thoughts: %v, want [true false false]", asked)
	}
	srv2, requests2 := server(t, func(w http.ResponseWriter, _ int) {
		w.WriteHeader(400)
		io.WriteString(w, `{"error": {"code": 400,"message": "Invalid JSON payload.","status": "INVALID_ARGUMENT"}}`)
	})
	got := collect(t, context.Background(), newClient(t, gemini.Config{BaseURL: srv2.URL}), hello, nil)
	if len(got) != 1 || len(requests2()) != 1 {
		t.Fatalf("parts %#v after %d requests", got, len(requests2()))
	}
	if strings.Contains(string(requests2()[0].body), "includeThoughts") == false {
		t.Errorf("the first request did not ask for thoughts")
	}
	if c2 := newClient(t, gemini.Config{BaseURL: srv2.URL, NoThoughts: true}); true {
		collect(t, context.Background(), c2, hello, nil)
		if strings.Contains(string(requests2()[1].body), "generationConfig") {
			t.Errorf("NoThoughts still asked: %s", requests2()[1].body)
		}
	}
}

// TestWholeReplies: Config.Whole calls generateContent (no alt=sse) and
// reads the one JSON response Whole writes.
func TestWholeReplies(t *testing.T) {
	parts := []provider.Part{provider.ThinkingDelta{Text: "hm"}, provider.TextDelta{Text: "Hel"}, provider.TextDelta{Text: "lo"},
		provider.ToolCallPart{Call: provider.ToolCall{ID: "c1", Name: "f", Args: json.RawMessage(`{"a": 1}`)}},
		provider.Usage{PromptTokens: 3, CompletionTokens: 4}, provider.Finish{Reason: "STOP"}}
	body, ok := gemini.Whole("r", "m", parts)
	if !ok {
		t.Fatal("no body")
	}
	srv, requests := server(t, func(w http.ResponseWriter, _ int) {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.Write(body)
	})
	got := collect(t, context.Background(), newClient(t, gemini.Config{BaseURL: srv.URL, Whole: true}), hello, nil)
	want := []provider.Part{provider.ThinkingDelta{Text: "hm"}, provider.TextDelta{Text: "Hello"},
		provider.ToolCallPart{Call: provider.ToolCall{ID: "c1", Name: "f", Args: json.RawMessage(`{"a": 1}`)}},
		provider.Usage{PromptTokens: 3, CompletionTokens: 4}, provider.Finish{Reason: "STOP"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parts\n got %#v\nwant %#v", got, want)
	}
	if r := requests()[0]; r.path != "/v1beta/models/gemini-2.5-flash:generateContent" || r.query != "" {
		t.Errorf("request to %s?%s", r.path, r.query)
	}
}

// TestNew: defaults, Vertex's root and path, refusals, and printing
// without the key.
func TestNew(t *testing.T) {
	if _, err := gemini.New(gemini.Config{Model: "m"}); !errors.Is(err, provider.ErrMissingKey) {
		t.Errorf("no key: %v", err)
	}
	if _, err := gemini.New(gemini.Config{APIKey: testKey}); err == nil {
		t.Errorf("no model: no error")
	}
	if _, err := gemini.New(gemini.Config{APIKey: testKey, Model: "m", Project: "p"}); err == nil {
		t.Errorf("a project without a location: no error")
	}
	for _, tt := range []struct {
		cfg  gemini.Config
		want string
	}{
		{gemini.Config{APIKey: testKey, Model: "gemini-2.5-pro"}, "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"},
		{gemini.Config{APIKey: testKey, Model: "gemini-2.5-pro", Project: "my-proj", Location: "us-central1"},
			"https://us-central1-aiplatform.googleapis.com/v1/projects/my-proj/locations/us-central1/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"},
		{gemini.Config{APIKey: testKey, Model: "gemini-2.5-pro", Project: "my-proj", Location: "global", Whole: true},
			"https://aiplatform.googleapis.com/v1/projects/my-proj/locations/global/publishers/google/models/gemini-2.5-pro:generateContent"},
	} {
		c, err := gemini.New(tt.cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%#v", c), fmt.Sprintf("%+v", tt.cfg), fmt.Sprintf("%#v", tt.cfg)} {
			if strings.Contains(s, testKey) {
				t.Errorf("printing shows the key: %s", s)
			}
		}
		if !strings.Contains(fmt.Sprint(c), `"`+tt.want+`"`) {
			t.Errorf("%s does not go to %s", c, tt.want)
		}
	}
}

// TestParsePath reads the model and the method of both APIs' paths.
func TestParsePath(t *testing.T) {
	tests := []struct {
		path   string
		model  string
		stream bool
		ok     bool
	}{
		{"/v1beta/models/gemini-2.5-flash:streamGenerateContent", "gemini-2.5-flash", true, true},
		{"/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse", "gemini-3-pro-preview", true, true},
		{"/v1/models/gemini-2.0-flash:generateContent", "gemini-2.0-flash", false, true},
		{"/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-pro:streamGenerateContent", "gemini-2.5-pro", true, true},
		{"/root" + gemini.Path("a b", false), "a b", false, true},
		{"/v1beta/models/gemini-2.5-flash:countTokens", "", false, false},
		{"/v1beta/models/gemini-2.5-flash", "", false, false},
		{"/v1/chat/completions", "", false, false},
		{"/v1beta/models/:generateContent", "", false, false},
	}
	for _, tt := range tests {
		model, stream, ok := gemini.ParsePath(tt.path)
		if model != tt.model || stream != tt.stream || ok != tt.ok || gemini.IsPath(tt.path) != tt.ok {
			t.Errorf("ParsePath(%q) = %q, %v, %v; want %q, %v, %v", tt.path, model, stream, ok, tt.model, tt.stream, tt.ok)
		}
	}
}

func intp(n int) *int { return &n }
