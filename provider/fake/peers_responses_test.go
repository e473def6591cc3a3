//go:build sdkpeers

package fake_test

// Peer tests of the Responses wire: openai-go's Responses streaming client
// against the fake, beside our own client against an identical second
// server, both held to what the scenario scripted; then the faults the SDK
// must see as a real server's: a 429 with Retry-After (retried, or given
// up when the wait is too long), response.failed and response.incomplete.

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	openaisdk "github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
	sdkresponses "github.com/openai/openai-go/v3/responses"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/fake"
	"github.com/openmax/openmax/provider/openai/responses"
)

func responsesSDK(t *testing.T, base string, retries int) openaisdk.Client {
	return openaisdk.NewClient(
		openaiopt.WithBaseURL(base+"/v1/"),
		openaiopt.WithAPIKey("sk-fake-peer"),
		openaiopt.WithHTTPClient(loopbackClient(t)),
		openaiopt.WithMaxRetries(retries),
	)
}

func responsesParams() sdkresponses.ResponseNewParams {
	return sdkresponses.ResponseNewParams{
		Model: "fake-gpt",
		Input: sdkresponses.ResponseNewParamsInputUnion{OfString: openaisdk.String("hi")},
	}
}

// sdkReply is what openai-go's stream said of one reply: the
// reconstruction (as our client's is folded: summary parts joined by a
// blank line, a reasoning item's encrypted_content as its signature, the
// calls only when the response completed), and the terminal event.
type sdkReply struct {
	reconstruction
	Terminal string
	// Failure is response.failed's error code and message.
	FailCode, FailMessage string
	// Events counts the summary events seen, by type.
	Events map[string]int
}

