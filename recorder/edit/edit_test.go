package edit

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/replay"
)

// load reads a test cassette: frozen copies of library cassettes, so
// re-recording the library (whose chunking follows read timing) leaves
// these expectations alone.
func load(t *testing.T, name string) *cassette.File {
	t.Helper()
	f, err := cassette.Load(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func show(t *testing.T, f *cassette.File) string {
	t.Helper()
	var b bytes.Buffer
	if err := Show(&b, f); err != nil {
		t.Fatalf("Show: %v", err)
	}
	return b.String()
}

// hasLines checks that want are whole lines of out, in order.
func hasLines(t *testing.T, out string, want []string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	i := 0
	for _, w := range want {
		for i < len(lines) && lines[i] != w {
			i++
		}
		if i == len(lines) {
			t.Fatalf("the output lacks the line (or has it out of order):\n%s\n--- output:\n%s", w, out)
		}
		i++
	}
}

func TestShow(t *testing.T) {
	tests := []struct {
		file string
		want []string
	}{
		{"story.yaml", []string{
			"session s1, seed 3770822131028886252",
			"  args: --project / --provider openai --base-url http://127.0.0.1:46691/v1 --idle-timeout 0",
			"  tools: block, echo_args, crash",
			`  command 0 after line 1: {"cmd":"user","text":"What does record and replay give me?"}`,
			`  command 1 after line 9: {"cmd":"user","text":"You were cut off. Please continue."}`,
			"3 interactions",
			"#0 at +0s: POST /v1/chat/completions",
			`  request: 497 B, model gpt-4o-mini, stream, 1 message, last user "What does record and replay give me?"`,
			"  status: 429 Too Many Requests",
			"  header Content-Type: application/json",
			"  header Date: Thu, 01 Jan 2026 00:00:00 GMT",
			"  header Retry-After: 3",
			"  body: 149 B in 1 chunk",
			"  error: rate_limit_exceeded: Rate limit reached for gpt-4o-mini on requests per min",
			"  end: clean",
			"#1 at +3s: POST /v1/chat/completions",
			"  status: 200 OK",
			"  header Content-Type: text/event-stream; charset=utf-8",
			"  body: 835 B in 3 chunks",
			"  chunk 0 at +0s, 195 B: role assistant",
			`  chunk 1 at +0s, 200 B: text "Record and replay keeps "`,
			`  chunk 2 at +0s, 440 B: text "every byte of a provider's stream: the chunks, when they arrived, and how the connection"`,
			`  text: "Record and replay keeps every byte of a provider's stream: the chunks, when they arrived, and how the connection"`,
			"  signal: none (no completion signal)",
			"  end: clean",
			"#2 at +3s: POST /v1/chat/completions",
			`  request: 706 B, model gpt-4o-mini, stream, 3 messages, last user "You were cut off. Please continue."`,
			`  text: " ended. Replaying a cassette runs the real engine against that traffic, so retries and truncation happen exactly as they did, with no network and no key."`,
			"  finish: stop",
			"  signal: [DONE]",
			"  end: clean",
		}},
		{"three_refusals.yaml", []string{
			`  command 0 after line 1: {"cmd":"user","text":"Hello"}`,
			"3 interactions",
			"#0 at +0s: POST /v1/chat/completions",
			"  status: no response: refused at +0s: dial tcp 127.0.0.1:45939: connect: connection refused",
			"#1 at +1h0m0s: POST /v1/chat/completions",
			"  status: no response: refused at +0s: dial tcp 127.0.0.1:45939: connect: connection refused",
			"#2 at +2h0m0s: POST /v1/chat/completions",
			"  status: no response: refused at +0s: dial tcp 127.0.0.1:45939: connect: connection refused",
		}},
		{"reset_after_text.yaml", []string{
			"  status: 200 OK",
			`  text: "Partial answer"`,
			"  unterminated event: 65 B",
			"  signal: none (no completion signal)",
			"  end: reset at +0s: read tcp 127.0.0.1:40702->127.0.0.1:36735: read: connection reset by peer",
		}},
		{"429_retry_after_ms.yaml", []string{
			"  status: 429 Too Many Requests",
			"  header Retry-After-Ms: 1500",
			`  text: "After 1.5 seconds."`,
		}},
		{"anthropic_thinking.yaml", []string{
			"#0 at +0s: POST /v1/messages",
			`  text: "Hi!"`,
			`  thinking: "The user greets me; I greet back." (1 signature)`,
			"  finish: end_turn",
			"  signal: message_stop",
		}},
		{"anthropic_529.yaml", []string{
			"  status: 529 status code 529",
			"  error: overloaded_error: Overloaded",
			"  chunk 0 at +0s, 200 B: message_start",
			`  chunk 1 at +0s, 237 B: text block, text "Back."`,
			"  chunk 3 at +0s, 51 B: message_stop",
		}},
		{"openai_tool_round_trip.yaml", []string{
			`  tool result 0: echo_args {"path":"a.txt"} ok: {"path":"a.txt"}`,
			`  text: "Checking."`,
			`  tool call 0: echo_args {"path":"a.txt"} (call_1)`,
			`  tool call 1: echo_args {"path":"b.txt"} (call_2)`,
			"  finish: tool_calls",
			`  request: 872 B, model gpt-4o-mini, stream, 4 messages, last tool "{\"path\":\"b.txt\"}"`,
		}},
		{"anthropic_tool_round_trip.yaml", []string{
			`  tool call 0: echo_args {"path":"a.txt"} (toolu_1)`,
			"  finish: tool_use",
			"  end: cancel at +0s: closed by the client before the end",
		}},
		{"openai_error_frame_after_text.yaml", []string{
			`  text: "Partial"`,
			"  error event: server_error: The server had an error",
		}},
		{"overload_after_text.yaml", []string{
			"  error event: overloaded_error: Overloaded",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f := load(t, tt.file)
			out := show(t, f)
			hasLines(t, out, tt.want)
			if again := show(t, load(t, tt.file)); again != out {
				t.Fatalf("Show is not deterministic:\n%s\n---\n%s", out, again)
			}
		})
	}
	// Every cassette of the library shows.
	paths, _ := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	for _, p := range paths {
		show(t, load(t, filepath.Base(p)))
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestShowErrors(t *testing.T) {
	if err := Show(io.Discard, nil); err == nil {
		t.Fatal("Show(nil) succeeded")
	}
	if err := Show(failWriter{}, load(t, "story.yaml")); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Show to a failing writer: %v", err)
	}
}

func TestShowStock(t *testing.T) {
	f := &cassette.File{Version: cassette.FormatVersion, Interactions: []*cassette.Interaction{{
		Request:  vcr.Request{Method: "POST", URL: "https://api.anthropic.com/v1/messages"},
		Response: vcr.Response{Code: 200, Status: "200 OK", Duration: 2 * time.Second, Body: `{"content":[{"type":"text","text":"Whole"},{"type":"tool_use","id":"t1","name":"echo","input":{"a":1}}],"stop_reason":"tool_use"}`},
	}}}
	hasLines(t, show(t, f), []string{
		"#0: POST /v1/messages",
		"  body: 129 B in 1 chunk (recorded without chunk detail)",
		`  text: "Whole"`,
		`  tool call 0: echo {"a":1} (t1)`,
		"  finish: tool_use",
		"  end: clean",
	})
}

// client is a plain HTTP client replaying f.
func client(f *cassette.File) (*http.Client, *replay.Replayer) {
	r := replay.New(f, replay.Options{})
	return &http.Client{Transport: r}, r
}

// send sends interaction n's recorded request.
func send(t *testing.T, c *http.Client, it *cassette.Interaction) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(it.Request.Method, it.Request.URL, strings.NewReader(it.Request.Body))
	if err != nil {
		t.Fatal(err)
	}
	return c.Do(req)
}

// reads reads a body one Read at a time (the replay serves one chunk per
// Read), returning what each Read gave and the error that ended it (nil
// for io.EOF).
func reads(t *testing.T, body io.ReadCloser) ([]string, error) {
	t.Helper()
	defer body.Close()
	var out []string
	buf := make([]byte, 1<<20)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			out = append(out, string(buf[:n]))
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

func chunkData(it *cassette.Interaction) []string {
	var out []string
	for _, c := range it.Chunks() {
		out = append(out, c.Data)
	}
	return out
}

// synthetic is a one-interaction OpenAI stream whose chunks split events.
func synthetic() *cassette.File {
	chunks := []cassette.Chunk{
		{At: 0, Data: `data: {"choices":[{"index":0,"delta":{"content":"Hel`},
		{At: time.Second, Data: `lo"},"finish_reason":null}]}` + "\n\n" + `data: {"choices":[{"index":0,"delta":{"content":" world"},"finish_reason":null}]}` + "\n\n"},
		{At: 2 * time.Second, Data: `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"},
	}
	var body string
	for _, c := range chunks {
		body += c.Data
	}
	return &cassette.File{Version: cassette.FormatVersion, Interactions: []*cassette.Interaction{{
		Request: vcr.Request{Method: "POST", URL: "http://x/v1/chat/completions", Body: `{"model":"m","stream":true}`, Form: url.Values{}, Headers: http.Header{}},
		Response: vcr.Response{Code: 200, Status: "200 OK", Body: body,
			Headers: http.Header{"Content-Type": {"text/event-stream"}, "Content-Length": {"999"}}},
		Stream: &cassette.Stream{Start: 5 * time.Second, Chunks: chunks},
	}}}
}

// stock is a go-vcr interaction without the openmax member.
func stock() *cassette.File {
	return &cassette.File{Version: cassette.FormatVersion, Interactions: []*cassette.Interaction{{
		Request:  vcr.Request{Method: "POST", URL: "http://x/v1/chat/completions", Body: `{"model":"m"}`, Form: url.Values{}, Headers: http.Header{}},
		Response: vcr.Response{Code: 200, Status: "200 OK", Body: `{"choices":[{"message":{"content":"Whole answer"},"finish_reason":"stop"}]}`, Duration: time.Second},
	}}}
}

func TestInject(t *testing.T) {
	tests := []struct {
		name  string
		file  func(t *testing.T) *cassette.File
		op    string
		count int // interactions in the result
		// check replays the result; in is an untouched copy of the input.
		check func(t *testing.T, in, out *cassette.File)
	}{
		{
			name: "429 before a retried request", file: named("story.yaml"), op: "429@2:retry-after=5", count: 4,
			check: func(t *testing.T, in, out *cassette.File) {
				c, r := client(out)
				resp, err := send(t, c, in.Interactions[2])
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "5" {
					t.Fatalf("first answer: %d, Retry-After %q; want 429 with 5", resp.StatusCode, resp.Header.Get("Retry-After"))
				}
				if d := resp.Header.Get("Date"); d != "Thu, 01 Jan 2026 00:00:03 GMT" {
					t.Fatalf("Date %q, want the original response's", d)
				}
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Fatalf("Content-Type %q", ct)
				}
				var e struct {
					Error struct{ Message, Type, Code string }
				}
				body, _ := io.ReadAll(resp.Body)
				if err := json.Unmarshal(body, &e); err != nil || e.Error.Code != "rate_limit_exceeded" || e.Error.Message == "" {
					t.Fatalf("error body %s: %v", body, err)
				}
				resp, err = send(t, c, in.Interactions[2])
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(resp.Body)
				if err != nil || resp.StatusCode != 200 || string(got) != in.Interactions[2].Response.Body {
					t.Fatalf("the retry got %d (%v), not the original response", resp.StatusCode, err)
				}
				if u := r.Unused(); !reflect.DeepEqual(u, []int{0, 1}) {
					t.Fatalf("unused %v, want [0 1]", u)
				}
			},
		},
		{
			name: "429 with retry-after-ms and an HTTP-date", file: named("openai_plain.yaml"),
			op: "429@0:retry-after=Thu, 01 Jan 2026 00:00:07 GMT,retry-after-ms=1500", count: 2,
			check: func(t *testing.T, in, out *cassette.File) {
				c, _ := client(out)
				resp, err := send(t, c, in.Interactions[0])
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "Thu, 01 Jan 2026 00:00:07 GMT" || resp.Header.Get("Retry-After-Ms") != "1500" {
					t.Fatalf("got %d %v", resp.StatusCode, resp.Header)
				}
				hasLines(t, show(t, out), []string{
					"#0 at +0s: POST /v1/chat/completions",
					"  status: 429 Too Many Requests",
					"  header Retry-After: Thu, 01 Jan 2026 00:00:07 GMT",
					"  header Retry-After-Ms: 1500",
					"  header X-Openmax-Injected: 429@0:retry-after=Thu, 01 Jan 2026 00:00:07 GMT,retry-after-ms=1500",
					"  error: requests, code rate_limit_exceeded: Rate limit reached for requests",
					"#1 at +0s: POST /v1/chat/completions",
					"  status: 200 OK",
				})
			},
		},
		{
			name: "529 on the Anthropic wire", file: named("anthropic_plain.yaml"), op: "529@0", count: 2,
			check: func(t *testing.T, in, out *cassette.File) {
				c, _ := client(out)
				resp, err := send(t, c, in.Interactions[0])
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != 529 || resp.Header.Get("Retry-After") != "" {
					t.Fatalf("got %d %v", resp.StatusCode, resp.Header)
				}
				if want := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`; string(body) != want {
					t.Fatalf("body %s, want %s", body, want)
				}
				resp, err = send(t, c, in.Interactions[0])
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("the retry: %v", err)
				}
				resp.Body.Close()
			},
		},
		{
			name: "503 on the OpenAI wire", file: named("story.yaml"), op: "503@1:retry-after=2", count: 4,
			check: func(t *testing.T, in, out *cassette.File) {
				c, _ := client(out)
				// Interactions 0 and 1 share a request: the recorded 429
				// comes first, then the injected 503, then the original.
				var codes []int
				for range 3 {
					resp, err := send(t, c, in.Interactions[1])
					if err != nil {
						t.Fatal(err)
					}
					body, _ := io.ReadAll(resp.Body)
					codes = append(codes, resp.StatusCode)
					if resp.StatusCode == 503 && (!strings.Contains(string(body), `"type":"server_error"`) || resp.Header.Get("Retry-After") != "2") {
						t.Fatalf("503 body %s, headers %v", body, resp.Header)
					}
				}
				if !reflect.DeepEqual(codes, []int{429, 503, 200}) {
					t.Fatalf("statuses %v, want [429 503 200]", codes)
				}
			},
		},
		{
			name: "500 before a refused request", file: named("three_refusals.yaml"), op: "500@1", count: 4,
			check: func(t *testing.T, in, out *cassette.File) {
				if _, ok := out.Interactions[1].Response.Headers["Date"]; ok {
					t.Fatal("a Date header came from nowhere")
				}
				if out.Interactions[1].Stream.Start != time.Hour {
					t.Fatalf("start %v, want the original's 1h", out.Interactions[1].Stream.Start)
				}
				c, _ := client(out)
				if _, err := send(t, c, in.Interactions[0]); !errors.Is(err, syscall.ECONNREFUSED) {
					t.Fatalf("first: %v", err)
				}
				resp, err := send(t, c, in.Interactions[0])
				if err != nil || resp.StatusCode != 500 {
					t.Fatalf("second: %v", err)
				}
				resp.Body.Close()
				if _, err := send(t, c, in.Interactions[0]); !errors.Is(err, syscall.ECONNREFUSED) {
					t.Fatalf("third: %v", err)
				}
			},
		},
		{
			name: "truncate after 2 chunks", file: named("story.yaml"), op: "truncate@1:chunk=2", count: 3,
			check: func(t *testing.T, in, out *cassette.File) {
				c, _ := client(out)
				send(t, c, in.Interactions[0]) //nolint:errcheck // the recorded 429
				resp, err := send(t, c, in.Interactions[1])
				if err != nil {
					t.Fatal(err)
				}
				got, err := reads(t, resp.Body)
				if err != nil {
					t.Fatalf("the body failed: %v", err)
				}
				if want := chunkData(in.Interactions[1])[:2]; !reflect.DeepEqual(got, want) {
					t.Fatalf("reads %q, want the first 2 chunks %q", got, want)
				}
				if out.Interactions[1].Stream.Error != nil {
					t.Fatal("a truncated body has a terminal error")
				}
			},
		},
		{
			name: "truncate removes a recorded error", file: named("reset_after_text.yaml"), op: "truncate@0:chunk=0", count: 1,
			check: func(t *testing.T, in, out *cassette.File) {
				c, _ := client(out)
				resp, err := send(t, c, in.Interactions[0])
				if err != nil {
					t.Fatal(err)
				}
				got, err := reads(t, resp.Body)
				if err != nil || len(got) != 0 {
					t.Fatalf("reads %q, %v; want an empty body", got, err)
				}
				if out.Interactions[0].Response.Body != "" || out.Interactions[0].Stream.Chunks != nil {
					t.Fatal("the body is not empty")
				}
			},
		},
		{
			name: "truncate fixes Content-Length", file: synthetic1, op: "truncate@0:chunk=2", count: 1,
			check: func(t *testing.T, in, out *cassette.File) {
				it := out.Interactions[0]
				if cl := it.Response.Headers.Get("Content-Length"); cl != "165" || len(it.Response.Body) != 165 {
					t.Fatalf("Content-Length %s for %d B", cl, len(it.Response.Body))
				}
			},
		},
		{
			name: "reset in the middle of a chunk", file: named("story.yaml"), op: "reset@1:byte=300", count: 3,
			check: func(t *testing.T, in, out *cassette.File) {
				c, _ := client(out)
				send(t, c, in.Interactions[0]) //nolint:errcheck // the recorded 429
				resp, err := send(t, c, in.Interactions[1])
				if err != nil {
					t.Fatal(err)
				}
				got, err := reads(t, resp.Body)
				if !errors.Is(err, syscall.ECONNRESET) {
					t.Fatalf("the body ended with %v, want a reset", err)
				}
				all := strings.Join(got, "")
				if len(all) != 300 || all != in.Interactions[1].Response.Body[:300] {
					t.Fatalf("read %d B before the reset, want the first 300", len(all))
				}
				if len(got) != 2 || len(got[0]) != 195 || len(got[1]) != 105 {
					t.Fatalf("reads of %d chunks, want 195 + 105 B", len(got))
				}
				hasLines(t, show(t, out), []string{
					"  body: 300 B in 2 chunks",
					"  end: reset at +0s: read: connection reset by peer (injected after 300 B)",
				})
			},
		},
		{
			name: "reset at a chunk boundary", file: synthetic1, op: "reset@0:byte=165", count: 1,
			check: func(t *testing.T, in, out *cassette.File) {
				s := out.Interactions[0].Stream
				if len(s.Chunks) != 2 || s.Error == nil || s.Error.At != 2*time.Second {
					t.Fatalf("stream %+v, want 2 chunks and a reset when chunk 2 was due", s)
				}
				if cl := out.Interactions[0].Response.Headers.Get("Content-Length"); cl != "999" {
					t.Fatalf("a reset changed Content-Length to %s", cl)
				}
				c, _ := client(out)
				resp, err := send(t, c, in.Interactions[0])
				if err != nil {
					t.Fatal(err)
				}
				got, err := reads(t, resp.Body)
				if !errors.Is(err, syscall.ECONNRESET) || len(strings.Join(got, "")) != 165 {
					t.Fatalf("got %d B then %v", len(strings.Join(got, "")), err)
				}
			},
		},
		{
			name: "reset before any byte", file: named("openai_plain.yaml"), op: "reset@0:byte=0", count: 1,
			check: func(t *testing.T, in, out *cassette.File) {
				c, _ := client(out)
				resp, err := send(t, c, in.Interactions[0])
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("headers: %v", err)
				}
				got, err := reads(t, resp.Body)
				if !errors.Is(err, syscall.ECONNRESET) || len(got) != 0 {
					t.Fatalf("got %q then %v", got, err)
				}
			},
		},
		{
			name: "reset after the whole body", file: synthetic1, op: "reset@0:byte=246", count: 1,
			check: func(t *testing.T, in, out *cassette.File) {
				s := out.Interactions[0].Stream
				if len(s.Chunks) != 3 || s.Error == nil || s.Error.At != 2*time.Second {
					t.Fatalf("stream %+v", s)
				}
			},
		},
		{
			name: "reset of a stock go-vcr body", file: func(*testing.T) *cassette.File { return stock() }, op: "reset@0:byte=10", count: 1,
			check: func(t *testing.T, in, out *cassette.File) {
				s := out.Interactions[0].Stream
				if s == nil || len(s.Chunks) != 1 || s.Chunks[0].At != time.Second || s.Error.At != time.Second {
					t.Fatalf("stream %+v", s)
				}
				c, _ := client(out)
				resp, err := send(t, c, in.Interactions[0])
				if err != nil {
					t.Fatal(err)
				}
				got, err := reads(t, resp.Body)
				if !errors.Is(err, syscall.ECONNRESET) || strings.Join(got, "") != `{"choices"` {
					t.Fatalf("got %q then %v", got, err)
				}
			},
		},
		{
			name: "OpenAI stream error", file: named("story.yaml"), op: "stream-error@1:chunk=1", count: 3,
			check: func(t *testing.T, in, out *cassette.File) {
				c, _ := client(out)
				send(t, c, in.Interactions[0]) //nolint:errcheck // the recorded 429
				resp, err := send(t, c, in.Interactions[1])
				if err != nil {
					t.Fatal(err)
				}
				got, err := reads(t, resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != 2 || got[0] != chunkData(in.Interactions[1])[0] {
					t.Fatalf("reads %q, want chunk 0 then the error event", got)
				}
				if !strings.HasPrefix(got[1], `data: {"error":{"message":`) || !strings.HasSuffix(got[1], "}}\n\n") {
					t.Fatalf("chunk 1 is %q, not an OpenAI error event", got[1])
				}
				hasLines(t, show(t, out), []string{
					"  error event: server_error: The server had an error while processing your request. Sorry about that!",
					"  signal: none (no completion signal)",
					"  end: clean",
				})
			},
		},
		{
			name: "Anthropic stream error", file: named("anthropic_529.yaml"), op: "stream_error@1:chunk=2", count: 2,
			check: func(t *testing.T, in, out *cassette.File) {
				c, _ := client(out)
				send(t, c, in.Interactions[0]) //nolint:errcheck // the recorded 529
				resp, err := send(t, c, in.Interactions[1])
				if err != nil {
					t.Fatal(err)
				}
				got, err := reads(t, resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				want := append(chunkData(in.Interactions[1])[:2],
					"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n")
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("reads %q, want %q", got, want)
				}
				hasLines(t, show(t, out), []string{`  text: "Back."`, "  error event: overloaded_error: Overloaded"})
			},
		},
		{
			name: "stream error after a chunk that ends mid-event", file: synthetic1, op: "stream-error@0:chunk=1", count: 1,
			check: func(t *testing.T, in, out *cassette.File) {
				s := out.Interactions[0].Stream
				if len(s.Chunks) != 2 || s.Chunks[1].At != time.Second || !strings.HasPrefix(s.Chunks[1].Data, `lo"},"finish_reason":null}]}`+"\n\ndata: {\"error\"") {
					t.Fatalf("chunks %q", s.Chunks)
				}
				r := reconstruct(out.Interactions[0])
				if r.text.String() != "Hello" || len(r.errs) != 1 || r.unparsed != 0 || r.partial != 0 {
					t.Fatalf("text %q, errors %q, %d unparsed, %d B partial", r.text.String(), r.errs, r.unparsed, r.partial)
				}
			},
		},
		{
			name: "stream error replacing the first chunk", file: synthetic1, op: "stream-error@0:chunk=0", count: 1,
			check: func(t *testing.T, in, out *cassette.File) {
				s := out.Interactions[0].Stream
				if len(s.Chunks) != 1 || !strings.HasPrefix(s.Chunks[0].Data, `data: {"error"`) {
					t.Fatalf("chunks %q", s.Chunks)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op, err := ParseOp(tt.op)
			if err != nil {
				t.Fatal(err)
			}
			f := tt.file(t)
			in := tt.file(t) // an independent copy, to compare with
			before, err := f.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			out, err := Inject(f, op)
			if err != nil {
				t.Fatalf("Inject: %v", err)
			}
			// The input is unchanged.
			if !reflect.DeepEqual(f, in) {
				t.Fatal("Inject changed its input")
			}
			if after, _ := f.Marshal(); !bytes.Equal(before, after) {
				t.Fatal("Inject changed its input's encoding")
			}
			if len(out.Interactions) != tt.count {
				t.Fatalf("%d interactions, want %d", len(out.Interactions), tt.count)
			}
			if !reflect.DeepEqual(out.Session, in.Session) {
				t.Fatal("the session changed")
			}
			// The result round-trips.
			data, err := out.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			back, err := cassette.Parse(data)
			if err != nil {
				t.Fatalf("the result does not parse: %v", err)
			}
			if !reflect.DeepEqual(back, out) {
				t.Fatalf("the result does not round-trip:\n%s", data)
			}
			// Every body is its chunks, and the edit is marked.
			marked := 0
			for i, it := range out.Interactions {
				if it.Stream != nil && len(it.Stream.Chunks) > 0 && it.Body() != it.Response.Body {
					t.Fatalf("interaction %d: body and chunks differ", i)
				}
				if it.Response.Headers.Get(InjectedHeader) == op.String() {
					marked++
				}
			}
			if marked != 1 {
				t.Fatalf("%d interactions marked with %s", marked, InjectedHeader)
			}
			tt.check(t, in, out)
			// The result shares nothing with the input.
			for _, it := range out.Interactions {
				it.Request.Body = "changed"
				if it.Request.Headers != nil {
					it.Request.Headers["X-Changed"] = []string{"1"}
				}
				for k := range it.Response.Headers {
					it.Response.Headers[k][0] = "changed"
				}
				if it.Stream != nil {
					for j := range it.Stream.Chunks {
						it.Stream.Chunks[j].Data = "changed"
					}
					if it.Stream.Error != nil {
						it.Stream.Error.Message = "changed"
					}
				}
			}
			if out.Session != nil && len(out.Session.Commands) > 0 {
				out.Session.Commands[0].Line = "changed"
			}
			if !reflect.DeepEqual(f, in) {
				t.Fatal("changing the result changed the input")
			}
		})
	}
}

func named(name string) func(*testing.T) *cassette.File {
	return func(t *testing.T) *cassette.File { return load(t, name) }
}

func synthetic1(*testing.T) *cassette.File { return synthetic() }

func TestInjectErrors(t *testing.T) {
	tests := []struct {
		name string
		file string
		op   Op
		want string
	}{
		{"before past the end", "story.yaml", Op{Kind: KindRateLimit, Before: 3}, "before=3: the cassette has 3 interactions (0..2)"},
		{"interaction past the end", "story.yaml", Op{Kind: KindTruncate, Interaction: 7}, "interaction 7: the cassette has 3 interactions"},
		{"chunk past the end", "story.yaml", Op{Kind: KindTruncate, Interaction: 1, Chunk: 3}, "chunk=3: interaction 1 has 3 chunks (0..2)"},
		{"byte past the end", "story.yaml", Op{Kind: KindReset, Interaction: 1, Byte: 836}, "byte=836 is past the end of interaction 1's body (835 B)"},
		{"no response to cut", "three_refusals.yaml", Op{Kind: KindReset, Interaction: 0}, "interaction 0 got no response (refused)"},
		{"empty body", "reset_before_text.yaml", Op{Kind: KindTruncate, Interaction: 0}, "interaction 0 has an empty body"},
		{"stream error in JSON", "story.yaml", Op{Kind: KindStreamError, Interaction: 0}, "interaction 0 is not an event stream (Content-Type application/json)"},
		{"5xx without status", "story.yaml", Op{Kind: KindServerError}, "a 5xx op needs its status"},
		{"5xx with 418", "story.yaml", Op{Kind: KindServerError, Status: 418}, "cannot insert status 418"},
		{"429 with 500", "story.yaml", Op{Kind: KindRateLimit, Status: 500}, "a 429 op has status 429, not 500"},
		{"truncate with a byte", "story.yaml", Op{Kind: KindTruncate, Interaction: 1, Byte: 4}, "a truncate op does not use Byte"},
		{"reset with a chunk", "story.yaml", Op{Kind: KindReset, Interaction: 1, Chunk: 4, RetryAfter: "1"}, "a reset op does not use RetryAfter, Chunk"},
		{"429 with an interaction", "story.yaml", Op{Kind: KindRateLimit, Interaction: 1}, "a 429 op does not use Interaction"},
		{"negative", "story.yaml", Op{Kind: KindReset, Interaction: 1, Byte: -1}, "byte -1 is negative"},
		{"unknown kind", "story.yaml", Op{Kind: "explode"}, `unknown op kind "explode"`},
		{"header injection", "story.yaml", Op{Kind: KindRateLimit, RetryAfter: "1\r\nX: y"}, "holds a control character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := load(t, tt.file)
			in := load(t, tt.file)
			_, err := Inject(f, tt.op)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Inject: %v, want an error containing %q", err, tt.want)
			}
			if !reflect.DeepEqual(f, in) {
				t.Fatal("a failed Inject changed its input")
			}
		})
	}
	if _, err := Inject(nil, Op{Kind: KindRateLimit}); err == nil {
		t.Fatal("Inject(nil) succeeded")
	}
}

