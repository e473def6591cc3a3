package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/internal/fixture"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/importer"
)

// checkWire fails t on any line of transcript the stdio checker rejects.
func checkWire(t *testing.T, transcript string) {
	t.Helper()
	if _, err := wire.CheckStreamStrict(strings.NewReader(transcript), func(v wire.Verdict) {
		if v.Err != nil {
			t.Errorf("checker: line %d: %v", v.Line, v.Err)
		}
	}); err != nil {
		t.Fatal(err)
	}
}

// noteLines returns the stderr lines saying a recording was converted.
func noteLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "converted in memory") {
			out = append(out, l)
		}
	}
	return out
}

// TestCommandsReadEveryImportFormat: replay and cassette show take every
// real recording as it is, converting it in memory with one stderr line
// that says so. A replay of the raw file is byte for byte the replay of
// what `cassette import` writes; a recording no session can be made up
// for would be refused with the reason (none of the real ones: the
// Responses API recordings replay through its client).
func TestCommandsReadEveryImportFormat(t *testing.T) {
	tests := []struct {
		file, format string
		noSession    string // the reason, when none can be made up
	}{
		{"simonw-llm__test_tool_use_basic.yaml", "vcrpy", ""},
		{"simonw-llm-anthropic__test_stream_events_tool_calls.yaml", "vcrpy", ""},
		{"simonw-llm-anthropic__test_thinking_prompt.yaml", "vcrpy", ""},
		{"anthropic-sdk-go__tool_runner_streaming_all.yaml", "govcr1", ""},
		{"fantasy__openai-gpt-4o-mini__multi_tool_streaming.yaml", "govcr4", ""},
		{"langchaingo-openai__TestClient_CreateChatCompletionStream.httprr", "httprr", ""},
		{"autogpt-cassettes-206c0689__test_write_file.yaml", "vcrpy", ""},
		{"fantasy-responses__openai-gpt-4o-mini__multi_tool_streaming.yaml", "govcr4", ""},
		{"pydantic-ai-openai-responses__test_openai_responses_thinking_part_iter.yaml", "vcrpy", ""},
		{"dd-trace-py__response_stream_incomplete.yaml", "vcrpy", ""},
		{"pydantic-ai-openai-responses__test_openai_responses_model_http_error.yaml", "vcrpy", ""},
		{"fantasy__bedrock-anthropic-claude-haiku-4-5__tool_streaming.yaml", "govcr4", ""},
		{"pydantic-ai-bedrock__test_bedrock_model_iter_stream.yaml", "vcrpy", ""},
		{"pydantic-ai-google__test_google_streaming_tool_call_thought_signature.yaml", "vcrpy", ""},
		{"fantasy__gemini-2.5-flash__thinking-streaming.yaml", "govcr4", ""},
	}
	entries, err := os.ReadDir(fixture.RealDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(tests)+1 { // and SOURCES.md
		t.Fatalf("cassettes/real holds %d files; this table covers %d recordings", len(entries), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			raw := fixture.Real(t, tt.file)
			out, stderr, code := runCLI(t, "", "cassette", "show", raw)
			if code != 0 || !strings.Contains(out, "interaction") {
				t.Fatalf("show: exit %d\n%s%s", code, out, stderr)
			}
			if n := noteLines(stderr); len(n) != 1 || !strings.HasPrefix(n[0], "openmax cassette show: "+raw+": a "+tt.format+" recording") {
				t.Errorf("show: stderr %q, want one line saying it was converted from %s", stderr, tt.format)
			}

			transcript, stderr, code := runCLI(t, "", "replay", raw)
			n := noteLines(stderr)
			if len(n) != 1 || !strings.HasPrefix(n[0], "openmax replay: "+raw+": a "+tt.format+" recording") {
				t.Errorf("replay: stderr %q, want one line saying it was converted from %s", stderr, tt.format)
			}
			if tt.noSession != "" {
				if code != 1 || transcript != "" || len(n) != 1 || !strings.Contains(n[0], "no session made up") || !strings.Contains(n[0], tt.noSession) {
					t.Errorf("replay without a session: exit %d, stderr %q, want the reason (%s)", code, stderr, tt.noSession)
				}
				return
			}
			checkWire(t, transcript)
			imported := filepath.Join(t.TempDir(), "imported.yaml")
			if _, stderr, code := runCLI(t, "", "cassette", "import", raw, imported); code != 0 {
				t.Fatalf("import: exit %d: %s", code, stderr)
			}
			again, stderr, code2 := runCLI(t, "", "replay", imported)
			if again != transcript || code2 != code {
				t.Errorf("replaying the raw file and the imported one differ:\n%s(exit %d)\n%s(exit %d)", transcript, code, again, code2)
			}
			if len(noteLines(stderr)) != 0 {
				t.Errorf("an openmax cassette was converted: %s", stderr)
			}
		})
	}
}

