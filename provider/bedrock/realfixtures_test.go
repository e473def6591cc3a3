package bedrock

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/openmax/openmax/internal/fixture"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/bedrock/eventstream"
)

// The real recordings of Bedrock traffic by others (cassettes/real, rows
// A14 and A15 of its SOURCES.md): A14 is pydantic-ai's ConverseStream
// with Amazon Nova Micro (vcrpy), A15 fantasy's
// InvokeModelWithResponseStream with Claude Haiku 4.5 (go-vcr v4). Both
// store the binary bodies as YAML !!binary, which yaml.v3 decodes to the
// raw bytes.

const (
	a14 = "pydantic-ai-bedrock__test_bedrock_model_iter_stream.yaml"
	a15 = "fantasy__bedrock-anthropic-claude-haiku-4-5__tool_streaming.yaml"
)

// recording is what both cassette dialects have in common.
type recording struct {
	Interactions []struct {
		Request struct {
			Body string `yaml:"body"`
			URI  string `yaml:"uri"` // vcrpy
			URL  string `yaml:"url"` // go-vcr
		} `yaml:"request"`
		Response struct {
			Body    yaml.Node           `yaml:"body"`
			Headers map[string][]string `yaml:"headers"`
		} `yaml:"response"`
	} `yaml:"interactions"`
}

// exchange is one recorded request and its response.
type exchange struct {
	url, request string
	body         []byte
	contentType  string
}

func loadRecording(t *testing.T, name string) []exchange {
	t.Helper()
	var r recording
	if err := yaml.Unmarshal(fixture.ReadReal(t, name), &r); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out []exchange
	for _, it := range r.Interactions {
		var body string
		n := &it.Response.Body
		if n.Kind == yaml.MappingNode { // vcrpy: {string: ...}
			var v struct {
				String string `yaml:"string"`
			}
			if err := n.Decode(&v); err != nil {
				t.Fatal(err)
			}
			body = v.String
		} else if err := n.Decode(&body); err != nil {
			t.Fatal(err)
		}
		u := it.Request.URL
		if u == "" {
			u = it.Request.URI
		}
		ct := ""
		for k, vs := range it.Response.Headers {
			if strings.EqualFold(k, "Content-Type") && len(vs) > 0 {
				ct = vs[0]
			}
		}
		out = append(out, exchange{url: u, request: it.Request.Body, body: []byte(body), contentType: ct})
	}
	return out
}

