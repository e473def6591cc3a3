package main

// The recordings loadscale loads: what `openmax record` writes for long
// agent sessions against the OpenAI Chat Completions API, generated here
// offline and written interaction by interaction in the recorder's final
// layout (cassette.EncodeInteraction, the text Close writes).

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"time"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/openmax/openmax/core/runconfig"
	"github.com/openmax/openmax/recorder/cassette"
)

const model = "gpt-4o-mini-2024-07-18"

// words are the tokens the generated replies are made of.
var words = strings.Fields(`the function returns an error when the file is missing so the caller
	should check it before reading we can add a test that writes a temporary file and reads it back
	here is the change to main.go it keeps the old behaviour for existing users while the new flag
	enables the faster path I ran the tests and they pass on Linux and macOS let me know if you want
	the benchmark numbers as well`)

// toolsJSON is the tools array every request carries, as a harness sends
// it (names, descriptions, JSON schemas).
var toolsJSON = func() json.RawMessage {
	var tools []any
	for _, name := range []string{"read_file", "list_files", "search", "write_file", "edit_file", "run_command"} {
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{
			"name":        name,
			"description": "Tool " + name + ": " + strings.Repeat("it works on the project's files, relative to the project root; paths outside it are refused. ", 4),
			"parameters": map[string]any{"type": "object", "properties": map[string]any{
				"path":    map[string]any{"type": "string", "description": "The file, relative to the project root."},
				"pattern": map[string]any{"type": "string", "description": "A glob or regular expression, depending on the tool."},
				"limit":   map[string]any{"type": "integer", "minimum": 1, "description": "The most lines or matches to show."},
			}, "required": []string{"path"}, "additionalProperties": false},
		}})
	}
	b, _ := json.Marshal(tools)
	return b
}()

var systemPrompt = "You are a coding agent working in the user's project. " + strings.Repeat("Read files before changing them, keep changes small, run the tests after each change and report what you did. ", 12)

// gen makes the interactions of a recording, one session after another,
// deterministically from its seed.
type gen struct {
	rng      *rand.Rand
	n        int   // interactions made
	messages []any // the conversation of the current session
	commands []cassette.Command
	results  []cassette.ToolResult
	turn     int
	start    time.Duration
}

func newGen() *gen { return &gen{rng: rand.New(rand.NewPCG(1, 2))} }

// text is n words of reply text.
func (g *gen) text(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[g.rng.IntN(len(words))])
	}
	return b.String()
}

// event is one server-sent event of a chat.completion.chunk.
func event(id string, delta map[string]any, finish any, usage any) string {
	m := map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1767225600, "model": model,
		"system_fingerprint": "fp_0ba0d124f1", "choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}}
	if usage != nil {
		m["usage"], m["choices"] = usage, []any{}
	}
	b, _ := json.Marshal(m)
	return "data: " + string(b) + "\n\n"
}

// reply is the events of one streamed reply: tokens words of text, or a
// tool call whose arguments stream in pieces of argBytes.
func (g *gen) reply(id string, tokens int, tool bool, argBytes int) (events []string, text string) {
	events = append(events, event(id, map[string]any{"role": "assistant", "content": ""}, nil, nil))
	if tool {
		call := fmt.Sprintf("call_%08x", g.rng.Uint32())
		events = append(events, event(id, map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": call, "type": "function",
			"function": map[string]any{"name": "write_file", "arguments": ""}}}}, nil, nil))
		for range tokens {
			events = append(events, event(id, map[string]any{"tool_calls": []any{map[string]any{"index": 0,
				"function": map[string]any{"arguments": g.text(argBytes / 6)}}}}, nil, nil))
		}
		events = append(events, event(id, map[string]any{}, "tool_calls", nil))
		text = "(tool call " + call + ")"
	} else {
		var b strings.Builder
		for i := range tokens {
			w := " " + words[g.rng.IntN(len(words))]
			if i == 0 {
				w = w[1:]
			}
			b.WriteString(w)
			events = append(events, event(id, map[string]any{"content": w}, nil, nil))
		}
		events = append(events, event(id, map[string]any{}, "stop", nil))
		text = b.String()
	}
	events = append(events, event(id, nil, nil, map[string]any{"prompt_tokens": 1000 + g.rng.IntN(20000), "completion_tokens": tokens, "total_tokens": 30000}),
		"data: [DONE]\n\n")
	return events, text
}

