//go:build sdkpeers

package replay_test

// Peer tests of the Gemini wire with Google's own Go client
// (google.golang.org/genai), on the Gemini API and on Vertex AI: against
// the fake provider serving a scenario, what genai reads is what our
// client reads; recorded through the recorder, the cassette replayed to
// genai gives it the same reply again.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/auth"
	"google.golang.org/genai"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/fake"
	"github.com/openmax/openmax/provider/gemini"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/replay"
)

const geminiPeerKey = "gemini-peer-key-5e1f"

// geminiReply is a reply as a client reconstructs it.
type geminiReply struct {
	Thought, Text string
	Calls         []string // id name args
	Signatures    []string // base64, in order
	Usage         [3]int   // prompt, candidates+thoughts, thoughts
	Finish        string
	// Err is the failure's status name and message, and a RetryInfo wait.
	Err string
}

type geminiToken struct{}

func (geminiToken) Token(context.Context) (*auth.Token, error) {
	return &auth.Token{Value: geminiPeerKey, Type: "Bearer", Expiry: time.Now().Add(time.Hour)}, nil
}

// viaGenai streams one reply with genai from base, through hc (nil: the
// SDK's own client, which Vertex AI needs to send its bearer).
func viaGenai(t *testing.T, base string, vertex bool, hc *http.Client) geminiReply {
	t.Helper()
	cfg := &genai.ClientConfig{APIKey: geminiPeerKey, Backend: genai.BackendGeminiAPI, HTTPClient: hc,
		HTTPOptions: genai.HTTPOptions{BaseURL: base + "/", APIVersion: gemini.APIVersion}}
	if vertex {
		cfg = &genai.ClientConfig{Backend: genai.BackendVertexAI, Project: "proj-1", Location: "europe-west4", HTTPClient: hc,
			Credentials: auth.NewCredentials(&auth.CredentialsOptions{TokenProvider: geminiToken{}}),
			HTTPOptions: genai.HTTPOptions{BaseURL: base + "/", APIVersion: gemini.VertexAPIVersion}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := genai.NewClient(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var r geminiReply
	for resp, err := range c.Models.GenerateContentStream(ctx, "gemini-2.5-flash", genai.Text("hi"), nil) {
		if err != nil {
			var ae genai.APIError
			if errors.As(err, &ae) {
				r.Err = ae.Status + ": " + ae.Message
				for _, d := range ae.Details {
					if d["@type"] == gemini.RetryInfoType {
						r.Err += fmt.Sprintf(" (wait %v)", d["retryDelay"])
					}
				}
			} else {
				r.Err = err.Error()
			}
			break
		}
		if u := resp.UsageMetadata; u != nil {
			r.Usage = [3]int{int(u.PromptTokenCount), int(u.CandidatesTokenCount + u.ThoughtsTokenCount), int(u.ThoughtsTokenCount)}
		}
		if len(resp.Candidates) == 0 {
			continue
		}
		cand := resp.Candidates[0]
		if cand.FinishReason != "" {
			r.Finish = string(cand.FinishReason)
		}
		if cand.Content == nil {
			continue
		}
		for _, p := range cand.Content.Parts {
			switch {
			case p.FunctionCall != nil:
				args, _ := json.Marshal(p.FunctionCall.Args)
				r.Calls = append(r.Calls, p.FunctionCall.ID+" "+p.FunctionCall.Name+" "+canon(t, string(args)))
			case p.Thought:
				r.Thought += p.Text
			default:
				r.Text += p.Text
			}
			if len(p.ThoughtSignature) > 0 {
				r.Signatures = append(r.Signatures, base64.StdEncoding.EncodeToString(p.ThoughtSignature))
			}
		}
	}
	return r
}

// viaOurGemini streams one reply with our client.
func viaOurGemini(t *testing.T, base string, vertex bool) geminiReply {
	t.Helper()
	cfg := gemini.Config{BaseURL: base, Model: "gemini-2.5-flash", APIKey: geminiPeerKey,
		HTTP: &httpx.Client{HTTP: &http.Client{Transport: &http.Transport{}}, Clock: clock.NewFake(time.Unix(fake.Created, 0))}}
	if vertex {
		cfg.Project, cfg.Location = "proj-1", "europe-west4"
	}
	c, err := gemini.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var r geminiReply
	for part := range c.Stream(ctx, provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}}) {
		switch p := part.(type) {
		case provider.TextDelta:
			r.Text += p.Text
		case provider.ThinkingDelta:
			r.Thought += p.Text
			if p.Signature != "" {
				_, _, sig := gemini.SignatureSite(p.Signature)
				r.Signatures = append(r.Signatures, sig)
			}
		case provider.ToolCallPart:
			r.Calls = append(r.Calls, p.Call.ID+" "+p.Call.Name+" "+canon(t, string(p.Call.Args)))
		case provider.Usage:
			r.Usage = [3]int{p.PromptTokens, p.CompletionTokens, 0}
			if p.ReasoningTokens != nil {
				r.Usage[2] = *p.ReasoningTokens
			}
		case provider.Finish:
			r.Finish = p.Reason
		case provider.Error:
			var he *provider.HTTPError
			if errors.As(p.Err, &he) {
				r.Err = he.Code + ": " + he.Message
				if he.HasRetryAfter {
					r.Err += fmt.Sprintf(" (wait %s)", gemini.FormatDelay(he.RetryAfter))
				}
				continue
			}
			se := provider.StreamErrorOf(p.Err)
			r.Err = se.Type + ": " + se.Message
		}
	}
	return r
}

// TestPeersGemini: on the Gemini API and on Vertex AI, for each scenario,
// genai reads from the fake provider what our client reads; recorded
// through the recorder and replayed from the cassette, genai reads the
// same reply again, and the replay used every interaction.
func TestPeersGemini(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       geminiReply
	}{
		{"thought, signature, text, usage", `replies:
  - chunks:
      - thinking: "Plan it."
      - signature: "c2lnLTE="
      - text: "Hello from "
      - text: "the fake Gemini."
      - usage: {prompt_tokens: 11, completion_tokens: 9, reasoning_tokens: 3}
      - finish: STOP
`, geminiReply{Thought: "Plan it.", Text: "Hello from the fake Gemini.", Signatures: []string{"c2lnLTE="}, Usage: [3]int{11, 9, 3}, Finish: "STOP"}},
		{"function call", `replies:
  - text: "Checking."
    tool_calls:
      - {id: call_1, name: read_file, args: {path: a.txt, opts: {lines: [1, 2]}}}
    usage: {prompt_tokens: 20, completion_tokens: 9}
`, geminiReply{Text: "Checking.", Calls: []string{`call_1 read_file {"opts":{"lines":[1,2]},"path":"a.txt"}`}, Usage: [3]int{20, 9, 0}, Finish: "STOP"}},
		{"MAX_TOKENS", `replies:
  - chunks:
      - text: "Cut"
      - finish: MAX_TOKENS
`, geminiReply{Text: "Cut", Finish: "MAX_TOKENS"}},
		{"UNAVAILABLE in the stream", `replies:
  - chunks:
      - text: "Part"
      - stream_error: {type: UNAVAILABLE, message: "The model is overloaded. Please try again later."}
`, geminiReply{Text: "Part", Err: "UNAVAILABLE: The model is overloaded. Please try again later."}},
		{"429 with RetryInfo", `replies:
  - status: 429
    body: '{"error":{"code":429,"message":"Quota exceeded.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"7s"}]}}'
`, geminiReply{Err: "RESOURCE_EXHAUSTED: Quota exceeded. (wait 7s)"}},
		{"503 in the wire's shape", `replies:
  - status: 503
`, geminiReply{Err: "UNAVAILABLE: The model is overloaded. Please try again later."}},
	}
	for _, vertex := range []bool{false, true} {
		api := "gemini-api"
		if vertex {
			api = "vertex"
		}
		for _, tt := range tests {
			t.Run(api+"/"+tt.name, func(t *testing.T) {
				ours := viaOurGemini(t, serveScenario(t, tt.yaml), vertex)
				theirs := viaGenai(t, serveScenario(t, tt.yaml), vertex, nil)
				if !reflect.DeepEqual(ours, tt.want) || !reflect.DeepEqual(theirs, tt.want) {
					t.Fatalf("our client read %+v\ngenai read      %+v\nwant            %+v", ours, theirs, tt.want)
				}

				path := filepath.Join(t.TempDir(), "gemini.yaml")
				rec, err := recorder.New(recorder.Options{Path: path})
				if err != nil {
					t.Fatal(err)
				}
				live := viaGenai(t, serveScenario(t, tt.yaml), vertex, &http.Client{Transport: rec})
				if err := rec.Close(); err != nil {
					t.Fatal(err)
				}
				data, err := cassette.Load(path)
				if err != nil {
					t.Fatal(err)
				}
				rp := replay.New(data, replay.Options{Scrub: recorder.ScrubFunc(nil)})
				replayed := viaGenai(t, "http://127.0.0.1:1", vertex, &http.Client{Transport: rp})
				if !reflect.DeepEqual(live, tt.want) || !reflect.DeepEqual(replayed, live) {
					t.Fatalf("recorded %+v\nreplayed %+v\nwant %+v", live, replayed, tt.want)
				}
				if u := rp.Unused(); len(u) != 0 {
					t.Errorf("unused interactions %v", u)
				}
				raw, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(raw), geminiPeerKey) {
					t.Errorf("the key reached the cassette")
				}
			})
		}
	}
}
