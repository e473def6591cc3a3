//go:build sdkpeers

// Google's Go SDK is large, so this test builds only with -tags sdkpeers,
// like the other SDK peer tests (see docs/testing.md).

package gemini_test

// Peer test: Google's own Go SDK (google.golang.org/genai), pointed at a
// loopback server that writes this package's encoder output, must
// reconstruct the same reply our client does, and the model turn it sends
// back after a function call must be the one our client sends back.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/auth"
	"google.golang.org/genai"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/gemini"
	"github.com/openmax/openmax/provider/internal/codectest"
)

const peerKey = "peer-key-0d9c"

// peerReply is what both clients must make of a reply.
type peerReply struct {
	Thought      string
	Text         string
	Calls        []peerCall
	Signatures   map[string]string // where (thought, text, or a call's name) → base64
	Finish       string
	Prompt       int
	Completion   int // candidates + thoughts
	Thoughts     int
	ResponseID   string
	ModelVersion string
}

type peerCall struct {
	ID, Name string
	Args     string // canonical JSON
}

func canonArgs(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	json.Unmarshal(b, &x)
	b, _ = json.Marshal(x)
	return string(b)
}

// peerServer serves, for every request, the next of bodies as an event
// stream, keeping each request.
type peerServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []captured
}

func newPeerServer(t *testing.T, bodies ...[]byte) *peerServer {
	t.Helper()
	ps := &peerServer{}
	ps.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		ps.mu.Lock()
		n := len(ps.requests)
		ps.requests = append(ps.requests, captured{r.URL.Path, r.URL.RawQuery, r.Header.Clone(), b})
		ps.mu.Unlock()
		if n >= len(bodies) {
			w.WriteHeader(http.StatusTeapot)
			return
		}
		if strings.HasPrefix(string(bodies[n]), "{") { // an error body
			w.Header().Set("Content-Type", "application/json; charset=UTF-8")
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write(bodies[n])
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(bodies[n])
	}))
	t.Cleanup(ps.Close)
	return ps
}

