//go:build sdkpeers

// The official SDKs are large (compiling them takes minutes on two cores),
// so these tests build only with -tags sdkpeers: the test command in
// README.md runs them in a separate step without -race, which shares the
// SDKs' build with go vet instead of compiling them twice.

package fake_test

// Peer tests: the fake must speak the real wires, so the official SDK
// streaming clients, pointed at it over loopback HTTP, must reconstruct
// exactly what our own clients (against an identical second server playing
// the same scenario) reconstruct, and both must match what the scenario
// scripted.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	openaisdk "github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/anthropic"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/fake"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/openai"
	"github.com/openmax/openmax/provider/openai/responses"
	"github.com/openmax/openmax/provider/script"
)

// peerTimeout bounds every exchange; nothing here waits on the wall clock
// otherwise (the fakes run on a fake clock and no scenario has a delay).
const peerTimeout = 10 * time.Second

var peerEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// reconstruction is what a client made of one streamed reply.
type reconstruction struct {
	Text     string
	Thinking []thinkingBlock
	Calls    []toolCall
	Finish   string
	Usage    usage
}

type thinkingBlock struct {
	Text      string
	Signature string
}

type toolCall struct {
	ID   string
	Name string
	// Args is the arguments re-encoded canonically (object keys sorted, no
	// spacing), so reflect.DeepEqual compares them as JSON values.
	Args string
}

type usage struct {
	Prompt     int // the whole prompt, cached part included
	Completion int
	Cached     int
	Reasoning  int // the part of Completion spent reasoning (Responses only)
}

// canonJSON re-encodes a JSON text canonically; invalid JSON is kept
// verbatim (behind a marker) so a mismatch still shows.
func canonJSON(t *testing.T, raw string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return "INVALID JSON: " + raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// peerServer serves yaml on loopback with a fake clock and returns its
// base URL; the server is closed at the end of the test.
func peerServer(t *testing.T, yaml string) (*fake.Server, string) {
	t.Helper()
	sc, err := script.Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("scenario: %v", err)
	}
	srv := fake.New(sc, fake.Options{Clock: clock.NewFake(peerEpoch)})
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("base URL %q is not loopback", base)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return srv, base
}

// loopbackClient is an HTTP client of its own (no proxy, no shared idle
// pool), its idle connections closed at the end of the test.
func loopbackClient(t *testing.T) *http.Client {
	tr := &http.Transport{Proxy: nil}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func peerContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), peerTimeout)
	t.Cleanup(cancel)
	return ctx
}

// --- the official SDKs ---

func openAISDK(t *testing.T, base string) openaisdk.Client {
	return openaisdk.NewClient(
		openaiopt.WithBaseURL(base+"/v1/"),
		openaiopt.WithAPIKey("sk-fake-peer"),
		openaiopt.WithHTTPClient(loopbackClient(t)),
		openaiopt.WithMaxRetries(0),
	)
}

func anthropicSDK(t *testing.T, base string) anthropicsdk.Client {
	return anthropicsdk.NewClient(
		anthropicopt.WithoutEnvironmentDefaults(),
		anthropicopt.WithBaseURL(base),
		anthropicopt.WithAPIKey("sk-ant-fake-peer"),
		anthropicopt.WithHTTPClient(loopbackClient(t)),
		anthropicopt.WithMaxRetries(0),
	)
}

func openAIParams() openaisdk.ChatCompletionNewParams {
	return openaisdk.ChatCompletionNewParams{
		Model:    "fake-gpt",
		Messages: []openaisdk.ChatCompletionMessageParamUnion{openaisdk.UserMessage("hi")},
	}
}

func anthropicParams() anthropicsdk.MessageNewParams {
	return anthropicsdk.MessageNewParams{
		Model:     "fake-claude",
		MaxTokens: 1024,
		Messages:  []anthropicsdk.MessageParam{anthropicsdk.NewUserMessage(anthropicsdk.NewTextBlock("hi"))},
	}
}