// interaction is the next recorded exchange: a request carrying the
// session's conversation so far, and its streamed reply in the chunks it
// arrived in. tokens sets the reply's length; huge replies stream tool
// call arguments of argBytes per event when argBytes > 0.
func (g *gen) interaction(tokens, argBytes int) *cassette.Interaction {
	g.n++
	if len(g.messages) == 0 || len(g.messages) > 24 {
		// A new user turn of a new session-sized conversation.
		g.messages = []any{map[string]any{"role": "system", "content": systemPrompt}}
	}
	if g.rng.IntN(3) == 0 || len(g.messages) == 1 {
		line := fmt.Sprintf(`{"cmd":"user","text":%q}`, g.text(8+g.rng.IntN(30)))
		g.commands = append(g.commands, cassette.Command{Line: line, Anchor: cassette.Anchor{Turn: g.turn, After: "done"}})
		g.turn++
		g.messages = append(g.messages, map[string]any{"role": "user", "content": g.text(8 + g.rng.IntN(30))})
	}
	body, _ := json.Marshal(map[string]any{"model": "gpt-4o-mini", "messages": g.messages, "tools": toolsJSON,
		"stream": true, "stream_options": map[string]any{"include_usage": true}})

	id := fmt.Sprintf("chatcmpl-%016x", g.rng.Uint64())
	tool := argBytes > 0 || g.rng.IntN(4) == 0
	if argBytes == 0 {
		argBytes = 12
	}
	events, text := g.reply(id, tokens, tool, argBytes)
	if tool {
		output := g.text(50 + g.rng.IntN(400))
		g.results = append(g.results, cassette.ToolResult{Name: "write_file", Args: `{"path":"main.go"}`, OK: true, Output: output})
		g.messages = append(g.messages, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "call", "type": "function",
			"function": map[string]any{"name": "write_file", "arguments": `{"path":"main.go"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": "call", "content": output})
	} else {
		g.messages = append(g.messages, map[string]any{"role": "assistant", "content": text})
	}

	// The events as they arrived: one to four to a read, a few
	// milliseconds apart, after some time to the first token.
	var chunks []cassette.Chunk
	var all strings.Builder
	at := time.Duration(300+g.rng.IntN(600)) * time.Millisecond
	for i := 0; i < len(events); {
		k := min(1+g.rng.IntN(4), len(events)-i)
		data := strings.Join(events[i:i+k], "")
		all.WriteString(data)
		chunks = append(chunks, cassette.Chunk{At: at, Data: data})
		at += time.Duration(5+g.rng.IntN(35)) * time.Millisecond
		i += k
	}
	g.start += at + time.Duration(g.rng.IntN(3000))*time.Millisecond

	it := &cassette.Interaction{
		Request: vcr.Request{Method: "POST", URL: "https://api.openai.com/v1/chat/completions", Body: string(body), Form: map[string][]string{},
			Headers: http.Header{"Authorization": {"[scrubbed]"}, "Content-Type": {"application/json"}, "Accept": {"application/json"},
				"User-Agent": {"openmax/0.9 (linux; amd64)"}, "X-Stainless-Retry-Count": {"0"}}},
		Response: vcr.Response{Body: all.String(), Status: "200 OK", Code: 200, Duration: at,
			Headers: http.Header{
				"Content-Type": {"text/event-stream; charset=utf-8"}, "Date": {"Thu, 01 Jan 2026 00:00:00 GMT"},
				"Access-Control-Expose-Headers": {"X-Request-ID"}, "Openai-Organization": {"user-abc123"},
				"Openai-Processing-Ms": {fmt.Sprint(200 + g.rng.IntN(900))}, "Openai-Project": {"proj_abc123"}, "Openai-Version": {"2020-10-01"},
				"X-Ratelimit-Limit-Requests": {"10000"}, "X-Ratelimit-Limit-Tokens": {"10000000"},
				"X-Ratelimit-Remaining-Requests": {"9999"}, "X-Ratelimit-Remaining-Tokens": {fmt.Sprint(9990000 + g.rng.IntN(9999))},
				"X-Ratelimit-Reset-Requests": {"6ms"}, "X-Ratelimit-Reset-Tokens": {"0s"},
				"X-Request-Id": {fmt.Sprintf("req_%032x", g.rng.Uint64())}, "Strict-Transport-Security": {"max-age=31536000; includeSubDomains; preload"},
				"Cf-Cache-Status": {"DYNAMIC"}, "Set-Cookie": {"[scrubbed]", "[scrubbed]"}, "X-Content-Type-Options": {"nosniff"},
				"Server": {"cloudflare"}, "Cf-Ray": {fmt.Sprintf("%016x-AMS", g.rng.Uint64())}, "Alt-Svc": {`h3=":443"; ma=86400`},
			}},
		Stream: &cassette.Stream{Start: g.start, Chunks: chunks},
	}
	return it
}

// session is the recording's session: the client's commands, what the
// tool calls returned, and the configuration it ran with.
func (g *gen) session() *cassette.Session {
	cfg := runconfig.Defaults()
	cfg.Provider, cfg.Model, cfg.Project = "openai", "gpt-4o-mini", "/work/project"
	if len(g.commands) > 0 {
		g.commands[0].Anchor = cassette.Anchor{After: "hello", Nth: 1}
	}
	return &cassette.Session{SessionID: "s-loadscale", Seed: 42, Config: &cfg, Commands: g.commands, ToolResults: g.results,
		Tools: []cassette.Tool{{Name: "write_file", Description: "Create or replace a file of the project.", Schema: `{"type":"object"}`, Mutating: true}}}
}

// makeRecording writes a recording of about size bytes at path: many
// interactions of a few KiB to some hundred KiB, and two huge streamed
// replies (a long answer of small token events, and a tool call streaming
// large argument pieces), each about a tenth of the file. It returns the
// number of interactions.
func makeRecording(path string, size int64) (int, error) {
	fh, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(fh, 1<<20)
	w.WriteString("version: 1\ninteractions:\n")
	g := newGen()
	var written int64
	huge := []int64{size / 3, 2 * size / 3}
	for written < size-200<<10 {
		var it *cassette.Interaction
		switch {
		case len(huge) == 2 && written >= huge[0]:
			// A long answer: events of one token each.
			it = g.interaction(int(size/10/2/230), 0)
			huge = huge[1:]
		case len(huge) == 1 && written >= huge[0]:
			// A tool call writing a large file: argument pieces of 4 KiB.
			it = g.interaction(int(size/10/2/4300), 4096)
			huge = nil
		default:
			it = g.interaction(20+g.rng.IntN(250), 0)
		}
		text, err := cassette.EncodeInteraction(it)
		if err != nil {
			fh.Close()
			return 0, err
		}
		w.Write(text)
		written += int64(len(text))
	}
	plain, err := cassette.PlainText(nil, g.session())
	if err != nil {
		fh.Close()
		return 0, err
	}
	sess, ok := strings.CutPrefix(string(plain), "version: 1\ninteractions: []\n")
	if !ok {
		fh.Close()
		return 0, errors.New("cassette.PlainText has changed its layout")
	}
	w.WriteString(sess)
	if err := errors.Join(w.Flush(), fh.Close()); err != nil {
		return 0, err
	}
	return g.n, nil
}
