package main

// The cassette tools on the OpenAI Responses API, through the binary's own
// commands: the real recordings A8–A11 import, load in stock go-vcr and
// replay through the engine (the harness's Responses client) as recorded;
// faults injected into them reach the engine as the API would send them;
// and the sweep judges every fault at every place.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/openmax/openmax/internal/fixture"
	"github.com/openmax/openmax/recorder/cassette"
)

// The real Responses API recordings (cassettes/real, SOURCES.md A8–A11).
const (
	realA8  = "fantasy-responses__openai-gpt-4o-mini__multi_tool_streaming.yaml"
	realA9  = "pydantic-ai-openai-responses__test_openai_responses_thinking_part_iter.yaml"
	realA10 = "dd-trace-py__response_stream_incomplete.yaml"
	realA11 = "pydantic-ai-openai-responses__test_openai_responses_model_http_error.yaml"
)

// importInto runs `openmax cassette import` on a real recording, writing
// dir/name.
func importInto(t *testing.T, real, dir, name string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	stdout, stderr, code := runCLI(t, "", "cassette", "import", fixture.Real(t, real), out)
	if code != 0 || !strings.Contains(stdout, "written to "+out) || stderr != "" {
		t.Fatalf("cassette import %s: exit %d\n%s%s", real, code, stdout, stderr)
	}
	return out
}

// respOutput is one output item of internal/fixture's expected values for
// a Responses recording.
type respOutput struct {
	Type      string   `json:"type"`
	Text      string   `json:"text"`
	Name      string   `json:"name"`
	CallID    string   `json:"call_id"`
	Arguments string   `json:"arguments"`
	Summary   []string `json:"summary"`
}

// expectedOutputs are the output items of each interaction of a real
// recording, as SOURCES.md lists them.
func expectedOutputs(t *testing.T, real string) [][]respOutput {
	t.Helper()
	var exp []struct {
		Output []respOutput `json:"output"`
	}
	if err := json.Unmarshal(fixture.Expected(t, real), &exp); err != nil {
		t.Fatal(err)
	}
	out := make([][]respOutput, len(exp))
	for i, e := range exp {
		out[i] = e.Output
	}
	return out
}

// event is one line of a transcript.
type event struct {
	Type       string          `json:"type"`
	Text       string          `json:"text"`
	Message    string          `json:"message"`
	CallID     string          `json:"call_id"`
	Name       string          `json:"name"`
	Args       json.RawMessage `json:"args"`
	OK         bool            `json:"ok"`
	Output     string          `json:"output"`
	StopReason string          `json:"stop_reason"`
	Prompt     *int            `json:"prompt_tokens"`
	Completion *int            `json:"completion_tokens"`
}

func events(t *testing.T, transcript string) []event {
	t.Helper()
	var out []event
	for _, l := range strings.Split(strings.TrimSpace(transcript), "\n") {
		var e event
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("transcript line %q: %v", l, err)
		}
		out = append(out, e)
	}
	return out
}

// replayed is what one replay of a transcript says, gathered by event.
type replayed struct {
	thinking, text []string // thinking and token texts
	calls          []event  // tool_start
	results        []event  // tool_end
	messages       []string // message_done texts
	errors         []string
	retries        int
	usage          []event
	stops          []string
}

func gather(evs []event) replayed {
	var r replayed
	for _, e := range evs {
		switch e.Type {
		case "thinking":
			r.thinking = append(r.thinking, e.Text)
		case "token":
			r.text = append(r.text, e.Text)
		case "tool_start":
			r.calls = append(r.calls, e)
		case "tool_end":
			r.results = append(r.results, e)
		case "message_done":
			r.messages = append(r.messages, e.Text)
		case "error":
			r.errors = append(r.errors, e.Message)
		case "retry":
			r.retries++
		case "usage":
			r.usage = append(r.usage, e)
		case "done":
			r.stops = append(r.stops, e.StopReason)
		}
	}
	return r
}

