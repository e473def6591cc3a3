package gemini_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/openmax/openmax/internal/fixture"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/gemini"
	"github.com/openmax/openmax/provider/internal/codectest"
)

// ---- Real recorded traffic (cassettes/real A12, A13; see SOURCES.md) ----

// recording is one recorded interaction.
type recording struct {
	path        string // the request's path and query
	requestBody []byte
	status      int
	header      http.Header
	body        []byte
}

// loadRecording reads a recording (see fixture.Exchanges), each request's
// path and query from its URL.
func loadRecording(t *testing.T, name string) []recording {
	t.Helper()
	var out []recording
	for k, x := range fixture.Exchanges(t, name) {
		u, err := url.Parse(x.URL)
		if err != nil {
			t.Fatalf("%s #%d: %v", name, k, err)
		}
		if x.Status != 200 {
			t.Fatalf("%s #%d: status %d", name, k, x.Status)
		}
		out = append(out, recording{path: u.RequestURI(), requestBody: x.RequestBody, status: x.Status, header: x.Header, body: x.Body})
	}
	return out
}

// replayServer serves the recorded responses in order at the recorded
// path, with their recorded headers (framing aside) and bytes.
func replayServer(t *testing.T, recs []recording) *httptest.Server {
	t.Helper()
	next := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if next >= len(recs) {
			t.Errorf("more requests than recorded interactions")
			w.WriteHeader(http.StatusTeapot)
			return
		}
		rec := recs[next]
		next++
		if r.URL.RequestURI() != rec.path || r.Header.Get("X-Goog-Api-Key") != testKey {
			t.Errorf("request %s, recorded %s", r.URL.RequestURI(), rec.path)
		}
		for k, vs := range rec.header {
			switch http.CanonicalHeaderKey(k) {
			case "Content-Length", "Transfer-Encoding", "Connection":
				continue
			}
			w.Header()[http.CanonicalHeaderKey(k)] = vs
		}
		w.WriteHeader(rec.status)
		w.Write(rec.body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// expected is internal/fixture/expected's account of one interaction,
// read off the bodies when the recording was copied in.
type expected struct {
	Interaction   int            `json:"interaction"`
	Status        int            `json:"status"`
	ResponseID    string         `json:"response_id"`
	ModelVersion  string         `json:"model_version"`
	Events        int            `json:"events"`
	FinishReason  string         `json:"finish_reason"`
	FinishMessage string         `json:"finish_message"`
	Parts         []expectedPart `json:"parts"`
	EmptyIgnored  int            `json:"empty_text_parts_ignored"`
	Usage         struct {
		Prompt     int  `json:"promptTokenCount"`
		Candidates int  `json:"candidatesTokenCount"`
		Total      int  `json:"totalTokenCount"`
		Thoughts   *int `json:"thoughtsTokenCount"`
	} `json:"usage_last_chunk"`
}

type expectedPart struct {
	Thought      bool    `json:"thought"`
	Text         *string `json:"text"`
	FunctionCall *struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
		ID   *string         `json:"id"`
	} `json:"function_call"`
	Signature *struct {
		Length       int    `json:"length"`
		DecodedBytes int    `json:"decoded_bytes"`
		SHA256       string `json:"sha256"`
		Alphabet     string `json:"alphabet"`
	} `json:"thought_signature"`
}

func canon(t *testing.T, raw []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

const (
	a12 = "pydantic-ai-google__test_google_streaming_tool_call_thought_signature.yaml"
	a13 = "fantasy__gemini-2.5-flash__thinking-streaming.yaml"
)

// TestRealRecordings: the client, over loopback HTTP with the recorded
// bytes and headers, reconstructs each interaction of A12 and A13 exactly
// as read off the bodies when they were copied in: the text, the thought
// text, the function calls (no id on the wire: the client's own,
// call_<responseId>_<n>), each signature byte for byte on the part it
// came with, the usage of the last chunk (completion = candidates +
// thoughts) and the finish. ParseStream agrees with the client, and
// Events finds each body's events, tiling it, with their response id and
// model version.
func TestRealRecordings(t *testing.T) {
	for _, name := range []string{a12, a13} {
		t.Run(name, func(t *testing.T) {
			recs := loadRecording(t, name)
			var exp []expected
			if err := json.Unmarshal(fixture.Expected(t, name), &exp); err != nil {
				t.Fatal(err)
			}
			if len(exp) != len(recs) {
				t.Fatalf("%d interactions, %d expected", len(recs), len(exp))
			}
			srv := replayServer(t, recs)
			model, _, _ := gemini.ParsePath(recs[0].path)
			c := newClient(t, gemini.Config{BaseURL: srv.URL, Model: model})
			for i, e := range exp {
				parts := collect(t, context.Background(), c, hello, nil)
				var parsed []provider.Part
				for p := range gemini.ParseStream(bytes.NewReader(recs[i].body)) {
					parsed = append(parsed, p)
				}
				if !reflect.DeepEqual(parts, parsed) {
					t.Errorf("#%d: the client and ParseStream disagree:\n%#v\n%#v", i, parts, parsed)
				}
				r := codectest.Fold(parts)
				if r.Err != nil {
					t.Fatalf("#%d: %v", i, r.Err)
				}
				checkReply(t, i, r, e)

				rd := gemini.Wire{}.Parse("text/event-stream", recs[i].body)
				evs := rd.Events
				if len(evs) != e.Events || rd.Tail != 0 || rd.Unparsed() != 0 {
					t.Errorf("#%d: %d events (%d unparsed) and a tail of %d, want %d and none", i, len(evs), rd.Unparsed(), rd.Tail, e.Events)
				}
				end := 0
				for k, ev := range evs {
					if ev.Start != end {
						t.Errorf("#%d event %d: [%d,%d) after %d", i, k, ev.Start, ev.End, end)
					}
					end = ev.End
				}
				if end != len(recs[i].body) {
					t.Errorf("#%d: the events end at %d of %d bytes", i, end, len(recs[i].body))
				}
				if rd.MessageID != e.ResponseID || rd.Model != e.ModelVersion || rd.Finish != e.FinishReason {
					t.Errorf("#%d: read as %q %q %q", i, rd.MessageID, rd.Model, rd.Finish)
				}
				if last := evs[len(evs)-1]; !strings.Contains(fmt.Sprint(last.Notes), "finish "+e.FinishReason+" "+strconv.Quote(e.FinishMessage)) && e.FinishMessage != "" {
					t.Errorf("#%d: the last event says %v", i, last.Notes)
				}
				// The registry's reading yields what the client does.
				var all []provider.Part
				for _, ev := range evs {
					all = append(all, ev.Parts...)
				}
				if all = append(all, rd.EndParts...); !reflect.DeepEqual(all, parts) {
					t.Errorf("#%d: the reading's parts\n%#v\nthe client's\n%#v", i, all, parts)
				}
			}
		})
	}
}

// checkReply holds a folded reply to what was read off the recording.
func checkReply(t *testing.T, i int, r codectest.Folded, e expected) {
	t.Helper()
	var text, thought string
	var calls []provider.ToolCall
	var sigs []string // the signatures, as the reply's blocks carry them
	for _, th := range r.Thinking {
		if th.Signature != "" {
			sigs = append(sigs, th.Signature)
		}
	}
	for _, p := range e.Parts {
		switch {
		case p.FunctionCall != nil:
			if p.FunctionCall.ID != nil {
				t.Fatalf("#%d: the expectation gives the call an id", i)
			}
			id := "call_" + e.ResponseID + "_" + string(rune('1'+len(calls)))
			calls = append(calls, provider.ToolCall{ID: id, Name: p.FunctionCall.Name, Args: p.FunctionCall.Args})
		case p.Thought:
			thought += *p.Text
		default:
			text += *p.Text
		}
		if s := p.Signature; s != nil {
			if len(sigs) == 0 {
				t.Fatalf("#%d: no signature came", i)
			}
			site, id, sig := gemini.SignatureSite(sigs[0])
			sigs = sigs[1:]
			if p.FunctionCall != nil && (site != gemini.SiteCall || id != calls[len(calls)-1].ID) {
				t.Errorf("#%d: the signature is on %s %q, not on call %s", i, site, id, calls[len(calls)-1].ID)
			}
			decoded, err := base64.StdEncoding.DecodeString(sig)
			sum := sha256.Sum256([]byte(sig))
			if err != nil || len(sig) != s.Length || len(decoded) != s.DecodedBytes || hex.EncodeToString(sum[:]) != s.SHA256 {
				t.Errorf("#%d: signature of %d chars (%d bytes, %v), sha256 %x; want %d (%d), %s", i, len(sig), len(decoded), err, sum, s.Length, s.DecodedBytes, s.SHA256)
			}
		}
	}
	if len(sigs) > 0 {
		t.Errorf("#%d: signatures the recording does not have: %q", i, sigs)
	}
	var gotThought string
	for _, th := range r.Thinking {
		gotThought += th.Text
	}
	if r.Text != text || gotThought != thought {
		t.Errorf("#%d: text %q thought %q\nwant text %q thought %q", i, r.Text, gotThought, text, thought)
	}
	if len(r.Calls) != len(calls) {
		t.Fatalf("#%d: calls %v, want %v", i, r.Calls, calls)
	}
	for k := range calls {
		if r.Calls[k].ID != calls[k].ID || r.Calls[k].Name != calls[k].Name || canon(t, r.Calls[k].Args) != canon(t, calls[k].Args) {
			t.Errorf("#%d: call %s %s %s, want %s %s %s", i, r.Calls[k].ID, r.Calls[k].Name, r.Calls[k].Args, calls[k].ID, calls[k].Name, calls[k].Args)
		}
	}
	thoughts := 0
	if e.Usage.Thoughts != nil {
		thoughts = *e.Usage.Thoughts
	}
	wantUsage := provider.Usage{PromptTokens: e.Usage.Prompt, CompletionTokens: e.Usage.Candidates + thoughts, ReasoningTokens: e.Usage.Thoughts}
	if r.Usage == nil || !reflect.DeepEqual(*r.Usage, wantUsage) || e.Usage.Total != e.Usage.Prompt+e.Usage.Candidates+thoughts {
		t.Errorf("#%d: usage %+v, want %+v", i, r.Usage, wantUsage)
	}
	if r.Finish == nil || r.Finish.Reason != e.FinishReason {
		t.Errorf("#%d: finish %v, want %q", i, r.Finish, e.FinishReason)
	}
}

// TestRealRecordingsSentBack cross-checks the model turn the client sends
// back after interaction #0 with the one the recording's client sent in
// interaction #1. The call (name, arguments) and its signature go back
// on the same part, the signature as the bytes received: pydantic-ai's
// Python SDK re-encoded it URL-safe (A12), fantasy sent the identical
// string (A13). The call ids differ: each client made its own up, as the
// wire gave none. A13's thought part the client sends back too (as
// received, unsigned: the signature came on the call); fantasy left it
// out. ReadRequest reads the function response interaction #1 carries.
func TestRealRecordingsSentBack(t *testing.T) {
	tests := []struct {
		name      string
		thoughtUs bool // our model turn starts with a thought part the recording's lacks
		urlSafe   bool // the recording's signature is URL-safe base64
		result    gemini.ToolResult
	}{
		{a12, false, true, gemini.ToolResult{CallID: "pyd_ai_29bf73b69e02448588e15893d47a3e7e", Name: "get_country", Output: "Mexico"}},
		{a13, true, false, gemini.ToolResult{CallID: "1", Name: "weather", Output: "40 C"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs := loadRecording(t, tt.name)
			r := codectest.Fold(slices.Collect(gemini.ParseStream(bytes.NewReader(recs[0].body))))
			ours := gemini.ModelParts(provider.Message{Role: provider.RoleAssistant, Text: r.Text, Thinking: r.Thinking, ToolCalls: r.Calls})
			var recorded struct {
				Contents []gemini.Content `json:"contents"`
			}
			if err := json.Unmarshal(recs[1].requestBody, &recorded); err != nil || len(recorded.Contents) != 3 {
				t.Fatalf("recorded request #1: %v", err)
			}
			theirs := recorded.Contents[1]
			if theirs.Role != "model" {
				t.Fatalf("recorded turn role %q", theirs.Role)
			}
			if tt.thoughtUs {
				if len(ours) == 0 || !ours[0].Thought || ours[0].ThoughtSignature != "" || *ours[0].Text != r.Thinking[0].Text {
					t.Fatalf("our turn does not start with the unsigned thought: %+v", ours)
				}
				ours = ours[1:]
			}
			if len(ours) != len(theirs.Parts) {
				t.Fatalf("our turn has %d parts, the recording's %d", len(ours), len(theirs.Parts))
			}
			for k := range ours {
				o, w := ours[k], theirs.Parts[k]
				if o.FunctionCall == nil || w.FunctionCall == nil || o.FunctionCall.Name != w.FunctionCall.Name ||
					canon(t, o.FunctionCall.Args) != canon(t, w.FunctionCall.Args) {
					t.Fatalf("part %d: ours %+v, recorded %+v", k, o.FunctionCall, w.FunctionCall)
				}
				enc := base64.StdEncoding
				if tt.urlSafe {
					enc = base64.URLEncoding
					if o.ThoughtSignature == w.ThoughtSignature || !strings.ContainsAny(w.ThoughtSignature, "-_") {
						t.Errorf("part %d: the recording's signature is not the URL-safe form", k)
					}
				} else if o.ThoughtSignature != w.ThoughtSignature {
					t.Errorf("part %d: signature %q, recorded %q", k, o.ThoughtSignature, w.ThoughtSignature)
				}
				mine, err1 := base64.StdEncoding.DecodeString(o.ThoughtSignature)
				theirsSig, err2 := enc.DecodeString(w.ThoughtSignature)
				if err1 != nil || err2 != nil || !bytes.Equal(mine, theirsSig) || len(mine) == 0 {
					t.Errorf("part %d: the signatures decode to different bytes (%v, %v)", k, err1, err2)
				}
			}
			info, err := gemini.ReadRequest(recs[1].path, recs[1].requestBody)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(info.Results, []gemini.ToolResult{tt.result}) || !reflect.DeepEqual(info.UserHolds, []string{"functionResponse"}) {
				t.Errorf("results %+v of a turn holding %q, want %+v of one holding functionResponse", info.Results, info.UserHolds, tt.result)
			}
		})
	}
}

// TestReadRecordedRequests: ReadRequest reads the first request of each
// recording: the model from the path, the user's text, the system
// instruction, the tools (A12's schema from parameters_json_schema in
// snake_case, A13's from parameters with Google's upper-case types).
func TestReadRecordedRequests(t *testing.T) {
	tests := []struct {
		name string
		want gemini.RequestInfo
	}{
		{a12, gemini.RequestInfo{Model: "gemini-3-pro-preview", Stream: true, LastUserText: "What is the capital of the user country? Call the tool",
			HasUser: true, UserHolds: []string{"text"},
			Tools: []provider.ToolSpec{{Name: "get_country", Schema: json.RawMessage(`{"additionalProperties":false,"properties":{},"type":"object"}`)}}}},
		{a13, gemini.RequestInfo{Model: "gemini-2.5-flash", Stream: true, System: "You are a helpful assistant", LastUserText: "What's the weather in Florence, Italy?",
			HasUser: true, UserHolds: []string{"text"},
			Tools: []provider.ToolSpec{{Name: "weather", Description: "Get weather information for a location",
				Schema: json.RawMessage(`{"properties":{"location":{"description":"the city","type":"string"}},"required":["location"],"type":"object"}`)}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs := loadRecording(t, tt.name)
			got, err := gemini.ReadRequest(recs[0].path, recs[0].requestBody)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
