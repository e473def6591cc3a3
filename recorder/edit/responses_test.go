package edit

import (
	"errors"
	"flag"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/openmax/openmax/internal/golden"
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/recorder/cassette"
)

var update = flag.Bool("update", false, "rewrite the golden timelines in testdata/show/")

// TestShowResponsesReal: the real OpenAI Responses API recordings (A8 to
// A11), imported, show as testdata/show/<name>.txt, and the timeline says
// what SOURCES.md lists for each.
func TestShowResponsesReal(t *testing.T) {
	tests := []struct {
		name string
		want []string
	}{
		{"A8", []string{
			"#0 at +0s: POST /v1/responses",
			`  request: 836 B, model gpt-4o-mini, stream, 2 input items, last user "Add and multiply the number 2 and 3", tools add, multiply`,
			"  chunk 2 at +0s, 302 B: tool add",
			`  chunk 3 at +0s, 254 B: args "{\"a\":2,\"b\":3}"`,
			`  tool call 0: add {"a":2,"b":3} (call_ZckkKeJQwcJPC27VXT61xFLf)`,
			`  tool call 1: multiply {"a":2,"b":3} (call_M9h2AZgoLEv6q5gkex1QMtm2)`,
			"  finish: completed",
			"  usage: 104 in (0 cached), 51 out (0 reasoning), 155 total",
			"  signal: response.completed",
			"#1 at +0s: POST /v1/responses",
			`  request: 1239 B, model gpt-4o-mini, stream, 6 input items, last function_call_output "6", tools add, multiply`,
			`  text: "The sum of 2 and 3 is **5**, and the product of 2 and 3 is **6**."`,
			"  finish: completed",
			"  usage: 150 in (0 cached), 28 out (0 reasoning), 178 total",
		}},
		{"A9", []string{
			`  request: 191 B, model o3-mini, stream, 1 input item, last user "How do I cross the street?"`,
			"  body: 194593 B in 676 chunks",
			`  chunk 4 at +0s, 264 B: summary "**Providing"`,
			// The encrypted content kept is the output_item.done one, not
			// the .added or the response.completed one.
			`  reasoning 0 (rs_68c42d1d0878819d8266007cd3d1402c08fbf9b1584184ff): encrypted content 440 B from output_item.done, "gAAAAABoxC0m_QWp…"`,
			"  finish: completed",
			"  usage: 13 in (0 cached), 1680 out (1408 reasoning), 1693 total",
			"  signal: response.completed",
		}},
		{"A10", []string{
			`  request: 140 B, model gpt-4o, stream, input "Give me a multi paragraph narrative on the life of a car"`,
			"  chunk 23 at +0s, 1138 B: incomplete max_output_tokens",
			`  text: "In the bustling city of Detroit, a sleek, metallic blue sedan rolled off the"`,
			"  finish: incomplete (max_output_tokens)",
			"  usage: 0 in (0 cached), 0 out (0 reasoning), 0 total",
			"  signal: response.incomplete",
		}},
		{"A11", []string{
			`  request: 136 B, model gpt-4o, stream, 1 input item, last user "What is the capital of France?"`,
			"  status: 400 Bad Request",
			"  error: invalid_request_error, code decimal_below_min_value: Invalid 'temperature': decimal below minimum value. Expected a value >= 0, but got -1 instead.",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := show(t, realResponses(t, tt.name))
			hasLines(t, out, tt.want)
			path := filepath.Join("testdata", "show", tt.name+".txt")
			if err := golden.File(path, "cassette show", []byte(out), *update); err != nil {
				t.Fatal(err)
			}
		})
	}
	// A9's four summary parts, each its own line, whole.
	out := show(t, realResponses(t, "A9"))
	for k, start := range []string{"**Providing street crossing instructions**", "**Explaining street crossing safety**",
		"**Sharing street crossing safety tips**", "**Providing safe crossing advice**"} {
		prefix := "  reasoning 0 summary " + string(rune('0'+k)) + `: "` + start
		if !strings.Contains(out, "\n"+prefix) {
			t.Errorf("no line starting %s", prefix)
		}
	}
	if strings.Contains(out, "  reasoning 0 summary 4") || strings.Contains(out, "  thinking:") {
		t.Errorf("A9 shows more than its four summary parts:\n%s", out)
	}
}

// responsesStream is one interaction streaming body (events of the
// Responses wire) from url.
func responsesStream(url, body string) *cassette.File {
	return &cassette.File{Version: cassette.FormatVersion, Interactions: []*cassette.Interaction{{
		Request:  vcr.Request{Method: "POST", URL: url},
		Response: vcr.Response{Code: 200, Headers: http.Header{"Content-Type": {"text/event-stream"}}, Body: body},
		Stream:   &cassette.Stream{Chunks: []cassette.Chunk{{Data: body}}},
	}}}
}