// TestCassetteCommandsOnRawRecordings: an openmax cassette is loaded as
// it is (no note), and inject writes a converted recording as an openmax
// cassette with its faults.
func TestCassetteCommandsOnRawRecordings(t *testing.T) {
	lib := filepath.Join(libraryDir, "openai_plain.yaml")
	if _, stderr, code := runCLI(t, "", "cassette", "show", lib); code != 0 || stderr != "" {
		t.Errorf("show of a library cassette: exit %d, stderr %q", code, stderr)
	}
	out := filepath.Join(t.TempDir(), "a4-503.yaml")
	_, stderr, code := runCLI(t, "", "cassette", "inject", fixture.Real(t, "anthropic-sdk-go__tool_runner_streaming_all.yaml"), out, "--op", "503@0")
	if code != 0 || len(noteLines(stderr)) != 1 {
		t.Fatalf("inject: exit %d, stderr %q", code, stderr)
	}
	f, err := cassette.Load(out)
	if err != nil || f.Session == nil || !f.Session.Imported || len(f.Interactions) != 3 {
		t.Fatalf("the injected copy: %v, %+v", err, f)
	}
	transcript, stderr, code := runCLI(t, "", "replay", out)
	if code != 0 || !strings.Contains(transcript, `"type":"retry"`) || !strings.Contains(transcript, "HTTP 503") || !strings.Contains(transcript, "68 degrees Fahrenheit") {
		t.Errorf("replay of the injected copy: exit %d\n%s%s", code, transcript, stderr)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\ninteractions:\n- request: {method: POST, uri: 'http://h/v1/chat/completions'}\n  response: {status: {code: 200, message: OK}, parsed_body: {x: .inf}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"cassette", "show", bad}, {"replay", bad}, {"cassette", "import", bad, filepath.Join(t.TempDir(), "x.yaml")}} {
		_, stderr, code := runCLI(t, "", args...)
		if code == 0 || !strings.Contains(stderr, "interaction 0: response parsed_body") {
			t.Errorf("%s of an unreadable body: exit %d, stderr %q; want a refusal naming interaction 0's response parsed_body", args[0], code, stderr)
		}
	}
}