// TestResponsesRealRecordings: each real Responses recording (A8–A11)
// imports with `openmax cassette import`, the file loads in stock go-vcr
// with the same interactions, `cassette show` reads it, and `openmax
// replay` runs it through the engine with the Responses client,
// reconstructing what SOURCES.md lists: A8's parallel add and multiply
// calls (answered with the recorded outputs) and its final text; A9's four
// reasoning summaries as thinking and its text; A10's 16 deltas and its
// max_output_tokens stop; A11's 400 as an error done. Twice, the same
// bytes.
func TestResponsesRealRecordings(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		id, real string
		code     int
		show     string // a line of cassette show
		check    func(t *testing.T, r replayed, exp [][]respOutput)
	}{
		{"A8", realA8, 0, "  signal: response.completed", func(t *testing.T, r replayed, exp [][]respOutput) {
			calls := exp[0]
			if len(r.calls) != 2 || len(r.results) != 2 {
				t.Fatalf("%d calls, %d results; want the two parallel calls", len(r.calls), len(r.results))
			}
			for i, c := range r.calls {
				var args any
				json.Unmarshal([]byte(calls[i].Arguments), &args)
				var got any
				json.Unmarshal(c.Args, &got)
				if c.CallID != calls[i].CallID || c.Name != calls[i].Name || !reflect.DeepEqual(got, args) {
					t.Errorf("call %d: %s %s %s, want %s %s %s", i, c.CallID, c.Name, c.Args, calls[i].CallID, calls[i].Name, calls[i].Arguments)
				}
				if res := r.results[i]; res.CallID != calls[i].CallID || !res.OK || res.Output != []string{"5", "6"}[i] {
					t.Errorf("result %d: %+v", i, res)
				}
			}
			if want := exp[1][0].Text; len(r.messages) != 1 || r.messages[0] != want || strings.Join(r.text, "") != want {
				t.Errorf("messages %q, tokens %q; want %q", r.messages, strings.Join(r.text, ""), want)
			}
			if !reflect.DeepEqual(r.stops, []string{"completed"}) || len(r.usage) != 2 || *r.usage[0].Prompt != 104 || *r.usage[1].Completion != 28 {
				t.Errorf("stops %v, usage %+v", r.stops, r.usage)
			}
		}},
		{"A9", realA9, 0, "  usage: 13 in (0 cached), 1680 out (1408 reasoning), 1693 total", func(t *testing.T, r replayed, exp [][]respOutput) {
			summary, text := exp[0][0].Summary, exp[0][1].Text
			if len(summary) != 4 || exp[0][0].Type != "reasoning" {
				t.Fatalf("expected values: %+v", exp[0][0])
			}
			if got := strings.Join(r.thinking, ""); got != strings.Join(summary, "\n\n") {
				t.Errorf("thinking %.200q…, want the four summaries joined by blank lines", got)
			}
			if len(r.thinking) != 383+3 || len(r.text) != 271 {
				t.Errorf("%d thinking and %d token events, want 383 summary deltas and 3 part breaks, 271 deltas", len(r.thinking), len(r.text))
			}
			if len(r.messages) != 1 || r.messages[0] != text || !reflect.DeepEqual(r.stops, []string{"completed"}) || len(r.calls) != 0 {
				t.Errorf("messages %q, stops %v, calls %d", r.messages, r.stops, len(r.calls))
			}
			if len(r.usage) != 1 || *r.usage[0].Prompt != 13 || *r.usage[0].Completion != 1680 {
				t.Errorf("usage %+v", r.usage)
			}
		}},
		{"A10", realA10, 0, "  finish: incomplete (max_output_tokens)", func(t *testing.T, r replayed, exp [][]respOutput) {
			text := exp[0][0].Text
			if len(r.text) != 16 || strings.Join(r.text, "") != text || len(r.messages) != 1 || r.messages[0] != text {
				t.Errorf("%d deltas %q, messages %q; want 16 making %q", len(r.text), r.text, r.messages, text)
			}
			if !reflect.DeepEqual(r.stops, []string{"max_output_tokens"}) || len(r.calls) != 0 || len(r.errors) != 0 || r.retries != 0 {
				t.Errorf("stops %v, %d calls, errors %q, %d retries", r.stops, len(r.calls), r.errors, r.retries)
			}
		}},
		{"A11", realA11, 1, "  status: 400 Bad Request", func(t *testing.T, r replayed, _ [][]respOutput) {
			want := "HTTP 400 Bad Request: decimal_below_min_value: Invalid 'temperature': decimal below minimum value. Expected a value >= 0, but got -1 instead."
			if !reflect.DeepEqual(r.errors, []string{want}) || !reflect.DeepEqual(r.stops, []string{"error"}) || r.retries != 0 || len(r.text) != 0 {
				t.Errorf("errors %q, stops %v, %d retries", r.errors, r.stops, r.retries)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			path := importInto(t, tt.real, dir, tt.id+".yaml")

			// Stock go-vcr reads the same interactions.
			ours, err := cassette.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			stock, err := vcr.Load(strings.TrimSuffix(path, ".yaml"))
			if err != nil {
				t.Fatalf("stock go-vcr: %v", err)
			}
			if len(stock.Interactions) != len(ours.Interactions) {
				t.Fatalf("stock go-vcr reads %d interactions, we %d", len(stock.Interactions), len(ours.Interactions))
			}
			for i, it := range stock.Interactions {
				w := ours.Interactions[i]
				if it.Request.Method != w.Request.Method || it.Request.URL != w.Request.URL || it.Request.Body != w.Request.Body ||
					it.Response.Code != w.Response.Code || it.Response.Body != w.Response.Body {
					t.Errorf("#%d: stock go-vcr reads a different interaction", i)
				}
			}
			if s := ours.Session; s == nil || s.Config == nil || s.Config.Provider != "openai" || s.Config.API != "responses" {
				t.Fatalf("session %+v: want one for the Responses client", s)
			}

			shown, stderr, code := runCLI(t, "", "cassette", "show", path)
			if code != 0 || stderr != "" || !strings.Contains(shown, "POST /v1/responses\n") || !strings.Contains(shown, "\n"+tt.show+"\n") {
				t.Errorf("cassette show: exit %d, stderr %q, lacks %q:\n%s", code, stderr, tt.show, shown)
			}

			transcript, stderr, code := runCLI(t, "", "replay", path)
			checkWire(t, transcript)
			if code != tt.code || stderr != "" {
				t.Errorf("replay: exit %d (want %d), stderr %q", code, tt.code, stderr)
			}
			tt.check(t, gather(events(t, transcript)), expectedOutputs(t, tt.real))
			if t.Failed() {
				t.Logf("transcript:\n%s", transcript)
			}
			if again, _, _ := runCLI(t, "", "replay", path); again != transcript {
				t.Errorf("a second replay differs")
			}
		})
	}
}