// sdkClient is a genai client of the Gemini API at base, or of Vertex AI
// (a static bearer token) when vertex is set.
func sdkClient(t *testing.T, base string, vertex bool) *genai.Client {
	t.Helper()
	tr := &http.Transport{Proxy: nil}
	t.Cleanup(tr.CloseIdleConnections)
	// The API versions are pinned to the ones our client calls: the SDK's
	// own defaults differ (v1 for the Gemini API, v1beta1 for Vertex AI),
	// and the wire is the same under each.
	cfg := &genai.ClientConfig{APIKey: peerKey, Backend: genai.BackendGeminiAPI, HTTPClient: &http.Client{Transport: tr},
		HTTPOptions: genai.HTTPOptions{BaseURL: base + "/", APIVersion: gemini.APIVersion}}
	if vertex {
		// No HTTPClient: the SDK then builds its own, which sends the
		// credentials' token as a bearer.
		cfg = &genai.ClientConfig{Backend: genai.BackendVertexAI, Project: "proj-1", Location: "europe-west4",
			Credentials: auth.NewCredentials(&auth.CredentialsOptions{TokenProvider: staticToken{}}),
			HTTPOptions: genai.HTTPOptions{BaseURL: base + "/", APIVersion: gemini.VertexAPIVersion}}
	}
	c, err := genai.NewClient(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type staticToken struct{}

func (staticToken) Token(context.Context) (*auth.Token, error) {
	return &auth.Token{Value: peerKey, Type: "Bearer", Expiry: time.Now().Add(time.Hour)}, nil
}

// sdkStream streams one reply with the SDK and folds it; contents are the
// parts it received, fragment by fragment (empty text parts left out, as
// a client builds its history).
func sdkStream(t *testing.T, c *genai.Client, history []*genai.Content) (peerReply, []*genai.Part, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	r := peerReply{Signatures: map[string]string{}}
	var got []*genai.Part
	for resp, err := range c.Models.GenerateContentStream(ctx, "gemini-peer", history, nil) {
		if err != nil {
			return r, got, err
		}
		r.ResponseID, r.ModelVersion = resp.ResponseID, resp.ModelVersion
		if u := resp.UsageMetadata; u != nil {
			r.Prompt, r.Completion, r.Thoughts = int(u.PromptTokenCount), int(u.CandidatesTokenCount+u.ThoughtsTokenCount), int(u.ThoughtsTokenCount)
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
			sig := ""
			if len(p.ThoughtSignature) > 0 {
				sig = base64.StdEncoding.EncodeToString(p.ThoughtSignature)
			}
			switch {
			case p.FunctionCall != nil:
				r.Calls = append(r.Calls, peerCall{p.FunctionCall.ID, p.FunctionCall.Name, canonArgs(t, p.FunctionCall.Args)})
				if sig != "" {
					r.Signatures[p.FunctionCall.Name] = sig
				}
			case p.Thought:
				r.Thought += p.Text
				if sig != "" {
					r.Signatures["thought"] = sig
				}
			default:
				r.Text += p.Text
				if sig != "" {
					r.Signatures["text"] = sig
				}
			}
			if p.Text != "" || p.FunctionCall != nil || len(p.ThoughtSignature) > 0 {
				got = append(got, p)
			}
		}
	}
	return r, got, nil
}

// ourStream folds what our client, configured as cfg, makes of the same
// bytes.
func ourStream(t *testing.T, cfg gemini.Config) (peerReply, []provider.Part) {
	t.Helper()
	cfg.Model, cfg.APIKey = "gemini-peer", peerKey
	c := newClient(t, cfg)
	parts := collect(t, context.Background(), c, hello, nil)
	r := peerReply{Signatures: map[string]string{}}
	for _, p := range parts {
		switch p := p.(type) {
		case provider.TextDelta:
			r.Text += p.Text
		case provider.ThinkingDelta:
			r.Thought += p.Text
			if p.Signature != "" {
				site, id, sig := gemini.SignatureSite(p.Signature)
				if site == gemini.SiteCall {
					for _, q := range parts {
						if c, ok := q.(provider.ToolCallPart); ok && c.Call.ID == id {
							site = c.Call.Name
						}
					}
				}
				r.Signatures[site] = sig
			}
		case provider.ToolCallPart:
			var v any
			json.Unmarshal(p.Call.Args, &v)
			r.Calls = append(r.Calls, peerCall{p.Call.ID, p.Call.Name, canonArgs(t, v)})
		case provider.Usage:
			r.Prompt, r.Completion = p.PromptTokens, p.CompletionTokens
			if p.ReasoningTokens != nil {
				r.Thoughts = *p.ReasoningTokens
			}
		case provider.Finish:
			r.Finish = p.Reason
		case provider.Error:
			t.Fatalf("our client: %v", p.Err)
		}
	}
	return r, parts
}

// peerParts is a reply with every kind of part: a signed thought, text,
// two calls (the first signed), usage with thoughts, STOP.
var peerParts = []provider.Part{
	provider.ThinkingDelta{Text: "**Weighing it**\n\nTwo cities – two calls."},
	provider.ThinkingDelta{Signature: "VEhPVUdIVC1TSUc="},
	provider.TextDelta{Text: "Checking "}, provider.TextDelta{Text: "both <now>."},
	provider.ThinkingDelta{Signature: gemini.CallSignature("call_A", "Q0FMTC1TSUc=")},
	provider.ToolCallPart{Call: provider.ToolCall{ID: "call_A", Name: "weather", Args: json.RawMessage(`{"location": "Florence, Italy", "units": ["C"]}`)}},
	provider.ToolCallPart{Call: provider.ToolCall{ID: "call_B", Name: "weather", Args: json.RawMessage(`{"location":"Rome"}`)}},
	provider.Usage{PromptTokens: 54, CompletionTokens: 76, ReasoningTokens: intp(62)},
	provider.Finish{Reason: gemini.FinishStop},
}

// TestPeersGenaiStream: genai and our client reconstruct the same reply
// from the encoder's stream, and both match what was encoded; the
// requests carry the key in x-goog-api-key only (Vertex: the bearer).
func TestPeersGenaiStream(t *testing.T) {
	for _, vertex := range []bool{false, true} {
		name := "gemini api"
		if vertex {
			name = "vertex ai"
		}
		t.Run(name, func(t *testing.T) {
			body := codectest.Encode(gemini.NewEncoder("resp-peer", "gemini-peer-001"), peerParts)
			srv := newPeerServer(t, body, body)
			sdk, _, err := sdkStream(t, sdkClient(t, srv.URL, vertex), []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)})
			if err != nil {
				t.Fatal(err)
			}
			cfg := gemini.Config{BaseURL: srv.URL}
			if vertex {
				cfg.Project, cfg.Location = "proj-1", "europe-west4"
			}
			ours, _ := ourStream(t, cfg)
			want := peerReply{
				Thought: "**Weighing it**\n\nTwo cities – two calls.", Text: "Checking both <now>.",
				Calls:      []peerCall{{"call_A", "weather", `{"location":"Florence, Italy","units":["C"]}`}, {"call_B", "weather", `{"location":"Rome"}`}},
				Signatures: map[string]string{"thought": "VEhPVUdIVC1TSUc=", "weather": "Q0FMTC1TSUc="},
				Finish:     "STOP", Prompt: 54, Completion: 76, Thoughts: 62, ResponseID: "resp-peer", ModelVersion: "gemini-peer-001",
			}
			// Our client does not report these; Events does (TestEvents).
			ours.ResponseID, ours.ModelVersion = want.ResponseID, want.ModelVersion
			if !reflect.DeepEqual(sdk, want) || !reflect.DeepEqual(ours, want) {
				t.Fatalf("genai %+v\nours  %+v\nwant  %+v", sdk, ours, want)
			}
			srv.mu.Lock()
			defer srv.mu.Unlock()
			for i, r := range srv.requests {
				wantPath := gemini.Path("gemini-peer", true)
				if vertex {
					wantPath = gemini.VertexPath("proj-1", "europe-west4", "gemini-peer", true)
				}
				if r.path != wantPath || r.query != gemini.StreamQuery {
					t.Errorf("request %d to %s?%s, want %s?%s", i, r.path, r.query, wantPath, gemini.StreamQuery)
				}
				key, auth := r.header.Get(gemini.KeyHeader), r.header.Get("Authorization")
				if vertex && (auth != "Bearer "+peerKey || key != "") || !vertex && (key != peerKey || auth != "") {
					t.Errorf("request %d: x-goog-api-key %q, Authorization %q", i, key, auth)
				}
				if _, err := gemini.ReadRequest(r.path, r.body); err != nil {
					t.Errorf("request %d: %v", i, err)
				}
			}
		})
	}
}

