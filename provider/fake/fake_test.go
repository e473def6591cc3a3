package fake

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/anthropic"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/openai"
	"github.com/openmax/openmax/provider/script"
	"github.com/openmax/openmax/provider/sse"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type harness struct {
	t      *testing.T
	srv    *Server
	base   string
	clock  *clock.Fake
	client *http.Client
	done   chan struct{} // a handler returned
}

// start serves yaml on loopback with a fake clock.
func start(t *testing.T, yaml string) *harness {
	t.Helper()
	sc, err := script.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, clock: clock.NewFake(epoch), done: make(chan struct{}, 64)}
	h.srv = New(sc, Options{Clock: h.clock})
	h.srv.afterHandle = func() { h.done <- struct{}{} }
	h.base, err = h.srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h.base, "http://127.0.0.1:") || strings.Count(h.base, "/") != 2 {
		t.Fatalf("base URL %q", h.base)
	}
	tr := &http.Transport{}
	h.client = &http.Client{Transport: tr}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		if err := h.srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return h
}

func (h *harness) post(ctx context.Context, path, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.base+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return h.client.Do(req)
}

// read posts and reads the whole response body, which must end cleanly.
func (h *harness) read(path, body string) (*http.Response, string) {
	h.t.Helper()
	resp, err := h.post(context.Background(), path, body)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("%s: reading the body: %v (got %q)", path, err, b)
	}
	return resp, string(b)
}

// waitHandled waits for a handler to return.
func (h *harness) waitHandled() {
	h.t.Helper()
	select {
	case <-h.done:
	case <-time.After(10 * time.Second):
		h.t.Fatal("the handler did not return")
	}
}

const stream = `{"model":"m1","stream":true}`

func eq(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s:\n got %s\nwant %s", what, got, want)
	}
}

// checkSSE parses body with the SSE reader and returns the event types.
func checkSSE(t *testing.T, body string) []string {
	t.Helper()
	r := sse.NewReader(strings.NewReader(body))
	var types []string
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return types
		}
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.Type)
	}
}

const tooly = `
  - thinking: hmm
    text: hi
    tool_calls: [{name: read, args: {path: a.txt}}, {id: c9, name: u, args_json: '{"bad'}]
    usage: {prompt_tokens: 10, completion_tokens: 3, cached_tokens: 4}
`