// TestResponsesInjectThroughEngine: faults injected with `openmax cassette
// inject` into the imported A8 and A10 reach the engine as the Responses
// API sends them: a 429 or 503 before a request is retried (waiting as
// Retry-After says); a response.failed or a truncation before any text is
// retried, one after text is not (an error, or a truncated reply); a
// response.failed with code rate_limit_exceeded is retried too; a reply
// cut before response.completed dispatches none of its calls, and its
// retry runs each call once.
func TestResponsesInjectThroughEngine(t *testing.T) {
	dir := t.TempDir()
	// The library's plain Responses session was served fast, so its whole
	// stream is one recorded chunk: only event=K cuts inside it.
	src := map[string]string{"A8": importInto(t, realA8, dir, "A8.yaml"), "A10": importInto(t, realA10, dir, "A10.yaml"),
		"plain": filepath.Join(libraryDir, "responses_plain.yaml")}
	const plainText = `"message_done","text":"Hello from the Responses API."`
	const a10Text = `"message_done","text":"In the bustling city of Detroit, a sleek, metallic blue sedan rolled off the"`
	const a8Text = `"message_done","text":"The sum of 2 and 3 is **5**, and the product of 2 and 3 is **6**."`
	tests := []struct {
		rec, op string
		code    int
		want    []string // in this order
		not     []string
		calls   int // tool_start lines
	}{
		{"A10", "429@0:retry-after=2", 0, []string{`"retry","attempt":2`, "HTTP 429 Too Many Requests: rate_limit_exceeded: Rate limit reached for requests (server asked to wait 2s)", a10Text, `"done","stop_reason":"max_output_tokens"`}, nil, 0},
		{"A10", "503@0:retry-after-ms=1500", 0, []string{`"retry"`, "HTTP 503 Service Unavailable", a10Text, `"stop_reason":"max_output_tokens"`}, nil, 0},
		{"A10", "stream-error@0:chunk=2,recover=true", 0, []string{`"retry","attempt":2,"max_attempts":4,"reason":"server_error: The server had an error while processing your request. Sorry about that!"`, a10Text, `"stop_reason":"max_output_tokens"`}, nil, 0},
		{"A10", "stream-error@0:chunk=2,code=rate_limit_exceeded,recover=true", 0, []string{`"retry","attempt":2,"max_attempts":4,"reason":"rate_limit_exceeded: Rate limit reached for requests"`, a10Text}, nil, 0},
		{"A10", "stream-error@0:chunk=9", 1, []string{`"token","text":" of"`, `"error","message":"server_error: The server had an error while processing your request. Sorry about that!"`, `"done","stop_reason":"error"`}, []string{`"retry"`, "message_done"}, 0},
		{"A10", "truncate@0:chunk=9", 0, []string{`"message_done","text":"In the bustling city of"`, "stream ended before response.completed", `"done","stop_reason":"truncated"`}, []string{`"retry"`}, 0},
		{"A10", "truncate@0:chunk=2,recover=true", 0, []string{`"retry"`, "stream ended before response.completed", a10Text}, nil, 0},
		{"plain", "truncate@0:event=5", 0, []string{`"token","text":"Hello from "`, `"message_done","text":"Hello from "`, "stream ended before response.completed, after 5 events", `"done","stop_reason":"truncated"`}, []string{`"retry"`, "the Responses API."}, 0},
		{"plain", "truncate@0:event=2,recover=true", 0, []string{`"retry"`, "after 2 events (last response.in_progress)", plainText, `"stop_reason":"completed"`}, nil, 0},
		{"plain", "stream-error@0:event=5", 1, []string{`"token","text":"Hello from "`, `"error","message":"server_error: `, `"done","stop_reason":"error"`}, []string{`"retry"`, "message_done"}, 0},
		{"plain", "stream-error@0:event=4,code=rate_limit_exceeded,recover=true", 0, []string{`"retry","attempt":2,"max_attempts":4,"reason":"rate_limit_exceeded: `, plainText}, nil, 0},
		{"A8", "503@1", 0, []string{`"tool_end","call_id":"call_ZckkKeJQwcJPC27VXT61xFLf","ok":true,"output":"5"`, `"output":"6"`, `"retry"`, "HTTP 503", a8Text, `"stop_reason":"completed"`}, nil, 2},
		{"A8", "stream-error@0:chunk=6,recover=true", 0, []string{`"retry"`, "server_error", `"tool_start","call_id":"call_ZckkKeJQwcJPC27VXT61xFLf","name":"add"`, `"tool_start","call_id":"call_M9h2AZgoLEv6q5gkex1QMtm2","name":"multiply"`, a8Text}, nil, 2},
		{"A8", "stream-error@1:chunk=10", 1, []string{`"output":"6"`, `"error","message":"server_error`, `"done","stop_reason":"error"`}, []string{`"retry"`, "message_done"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.rec+" "+tt.op, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "injected.yaml")
			if _, stderr, code := runCLI(t, "", "cassette", "inject", src[tt.rec], out, "--op", tt.op); code != 0 {
				t.Fatalf("inject: exit %d: %s", code, stderr)
			}
			transcript, stderr, code := runCLI(t, "", "replay", out)
			checkWire(t, transcript)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, stderr)
			}
			rest := transcript
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Errorf("the transcript lacks %s (in this order)", w)
					continue
				}
				rest = rest[i+len(w):]
			}
			for _, w := range tt.not {
				if strings.Contains(transcript, w) {
					t.Errorf("the transcript has %s", w)
				}
			}
			if n := strings.Count(transcript, `"type":"tool_start"`); n != tt.calls {
				t.Errorf("%d tool_start lines, want %d", n, tt.calls)
			}
			if t.Failed() {
				t.Logf("transcript:\n%sstderr:\n%s", transcript, stderr)
			}
		})
	}
}