// viaResponsesSDK streams one reply with openai-go's Responses client and
// rebuilds it from the typed events.
func viaResponsesSDK(t *testing.T, base string, retries int) sdkReply {
	t.Helper()
	client := responsesSDK(t, base, retries)
	stream := client.Responses.NewStreaming(peerContext(t), responsesParams())
	defer stream.Close()
	r := sdkReply{Events: map[string]int{}}
	var seq int64
	lastSummary := -1 // summary index of the open reasoning item's last delta
	for stream.Next() {
		ev := stream.Current()
		if ev.SequenceNumber != seq {
			t.Errorf("openai-go: event %s has sequence_number %d, want %d", ev.Type, ev.SequenceNumber, seq)
		}
		seq++
		r.Events[ev.Type]++
		switch ev.Type {
		case "response.created", "response.in_progress":
			if ev.Response.ID == "" || ev.Response.Model != "fake-gpt" {
				t.Errorf("openai-go: %s id %q model %q", ev.Type, ev.Response.ID, ev.Response.Model)
			}
		case "response.output_text.delta":
			r.Text += ev.Delta
		case "response.reasoning_summary_text.delta":
			if len(r.Thinking) == 0 {
				t.Fatalf("openai-go: a summary delta outside a reasoning item")
			}
			b := &r.Thinking[len(r.Thinking)-1]
			if lastSummary >= 0 && int(ev.SummaryIndex) > lastSummary {
				b.Text += "\n\n"
			}
			lastSummary = int(ev.SummaryIndex)
			b.Text += ev.Delta
		case "response.output_item.added":
			if ev.Item.Type == "reasoning" {
				r.Thinking = append(r.Thinking, thinkingBlock{})
				lastSummary = -1
			}
		case "response.output_item.done":
			if ev.Item.Type == "reasoning" {
				r.Thinking[len(r.Thinking)-1].Signature = ev.Item.EncryptedContent
				if len(ev.Item.Summary) == 0 && r.Thinking[len(r.Thinking)-1].Text == "" && ev.Item.EncryptedContent == "" {
					r.Thinking = r.Thinking[:len(r.Thinking)-1]
				}
			}
		case "response.completed", "response.incomplete", "response.failed":
			r.Terminal = ev.Type
			resp := ev.Response
			u := resp.Usage
			r.Usage = usage{Prompt: int(u.InputTokens), Completion: int(u.OutputTokens),
				Cached: int(u.InputTokensDetails.CachedTokens), Reasoning: int(u.OutputTokensDetails.ReasoningTokens)}
			switch ev.Type {
			case "response.completed":
				r.Finish = string(resp.Status)
				for _, it := range resp.Output {
					if it.Type == "function_call" {
						r.Calls = append(r.Calls, toolCall{ID: it.CallID, Name: it.Name, Args: canonJSON(t, it.Arguments.OfString)})
					}
				}
			case "response.incomplete":
				r.Finish = string(resp.IncompleteDetails.Reason)
			case "response.failed":
				r.FailCode, r.FailMessage = string(resp.Error.Code), resp.Error.Message
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("openai-go: stream failed after %d events: %v", seq, err)
	}
	return r
}

func TestPeersResponsesStream(t *testing.T) {
	cases := []struct {
		name     string
		yaml     string
		want     reconstruction
		terminal string
		events   map[string]int // summary event counts the SDK must have seen
	}{
		{
			name: "text in chunks",
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
			want:     reconstruction{Text: "Hello, wörld <&> \"quoted\"\nbye.", Finish: "completed", Usage: usage{Prompt: 11, Completion: 4}},
			terminal: "response.completed",
			events:   map[string]int{"response.output_text.delta": 4, "response.output_text.done": 1, "response.content_part.added": 1},
		},
		{
			name: "reasoning summary parts, encrypted content, text",
			yaml: `
replies:
  - chunks:
      - thinking: "Let me "
      - thinking: "think."
      - thinking: "\n\n"
      - thinking: "Then answer."
      - signature: "gAAAAB+enc/abc=="
      - text: "The answer "
      - text: "is 42."
      - usage: {prompt_tokens: 9, completion_tokens: 20, reasoning_tokens: 12}
      - finish: stop
`,
			want: reconstruction{
				Text:     "The answer is 42.",
				Thinking: []thinkingBlock{{Text: "Let me think.\n\nThen answer.", Signature: "gAAAAB+enc/abc=="}},
				Finish:   "completed",
				Usage:    usage{Prompt: 9, Completion: 20, Reasoning: 12},
			},
			terminal: "response.completed",
			events: map[string]int{"response.reasoning_summary_part.added": 2, "response.reasoning_summary_text.delta": 3,
				"response.reasoning_summary_text.done": 2, "response.reasoning_summary_part.done": 2},
		},
		{
			name: "text and two parallel function calls with usage",
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
				Finish: "completed",
				Usage:  usage{Prompt: 30, Completion: 12, Cached: 8},
			},
			terminal: "response.completed",
			events: map[string]int{"response.function_call_arguments.delta": 2, "response.function_call_arguments.done": 2,
				"response.output_item.added": 3, "response.output_item.done": 3},
		},
		{
			// The reply is cut by max_output_tokens: the SDK sees
			// response.incomplete with its reason, and the call in it is
			// not one to run (our client yields none).
			name: "incomplete: max_output_tokens",
			yaml: `
replies:
  - chunks:
      - text: "Partial"
      - tool_call: {id: call_cut, name: run, args_json: '{"cmd":"ls"}'}
      - usage: {prompt_tokens: 5, completion_tokens: 64}
      - finish: length
`,
			want:     reconstruction{Text: "Partial", Finish: "max_output_tokens", Usage: usage{Prompt: 5, Completion: 64}},
			terminal: "response.incomplete",
			events:   map[string]int{"response.incomplete": 1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.want.Calls {
				tc.want.Calls[i].Args = canonJSON(t, tc.want.Calls[i].Args)
			}
			sdkSrv, sdkBase := peerServer(t, tc.yaml)
			ourSrv, ourBase := peerServer(t, tc.yaml)

			sdk := viaResponsesSDK(t, sdkBase, 0)
			ours := viaOurs(t, responses.WireName, ourBase)

			if sdk.Terminal != tc.terminal {
				t.Errorf("the SDK's terminal event %q, want %q", sdk.Terminal, tc.terminal)
			}
			for typ, n := range tc.events {
				if sdk.Events[typ] != n {
					t.Errorf("the SDK saw %d %s events, want %d", sdk.Events[typ], typ, n)
				}
			}
			if !reflect.DeepEqual(sdk.reconstruction, ours) {
				t.Errorf("the SDK and our client disagree:\n  sdk %+v\n ours %+v", sdk.reconstruction, ours)
			}
			if !reflect.DeepEqual(sdk.reconstruction, tc.want) {
				t.Errorf("the SDK reconstructed\n  %+v\nwant\n  %+v", sdk.reconstruction, tc.want)
			}
			if !reflect.DeepEqual(ours, tc.want) {
				t.Errorf("our client reconstructed\n  %+v\nwant\n  %+v", ours, tc.want)
			}
			for _, s := range []*fake.Server{sdkSrv, ourSrv} {
				checkOneStreamRequest(t, s, responses.WireName)
			}
		})
	}
}

// A response.failed mid-answer: the SDK yields the event with its error
// code and message, and the stream ends there; our client reports the
// same failure as a StreamError after the text.
func TestPeersResponsesFailed(t *testing.T) {
	const yaml = `
replies:
  - chunks:
      - text: "Half an ans"
      - stream_error: {type: server_error, message: "The server had an error while processing your request."}
      - text: "never"
`
	_, base := peerServer(t, yaml)
	sdk := viaResponsesSDK(t, base, 0)
	if sdk.Terminal != "response.failed" || sdk.FailCode != "server_error" ||
		sdk.FailMessage != "The server had an error while processing your request." || sdk.Text != "Half an ans" {
		t.Errorf("the SDK saw %+v", sdk)
	}

	_, base = peerServer(t, yaml)
	var text string
	var failure error
	for part := range ourClient(t, responses.WireName, base).Stream(peerContext(t), ourRequest()) {
		switch p := part.(type) {
		case provider.TextDelta:
			text += p.Text
		case provider.Error:
			failure = p.Err
		default:
			t.Errorf("our client yielded %#v", part)
		}
	}
	var se *provider.StreamError
	if text != "Half an ans" || !errors.As(failure, &se) || se.Type != sdk.FailCode || se.Message != sdk.FailMessage {
		t.Errorf("our client: text %q, failure %v", text, failure)
	}
}

// A 429 with Retry-After: with an HTTP-date already past the SDK retries
// at once and streams the next reply; with a wait over its two-minute cap
// it gives up at once and reports the 429 with the header (as does our
// client, which reads the same wait).
func TestPeersResponsesRateLimited(t *testing.T) {
	t.Run("retried", func(t *testing.T) {
		srv, base := peerServer(t, `
replies:
  - status: 429
    headers: {Retry-After: "Thu, 01 Jan 2026 00:00:01 GMT"}
  - text: "After the wait."
    usage: {prompt_tokens: 3, completion_tokens: 4}
`)
		sdk := viaResponsesSDK(t, base, 2)
		want := reconstruction{Text: "After the wait.", Finish: "completed", Usage: usage{Prompt: 3, Completion: 4}}
		if !reflect.DeepEqual(sdk.reconstruction, want) {
			t.Errorf("the SDK reconstructed %+v, want %+v", sdk.reconstruction, want)
		}
		if reqs := srv.Requests(); len(reqs) != 2 || reqs[1].Path != "/v1/responses" {
			t.Errorf("%d requests, want 2 (the 429, then the retry)", len(reqs))
		}
	})
	t.Run("wait too long", func(t *testing.T) {
		const yaml = `
replies:
  - status: 429
    headers: {Retry-After: "600"}
    message: "Rate limit reached for requests"
`
		srv, base := peerServer(t, yaml)
		client := responsesSDK(t, base, 2)
		stream := client.Responses.NewStreaming(peerContext(t), responsesParams())
		defer stream.Close()
		for stream.Next() {
			t.Fatalf("got an event from an error response: %s", stream.Current().RawJSON())
		}
		var apiErr *openaisdk.Error
		if !errors.As(stream.Err(), &apiErr) {
			t.Fatalf("error %T %v, want *openai.Error", stream.Err(), stream.Err())
		}
		if apiErr.StatusCode != http.StatusTooManyRequests || apiErr.Response.Header.Get("Retry-After") != "600" ||
			apiErr.Code != "rate_limit_exceeded" || apiErr.Message != "Rate limit reached for requests" {
			t.Errorf("the SDK's error: status %d, Retry-After %q, code %q, message %q (raw %s)", apiErr.StatusCode,
				apiErr.Response.Header.Get("Retry-After"), apiErr.Code, apiErr.Message, apiErr.RawJSON())
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("%d requests, want 1 (a wait over the cap is not retried)", n)
		}
		ourHTTPError(t, responses.WireName, yaml, 600*time.Second, "Rate limit reached for requests")
	})
}

// The SDK's own view of the terminal usage fields: the details are there
// when the scenario says them.
func TestPeersResponsesUsageDetails(t *testing.T) {
	_, base := peerServer(t, `
replies:
  - text: "ok"
    usage: {prompt_tokens: 100, completion_tokens: 40, cached_tokens: 60, reasoning_tokens: 25}
`)
	sdk := viaResponsesSDK(t, base, 0)
	if want := (usage{Prompt: 100, Completion: 40, Cached: 60, Reasoning: 25}); sdk.Usage != want {
		t.Errorf("usage %+v, want %+v", sdk.Usage, want)
	}
	if !strings.Contains(sdk.Terminal, "completed") {
		t.Errorf("terminal %q", sdk.Terminal)
	}
}