// TestShowResponsesEvents: Responses events are read in the responses
// package's shapes, whatever path the request went to as long as the body
// names its events response.*; one that does not decode is unparsed, and
// every terminal event and the error event is shown.
func TestShowResponsesEvents(t *testing.T) {
	ev := func(data string) string {
		typ := data[len(`{"type":"`):]
		typ = typ[:strings.IndexByte(typ, '"')]
		return "event: " + typ + "\ndata: " + data + "\n\n"
	}
	const created = `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[]}}`
	tests := []struct {
		name, url, body string
		want            []string
		not             []string
	}{
		{"by the body, under another path", "http://proxy/llm", ev(created) +
			ev(`{"type":"response.output_text.delta","output_index":0,"item_id":"m","delta":"Hi"}`) +
			ev(`{"type":"response.completed","response":{"id":"resp_1","status":"completed","usage":{"input_tokens":5,"input_tokens_details":{"cached_tokens":3},"output_tokens":2,"total_tokens":7}}}`),
			[]string{`  chunk 0 at +0s, 500 B: created, text "Hi", completed`, `  text: "Hi"`, "  finish: completed",
				"  usage: 5 in (3 cached), 2 out, 7 total", "  signal: response.completed"}, nil},
		{"reasoning: summary parts, the encrypted content of the done event", "http://x/v1/responses", ev(created) +
			ev(`{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[],"encrypted_content":"added"}}`) +
			ev(`{"type":"response.reasoning_summary_text.delta","output_index":0,"item_id":"rs_1","summary_index":0,"delta":"Think"}`) +
			ev(`{"type":"response.reasoning_summary_part.added","output_index":0,"item_id":"rs_1","summary_index":1}`) +
			ev(`{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","summary_index":1,"delta":"More"}`) +
			ev(`{"type":"response.output_item.done","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[],"encrypted_content":"done-token"}}`) +
			ev(`{"type":"response.output_item.added","output_index":1,"item":{"id":"rs_2","type":"reasoning","summary":[]}}`) +
			ev(`{"type":"response.output_item.done","output_index":1,"item":{"id":"rs_2","type":"reasoning","summary":[{"type":"summary_text","text":"Whole"}]}}`) +
			ev(`{"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[{"id":"rs_1","type":"reasoning","encrypted_content":"final-token"}]}}`),
			[]string{
				`  reasoning 0 (rs_1): encrypted content 10 B from output_item.done, "done-token"`,
				`  reasoning 0 summary 0: "Think"`,
				`  reasoning 0 summary 1: "More"`,
				"  reasoning 1 (rs_2): no encrypted content",
				`  reasoning 1 summary 0: "Whole"`,
			}, []string{"thinking:"}},
		{"the encrypted content of a terminal response when no item event had it", "http://x/v1/responses", ev(created) +
			ev(`{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning"}}`) +
			ev(`{"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[{"id":"rs_1","type":"reasoning","encrypted_content":"final"}]}}`),
			[]string{`  reasoning 0 (rs_1): encrypted content 5 B from completed, "final"`}, nil},
		{"a call whose arguments come only with its done events", "http://x/v1/responses", ev(created) +
			ev(`{"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"call_1","name":"read","arguments":""}}`) +
			ev(`{"type":"response.output_item.done","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"call_1","name":"read","arguments":"{\"p\":1}"}}`),
			[]string{`  tool call 0: read {"p":1} (call_1)`, "  signal: none (no completion signal)"}, []string{"finish:"}},
		{"deltas naming their item only by id, calls in output order", "http://x/v1/responses", ev(created) +
			ev(`{"type":"response.output_item.added","output_index":1,"item":{"id":"fc_1","type":"function_call","call_id":"call_1","name":"ls","arguments":""}}`) +
			ev(`{"type":"response.output_item.added","output_index":0,"item":{"id":"fc_0","type":"function_call","call_id":"call_0","name":"cat","arguments":""}}`) +
			ev(`{"type":"response.function_call_arguments.delta","item_id":"fc_0","delta":"{\"f\":"}`) +
			ev(`{"type":"response.function_call_arguments.delta","item_id":"fc_1","delta":"{}"}`) +
			ev(`{"type":"response.function_call_arguments.delta","item_id":"fc_0","delta":"1}"}`),
			[]string{`  tool call 0: cat {"f":1} (call_0)`, `  tool call 1: ls {} (call_1)`}, nil},
		{"incomplete", "http://x/v1/responses", ev(`{"type":"response.incomplete","response":{"id":"r","status":"incomplete","incomplete_details":{"reason":"content_filter"}}}`),
			[]string{`  chunk 0 at +0s, 158 B: incomplete content_filter`, "  finish: incomplete (content_filter)", "  signal: response.incomplete"}, nil},
		{"failed, with a code and without", "http://x/v1/responses",
			ev(`{"type":"response.failed","response":{"id":"r","status":"failed","error":{"code":"server_error","message":"boom"}}}`) +
				ev(`{"type":"response.failed","response":{"id":"r","status":"failed","error":{"code":null,"message":"quiet"}}}`),
			[]string{"  finish: failed", "  error event: server_error: boom", "  error event: quiet", "  signal: response.failed"}, nil},
		{"an error event", "http://x/v1/responses", ev(`{"type":"error","code":"rate_limit_exceeded","message":"slow down","param":null}`),
			[]string{`  chunk 0 at +0s, 101 B: error event "rate_limit_exceeded: slow down"`, "  error event: rate_limit_exceeded: slow down",
				"  signal: none (no completion signal)"}, nil},
		{"a refusal", "http://x/v1/responses", ev(`{"type":"response.refusal.delta","output_index":0,"delta":"No."}`),
			[]string{`  chunk 0 at +0s, 102 B: refusal "No."`, `  refusal: "No."`}, nil},
		{"an event that does not decode", "http://x/v1/responses", ev(`{"type":"response.output_text.delta","delta":5}`) +
			ev(`{"type":"response.output_text.delta","delta":"ok","sequence_number":"x"}`),
			[]string{`  chunk 0 at +0s, 203 B: unparsed response.output_text.delta, unparsed response.output_text.delta`, "  unparsed events: 2"},
			[]string{"text:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := show(t, responsesStream(tt.url, tt.body))
			hasLines(t, out, tt.want)
			for _, no := range tt.not {
				if strings.Contains(out, no) {
					t.Errorf("the output says %q:\n%s", no, out)
				}
			}
		})
	}
}