// viaOpenAISDK streams one reply with openai-go and its
// ChatCompletionAccumulator.
func viaOpenAISDK(t *testing.T, base string) reconstruction {
	t.Helper()
	client := openAISDK(t, base)
	stream := client.Chat.Completions.NewStreaming(peerContext(t), openAIParams())
	defer stream.Close()
	var acc openaisdk.ChatCompletionAccumulator
	var reasoning strings.Builder
	chunks := 0
	for stream.Next() {
		chunk := stream.Current()
		chunks++
		if !acc.AddChunk(chunk) {
			t.Fatalf("openai-go: the accumulator rejected chunk %d: %s", chunks, chunk.RawJSON())
		}
		// The SDK has no typed field for reasoning_content (a non-standard
		// field of OpenAI-compatible servers) and its accumulator drops it;
		// it does expose it as an extra field of each delta, which is what
		// is read here.
		for _, c := range chunk.Choices {
			if f, ok := c.Delta.JSON.ExtraFields["reasoning_content"]; ok && f.Raw() != "" && f.Raw() != "null" {
				var s string
				if err := json.Unmarshal([]byte(f.Raw()), &s); err != nil {
					t.Fatalf("openai-go: reasoning_content %s: %v", f.Raw(), err)
				}
				reasoning.WriteString(s)
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("openai-go: stream failed after %d chunks: %v", chunks, err)
	}
	if len(acc.Choices) != 1 {
		t.Fatalf("openai-go: %d choices accumulated, want 1", len(acc.Choices))
	}
	if acc.ID == "" || acc.Model != "fake-gpt" {
		t.Errorf("openai-go: accumulated id %q model %q", acc.ID, acc.Model)
	}
	ch := acc.Choices[0]
	if ch.Message.Role != "assistant" {
		t.Errorf("openai-go: role %q, want assistant", ch.Message.Role)
	}
	var r reconstruction
	r.Text = ch.Message.Content
	if reasoning.Len() > 0 {
		r.Thinking = []thinkingBlock{{Text: reasoning.String()}}
	}
	for _, tc := range ch.Message.ToolCalls {
		if tc.Type != "function" {
			t.Errorf("openai-go: tool call %s has type %q, want function", tc.ID, tc.Type)
		}
		r.Calls = append(r.Calls, toolCall{ID: tc.ID, Name: tc.Function.Name, Args: canonJSON(t, tc.Function.Arguments)})
	}
	r.Finish = ch.FinishReason
	r.Usage = usage{
		Prompt:     int(acc.Usage.PromptTokens),
		Completion: int(acc.Usage.CompletionTokens),
		Cached:     int(acc.Usage.PromptTokensDetails.CachedTokens),
	}
	return r
}

// viaAnthropicSDK streams one reply with anthropic-sdk-go and
// Message.Accumulate.
func viaAnthropicSDK(t *testing.T, base string) reconstruction {
	t.Helper()
	client := anthropicSDK(t, base)
	stream := client.Messages.NewStreaming(peerContext(t), anthropicParams())
	defer stream.Close()
	var msg anthropicsdk.Message
	events := 0
	for stream.Next() {
		events++
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatalf("anthropic-sdk-go: event %d (%s) does not accumulate: %v", events, stream.Current().Type, err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("anthropic-sdk-go: stream failed after %d events: %v", events, err)
	}
	if msg.ID == "" || msg.Model != "fake-claude" {
		t.Errorf("anthropic-sdk-go: accumulated id %q model %q", msg.ID, msg.Model)
	}
	var r reconstruction
	for i, b := range msg.Content {
		switch b.Type {
		case "text":
			r.Text += b.Text
		case "thinking":
			r.Thinking = append(r.Thinking, thinkingBlock{Text: b.Thinking, Signature: b.Signature})
		case "tool_use":
			r.Calls = append(r.Calls, toolCall{ID: b.ID, Name: b.Name, Args: canonJSON(t, string(b.Input))})
		default:
			t.Errorf("anthropic-sdk-go: content block %d has unexpected type %q", i, b.Type)
		}
	}
	r.Finish = string(msg.StopReason)
	r.Usage = usage{
		Prompt:     int(msg.Usage.InputTokens + msg.Usage.CacheReadInputTokens),
		Completion: int(msg.Usage.OutputTokens),
		Cached:     int(msg.Usage.CacheReadInputTokens),
	}
	return r
}

// --- our clients ---

func ourClient(t *testing.T, wire, base string) provider.Provider {
	t.Helper()
	hc := &httpx.Client{HTTP: loopbackClient(t), Clock: clock.NewFake(peerEpoch)}
	var (
		p   provider.Provider
		err error
	)
	switch wire {
	case openai.WireName:
		p, err = openai.New(openai.Config{APIKey: "sk-fake-peer", BaseURL: base + "/v1", Model: "fake-gpt", HTTP: hc})
	case anthropic.WireName:
		p, err = anthropic.New(anthropic.Config{APIKey: "sk-ant-fake-peer", BaseURL: base, Model: "fake-claude", HTTP: hc})
	case responses.WireName:
		p, err = responses.New(responses.Config{APIKey: "sk-fake-peer", BaseURL: base + "/v1", Model: "fake-gpt", HTTP: hc})
	default:
		t.Fatalf("unknown wire %q", wire)
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ourRequest() provider.Request {
	return provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}}
}

// viaOurs streams one reply with our client and rebuilds it from the parts.
// A thinking block is closed by its signature.
func viaOurs(t *testing.T, wire, base string) reconstruction {
	t.Helper()
	var r reconstruction
	open := false // the last thinking block can still grow
	finishes := 0
	for part := range ourClient(t, wire, base).Stream(peerContext(t), ourRequest()) {
		switch p := part.(type) {
		case provider.TextDelta:
			r.Text += p.Text
		case provider.ThinkingDelta:
			if !open {
				r.Thinking = append(r.Thinking, thinkingBlock{})
				open = true
			}
			b := &r.Thinking[len(r.Thinking)-1]
			b.Text += p.Text
			if p.Signature != "" {
				b.Signature += p.Signature
				open = false
			}
		case provider.ToolCallPart:
			r.Calls = append(r.Calls, toolCall{ID: p.Call.ID, Name: p.Call.Name, Args: canonJSON(t, string(p.Call.Args))})
		case provider.Usage:
			r.Usage = usage{Prompt: p.PromptTokens, Completion: p.CompletionTokens}
			if p.CachedTokens != nil {
				r.Usage.Cached = *p.CachedTokens
			}
			if p.ReasoningTokens != nil {
				r.Usage.Reasoning = *p.ReasoningTokens
			}
		case provider.Finish:
			r.Finish = p.Reason
			finishes++
		case provider.Error:
			t.Fatalf("our %s client: %v", wire, p.Err)
		case provider.Retry:
			t.Fatalf("our %s client retried: %+v", wire, p)
		}
	}
	if finishes != 1 {
		t.Fatalf("our %s client: %d finishes, want 1", wire, finishes)
	}
	return r
}

// --- the peer tests ---

const (
	argsRead = `{"path":"dir/a.txt","opts":{"lines":[1,20],"follow":true,"note":"<b> & \"q\" ✓"}}`
	argsRun  = `{"cmd":"ls -la","cwd":"/tmp","env":{"LANG":"C"}}`
)

func TestPeersStream(t *testing.T) {
	cases := []struct {
		name string
		wire string
		yaml string
		want reconstruction
	}{
		{
			name: "openai/text in chunks",
			wire: openai.WireName,
			yaml: `
replies:
  - chunks:
      - text: "Hel"
      - text: "lo, "
      - text: "wörld <&> \"quoted\"\n"
      - text: "bye."
      - usage: {prompt_tokens: 11, completion_tokens: 4}
      - finish: stop
`,
			want: reconstruction{Text: "Hello, wörld <&> \"quoted\"\nbye.", Finish: "stop", Usage: usage{Prompt: 11, Completion: 4}},
		},
		{
			name: "anthropic/text in chunks",
			wire: anthropic.WireName,
			yaml: `
replies:
  - chunks:
      - text: "Hel"
      - text: "lo, "
      - text: "wörld <&> \"quoted\"\n"
      - text: "bye."
      - usage: {prompt_tokens: 11, completion_tokens: 4}
      - finish: end_turn
`,
			want: reconstruction{Text: "Hello, wörld <&> \"quoted\"\nbye.", Finish: "end_turn", Usage: usage{Prompt: 11, Completion: 4}},
		},
		{
			// Each call goes out as a header chunk (index, id, type, name)
			// and then an arguments chunk; the scenario language cannot
			// split one call's arguments further.
			name: "openai/text and two parallel tool calls",
			wire: openai.WireName,
			yaml: `
replies:
  - chunks:
      - text: "Let me "
      - text: "look."
      - tool_call: {id: call_read, name: read_file, args_json: '` + argsRead + `'}
      - tool_call: {name: run, args_json: '` + argsRun + `'}
      - usage: {prompt_tokens: 30, completion_tokens: 12, cached_tokens: 8}
      - finish: tool_calls
`,
			want: reconstruction{
				Text: "Let me look.",
				Calls: []toolCall{
					{ID: "call_read", Name: "read_file", Args: argsRead},
					{ID: "call_1_4", Name: "run", Args: argsRun},
				},
				Finish: "tool_calls",
				Usage:  usage{Prompt: 30, Completion: 12, Cached: 8},
			},
		},
		{
			name: "anthropic/text and two parallel tool calls",
			wire: anthropic.WireName,
			yaml: `
replies:
  - chunks:
      - text: "Let me "
      - text: "look."
      - tool_call: {id: toolu_read, name: read_file, args_json: '` + argsRead + `'}
      - tool_call: {name: run, args_json: '` + argsRun + `'}
      - usage: {prompt_tokens: 30, completion_tokens: 12, cached_tokens: 8}
      - finish: tool_use
`,
			want: reconstruction{
				Text: "Let me look.",
				Calls: []toolCall{
					{ID: "toolu_read", Name: "read_file", Args: argsRead},
					{ID: "call_1_4", Name: "run", Args: argsRun},
				},
				Finish: "tool_use",
				Usage:  usage{Prompt: 30, Completion: 12, Cached: 8},
			},
		},
		{
			name: "anthropic/thinking, signature, text",
			wire: anthropic.WireName,
			yaml: `
replies:
  - chunks:
      - thinking: "Let me "
      - thinking: "think it through."
      - signature: "EqQBCkYIBxgCKkD+sig/abc=="
      - text: "The answer "
      - text: "is 42."
      - usage: {prompt_tokens: 9, completion_tokens: 20}
      - finish: end_turn
`,
			want: reconstruction{
				Text:     "The answer is 42.",
				Thinking: []thinkingBlock{{Text: "Let me think it through.", Signature: "EqQBCkYIBxgCKkD+sig/abc=="}},
				Finish:   "end_turn",
				Usage:    usage{Prompt: 9, Completion: 20},
			},
		},
		{
			name: "anthropic/interleaved thinking, text and a tool call",
			wire: anthropic.WireName,
			yaml: `
replies:
  - chunks:
      - thinking: "First block."
      - signature: "sig-1"
      - text: "Reading."
      - thinking: "Second "
      - thinking: "block."
      - signature: "sig-2"
      - tool_call: {id: toolu_1, name: read_file, args_json: '` + argsRead + `'}
      - finish: tool_use
`,
			want: reconstruction{
				Text: "Reading.",
				Thinking: []thinkingBlock{
					{Text: "First block.", Signature: "sig-1"},
					{Text: "Second block.", Signature: "sig-2"},
				},
				Calls:  []toolCall{{ID: "toolu_1", Name: "read_file", Args: argsRead}},
				Finish: "tool_use",
			},
		},
		{
			// reasoning_content is not a field the SDK types; see
			// viaOpenAISDK for how it is read.
			name: "openai/reasoning and text",
			wire: openai.WireName,
			yaml: `
replies:
  - chunks:
      - thinking: "Step 1. "
      - thinking: "Step 2."
      - signature: "dropped on this wire"
      - text: "Done"
      - text: "."
      - finish: stop
`,
			want: reconstruction{Text: "Done.", Thinking: []thinkingBlock{{Text: "Step 1. Step 2."}}, Finish: "stop"},
		},
		{
			// The shorthand's implied finish in each wire's own words.
			name: "openai/shorthand",
			wire: openai.WireName,
			yaml: `
replies:
  - text: "On it."
    tool_calls:
      - {name: read_file, args: {path: a.txt}}
      - {id: call_x, name: run, args: {cmd: [ls, "-l"]}}
    usage: {prompt_tokens: 5, completion_tokens: 6}
`,
			want: reconstruction{
				Text: "On it.",
				Calls: []toolCall{
					{ID: "call_1_1", Name: "read_file", Args: `{"path":"a.txt"}`},
					{ID: "call_x", Name: "run", Args: `{"cmd":["ls","-l"]}`},
				},
				Finish: "tool_calls",
				Usage:  usage{Prompt: 5, Completion: 6},
			},
		},
		{
			name: "anthropic/shorthand",
			wire: anthropic.WireName,
			yaml: `
replies:
  - thinking: "Plan."
    text: "On it."
    tool_calls:
      - {name: read_file, args: {path: a.txt}}
      - {id: toolu_x, name: run, args: {cmd: [ls, "-l"]}}
    usage: {prompt_tokens: 5, completion_tokens: 6}
`,
			want: reconstruction{
				Text:     "On it.",
				Thinking: []thinkingBlock{{Text: "Plan."}},
				Calls: []toolCall{
					{ID: "call_1_1", Name: "read_file", Args: `{"path":"a.txt"}`},
					{ID: "toolu_x", Name: "run", Args: `{"cmd":["ls","-l"]}`},
				},
				Finish: "tool_use",
				Usage:  usage{Prompt: 5, Completion: 6},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.want.Calls {
				tc.want.Calls[i].Args = canonJSON(t, tc.want.Calls[i].Args)
			}
			sdkSrv, sdkBase := peerServer(t, tc.yaml)
			ourSrv, ourBase := peerServer(t, tc.yaml)

			var sdk reconstruction
			switch tc.wire {
			case openai.WireName:
				sdk = viaOpenAISDK(t, sdkBase)
			case anthropic.WireName:
				sdk = viaAnthropicSDK(t, sdkBase)
			}
			ours := viaOurs(t, tc.wire, ourBase)

			if !reflect.DeepEqual(sdk, ours) {
				t.Errorf("the SDK and our client disagree:\n  sdk %+v\n ours %+v", sdk, ours)
			}
			if !reflect.DeepEqual(sdk, tc.want) {
				t.Errorf("the SDK reconstructed\n  %+v\nwant\n  %+v", sdk, tc.want)
			}
			if !reflect.DeepEqual(ours, tc.want) {
				t.Errorf("our client reconstructed\n  %+v\nwant\n  %+v", ours, tc.want)
			}
			for _, s := range []*fake.Server{sdkSrv, ourSrv} {
				checkOneStreamRequest(t, s, tc.wire)
			}
		})
	}
}

// checkOneStreamRequest checks the server got exactly one streaming
// request, on the wire under test.
func checkOneStreamRequest(t *testing.T, s *fake.Server, wire string) {
	t.Helper()
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the server got %d requests, want 1", len(reqs))
	}
	if reqs[0].Wire != wire {
		t.Errorf("request on wire %q (%s), want %q", reqs[0].Wire, reqs[0].Path, wire)
	}
	var body struct {
		Stream bool `json:"stream"`
	}
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil || !body.Stream {
		t.Errorf("request body %s is not a streaming request (%v)", reqs[0].Body, err)
	}
}

func TestPeersHTTPError(t *testing.T) {
	cases := []struct {
		name        string
		yaml        string
		retryAfter  string        // the header as sent
		wait        time.Duration // the wait it asks for
		wantMessage string        // what the vendor body carries
		// What names the error in OpenAI's error object (its code, or
		// failing that its type) and Anthropic's error type, as the SDKs
		// parse them.
		openAICode, anthropicType string
	}{
		{
			name: "429 with Retry-After",
			yaml: `
replies:
  - status: 429
    headers: {Retry-After: "7"}
`,
			retryAfter:    "7",
			wait:          7 * time.Second,
			wantMessage:   "Too Many Requests",
			openAICode:    "rate_limit_exceeded",
			anthropicType: "rate_limit_error",
		},
		{
			name: "429 with Retry-After, code and message",
			yaml: `
replies:
  - status: 429
    headers: {Retry-After: "3"}
    code: rate_limit_error
    message: "Slow down, please."
`,
			retryAfter:    "3",
			wait:          3 * time.Second,
			wantMessage:   "Slow down, please.",
			openAICode:    "rate_limit_error",
			anthropicType: "rate_limit_error",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Run("openai-go", func(t *testing.T) {
				srv, base := peerServer(t, tc.yaml)
				client := openAISDK(t, base)
				stream := client.Chat.Completions.NewStreaming(peerContext(t), openAIParams())
				defer stream.Close()
				for stream.Next() {
					t.Fatalf("got a chunk from an error response: %s", stream.Current().RawJSON())
				}
				var apiErr *openaisdk.Error
				if !errors.As(stream.Err(), &apiErr) {
					t.Fatalf("error %T %v, want *openai.Error", stream.Err(), stream.Err())
				}
				if apiErr.StatusCode != http.StatusTooManyRequests {
					t.Errorf("status %d, want 429", apiErr.StatusCode)
				}
				if got := apiErr.Response.Header.Get("Retry-After"); got != tc.retryAfter {
					t.Errorf("Retry-After %q, want %q", got, tc.retryAfter)
				}
				// OpenAI names the error by its code; a body without one
				// names it by its type (as the fake's default 429 body does).
				name := apiErr.Code
				if name == "" {
					name = apiErr.Type
				}
				if apiErr.Message != tc.wantMessage || name != tc.openAICode {
					t.Errorf("error object message %q code %q type %q, want message %q and code %q (raw %s)",
						apiErr.Message, apiErr.Code, apiErr.Type, tc.wantMessage, tc.openAICode, apiErr.RawJSON())
				}
				if n := len(srv.Requests()); n != 1 {
					t.Errorf("%d requests, want 1 (retries are off)", n)
				}
				ourHTTPError(t, openai.WireName, tc.yaml, tc.wait, tc.wantMessage)
			})

			t.Run("anthropic-sdk-go", func(t *testing.T) {
				srv, base := peerServer(t, tc.yaml)
				client := anthropicSDK(t, base)
				stream := client.Messages.NewStreaming(peerContext(t), anthropicParams())
				defer stream.Close()
				for stream.Next() {
					t.Fatalf("got an event from an error response: %s", stream.Current().RawJSON())
				}
				var apiErr *anthropicsdk.Error
				if !errors.As(stream.Err(), &apiErr) {
					t.Fatalf("error %T %v, want *anthropic.Error", stream.Err(), stream.Err())
				}
				if apiErr.StatusCode != http.StatusTooManyRequests {
					t.Errorf("status %d, want 429", apiErr.StatusCode)
				}
				if got := apiErr.Response.Header.Get("Retry-After"); got != tc.retryAfter {
					t.Errorf("Retry-After %q, want %q", got, tc.retryAfter)
				}
				if apiErr.Message != tc.wantMessage || string(apiErr.Type()) != tc.anthropicType {
					t.Errorf("error message %q type %q, want %q %q (raw %s)",
						apiErr.Message, apiErr.Type(), tc.wantMessage, tc.anthropicType, apiErr.RawJSON())
				}
				if n := len(srv.Requests()); n != 1 {
					t.Errorf("%d requests, want 1 (retries are off)", n)
				}
				ourHTTPError(t, anthropic.WireName, tc.yaml, tc.wait, tc.wantMessage)
			})
		})
	}
}

// ourHTTPError plays yaml on a second server to our client and checks it
// reports the same failure the SDK saw.
func ourHTTPError(t *testing.T, wire, yaml string, wait time.Duration, message string) {
	t.Helper()
	_, base := peerServer(t, yaml)
	var errs []error
	for part := range ourClient(t, wire, base).Stream(peerContext(t), ourRequest()) {
		e, ok := part.(provider.Error)
		if !ok {
			t.Fatalf("our %s client yielded %#v from an error response", wire, part)
		}
		errs = append(errs, e.Err)
	}
	if len(errs) != 1 {
		t.Fatalf("our %s client reported %d errors, want 1", wire, len(errs))
	}
	var he *provider.HTTPError
	if !errors.As(errs[0], &he) {
		t.Fatalf("our %s client: %T %v, want *provider.HTTPError", wire, errs[0], errs[0])
	}
	if he.Status != http.StatusTooManyRequests || !he.HasRetryAfter || he.RetryAfter != wait || he.Message != message {
		t.Errorf("our %s client: %+v, want status 429, Retry-After %s, message %q", wire, he, wait, message)
	}
}

// canonJSON is what makes the argument comparisons JSON comparisons.
func TestPeersCanonJSON(t *testing.T) {
	if got := canonJSON(t, `{ "b": 1, "a": [2, {"d": "x", "c": null}] }`); got != `{"a":[2,{"c":null,"d":"x"}],"b":1}` {
		t.Fatalf("canonJSON: %s", got)
	}
}