// expectedReply is the part of internal/fixture's expected values a
// reply is checked against: the text blocks, the tool calls, the stop
// reason, the usage, the event count.
type expectedReply struct {
	Events     int    `json:"events"`
	StopReason string `json:"stop_reason"`
	MessageID  string `json:"message_id"`
	Model      string `json:"model"`
	Content    []struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		ID        string          `json:"id"`
		ToolUseID string          `json:"toolUseId"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		Streamed  *string         `json:"streamed_input_concat"`
		StreamedA *string         `json:"streamed_partial_json_concat"`
	} `json:"content"`
	Usage json.RawMessage `json:"usage"`
}

// want is a reply as the client must reconstruct it.
type want struct {
	text  string
	calls []provider.ToolCall
	usage provider.Usage
	stop  string
}

func expected(t *testing.T, name string) ([]expectedReply, []want) {
	t.Helper()
	var exp []expectedReply
	if err := json.Unmarshal(fixture.Expected(t, name), &exp); err != nil {
		t.Fatal(err)
	}
	var wants []want
	for _, e := range exp {
		w := want{stop: e.StopReason}
		for _, c := range e.Content {
			switch c.Type {
			case "text":
				w.text += c.Text
			case "toolUse":
				w.calls = append(w.calls, provider.ToolCall{ID: c.ToolUseID, Name: c.Name, Args: json.RawMessage(*c.Streamed)})
			case "tool_use":
				w.calls = append(w.calls, provider.ToolCall{ID: c.ID, Name: c.Name, Args: json.RawMessage(*c.StreamedA)})
			}
		}
		var cu struct {
			InputTokens  int `json:"inputTokens"`
			OutputTokens int `json:"outputTokens"`
			Start        *struct {
				InputTokens int `json:"input_tokens"`
				CacheRead   int `json:"cache_read_input_tokens"`
			} `json:"message_start"`
			Delta *struct {
				OutputTokens int `json:"output_tokens"`
			} `json:"message_delta"`
		}
		if err := json.Unmarshal(e.Usage, &cu); err != nil {
			t.Fatal(err)
		}
		if cu.Start != nil {
			zero := cu.Start.CacheRead
			w.usage = provider.Usage{PromptTokens: cu.Start.InputTokens + zero, CompletionTokens: cu.Delta.OutputTokens, CachedTokens: &zero}
		} else {
			w.usage = provider.Usage{PromptTokens: cu.InputTokens, CompletionTokens: cu.OutputTokens}
		}
		wants = append(wants, w)
	}
	return exp, wants
}

// fold is a reply folded from its parts.
func fold(parts []provider.Part) (w want, err error, finished bool) {
	for _, p := range parts {
		switch p := p.(type) {
		case provider.TextDelta:
			w.text += p.Text
		case provider.ToolCallPart:
			w.calls = append(w.calls, p.Call)
		case provider.Usage:
			w.usage = p
		case provider.Finish:
			w.stop, finished = p.Reason, true
		case provider.Error:
			err = p.Err
		}
	}
	return w, err, finished
}

func sameWant(a, b want) bool {
	return a.text == b.text && reflect.DeepEqual(a.calls, b.calls) && a.stop == b.stop && reflect.DeepEqual(a.usage, b.usage)
}

// TestRealRecordings: the client, served the recorded bodies byte for
// byte over loopback HTTP, reconstructs each reply exactly (text with
// Nova's literal <thinking> tags and the °, the tool calls with their ids
// and streamed input, usage, stop reason); the framing checks out and the
// messages tile each body; Parse reads the same from the bytes, with
// offsets; the requests read back as what they asked.
func TestRealRecordings(t *testing.T) {
	tests := []struct {
		name, file string
		api        API
		model      string
		userText   string
		tools      []string
		results    [][]Result
	}{
		{"A14 ConverseStream", a14, APIConverse, "us.amazon.nova-micro-v1:0", "What is the temperature of the capital of France?",
			[]string{"get_capital", "get_temperature"}, [][]Result{nil, {{Name: "get_temperature", OK: true, Output: "30°C"}}}},
		{"A15 InvokeModelWithResponseStream", a15, APIInvoke, "us.anthropic.claude-haiku-4-5-20251001-v1:0", "What's the weather in Florence,Italy?",
			[]string{"weather"}, [][]Result{nil, {{Name: "weather", OK: true, Output: "40 C"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exs := loadRecording(t, tt.file)
			exp, wants := expected(t, tt.file)
			if len(exs) != len(wants) {
				t.Fatalf("%d interactions, %d expected", len(exs), len(wants))
			}
			for i, ex := range exs {
				// The framing: every CRC checks out and the messages
				// tile the body.
				frames, tail, err := eventstream.Split(ex.body)
				if err != nil || tail != 0 || len(frames) != exp[i].Events || frames[len(frames)-1].End != len(ex.body) {
					t.Fatalf("#%d: %d frames (want %d), tail %d, err %v", i, len(frames), exp[i].Events, tail, err)
				}
				// The client over loopback HTTP.
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					io.Copy(io.Discard, r.Body)
					w.Header().Set("Content-Type", ex.contentType)
					w.Write(ex.body)
				}))
				defer srv.Close()
				c, err := New(Config{API: tt.api, APIKey: "k", BaseURL: srv.URL, Model: tt.model})
				if err != nil {
					t.Fatal(err)
				}
				var parts []provider.Part
				for p := range c.Stream(context.Background(), provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "x"}}}) {
					parts = append(parts, p)
				}
				got, gerr, finished := fold(parts)
				if gerr != nil || !finished || !sameWant(got, wants[i]) {
					t.Errorf("#%d: client reconstructed %+v (err %v, finished %v)\nwant %+v", i, got, gerr, finished, wants[i])
				}
				// The reading of the recorded bytes: the same reply from
				// the parts at each event, offsets that tile the body.
				rd := Parse(tt.api, ex.contentType, ex.body)
				var all []provider.Part
				end := 0
				for _, ev := range rd.Events {
					if ev.Start != end || ev.Unparsed {
						t.Fatalf("#%d: event at [%d,%d) after %d (unparsed %v)", i, ev.Start, ev.End, end, ev.Unparsed)
					}
					end = ev.End
					all = append(all, ev.Parts...)
				}
				all = append(all, rd.EndParts...)
				if !reflect.DeepEqual(all, parts) {
					t.Errorf("#%d: the parts of the events\n%#v\nthe client's\n%#v", i, all, parts)
				}
				if end != len(ex.body) || rd.Tail != 0 || rd.Text != wants[i].text || rd.Finish != wants[i].stop || len(rd.Tools) != len(wants[i].calls) || len(rd.Errors) != 0 {
					t.Errorf("#%d: reading %+v", i, rd)
				}
				if rd.MessageID != exp[i].MessageID || rd.Model != exp[i].Model {
					t.Errorf("#%d: message id %q model %q, want %q %q", i, rd.MessageID, rd.Model, exp[i].MessageID, exp[i].Model)
				}
				// The request.
				u, err := url.Parse(ex.url)
				if err != nil {
					t.Fatal(err)
				}
				call, err := ReadRequest(u.EscapedPath(), []byte(ex.request))
				if err != nil {
					t.Fatalf("#%d: ReadRequest: %v", i, err)
				}
				var tools []string
				for _, tl := range call.Tools {
					tools = append(tools, tl.Name)
					if !json.Valid(tl.Schema) || tl.Description == "" {
						t.Errorf("#%d: tool %+v", i, tl)
					}
				}
				if call.Model != tt.model || call.API != tt.api || !call.Stream || call.UserText != tt.userText || !call.HasUser ||
					!slices.Equal(tools, tt.tools) || !reflect.DeepEqual(call.Results, tt.results[i]) {
					t.Errorf("#%d: request read as %+v", i, call)
				}
				if want := Path(tt.api, tt.model); u.EscapedPath() != want {
					t.Errorf("#%d: recorded path %s, ours %s", i, u.EscapedPath(), want)
				}
			}
		})
	}
}

// TestRealEchoedTurn: the assistant turn the client would send back
// after each recording's first reply is, as JSON, the one the recording
// client sent in its second request (A14 with the tool result too).
func TestRealEchoedTurn(t *testing.T) {
	for _, tt := range []struct {
		file  string
		api   API
		turns int // how many messages from index 1 to compare
	}{{a14, APIConverse, 2}, {a15, APIInvoke, 1}} {
		t.Run(tt.file, func(t *testing.T) {
			exs := loadRecording(t, tt.file)
			rd := Parse(tt.api, exs[0].contentType, exs[0].body)
			var calls []provider.ToolCall
			for _, tc := range rd.Tools {
				calls = append(calls, provider.ToolCall{ID: tc.ID, Name: tc.Name, Args: json.RawMessage(tc.Args)})
			}
			var recorded struct {
				Messages []json.RawMessage `json:"messages"`
			}
			if err := json.Unmarshal([]byte(exs[1].request), &recorded); err != nil {
				t.Fatal(err)
			}
			call, err := ReadRequest(mustPath(t, exs[1].url), []byte(exs[1].request))
			if err != nil {
				t.Fatal(err)
			}
			req := provider.Request{Messages: []provider.Message{
				{Role: provider.RoleUser, Text: "q"},
				{Role: provider.RoleAssistant, Text: rd.Text, ToolCalls: calls},
				{Role: provider.RoleTool, CallID: calls[0].ID, Text: call.Results[0].Output},
			}}
			var body []byte
			if tt.api == APIInvoke {
				body, err = invokeBody(req, 0)
			} else {
				body, err = converseBody(req, 0)
			}
			if err != nil {
				t.Fatal(err)
			}
			var ours struct {
				Messages []json.RawMessage `json:"messages"`
			}
			if err := json.Unmarshal(body, &ours); err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= tt.turns; i++ {
				var g, w any
				json.Unmarshal(ours.Messages[i], &g)
				json.Unmarshal(recorded.Messages[i], &w)
				if !reflect.DeepEqual(g, w) {
					t.Errorf("message %d\n ours     %s\n recorded %s", i, ours.Messages[i], recorded.Messages[i])
				}
			}
		})
	}
}

func mustPath(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.EscapedPath()
}