// TestResponsesSweep: `openmax cassette sweep` over the imported A8 and
// A10 replays every kind of fault through the engine, in-stream failures
// as response.failed, and no variant breaks an invariant; the raw A10
// sweeps too, converted in memory.
func TestResponsesSweep(t *testing.T) {
	dir := t.TempDir()
	importInto(t, realA8, dir, "A8.yaml")
	importInto(t, realA10, dir, "A10.yaml")
	table, stderr, code := runCLI(t, "", "cassette", "sweep", dir, "--max-variants", "80")
	if code != 0 || !strings.Contains(stderr, "0 failed") {
		t.Fatalf("sweep: exit %d\n%s%s", code, table, stderr)
	}
	for _, row := range []string{"A8.yaml", "A10.yaml", "stream-error@0:chunk=0", "truncate@1:chunk=", "reset@0:byte=", "429@1", "529@0"} {
		if !strings.Contains(table, row) {
			t.Errorf("the table has no row with %s:\n%s", row, table)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("the sweep wrote into the folder: %v", entries)
	}

	// A raw recording sweeps as the other cassette commands read it:
	// converted in memory, which one stderr line says.
	raw := fixture.Real(t, realA10)
	table, stderr, code = runCLI(t, "", "cassette", "sweep", raw, "--max-variants", "20")
	if code != 0 || !strings.Contains(stderr, "0 failed") || len(noteLines(stderr)) != 1 ||
		!strings.HasPrefix(noteLines(stderr)[0], "openmax cassette sweep: "+raw+": a vcrpy recording") ||
		!strings.Contains(table, realA10+"  stream-error@0:chunk=") {
		t.Errorf("sweep of the raw A10: exit %d\n%s%s", code, table, stderr)
	}
}