// TestPeersGenaiFunctionCall: after the reply with calls, genai sends
// back its history with the function responses; our reader reads the
// responses it carries, and the model turn it sends back is the one our
// client sends back for the same reply: the same parts, each signature
// on the same part, byte for byte.
func TestPeersGenaiFunctionCall(t *testing.T) {
	first := codectest.Encode(gemini.NewEncoder("resp-1", "gemini-peer"), peerParts)
	second := codectest.Encode(gemini.NewEncoder("resp-2", "gemini-peer"), []provider.Part{provider.TextDelta{Text: "40 C and 31 C."}, provider.Finish{Reason: "STOP"}})
	srv := newPeerServer(t, first, second)
	client := sdkClient(t, srv.URL, false)
	user := genai.NewContentFromText("Weather in Florence and Rome?", genai.RoleUser)
	_, got, err := sdkStream(t, client, []*genai.Content{user})
	if err != nil {
		t.Fatal(err)
	}
	model := &genai.Content{Role: genai.RoleModel, Parts: got}
	responses := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
		{FunctionResponse: &genai.FunctionResponse{ID: "call_A", Name: "weather", Response: map[string]any{"output": "40 C"}}},
		{FunctionResponse: &genai.FunctionResponse{ID: "call_B", Name: "weather", Response: map[string]any{"error": "no station"}}},
	}}
	reply, _, err := sdkStream(t, client, []*genai.Content{user, model, responses})
	if err != nil || reply.Text != "40 C and 31 C." {
		t.Fatalf("second reply %+v, %v", reply, err)
	}
	srv.mu.Lock()
	req := srv.requests[1]
	srv.mu.Unlock()
	info, err := gemini.ReadRequest(req.path, req.body)
	if err != nil {
		t.Fatal(err)
	}
	wantResults := []gemini.ToolResult{{CallID: "call_A", Name: "weather", Output: "40 C"}, {CallID: "call_B", Name: "weather", Output: "no station", IsError: true}}
	if !reflect.DeepEqual(info.Results, wantResults) || info.LastUserText != "Weather in Florence and Rome?" {
		t.Errorf("read %+v", info)
	}
	var sent struct {
		Contents []gemini.Content `json:"contents"`
	}
	if err := json.Unmarshal(req.body, &sent); err != nil || len(sent.Contents) != 3 {
		t.Fatalf("genai sent %s (%v)", req.body, err)
	}

	// Our client's model turn for the same reply.
	srv2 := newPeerServer(t, first)
	_, parts := ourStream(t, gemini.Config{BaseURL: srv2.URL})
	f := codectest.Fold(parts)
	msg := provider.Message{Role: provider.RoleAssistant, Text: f.Text, Thinking: f.Thinking, ToolCalls: f.Calls}
	ours := gemini.ModelParts(msg)
	theirs := joinFragments(sent.Contents[1].Parts)
	if len(ours) != len(theirs) {
		t.Fatalf("our model turn has %d parts, genai's %d:\n%s\n%s", len(ours), len(theirs), jsonOf(ours), jsonOf(theirs))
	}
	for i := range ours {
		o, g := ours[i], theirs[i]
		if o.Thought != g.Thought || textOf(o) != textOf(g) || o.ThoughtSignature != g.ThoughtSignature ||
			(o.FunctionCall == nil) != (g.FunctionCall == nil) {
			t.Errorf("part %d: ours %s, genai's %s", i, jsonOf(o), jsonOf(g))
			continue
		}
		if o.FunctionCall != nil && (o.FunctionCall.ID != g.FunctionCall.ID || o.FunctionCall.Name != g.FunctionCall.Name ||
			canonRaw(t, o.FunctionCall.Args) != canonRaw(t, g.FunctionCall.Args)) {
			t.Errorf("part %d: ours %s, genai's %s", i, jsonOf(o), jsonOf(g))
		}
	}
}