func TestOpenAIStream(t *testing.T) {
	h := start(t, `replies:`+tooly+`
  - chunks:
      - text: Hel
      - text: lo
      - finish: length
      - usage: {prompt_tokens: 5, completion_tokens: 2}
  - {text: x, finish: end_turn}
`)
	resp, body := h.read("/v1/chat/completions", stream)
	eq(t, "content type", resp.Header.Get("Content-Type"), "text/event-stream; charset=utf-8")
	eq(t, "date", resp.Header.Get("Date"), "Thu, 01 Jan 2026 00:00:00 GMT")
	const head = `data: {"id":"chatcmpl-fake-1","object":"chat.completion.chunk","created":1767225600,"model":"m1","choices":`
	eq(t, "reply 1", body, ""+
		head+`[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n"+
		head+`[{"index":0,"delta":{"reasoning_content":"hmm"},"finish_reason":null}]}`+"\n\n"+
		head+`[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`+"\n\n"+
		head+`[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1_1","type":"function","function":{"name":"read","arguments":""}}]},"finish_reason":null}]}`+"\n\n"+
		head+`[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":\"a.txt\"}"}}]},"finish_reason":null}]}`+"\n\n"+
		head+`[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c9","type":"function","function":{"name":"u","arguments":""}}]},"finish_reason":null}]}`+"\n\n"+
		head+`[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"bad"}}]},"finish_reason":null}]}`+"\n\n"+
		head+`[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`+"\n\n"+
		head+`[],"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13,"prompt_tokens_details":{"cached_tokens":4}}}`+"\n\n"+
		"data: [DONE]\n\n")
	if n := len(checkSSE(t, body)); n != 10 {
		t.Errorf("%d events", n)
	}

	// Usage scripted after the finish still comes after it; an explicit
	// finish goes out verbatim.
	_, body = h.read("/chat/completions", `{"model":"m2","stream":true,"stream_options":{"include_usage":true}}`)
	const head2 = `data: {"id":"chatcmpl-fake-2","object":"chat.completion.chunk","created":1767225600,"model":"m2","choices":`
	eq(t, "reply 2", body, ""+
		head2+`[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n"+
		head2+`[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}`+"\n\n"+
		head2+`[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}`+"\n\n"+
		head2+`[{"index":0,"delta":{},"finish_reason":"length"}]}`+"\n\n"+
		head2+`[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`+"\n\n"+
		"data: [DONE]\n\n")

	// No usage scripted: no usage chunk, whatever the request asked.
	_, body = h.read("/v1/chat/completions", `{"stream":true,"stream_options":{"include_usage":true}}`)
	const head3 = `data: {"id":"chatcmpl-fake-3","object":"chat.completion.chunk","created":1767225600,"model":"fake-model","choices":`
	eq(t, "reply 3", body, ""+
		head3+`[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n"+
		head3+`[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}`+"\n\n"+
		head3+`[{"index":0,"delta":{},"finish_reason":"end_turn"}]}`+"\n\n"+
		"data: [DONE]\n\n")
}

func TestAnthropicStream(t *testing.T) {
	h := start(t, `replies:`+tooly+`
  - chunks:
      - thinking: "a "
      - thinking: b
      - signature: sig-1
      - text: Hel
      - text: lo
      - finish: stop
  - text: plain
`)
	resp, body := h.read("/v1/messages", stream)
	eq(t, "content type", resp.Header.Get("Content-Type"), "text/event-stream; charset=utf-8")
	eq(t, "reply 1", body, ""+
		"event: message_start\n"+`data: {"type":"message_start","message":{"id":"msg_fake_1","type":"message","role":"assistant","model":"m1","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":6,"cache_read_input_tokens":4,"output_tokens":0}}}`+"\n\n"+
		"event: content_block_start\n"+`data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`+"\n\n"+
		"event: content_block_delta\n"+`data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}`+"\n\n"+
		"event: content_block_stop\n"+`data: {"type":"content_block_stop","index":0}`+"\n\n"+
		"event: content_block_start\n"+`data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`+"\n\n"+
		"event: content_block_delta\n"+`data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"hi"}}`+"\n\n"+
		"event: content_block_stop\n"+`data: {"type":"content_block_stop","index":1}`+"\n\n"+
		"event: content_block_start\n"+`data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"call_1_1","name":"read","input":{}}}`+"\n\n"+
		"event: content_block_delta\n"+`data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"path\":\"a.txt\"}"}}`+"\n\n"+
		"event: content_block_stop\n"+`data: {"type":"content_block_stop","index":2}`+"\n\n"+
		"event: content_block_start\n"+`data: {"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"c9","name":"u","input":{}}}`+"\n\n"+
		"event: content_block_delta\n"+`data: {"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"bad"}}`+"\n\n"+
		"event: content_block_stop\n"+`data: {"type":"content_block_stop","index":3}`+"\n\n"+
		"event: message_delta\n"+`data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":6,"cache_read_input_tokens":4,"output_tokens":3}}`+"\n\n"+
		"event: message_stop\n"+`data: {"type":"message_stop"}`+"\n\n")
	types := checkSSE(t, body)
	if len(types) != 15 || types[0] != "message_start" || types[14] != "message_stop" {
		t.Errorf("event types %v", types)
	}

	// Thinking deltas share a block that the signature closes; text
	// deltas share one; a named finish goes out verbatim.
	_, body = h.read("/v1/messages", `{"model":"m2","stream":true}`)
	eq(t, "reply 2", body, ""+
		"event: message_start\n"+`data: {"type":"message_start","message":{"id":"msg_fake_2","type":"message","role":"assistant","model":"m2","content":[],"stop_reason":null,"stop_sequence":null}}`+"\n\n"+
		"event: content_block_start\n"+`data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`+"\n\n"+
		"event: content_block_delta\n"+`data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"a "}}`+"\n\n"+
		"event: content_block_delta\n"+`data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"b"}}`+"\n\n"+
		"event: content_block_delta\n"+`data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig-1"}}`+"\n\n"+
		"event: content_block_stop\n"+`data: {"type":"content_block_stop","index":0}`+"\n\n"+
		"event: content_block_start\n"+`data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`+"\n\n"+
		"event: content_block_delta\n"+`data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hel"}}`+"\n\n"+
		"event: content_block_delta\n"+`data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"lo"}}`+"\n\n"+
		"event: content_block_stop\n"+`data: {"type":"content_block_stop","index":1}`+"\n\n"+
		"event: message_delta\n"+`data: {"type":"message_delta","delta":{"stop_reason":"stop","stop_sequence":null}}`+"\n\n"+
		"event: message_stop\n"+`data: {"type":"message_stop"}`+"\n\n")

	// The implied "stop" is end_turn on this wire.
	_, body = h.read("/v1/messages", stream)
	if !strings.Contains(body, `"delta":{"stop_reason":"end_turn","stop_sequence":null}`) {
		t.Errorf("reply 3: %s", body)
	}
}

func TestStreamErrorsAndDeath(t *testing.T) {
	h := start(t, `
replies:
  - chunks: [{text: a}, {stream_error: {type: overloaded_error, message: Overloaded}}, {text: never}]
  - chunks: [{text: a}, {stream_error: {type: overloaded_error, message: Overloaded}}, {text: never}]
  - chunks: [{error: boom}]
  - chunks: [{error: boom}]
  - chunks: [{text: a}, {died: reset}, {text: never}]
  - chunks: [{text: a}, {died: reset}, {text: never}]
  - chunks: [{text: a}]
  - chunks: [{text: a}]
`)
	last := func(body string) string {
		parts := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
		return parts[len(parts)-1]
	}
	_, body := h.read("/v1/chat/completions", stream)
	eq(t, "openai stream_error", last(body), `data: {"error":{"message":"Overloaded","type":"overloaded_error","param":null,"code":"overloaded_error"}}`)
	if strings.Contains(body, "never") || strings.Contains(body, "[DONE]") {
		t.Errorf("the stream went on after its error: %s", body)
	}
	_, body = h.read("/v1/messages", stream)
	eq(t, "anthropic stream_error", last(body), "event: error\n"+`data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	if strings.Contains(body, "never") || strings.Contains(body, "message_stop") || strings.Contains(body, "content_block_stop") {
		t.Errorf("the stream went on after its error: %s", body)
	}
	_, body = h.read("/v1/chat/completions", stream)
	eq(t, "openai error", last(body), `data: {"error":{"message":"boom","type":"","param":null,"code":null}}`)
	_, body = h.read("/v1/messages", stream)
	eq(t, "anthropic error", last(body), "event: error\n"+`data: {"type":"error","error":{"type":"","message":"boom"}}`)

	// died and a reply without a finish: the body ends cleanly right after
	// the last chunk, with no terminator.
	for i, path := range []string{"/v1/chat/completions", "/v1/messages", "/v1/chat/completions", "/v1/messages"} {
		_, body = h.read(path, stream)
		if path == "/v1/messages" {
			eq(t, "anthropic died", last(body), "event: content_block_delta\n"+`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}`)
		} else {
			eq(t, "openai died", last(body), fmtChunk(5+i, `{"content":"a"}`))
		}
	}
}

func fmtChunk(n int, delta string) string {
	return `data: {"id":"chatcmpl-fake-` + strconv.Itoa(n) + `","object":"chat.completion.chunk","created":1767225600,"model":"m1","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}`
}

func TestHTTPErrors(t *testing.T) {
	h := start(t, `
replies:
  - {status: 429, headers: {Retry-After: "2"}}
  - {status: 429, headers: {Retry-After: "Thu, 01 Jan 2026 00:00:30 GMT"}}
  - {status: 429, headers: {retry-after-ms: "1500", Retry-After: "2"}}
  - {status: 429, code: insufficient_quota, message: You exceeded your current quota.}
  - {status: 429, code: insufficient_quota, message: You exceeded your current quota.}
  - {status: 529}
  - {status: 529}
  - {status: 503, headers: {Content-Type: text/plain}, body: "upstream connect error\n"}
`)
	type want struct {
		path, body, contentType string
		status                  int
		header                  map[string]string
		retryAfter              time.Duration
		hasRetryAfter           bool
		code                    string
	}
	wants := []want{
		{path: "/v1/chat/completions", status: 429, header: map[string]string{"Retry-After": "2"}, retryAfter: 2 * time.Second, hasRetryAfter: true,
			body: `{"error":{"message":"Too Many Requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}`},
		{path: "/v1/messages", status: 429, header: map[string]string{"Retry-After": "Thu, 01 Jan 2026 00:00:30 GMT"}, retryAfter: 30 * time.Second, hasRetryAfter: true,
			body: `{"type":"error","error":{"type":"rate_limit_error","message":"Too Many Requests"}}`},
		{path: "/v1/chat/completions", status: 429, header: map[string]string{"Retry-After-Ms": "1500", "Retry-After": "2"}, retryAfter: 1500 * time.Millisecond, hasRetryAfter: true,
			body: `{"error":{"message":"Too Many Requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}`},
		{path: "/v1/chat/completions", status: 429, code: "insufficient_quota",
			body: `{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`},
		{path: "/v1/messages", status: 429, code: "insufficient_quota",
			body: `{"type":"error","error":{"type":"insufficient_quota","message":"You exceeded your current quota."}}`},
		{path: "/v1/messages", status: 529,
			body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
		{path: "/v1/chat/completions", status: 529,
			body: `{"error":{"message":"Overloaded","type":"server_error","param":null,"code":null}}`},
		{path: "/v1/messages", status: 503, contentType: "text/plain", body: "upstream connect error\n"},
	}
	for i, w := range wants {
		resp, body := h.read(w.path, stream)
		if resp.StatusCode != w.status {
			t.Errorf("reply %d: status %d", i+1, resp.StatusCode)
		}
		eq(t, "body", body, w.body)
		if w.contentType == "" {
			w.contentType = "application/json"
		}
		eq(t, "content type", resp.Header.Get("Content-Type"), w.contentType)
		for k, v := range w.header {
			eq(t, k, resp.Header.Get(k), v)
		}
		d, ok := provider.ParseRetryAfter(resp.Header, time.Now()) // the fake's Date header wins over now
		if d != w.retryAfter || ok != w.hasRetryAfter {
			t.Errorf("reply %d: Retry-After %s %v", i+1, d, ok)
		}
	}

	// The headers go out with the names the script gave.
	raw := rawResponse(t, h, "/v1/chat/completions")
	if !strings.Contains(raw, "\r\nretry-after-ms: 1500\r\n") {
		t.Errorf("raw response:\n%s", raw)
	}
}

// rawResponse reads a response off a bare connection, headers verbatim.
func rawResponse(t *testing.T, h *harness, path string) string {
	t.Helper()
	sc, _ := script.Parse([]byte(`replies: [{status: 429, headers: {retry-after-ms: "1500"}}]`))
	s := New(sc, Options{Clock: h.clock})
	base, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	conn, err := (&net.Dialer{}).Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "POST "+path+" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
	b, _ := io.ReadAll(conn)
	return string(b)
}

// The in-process provider reads an HTTP error reply the way a vendor client
// reads the fake's response.
func TestHTTPErrorsMatchInProcess(t *testing.T) {
	yaml := `
replies:
  - {status: 429, headers: {Retry-After: "Thu, 01 Jan 2026 00:00:30 GMT"}, code: rate_limit_error, message: slow down}
  - {status: 429, headers: {retry-after-ms: "1500"}, code: insufficient_quota, message: no money}
  - {status: 500, body: '{"error":{"message":"boom","type":"server_error","code":null}}'}
  - {status: 529, body: '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'}
`
	h := start(t, yaml)
	sc, _ := script.Parse([]byte(yaml))
	local := script.New(sc, h.clock)
	hc := &httpx.Client{HTTP: h.client, Clock: h.clock}
	for i, path := range []string{"/v1/chat/completions", "/v1/messages", "/v1/chat/completions", "/v1/messages"} {
		_, err := hc.Post(context.Background(), h.base+path, nil, []byte(stream))
		var wire *provider.HTTPError
		if !errors.As(err, &wire) {
			t.Fatalf("reply %d: %v", i+1, err)
		}
		var parts []provider.Part
		for p := range local.Stream(context.Background(), provider.Request{}) {
			parts = append(parts, p)
		}
		var in *provider.HTTPError
		if len(parts) != 1 || !errors.As(parts[0].(provider.Error).Err, &in) {
			t.Fatalf("reply %d in-process: %#v", i+1, parts)
		}
		if *in != *wire {
			t.Errorf("reply %d:\n in-process %#v\n over HTTP  %#v", i+1, *in, *wire)
		}
	}
}

func TestResetAfterBytes(t *testing.T) {
	chunks := `chunks: [{thinking: hmm}, {text: "Hello, "}, {text: world}, {finish: stop}]`
	h := start(t, `
replies:
  - `+chunks+`
  - {reset_after_bytes: 300, `+chunks+`}
  - {reset_after_bytes: 0, `+chunks+`}
  - `+chunks+`
  - {reset_after_bytes: 333, `+chunks+`}
  - {reset_after_bytes: 100000, text: short}
  - {text: abc}
  - {reset_after_bytes: 20, text: abc}
`)
	check := func(path, body string, n int, full string) {
		t.Helper()
		resp, err := h.post(context.Background(), path, body)
		if err != nil {
			t.Fatalf("the response headers did not arrive: %v", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		got, err := io.ReadAll(resp.Body)
		if err == nil {
			t.Fatalf("%s: the body ended cleanly after %d bytes", path, len(got))
		}
		if len(got) != n || string(got) != full[:n] {
			t.Errorf("%s: read %d bytes before %v, want %d:\n got %q\nwant %q", path, len(got), err, n, got, full[:n])
		}
	}
	_, openai := h.read("/v1/chat/completions", stream)
	if len(openai) <= 300 {
		t.Fatalf("the reply is too short to cut: %d bytes", len(openai))
	}
	check("/v1/chat/completions", stream, 300, strings.ReplaceAll(openai, "chatcmpl-fake-1", "chatcmpl-fake-2"))
	check("/v1/chat/completions", stream, 0, "")
	_, anthropic := h.read("/v1/messages", stream)
	check("/v1/messages", stream, 333, strings.ReplaceAll(anthropic, "msg_fake_4", "msg_fake_5"))
	// A body shorter than the cut goes out whole, then the connection resets.
	resp, err := h.post(context.Background(), "/v1/messages", stream)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil || !strings.HasSuffix(string(got), "event: message_stop\n"+`data: {"type":"message_stop"}`+"\n\n") {
		t.Errorf("short body: %v %q", err, got)
	}
	// A complete (non-stream) response is cut the same way.
	_, whole := h.read("/v1/chat/completions", `{"model":"m1"}`)
	check("/v1/chat/completions", `{"model":"m1"}`, 20, whole)
}

func TestRefuse(t *testing.T) {
	h := start(t, "replies: [{refuse: true}, {text: after}]")
	resp, err := h.post(context.Background(), "/v1/chat/completions", stream)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("got a response: %d", resp.StatusCode)
	}
	_, body := h.read("/v1/messages", stream)
	if !strings.Contains(body, `"text":"after"`) {
		t.Errorf("the next reply: %s", body)
	}
	if reqs := h.srv.Requests(); len(reqs) != 2 || reqs[0].Wire != openai.WireName {
		t.Errorf("requests %+v", reqs)
	}
}

func TestDelayWaitsOnTheClock(t *testing.T) {
	h := start(t, "replies:\n  - chunks: [{text: a}, {delay: 1h}, {text: b}, {finish: stop}]\n")
	resp, err := h.post(context.Background(), "/v1/messages", stream)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := sse.NewReader(resp.Body)
	var texts []string
	next := func() sse.Event {
		t.Helper()
		ev, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(ev.Data, "text_delta") {
			texts = append(texts, ev.Data)
		}
		return ev
	}
	for len(texts) < 1 {
		next()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.clock.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Hour)
	for next().Type != "message_stop" {
	}
	if len(texts) != 2 || !strings.Contains(texts[1], `"text":"b"`) {
		t.Errorf("texts %v", texts)
	}
}

func TestStallEndsWhenTheClientGoesAway(t *testing.T) {
	h := start(t, "replies:\n  - chunks: [{text: a}, {stall: true}, {text: never}]\n  - chunks: [{stall: true}]\n  - chunks: [{stall: true}]\n")
	for _, path := range []string{"/v1/chat/completions", "/v1/messages", "/v1/responses"} {
		ctx, cancel := context.WithCancel(context.Background())
		resp, err := h.post(ctx, path, stream)
		if err != nil {
			t.Fatal(err)
		}
		r := sse.NewReader(resp.Body)
		if _, err := r.Next(); err != nil { // the opening event
			t.Fatal(err)
		}
		switch path {
		case "/v1/chat/completions":
			if ev, err := r.Next(); err != nil || !strings.Contains(ev.Data, `"content":"a"`) {
				t.Fatalf("%v %v", ev, err)
			}
		case "/v1/responses": // the opening is two events
			if ev, err := r.Next(); err != nil || ev.Type != "response.in_progress" {
				t.Fatalf("%v %v", ev, err)
			}
		}
		cancel()
		h.waitHandled()
		if _, err := r.Next(); err == nil {
			t.Error("an event after the stall")
		}
		resp.Body.Close()
	}
}

func TestCloseEndsStalls(t *testing.T) {
	h := start(t, "replies:\n  - chunks: [{stall: true}]\n  - chunks: [{delay: 1h}]\n  - chunks: [{text: a}, {stall: true}]\n")
	var bodies []io.ReadCloser
	for _, path := range []string{"/v1/chat/completions", "/v1/messages", "/v1/responses"} {
		resp, err := h.post(context.Background(), path, stream)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sse.NewReader(resp.Body).Next(); err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, resp.Body)
	}
	if err := h.srv.Close(); err != nil {
		t.Fatal(err)
	}
	for _, b := range bodies {
		if _, err := io.ReadAll(b); err == nil {
			t.Error("a stalled body ended cleanly on Close")
		}
		b.Close()
	}
	if _, err := h.post(context.Background(), "/v1/messages", stream); err == nil {
		t.Error("a request went through after Close")
	}
}

func TestRoutingRecordingAndOrder(t *testing.T) {
	h := start(t, `
replies:
  - {thinking: hmm, text: hi, usage: {prompt_tokens: 7, completion_tokens: 2}}
  - chunks:
      - thinking: hmm
      - signature: sig
      - text: hi
      - tool_call: {id: toolu_1, name: read, args: {path: a}}
      - tool_call: {id: toolu_2, name: bad, args_json: '{"x'}
      - usage: {prompt_tokens: 9, completion_tokens: 4, cached_tokens: 5}
      - finish: tool_use
  - tool_calls: [{name: t}]
`)
	// No wire claims /v1/models: a plain 404 saying so, in no vendor's
	// shape.
	resp, body := h.read("/v1/models", "")
	if resp.StatusCode != 404 || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" || strings.Contains(body, `"error"`) ||
		!strings.Contains(body, "POST /v1/models: "+codec.ErrUnknownWire.Error()) || !strings.Contains(body, "/v1/messages") {
		t.Errorf("unknown path: %d %s", resp.StatusCode, body)
	}
	// A path below Anthropic's endpoint is Anthropic's, though not served.
	resp, body = h.read("/v1/messages/count_tokens", "{}")
	if resp.StatusCode != 404 || !strings.Contains(body, `"type":"not_found_error"`) {
		t.Errorf("count_tokens: %d %s", resp.StatusCode, body)
	}
	resp, err := h.client.Get(h.base + "/v1/messages")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("GET /v1/messages: %d", resp.StatusCode)
	}
	resp, body = h.read("/v1/messages", "{not json")
	if resp.StatusCode != 400 || !strings.Contains(body, "not JSON") {
		t.Errorf("bad JSON: %d %s", resp.StatusCode, body)
	}

	req, _ := http.NewRequest(http.MethodPost, h.base+"/v1/chat/completions", strings.NewReader(`{"model":"gpt"}`))
	req.Header.Set("Authorization", "Bearer k1")
	resp, err = h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	eq(t, "openai completion", string(b), `{"id":"chatcmpl-fake-1","object":"chat.completion","created":1767225600,"model":"gpt","choices":[{"index":0,"message":{"role":"assistant","content":"hi","reasoning_content":"hmm"},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9}}`)
	eq(t, "content type", resp.Header.Get("Content-Type"), "application/json")

	_, body = h.read("/v1/messages", `{"model":"claude"}`)
	eq(t, "anthropic message", body, `{"id":"msg_fake_2","type":"message","role":"assistant","model":"claude","content":[`+
		`{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"text","text":"hi"},`+
		`{"type":"tool_use","id":"toolu_1","name":"read","input":{"path":"a"}},{"type":"tool_use","id":"toolu_2","name":"bad","input":"{\"x"}],`+
		`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":4,"cache_read_input_tokens":5,"output_tokens":4}}`)

	_, body = h.read("/v1/messages", `{"model":"claude"}`)
	eq(t, "implied tool_use", body, `{"id":"msg_fake_3","type":"message","role":"assistant","model":"claude","content":[{"type":"tool_use","id":"call_3_1","name":"t","input":{}}],"stop_reason":"tool_use","stop_sequence":null}`)

	resp, body = h.read("/v1/chat/completions", stream)
	if resp.StatusCode != 500 || !strings.Contains(body, "no reply left for request 4 (the scenario has 3)") || !strings.HasPrefix(body, `{"error":{`) {
		t.Errorf("exhausted: %d %s", resp.StatusCode, body)
	}
	resp, body = h.read("/v1/messages", stream)
	if resp.StatusCode != 500 || !strings.Contains(body, "no reply left for request 5") || !strings.HasPrefix(body, `{"type":"error"`) {
		t.Errorf("exhausted: %d %s", resp.StatusCode, body)
	}

	reqs := h.srv.Requests()
	type row struct{ method, path, wire, body string }
	want := []row{
		{"POST", "/v1/models", "", ""},
		{"POST", "/v1/messages/count_tokens", "", "{}"},
		{"GET", "/v1/messages", "", ""},
		{"POST", "/v1/messages", anthropic.WireName, "{not json"},
		{"POST", "/v1/chat/completions", openai.WireName, `{"model":"gpt"}`},
		{"POST", "/v1/messages", anthropic.WireName, `{"model":"claude"}`},
		{"POST", "/v1/messages", anthropic.WireName, `{"model":"claude"}`},
		{"POST", "/v1/chat/completions", openai.WireName, stream},
		{"POST", "/v1/messages", anthropic.WireName, stream},
	}
	if len(reqs) != len(want) {
		t.Fatalf("%d requests recorded: %+v", len(reqs), reqs)
	}
	for i, w := range want {
		r := reqs[i]
		if (row{r.Method, r.Path, r.Wire, string(r.Body)}) != w {
			t.Errorf("request %d: %s %s %s %q", i+1, r.Method, r.Path, r.Wire, r.Body)
		}
	}
	if reqs[4].Header.Get("Authorization") != "Bearer k1" {
		t.Errorf("headers not recorded: %v", reqs[4].Header)
	}
}

// A scenario file's non-stream deaths and in-stream failures.
func TestCompleteResponsesFail(t *testing.T) {
	h := start(t, `
replies:
  - chunks: [{text: a}, {died: x}]
  - chunks: [{text: a}, {stream_error: {type: overloaded_error, message: Overloaded}}]
  - chunks: [{text: a}]
`)
	if resp, err := h.post(context.Background(), "/v1/messages", `{}`); err == nil {
		resp.Body.Close()
		t.Errorf("died: got a response %d", resp.StatusCode)
	}
	resp, body := h.read("/v1/messages", `{}`)
	if resp.StatusCode != 529 || body != `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}` {
		t.Errorf("stream_error: %d %s", resp.StatusCode, body)
	}
	if resp, err := h.post(context.Background(), "/v1/chat/completions", `{}`); err == nil {
		resp.Body.Close()
		t.Errorf("no finish: got a response %d", resp.StatusCode)
	}
}

// TestUnknownWire: a request no registered wire claims (a path no wire
// serves, no vendor header) is a plain 404 that says so, in no vendor's
// error shape, and consumes no reply.
func TestUnknownWire(t *testing.T) {
	h := start(t, `
replies:
  - {text: hi}
`)
	resp, body := h.read("/v2/foo", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 404 || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" ||
		!strings.HasPrefix(body, "fake provider: no route for POST /v2/foo (POST /v2/foo: "+codec.ErrUnknownWire.Error()+" (known: ") ||
		strings.Contains(body, `"error"`) || strings.Contains(body, `"type"`) {
		t.Errorf("unknown wire: %d %q", resp.StatusCode, body)
	}
	resp, body = h.read("/v1/chat/completions", `{"model":"m"}`)
	if resp.StatusCode != 200 || !strings.Contains(body, `"content":"hi"`) {
		t.Errorf("the reply after it: %d %s", resp.StatusCode, body)
	}
}

// TestResetChunk: a reset chunk resets the connection where it stands,
// after the events of the chunks before it (counted in events, not
// bytes, so it stays in place when the text before it is edited), on a
// stream and on a whole response; the next reply is served as usual.
func TestResetChunk(t *testing.T) {
	h := start(t, `
replies:
  - chunks: [{text: "Hello, "}, {text: world}, {finish: stop}]
  - chunks: [{text: "Hello, "}, {reset: true}, {text: world}, {finish: stop}]
  - chunks: [{text: "Hello, "}, {reset: true}]
  - chunks: [{text: after}]
`)
	_, whole := h.read("/v1/chat/completions", stream)
	cut := whole[:strings.Index(whole, `"content":"world"`)]
	cut = cut[:strings.LastIndex(cut, "data: ")]
	resp, err := h.post(context.Background(), "/v1/chat/completions", stream)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !errors.Is(err, syscall.ECONNRESET) || string(got) != strings.ReplaceAll(cut, "chatcmpl-fake-1", "chatcmpl-fake-2") {
		t.Errorf("stream: read %q then %v; want the events before the reset, then ECONNRESET", got, err)
	}
	if resp, err := h.post(context.Background(), "/v1/chat/completions", `{"model":"m1"}`); err == nil {
		resp.Body.Close()
		t.Errorf("whole response: got %d, want the connection reset", resp.StatusCode)
	}
	if _, body := h.read("/v1/chat/completions", stream); !strings.Contains(body, `"content":"after"`) {
		t.Errorf("the next reply: %s", body)
	}
}