// TestFakeProviderServesRawRecordings: fake-provider --cassette serves a
// recording in another tool's format, here a Responses API stream and
// pydantic-ai's rejection, byte for byte as imported, saying once on
// stderr that it was converted.
func TestFakeProviderServesRawRecordings(t *testing.T) {
	tests := []struct {
		file       string
		wantStatus int
		wantBody   func(t *testing.T, body []byte)
	}{
		{"dd-trace-py__response_stream_incomplete.yaml", 200, func(t *testing.T, body []byte) {
			if !bytes.Contains(body, []byte("event: response.incomplete")) || !bytes.Contains(body, []byte(`"delta":" Detroit"`)) {
				t.Errorf("body %.200q", body)
			}
		}},
		{"pydantic-ai-openai-responses__test_openai_responses_model_http_error.yaml", 400, func(t *testing.T, body []byte) {
			var e struct {
				Error struct{ Type, Code string }
			}
			if err := json.Unmarshal(body, &e); err != nil || e.Error.Type != "invalid_request_error" || e.Error.Code != "decimal_below_min_value" {
				t.Errorf("body %q: %v", body, err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			raw := fixture.Real(t, tt.file)
			f, _, err := importer.Load(raw)
			if err != nil {
				t.Fatal(err)
			}
			req := f.Interactions[0].Request
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			srvCtx, stop := context.WithCancel(ctx)
			outR, outW := io.Pipe()
			var stderr syncBuffer
			codec := make(chan int, 1)
			go func() {
				codec <- run(srvCtx, []string{"fake-provider", "--cassette", raw, "--addr", "127.0.0.1:0"}, strings.NewReader(""), outW, &stderr, env{clock: clock.Real{}})
				outW.Close()
			}()
			first, err := bufio.NewReader(outR).ReadString('\n')
			if err != nil || !strings.HasPrefix(first, "http://127.0.0.1:") {
				t.Fatalf("first line %q, %v; stderr %s", first, err, stderr.String())
			}
			hr, _ := http.NewRequestWithContext(ctx, req.Method, strings.TrimSpace(first)+"/v1/responses", strings.NewReader(req.Body))
			hr.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(hr)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, %v: %s", resp.StatusCode, err, body)
			}
			if string(body) != f.Interactions[0].Response.Body {
				t.Errorf("served body differs from the imported one")
			}
			tt.wantBody(t, body)
			stop()
			if code := <-codec; code != 0 {
				t.Errorf("exit %d after stop", code)
			}
			if n := noteLines(stderr.String()); len(n) != 1 || !strings.HasPrefix(n[0], "openmax fake-provider: "+raw+": a vcrpy recording") {
				t.Errorf("stderr %q, want one line saying the recording was converted", stderr.String())
			}
		})
	}
}

// recording is one exchange of a synthetic vcrpy cassette.
type recording struct {
	url, request string // the request is JSON
	code         int
	sse          bool
	response     string
}

// vcrpyCassette writes a vcrpy cassette of recs and returns its path.
func vcrpyCassette(t *testing.T, recs ...recording) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("interactions:\n")
	for _, r := range recs {
		ct := "application/json"
		if r.sse {
			ct = "text/event-stream"
		}
		b.WriteString("- request:\n    method: POST\n    uri: " + r.url + "\n    headers: {content-type: [application/json]}\n    body: " + jsonString(r.request) + "\n")
		b.WriteString("  response:\n    status: {code: " + strconv.Itoa(r.code) + ", message: ''}\n    headers: {content-type: [" + ct + "]}\n    body: {string: " + jsonString(r.response) + "}\n")
	}
	b.WriteString("version: 1\n")
	p := filepath.Join(t.TempDir(), "recording.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// sse joins events into an SSE body ("event: name" lines where given).
func sse(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		if name, data, ok := strings.Cut(e, " "); ok && !strings.HasPrefix(e, "{") && name != "[DONE]" {
			b.WriteString("event: " + name + "\ndata: " + data + "\n\n")
			continue
		}
		b.WriteString("data: " + e + "\n\n")
	}
	return b.String()
}

const (
	openaiURL    = "https://api.openai.com/v1/chat/completions"
	anthropicURL = "https://api.anthropic.com/v1/messages"
	openaiAsk    = `{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"find x"}],"tools":[{"type":"function","function":{"name":"lookup","description":"looks up","parameters":{"type":"object"}}}]}`
	openaiAgain  = `{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"find x"},{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"found it"}]}`
	anthAsk      = `{"model":"claude-x","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"find x"}],"tools":[{"name":"lookup","description":"looks up","input_schema":{"type":"object"}}]}`
)

// openaiCall is a Chat Completions stream: text (if any), then a call to
// lookup with id, finished with tool_calls.
func openaiCall(text, id string) string {
	ev := []string{`{"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}`}
	if text != "" {
		ev = append(ev, `{"choices":[{"index":0,"delta":{"content":`+jsonString(text)+`},"finish_reason":null}]}`)
	}
	return sse(append(ev,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"`+id+`","type":"function","function":{"name":"lookup","arguments":"{}"}}]},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		"[DONE]")...)
}

