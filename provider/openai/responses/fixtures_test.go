package responses_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/openmax/openmax/internal/fixture"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/openai/responses"
	"github.com/openmax/openmax/provider/sse"
)

// ---- Real recorded traffic (cassettes/real A8–A11, see SOURCES.md) ----

// recording is one recorded response.
type recording struct {
	status int
	header http.Header
	body   []byte
}

// loadRecording reads the responses of a recording (see
// fixture.Exchanges).
func loadRecording(t *testing.T, name string) []recording {
	t.Helper()
	var out []recording
	for _, x := range fixture.Exchanges(t, name) {
		out = append(out, recording{status: x.Status, header: x.Header, body: x.Body})
	}
	return out
}

// replayServer serves the recorded responses in order, with their status
// and Content-Type as recorded, at the API root /v1.
func replayServer(t *testing.T, recs []recording) (*httptest.Server, func() int) {
	t.Helper()
	next := make(chan recording, len(recs))
	for _, r := range recs {
		next <- r
	}
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		if r.URL.Path != "/v1/responses" || r.Header.Get("Authorization") != "Bearer sk-test" {
			t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
		}
		io.Copy(io.Discard, r.Body)
		var rec recording
		select {
		case rec = <-next:
		default:
			t.Errorf("more requests than recorded responses")
			w.WriteHeader(500)
			return
		}
		if ct := rec.header.Get("Content-Type"); ct != "" {
			w.Header().Set("Content-Type", ct)
		} else {
			// go-vcr v4 recordings of fantasy keep no response headers.
			w.Header().Set("Content-Type", "text/event-stream")
		}
		w.WriteHeader(rec.status)
		w.Write(rec.body)
	}))
	t.Cleanup(srv.Close)
	return srv, func() int { return n }
}