// joinFragments joins adjacent text fragments of the same kind as long as
// the earlier carries no signature (how a stream's fragments make parts).
func joinFragments(parts []gemini.Part) []gemini.Part {
	var out []gemini.Part
	for _, p := range parts {
		if n := len(out); n > 0 && p.FunctionCall == nil && out[n-1].FunctionCall == nil &&
			out[n-1].Thought == p.Thought && out[n-1].ThoughtSignature == "" {
			t := textOf(out[n-1]) + textOf(p)
			out[n-1].Text, out[n-1].ThoughtSignature = &t, p.ThoughtSignature
			continue
		}
		out = append(out, p)
	}
	return out
}

func textOf(p gemini.Part) string {
	if p.Text == nil {
		return ""
	}
	return *p.Text
}

func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }

func canonRaw(t *testing.T, raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return canonArgs(t, v)
}

// TestPeersGenaiErrors: genai reads the encoder's error body (the status,
// its message and the RetryInfo detail) and its in-stream error event as
// the errors they are.
func TestPeersGenaiErrors(t *testing.T) {
	body := gemini.RetryErrorBody(429, "", "Quota exceeded for requests per minute.", 7*time.Second)
	srv := newPeerServer(t, body)
	_, _, err := sdkStream(t, sdkClient(t, srv.URL, false), []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)})
	var ae genai.APIError
	if !errors.As(err, &ae) || ae.Code != 429 || ae.Status != "RESOURCE_EXHAUSTED" || ae.Message != "Quota exceeded for requests per minute." {
		t.Fatalf("error %v (%T)", err, err)
	}
	if len(ae.Details) != 1 || ae.Details[0]["@type"] != gemini.RetryInfoType || ae.Details[0]["retryDelay"] != "7s" {
		t.Errorf("details %v", ae.Details)
	}

	enc := gemini.NewEncoder("r", "m")
	stream := slices.Concat(enc.Part(provider.TextDelta{Text: "partial"}),
		gemini.ErrorEvent(&provider.StreamError{Type: "UNAVAILABLE", Message: "The model is overloaded."}))
	srv2 := newPeerServer(t, stream)
	r, _, err := sdkStream(t, sdkClient(t, srv2.URL, false), []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)})
	if !errors.As(err, &ae) || ae.Code != 503 || ae.Status != "UNAVAILABLE" || ae.Message != "The model is overloaded." || r.Text != "partial" {
		t.Fatalf("text %q, error %v", r.Text, err)
	}
}