func jsonString(s string) string { j, _ := json.Marshal(s); return string(j) }

// anthCall is a Messages stream: "Checking.", then a call to lookup;
// complete adds the end of the message (stop_reason tool_use).
func anthCall(complete bool) string {
	ev := []string{
		`message_start {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":1}}}`,
		`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Checking."}}`,
		`content_block_stop {"type":"content_block_stop","index":0}`,
		`content_block_start {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"lookup","input":{}}}`,
		`content_block_delta {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{}"}}`,
		`content_block_stop {"type":"content_block_stop","index":1}`,
	}
	if complete {
		ev = append(ev,
			`message_delta {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":20}}`,
			`message_stop {"type":"message_stop"}`)
	}
	return sse(ev...)
}

// a7Overload is A7's overload (429) and the answer its retry got, cut
// from the real recording.
func a7Overload(t *testing.T) string {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(fixture.ReadReal(t, "autogpt-cassettes-206c0689__test_write_file.yaml"), &doc); err != nil {
		t.Fatal(err)
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "interactions" {
			seq := root.Content[i+1]
			seq.Content = seq.Content[2:4]
		}
	}
	data, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "a7-overload.yaml")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestImportedReplayEndings: an imported recording's replay ends as the
// recording does. One that ends with the model calling a tool shows the
// call (tool_start, and a tool_end saying it was not run) and ends the
// turn there with the recorded stop reason, the call not run (no next
// request, no max_iterations), and says so on stderr; earlier calls
// still get their recorded results. A stream cut after a call is still
// truncated with the call refused. A request the vendor rejected replays
// the rejection: an error and done error for a 400 (exit 1), a retry and
// the answer for A7's 429 overload.
func TestImportedReplayEndings(t *testing.T) {
	tests := []struct {
		name      string
		path      func(t *testing.T) string
		code      int
		want      []string // in the transcript, in order
		wantNot   []string
		stderr    string
		stderrNot string
	}{
		{
			name: "anthropic: ends at a tool call",
			path: func(t *testing.T) string {
				return vcrpyCassette(t, recording{anthropicURL, anthAsk, 200, true, anthCall(true)})
			},
			want: []string{`"message_done","text":"Checking."`, `"tool_start","call_id":"toolu_1","name":"lookup"`,
				`"tool_end","call_id":"toolu_1","ok":false,"output":"not run: the recording ends at this call; nothing recorded its result"`, `"done","stop_reason":"tool_use"`},
			wantNot: []string{"max_iterations", `"ok":true`},
			stderr:  `the recording ends at the model's call to lookup (toolu_1) with nothing recorded after it: shown, not run, the turn ends with the recorded stop reason "tool_use"`,
		},
		{
			name: "anthropic: cut off after a tool call",
			path: func(t *testing.T) string {
				return vcrpyCassette(t, recording{anthropicURL, anthAsk, 200, true, anthCall(false)})
			},
			want:      []string{`"message_done","text":"Checking."`, `"error","message":"reply truncated: `, `"done","stop_reason":"truncated"`},
			wantNot:   []string{"tool_start"},
			stderrNot: "the recording ends at",
		},
		{
			name: "openai: a round trip, then ends at a tool call",
			path: func(t *testing.T) string {
				return vcrpyCassette(t,
					recording{openaiURL, openaiAsk, 200, true, openaiCall("", "call_1")},
					recording{openaiURL, openaiAgain, 200, true, openaiCall("Once more.", "call_2")})
			},
			want: []string{`"tool_start","call_id":"call_1","name":"lookup"`, `"tool_end","call_id":"call_1","ok":true,"output":"found it"`,
				`"message_done","text":"Once more."`, `"tool_start","call_id":"call_2","name":"lookup"`, `"tool_end","call_id":"call_2","ok":false,"output":"not run: the recording ends at this call; nothing recorded its result"`, `"done","stop_reason":"tool_calls"`},
			wantNot: []string{"max_iterations", "no further result"},
			stderr:  "the recording ends at the model's call to lookup (call_2)",
		},
		{
			name: "the real A2: ends at a tool call",
			path: func(t *testing.T) string {
				return fixture.Real(t, "simonw-llm-anthropic__test_stream_events_tool_calls.yaml")
			},
			want: []string{`"usage","prompt_tokens":543`, `"tool_start","call_id":"toolu_01CzN6riCPqw4pVSuTd9Dwn7","name":"pelican_name_generator"`,
				`"tool_end","call_id":"toolu_01CzN6riCPqw4pVSuTd9Dwn7","ok":false,"output":"not run: the recording ends at this call; nothing recorded its result"`, `"done","stop_reason":"tool_use"`},
			wantNot: []string{"max_iterations"},
			stderr:  "the recording ends at the model's call to pelican_name_generator (toolu_01CzN6riCPqw4pVSuTd9Dwn7)",
		},
		{
			name:      "the real A1: a call answered as recorded",
			path:      func(t *testing.T) string { return fixture.Real(t, "simonw-llm__test_tool_use_basic.yaml") },
			want:      []string{`"tool_start","call_id":"call_1EYWDzueHEp8OsB8jJSEp7WB","name":"multiply"`, `"tool_end","call_id":"call_1EYWDzueHEp8OsB8jJSEp7WB","ok":true,"output":"2869461"`, `"done","stop_reason":"stop"`},
			stderrNot: "the recording ends at",
		},
		{
			name: "openai: a 400",
			path: func(t *testing.T) string {
				return vcrpyCassette(t, recording{openaiURL, openaiAsk, 400, false, `{"error":{"message":"bad temperature","type":"invalid_request_error","param":"temperature","code":null}}`})
			},
			code:      1,
			want:      []string{`"error","message":"HTTP 400 Bad Request: invalid_request_error: bad temperature"`, `"done","stop_reason":"error"`},
			wantNot:   []string{"retry", "no recorded interaction"},
			stderrNot: "answers the harness's request",
		},
		{
			name: "openai: a 400 to a request with no user message",
			path: func(t *testing.T) string {
				return vcrpyCassette(t, recording{openaiURL, `{"model":"gpt-x","messages":[]}`, 400, false, `{"error":{"message":"messages must be non-empty","type":"invalid_request_error","param":"messages","code":null}}`})
			},
			code:    1,
			want:    []string{`"error","message":"HTTP 400 Bad Request: invalid_request_error: messages must be non-empty"`, `"done","stop_reason":"error"`},
			wantNot: []string{"retry", "no recorded interaction"},
			stderr:  "a session made up for it",
		},
		{
			name: "anthropic: a 400 to a user message with no text",
			path: func(t *testing.T) string {
				return vcrpyCassette(t, recording{anthropicURL, `{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"http://x/y.png"}}]}]}`, 400,
					false, `{"type":"error","error":{"type":"invalid_request_error","message":"image too small"}}`})
			},
			code:    1,
			want:    []string{`"error","message":"HTTP 400 Bad Request: invalid_request_error: image too small"`, `"done","stop_reason":"error"`},
			wantNot: []string{"retry", "no recorded interaction"},
			stderr:  "a session made up for it",
		},
		{
			name: "the real A11: the Responses API's 400",
			path: func(t *testing.T) string {
				return fixture.Real(t, "pydantic-ai-openai-responses__test_openai_responses_model_http_error.yaml")
			},
			code:      1,
			want:      []string{`"error","message":"HTTP 400 Bad Request: decimal_below_min_value: Invalid 'temperature': decimal below minimum value. Expected a value >= 0, but got -1 instead."`, `"done","stop_reason":"error"`},
			wantNot:   []string{"retry", "no recorded interaction"},
			stderrNot: "answers the harness's request", // the Responses client asks /v1/responses itself
		},
		{
			name:      "the real A7's 429 overload and its retry",
			path:      a7Overload,
			want:      []string{`"retry","attempt":2`, "429", `"done","stop_reason":"stop"`},
			wantNot:   []string{`"error"`, "no recorded interaction"},
			stderrNot: "never requested",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.path(t)
			transcript, stderr, code := runCLI(t, "", "replay", path)
			if code != tt.code {
				t.Errorf("exit %d, want %d", code, tt.code)
			}
			checkWire(t, transcript)
			rest := transcript
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Errorf("the transcript lacks %s (in this order)", w)
					continue
				}
				rest = rest[i+len(w):]
			}
			for _, w := range tt.wantNot {
				if strings.Contains(transcript, w) {
					t.Errorf("the transcript has %s", w)
				}
			}
			if tt.stderr != "" && !strings.Contains(stderr, tt.stderr) {
				t.Errorf("stderr lacks %q", tt.stderr)
			}
			if tt.stderrNot != "" && strings.Contains(stderr, tt.stderrNot) {
				t.Errorf("stderr has %q", tt.stderrNot)
			}
			if t.Failed() {
				t.Logf("transcript:\n%sstderr:\n%s", transcript, stderr)
			}
			again, _, _ := runCLI(t, "", "replay", path)
			if again != transcript {
				t.Errorf("a second replay differs:\n%s", again)
			}
		})
	}
}