// recordedReply is one interaction of fixture.Expected for a Responses
// recording.
type recordedReply struct {
	Status            int    `json:"status"`
	Terminal          string `json:"terminal_event"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Output []struct {
		Type             string   `json:"type"`
		Text             string   `json:"text"`
		Name             string   `json:"name"`
		CallID           string   `json:"call_id"`
		Arguments        string   `json:"arguments"`
		Summary          []string `json:"summary"`
		EncryptedContent *struct {
			Source string `json:"source"`
			Length int    `json:"length"`
			SHA256 string `json:"sha256"`
		} `json:"encrypted_content"`
		InTerminal *struct {
			SHA256 string `json:"sha256"`
		} `json:"encrypted_content_in_terminal_event"`
	} `json:"output"`
	Usage *struct {
		InputTokens        int `json:"input_tokens"`
		InputTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        int `json:"output_tokens"`
		OutputTokensDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	} `json:"usage"`
	BodyJSON *struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Param   string `json:"param"`
			Type    string `json:"type"`
		} `json:"error"`
	} `json:"body_json"`
}

// folded is a reply folded the way the engine folds it.
type folded struct {
	Text       string
	Thinking   string
	Signatures []string
	Calls      []provider.ToolCall
	Usage      *provider.Usage
	Finish     string
	Err        error
}

func fold(t *testing.T, ps []provider.Part) folded {
	t.Helper()
	var f folded
	for _, p := range ps {
		switch p := p.(type) {
		case provider.TextDelta:
			f.Text += p.Text
		case provider.ThinkingDelta:
			f.Thinking += p.Text
			if p.Signature != "" {
				f.Signatures = append(f.Signatures, p.Signature)
			}
		case provider.ToolCallPart:
			f.Calls = append(f.Calls, p.Call)
		case provider.Usage:
			u := p
			f.Usage = &u
		case provider.Finish:
			f.Finish = p.Reason
		case provider.Error:
			f.Err = p.Err
		default:
			t.Errorf("unexpected part %#v", p)
		}
	}
	return f
}

// want is what the expectation says the client must make of the reply.
func (e recordedReply) want() folded {
	var f folded
	var thoughts []string
	for _, o := range e.Output {
		switch o.Type {
		case "message":
			f.Text += o.Text
		case "reasoning":
			thoughts = append(thoughts, strings.Join(o.Summary, "\n\n"))
		case "function_call":
			f.Calls = append(f.Calls, provider.ToolCall{ID: o.CallID, Name: o.Name, Args: json.RawMessage(o.Arguments)})
		}
	}
	f.Thinking = strings.Join(thoughts, "")
	if u := e.Usage; u != nil {
		cached, reasoning := u.InputTokensDetails.CachedTokens, u.OutputTokensDetails.ReasoningTokens
		f.Usage = &provider.Usage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, CachedTokens: &cached, ReasoningTokens: &reasoning}
	}
	switch e.Terminal {
	case "response.completed":
		f.Finish = "completed"
	case "response.incomplete":
		f.Finish = e.IncompleteDetails.Reason
		f.Calls = nil // an incomplete reply runs no calls
	}
	return f
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestRealRecordings: each streamed reply of A8–A10, served over loopback
// as recorded and read through the Client (and through ParseStream, which
// must agree), reconstructs exactly what internal/fixture/expected lists:
// the text, the reasoning summaries, the function calls (call_id, name,
// arguments), the usage with cached and reasoning tokens, and the
// terminal status or incomplete reason. A9's signature is the encrypted
// content of the reasoning item's output_item.done, not the added one's
// nor the terminal event's.
func TestRealRecordings(t *testing.T) {
	for _, name := range []string{
		"fantasy-responses__openai-gpt-4o-mini__multi_tool_streaming.yaml",            // A8: parallel calls, then text
		"pydantic-ai-openai-responses__test_openai_responses_thinking_part_iter.yaml", // A9: reasoning summary parts
		"dd-trace-py__response_stream_incomplete.yaml",                                // A10: max_output_tokens
	} {
		t.Run(name, func(t *testing.T) {
			recs := loadRecording(t, name)
			var exp []recordedReply
			if err := json.Unmarshal(fixture.Expected(t, name), &exp); err != nil {
				t.Fatal(err)
			}
			if len(exp) != len(recs) {
				t.Fatalf("%d recorded interactions, %d expected", len(recs), len(exp))
			}
			srv, _ := replayServer(t, recs)
			c := newClient(t, srv.URL+"/v1")
			for i, e := range exp {
				if recs[i].status != e.Status || e.Status != 200 {
					t.Fatalf("#%d: status %d, expected %d", i, recs[i].status, e.Status)
				}
				got := parts(c.Stream(context.Background(), conversation))
				parsed := parts(responses.ParseStream(strings.NewReader(string(recs[i].body))))
				if !reflect.DeepEqual(got, parsed) {
					t.Errorf("#%d: the client and ParseStream disagree", i)
				}
				f, want := fold(t, got), e.want()
				if f.Err != nil {
					t.Fatalf("#%d: %v", i, f.Err)
				}
				var wantSigs []string
				for _, o := range e.Output {
					if o.EncryptedContent != nil {
						if o.EncryptedContent.Source != "response.output_item.done" {
							t.Fatalf("#%d: the expectation takes the encrypted content from %s", i, o.EncryptedContent.Source)
						}
						wantSigs = append(wantSigs, o.EncryptedContent.SHA256)
						if len(f.Signatures) > 0 && len(f.Signatures[0]) != o.EncryptedContent.Length {
							t.Errorf("#%d: signature of %d bytes, want %d", i, len(f.Signatures[0]), o.EncryptedContent.Length)
						}
						if o.InTerminal != nil && o.InTerminal.SHA256 == o.EncryptedContent.SHA256 {
							t.Errorf("#%d: the expectation has the terminal copy equal to the done one", i)
						}
					}
				}
				var gotSigs []string
				for _, s := range f.Signatures {
					gotSigs = append(gotSigs, sha(s))
				}
				if !reflect.DeepEqual(gotSigs, wantSigs) {
					t.Errorf("#%d: signatures (sha256) %v, want %v", i, gotSigs, wantSigs)
				}
				f.Signatures = nil
				if !reflect.DeepEqual(f, want) {
					t.Errorf("#%d: reconstructed\n%s\nwant\n%s", i, showFolded(f), showFolded(want))
				}
			}
		})
	}
}

func showFolded(f folded) string {
	b, _ := json.MarshalIndent(struct {
		Text, Thinking, Finish string
		Calls                  []provider.ToolCall
		Usage                  string
	}{f.Text, f.Thinking, f.Finish, f.Calls, show([]provider.Part{derefUsage(f.Usage)})}, "", "  ")
	return string(b)
}

func derefUsage(u *provider.Usage) provider.Part {
	if u == nil {
		return provider.Finish{Reason: "<no usage>"}
	}
	return *u
}

// TestRealEncryptedReasoning: in A9 the reasoning item's encrypted content
// changes between its output_item.added and .done events; the client
// keeps the done one, which is 440 bytes.
func TestRealEncryptedReasoning(t *testing.T) {
	const name = "pydantic-ai-openai-responses__test_openai_responses_thinking_part_iter.yaml"
	body := loadRecording(t, name)[0].body
	var added, done string
	r := sse.NewReader(strings.NewReader(string(body)))
	for {
		ev, err := r.Next()
		if err != nil {
			break
		}
		var e responses.Event
		if json.Unmarshal([]byte(ev.Data), &e) != nil || e.Item == nil || e.Item.Type != "reasoning" || e.Item.EncryptedContent == nil {
			continue
		}
		switch e.Type {
		case responses.EventItemAdded:
			added = *e.Item.EncryptedContent
		case responses.EventItemDone:
			done = *e.Item.EncryptedContent
		}
	}
	if added == "" || done == "" || added == done {
		t.Fatalf("the recording's added and done tokens: %d and %d bytes, equal %v", len(added), len(done), added == done)
	}
	var sigs []string
	for p := range responses.ParseStream(strings.NewReader(string(body))) {
		if td, ok := p.(provider.ThinkingDelta); ok && td.Signature != "" {
			sigs = append(sigs, td.Signature)
		}
	}
	if len(sigs) != 1 || sigs[0] != done || len(sigs[0]) != 440 {
		t.Fatalf("signatures %d, want the done token (440 bytes) once", len(sigs))
	}
}

// TestRealHTTPError: A11, OpenAI's 400 to a streaming request with an
// invalid temperature, is one HTTPError with the recorded code and
// message, and provider/retry does not resend it.
func TestRealHTTPError(t *testing.T) {
	const name = "pydantic-ai-openai-responses__test_openai_responses_model_http_error.yaml"
	recs := loadRecording(t, name)
	var exp []recordedReply
	if err := json.Unmarshal(fixture.Expected(t, name), &exp); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || len(exp) != 1 || exp[0].BodyJSON == nil {
		t.Fatalf("%d recorded, %d expected", len(recs), len(exp))
	}
	e := exp[0].BodyJSON.Error
	if e.Type != "invalid_request_error" || e.Code != "decimal_below_min_value" || e.Param != "temperature" {
		t.Fatalf("the expectation changed: %+v", e)
	}
	want := &provider.HTTPError{Status: 400, Code: e.Code, Message: e.Message}

	srv, _ := replayServer(t, recs)
	got := parts(newClient(t, srv.URL+"/v1").Stream(context.Background(), conversation))
	var he *provider.HTTPError
	if len(got) != 1 || !errors.As(errOf(got), &he) || *he != *want {
		t.Fatalf("parts %s, want %v", show(got), want)
	}

	srv2, requests := replayServer(t, append(recs, recs...))
	got, retries := throughRetry(t, newClient(t, srv2.URL+"/v1"))
	if retries != 0 || requests() != 1 || !errors.As(errOf(got), &he) || he.Status != 400 {
		t.Fatalf("through provider/retry: %d retries, %d requests, %s", retries, requests(), show(got))
	}
}