// TestShowResponsesDetection: which interactions are read as the
// Responses wire: a /responses path with or without a query; a body of
// response.* events; not a chat stream under an unknown path, nor a body
// no wire claims (that is no wire at all, not a guess).
func TestShowResponsesDetection(t *testing.T) {
	body := "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n"
	chat := "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n"
	tests := []struct {
		url, body, wire string
	}{
		{"https://api.openai.com/v1/responses", chat, "responses"},
		{"https://api.openai.com/v1/responses?stream=true", chat, "responses"},
		{"http://127.0.0.1:9/proxy", body, "responses"},
		{"http://127.0.0.1:9/proxy", "event:response.completed\r\ndata: {}\r\n\r\n", "responses"},
		{"http://127.0.0.1:9/proxy", chat, "openai"},
		{"http://127.0.0.1:9/proxy", "data: {\"type\":\"response.completed\"}\n\n", ""},
		{"https://api.openai.com/v1/chat/completions", body, "openai"},
		{"https://api.anthropic.com/v1/messages", body, "anthropic"},
	}
	for _, tt := range tests {
		it := responsesStream(tt.url, tt.body).Interactions[0]
		w, err := wireOf(it)
		got := ""
		if err == nil {
			got = w.Info().Name
		} else if !errors.Is(err, codec.ErrUnknownWire) {
			t.Errorf("%s: %v, want codec.ErrUnknownWire", tt.url, err)
		}
		if got != tt.wire {
			t.Errorf("%s with %.40q: wire %q, want %q", tt.url, tt.body, got, tt.wire)
		}
	}
}

// TestShowResponsesWhole: a whole (not streamed) response object is read
// in the responses package's shapes; an error body under a Responses path
// is read as OpenAI's error.
func TestShowResponsesWhole(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
	}{
		{"text, reasoning and a call", `{"id":"resp_1","object":"response","status":"completed","output":[` +
			`{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Hmm"}],"encrypted_content":"enc"},` +
			`{"id":"m","type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi","annotations":[]}]},` +
			`{"id":"fc","type":"function_call","call_id":"call_9","name":"ls","arguments":"{}"}],` +
			`"usage":{"input_tokens":1,"output_tokens":2,"output_tokens_details":{"reasoning_tokens":1},"total_tokens":3}}`,
			[]string{`  text: "Hi"`, `  reasoning 0 (rs_1): encrypted content 3 B from response, "enc"`, `  reasoning 0 summary 0: "Hmm"`,
				"  tool call 0: ls {} (call_9)", "  finish: completed", "  usage: 1 in, 2 out (1 reasoning), 3 total"}},
		{"an error body", `{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":"x"}}`,
			[]string{"  error: invalid_request_error, code x: bad"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &cassette.File{Version: cassette.FormatVersion, Interactions: []*cassette.Interaction{{
				Request:  vcr.Request{Method: "POST", URL: "https://api.openai.com/v1/responses", Body: `{"model":"o3","input":[{"type":"function_call_output","call_id":"c","output":"done"}],"tools":[{"type":"web_search"}]}`},
				Response: vcr.Response{Code: 200, Headers: http.Header{"Content-Type": {"application/json"}}, Body: tt.body},
			}}}
			out := show(t, f)
			hasLines(t, out, append([]string{`  request: 118 B, model o3, 1 input item, last function_call_output "done", tools [web_search]`}, tt.want...))
		})
	}
}