// TestImportSaysContentLengthRewritten: importing a parsed_body whose JSON
// text is not the length the recorded Content-Length gives rewrites that
// header, and `cassette import` says so on stderr, naming the interaction,
// the side and both lengths; a Content-Length that fits is kept silently.
func TestImportSaysContentLengthRewritten(t *testing.T) {
	const body = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	rec := func(length string) string {
		return "version: 1\ninteractions:\n- request:\n    method: POST\n    uri: https://api.openai.com/v1/chat/completions\n" +
			"    headers: {Content-Length: ['" + length + "']}\n" +
			"    parsed_body: {model: m, messages: [{role: user, content: hi}]}\n" +
			"  response:\n    status: {code: 400, message: Bad Request}\n    body: {string: '{\"error\":{\"message\":\"no\"}}'}\n"
	}
	for _, tt := range []struct {
		length string
		note   string
	}{
		{"999", fmt.Sprintf("interaction 0: the request parsed_body is %d bytes of JSON text, not the recorded Content-Length 999: Content-Length rewritten to %d", len(body), len(body))},
		{strconv.Itoa(len(body)), ""},
	} {
		in := filepath.Join(t.TempDir(), "in.yaml")
		if err := os.WriteFile(in, []byte(rec(tt.length)), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "out.yaml")
		_, stderr, code := runCLI(t, "", "cassette", "import", in, out)
		if code != 0 {
			t.Fatalf("import: exit %d: %s", code, stderr)
		}
		if tt.note != "" && !strings.Contains(stderr, tt.note) {
			t.Errorf("Content-Length %s: stderr lacks %q:\n%s", tt.length, tt.note, stderr)
		}
		// Converted in memory, it says so too.
		if _, showErr, _ := runCLI(t, "", "cassette", "show", in); tt.note != "" && !strings.Contains(showErr, tt.note) {
			t.Errorf("Content-Length %s: cassette show's stderr lacks %q:\n%s", tt.length, tt.note, showErr)
		}
		if tt.note == "" && strings.Contains(stderr, "Content-Length") {
			t.Errorf("Content-Length %s fits, yet stderr says: %s", tt.length, stderr)
		}
		f, err := cassette.Load(out)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Interactions[0].Request.Headers.Get("Content-Length"); got != strconv.Itoa(len(body)) {
			t.Errorf("Content-Length %s: imported as %q", tt.length, got)
		}
	}
}