func TestInjectSplitsRunes(t *testing.T) {
	f := synthetic()
	it := f.Interactions[0]
	it.Stream.Chunks = []cassette.Chunk{{Data: "data: {\"choices\":[{\"delta\":{\"content\":\"héllo\"}}]}\n\n"}}
	it.Response.Body = it.Stream.Chunks[0].Data
	// Byte 40 falls inside "é".
	out, err := Inject(f, Op{Kind: KindReset, Byte: 40})
	if err != nil {
		t.Fatal(err)
	}
	data, err := out.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := cassette.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Interactions[0].Response.Body; len(got) != 40 || got != it.Response.Body[:40] {
		t.Fatalf("body %q after a round trip", got)
	}
	show(t, back)
}

func TestClone(t *testing.T) {
	f := load(t, "openai_tool_round_trip.yaml")
	c := Clone(f)
	if !reflect.DeepEqual(c, f) {
		t.Fatal("the clone differs")
	}
	c.Interactions[0].Request.Headers["X"] = []string{"y"}
	c.Interactions[0].Response.Headers["Date"][0] = "changed"
	c.Interactions[0].Stream.Chunks[0].Data = "changed"
	c.Session.Commands[0].Line = "changed"
	c.Session.ToolResults[0].Output = "changed"
	c.Session.Args[0] = "changed"
	if !reflect.DeepEqual(f, load(t, "openai_tool_round_trip.yaml")) {
		t.Fatal("changing the clone changed the original")
	}
	if Clone(nil) != nil {
		t.Fatal("Clone(nil) is not nil")
	}
}