// TestShowResponsesLibrary: frozen copies of the library's Responses
// sessions (recorded against the fake provider) show their reasoning with
// the encrypted content sent back, parallel calls, usage details, the
// incomplete and failed ends and the recorded 429.
func TestShowResponsesLibrary(t *testing.T) {
	tests := []struct {
		file string
		want []string
	}{
		{"responses_plain.yaml", []string{
			"  config: provider openai, base_url http://127.0.0.1:34361/v1, api responses, project /, idle_timeout 0s",
			`  text: "Hello from the Responses API."`,
			"  usage: 1200 in (1024 cached), 9 out (4 reasoning), 1209 total",
			"  signal: response.completed",
		}},
		{"responses_reasoning.yaml", []string{
			`  reasoning 0 (rs_fake_1_0): encrypted content 32 B from output_item.done, "gAAAAABlbmNyeXB0…"`,
			`  reasoning 0 summary 0: "The user greets me; I greet back."`,
			`  request: 6626 B, model gpt-4o-mini, stream, 4 input items, last user "Are you there?", tools read_file, list_files, search, write_file, edit_file, run_command, block, echo_args, crash, touch`,
		}},
		{"responses_tool_round_trip.yaml", []string{
			`  tool call 0: echo_args {"path":"a.txt"} (call_1)`,
			`  tool call 1: echo_args {"path":"b.txt"} (call_2)`,
			`  request: 6656 B, model gpt-4o-mini, stream, 5 input items, last function_call_output "{\"path\":\"b.txt\"}", tools read_file, list_files, search, write_file, edit_file, run_command, block, echo_args, crash, touch`,
			"  chunk 1 at +0s, 662 B: message, content_part.added, text \"Both files echoed.\"",
		}},
		{"responses_failed_after_text.yaml", []string{
			`  chunk 0 at +0s, 1356 B: created, in_progress, message, content_part.added, text "Partial", failed server_error`,
			`  text: "Partial"`,
			"  finish: failed",
			"  error event: server_error: The server had an error",
			"  signal: response.failed",
		}},
		{"responses_incomplete.yaml", []string{
			`  text: "In the bustling city of"`,
			"  finish: incomplete (max_output_tokens)",
			"  signal: response.incomplete",
		}},
		{"responses_429_retry_after.yaml", []string{
			"  status: 429 Too Many Requests",
			"  header Retry-After: 2",
			"  error: rate_limit_exceeded: Rate limit reached",
			"#1 at +2s: POST /v1/responses",
			`  text: "After the wait."`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			hasLines(t, show(t, load(t, tt.file)), tt.want)
		})
	}
}

// TestShowResponsesCutAnywhere: a Responses stream cut at any byte (a
// reset can leave any prefix) shows without failing: what it says is a
// prefix of what the whole stream says, no call appears before its item
// does, and only the whole stream has a completion signal.
func TestShowResponsesCutAnywhere(t *testing.T) {
	whole := realResponses(t, "A8")
	it := whole.Interactions[0]
	body := it.Response.Body
	_, full, err := read(it)
	if err != nil {
		t.Fatal(err)
	}
	step := 3 // a cut every 3 bytes; every 29 under -race or -short
	if testing.Short() || raceEnabled {
		step = 29
	}
	for n := 0; ; n = min(n+step, len(body)) {
		cut := it.Clone()
		cut.Response.Body = body[:n]
		cut.Stream.Chunks = []cassette.Chunk{{Data: body[:n]}}
		var b strings.Builder
		if err := Show(&b, &cassette.File{Version: cassette.FormatVersion, Interactions: []*cassette.Interaction{cut}}); err != nil {
			t.Fatal(err)
		}
		_, r, err := read(cut)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Tools) > len(full.Tools) || r.Unparsed() != 0 {
			t.Fatalf("cut at %d: %d calls, %d unparsed", n, len(r.Tools), r.Unparsed())
		}
		for i, tc := range r.Tools {
			if want := full.Tools[i]; tc.Name != want.Name || tc.ID != want.ID || !strings.HasPrefix(want.Args, tc.Args) {
				t.Fatalf("cut at %d: call %d is %s %s %q", n, i, tc.Name, tc.ID, tc.Args)
			}
		}
		if done := r.Signal != ""; done != (n == len(body)) || len(r.Tools) == len(full.Tools) && r.Finish == "" && n == len(body) {
			t.Fatalf("cut at %d of %d: signal %q, finish %q", n, len(body), r.Signal, r.Finish)
		}
		if n == len(body) {
			break
		}
	}
}