func TestParseOp(t *testing.T) {
	good := []struct {
		spec string
		want Op
		str  string // Op.String, when not spec
	}{
		{"429@2", Op{Kind: KindRateLimit, Status: 429, Before: 2}, ""},
		{"429@2:retry-after=5", Op{Kind: KindRateLimit, Status: 429, Before: 2, RetryAfter: "5"}, ""},
		{"429@0:retry-after-ms=1500", Op{Kind: KindRateLimit, Status: 429, RetryAfterMs: "1500"}, ""},
		{"429@0:retry-after=Thu, 01 Jan 2026 00:00:07 GMT", Op{Kind: KindRateLimit, Status: 429, RetryAfter: "Thu, 01 Jan 2026 00:00:07 GMT"}, ""},
		{"429@0:retry-after=Thu, 01 Jan 2026 00:00:07 GMT,retry-after-ms=250.5", Op{Kind: KindRateLimit, Status: 429, RetryAfter: "Thu, 01 Jan 2026 00:00:07 GMT", RetryAfterMs: "250.5"}, ""},
		{"429@1:retry-after=2026-01-01T01:00:07+01:00", Op{Kind: KindRateLimit, Status: 429, Before: 1, RetryAfter: "Thu, 01 Jan 2026 00:00:07 GMT"}, "429@1:retry-after=Thu, 01 Jan 2026 00:00:07 GMT"},
		{"429@1:retry-after=1.5", Op{Kind: KindRateLimit, Status: 429, Before: 1, RetryAfter: "1.5"}, ""},
		{"429@1:retry-after=007", Op{Kind: KindRateLimit, Status: 429, Before: 1, RetryAfter: "7"}, "429@1:retry-after=7"},
		{"529@0", Op{Kind: KindServerError, Status: 529}, ""},
		{"500@3", Op{Kind: KindServerError, Status: 500, Before: 3}, ""},
		{"502@1", Op{Kind: KindServerError, Status: 502, Before: 1}, ""},
		{"503@0:retry-after=2", Op{Kind: KindServerError, Status: 503, RetryAfter: "2"}, ""},
		{"504@0", Op{Kind: KindServerError, Status: 504}, ""},
		{"truncate@1:chunk=3", Op{Kind: KindTruncate, Interaction: 1, Chunk: 3}, ""},
		{"truncate@0:chunk=0", Op{Kind: KindTruncate}, ""},
		{"reset@1:byte=400", Op{Kind: KindReset, Interaction: 1, Byte: 400}, ""},
		{"stream-error@1:chunk=2", Op{Kind: KindStreamError, Interaction: 1, Chunk: 2}, ""},
		{"truncate@1:chunk=3,recover=true", Op{Kind: KindTruncate, Interaction: 1, Chunk: 3, Recover: true}, ""},
		{"reset@0:recover=1,byte=5", Op{Kind: KindReset, Byte: 5, Recover: true}, "reset@0:byte=5,recover=true"},
		{"stream-error@2:chunk=1,recover=false", Op{Kind: KindStreamError, Interaction: 2, Chunk: 1}, "stream-error@2:chunk=1"},
		{"stream_error@1:chunk=2", Op{Kind: KindStreamError, Interaction: 1, Chunk: 2}, "stream-error@1:chunk=2"},
		{"  Reset@ 4 : BYTE = 9 ", Op{Kind: KindReset, Interaction: 4, Byte: 9}, "reset@4:byte=9"},
		{"429@0: retry-after=1 , retry-after-ms=2", Op{Kind: KindRateLimit, Status: 429, RetryAfter: "1", RetryAfterMs: "2"}, "429@0:retry-after=1,retry-after-ms=2"},
	}
	for _, tt := range good {
		t.Run(tt.spec, func(t *testing.T) {
			op, err := ParseOp(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if op != tt.want {
				t.Fatalf("got %+v, want %+v", op, tt.want)
			}
			str := tt.str
			if str == "" {
				str = tt.spec
			}
			if op.String() != str {
				t.Fatalf("String %q, want %q", op.String(), str)
			}
			if again, err := ParseOp(op.String()); err != nil || again != op {
				t.Fatalf("String does not parse back: %+v, %v", again, err)
			}
			if err := op.check(); err != nil {
				t.Fatalf("a parsed op does not check: %v", err)
			}
		})
	}
	bad := []struct{ spec, want string }{
		{"", "empty fault"},
		{"   ", "empty fault"},
		{"429", "no @N naming the interaction"},
		{"@1", "no kind before @"},
		{"429@", "no interaction index after @"},
		{"429@-1", `interaction index "-1" is not a non-negative integer`},
		{"truncate@1:chunk=1,recover=maybe", "recover=maybe is not true or false"},
		{"429@1:recover=true", "429 does not take recover"},
		{"429@x", `interaction index "x" is not a non-negative integer`},
		{"429@1.5", `interaction index "1.5"`},
		{"418@0", "status 418 cannot be injected: use 429 or 500, 502, 503, 504 or 529"},
		{"5xx@0", "name the status: 500, 502, 503, 504 or 529"},
		{"explode@0", `unknown kind "explode"`},
		{"truncate@1", "truncate needs chunk=N (how many chunks to keep)"},
		{"stream-error@1", "stream-error needs chunk=N (the chunk the error event replaces)"},
		{"reset@1", "reset needs byte=N (how many bytes to keep before the reset)"},
		{"reset@1:", "nothing after ':'"},
		{"truncate@1:byte=3", "truncate does not take byte (it takes chunk, recover)"},
		{"reset@1:chunk=2", "reset does not take chunk (it takes byte, recover)"},
		{"529@0:chunk=1", "529 does not take chunk (it takes retry-after, retry-after-ms)"},
		{"429@0:bogus=1", "429 does not take bogus"},
		{"reset@1:byte=-1", "byte=-1 is not a non-negative integer"},
		{"reset@1:byte=abc", "byte=abc is not a non-negative integer"},
		{"truncate@1:chunk=1,chunk=2", "chunk given twice"},
		{"truncate@1:chunk", `option "chunk" is not KEY=VALUE`},
		{"truncate@1:chunk=", "chunk has no value"},
		{"truncate@1:=3", `option "=3" has no key`},
		{"429@0:retry-after=soon", "retry-after=soon is neither seconds nor a date"},
		{"429@0:retry-after=1e3", "retry-after=1e3 is neither seconds nor a date"},
		{"429@0:retry-after=-3", "retry-after=-3 is neither"},
		{"429@0:retry-after-ms=-1", "retry-after-ms=-1 is not a non-negative number"},
		{"429@0:retry-after-ms=NaN", "retry-after-ms=NaN is not a non-negative number"},
	}
	for _, tt := range bad {
		t.Run("bad "+tt.spec, func(t *testing.T) {
			op, err := ParseOp(tt.spec)
			if err == nil {
				t.Fatalf("accepted as %+v", op)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q, want it to say %q", err, tt.want)
			}
		})
	}
}
