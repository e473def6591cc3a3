package harness_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/openmax/openmax/core/harness"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/openai/responses"
)

// TestAPIFlag: --api picks the wire of --provider openai; any other
// provider, or an unknown wire, is refused before the handshake.
func TestAPIFlag(t *testing.T) {
	w := newWorld(t, false)
	w.env["OPENAI_API_KEY"] = "sk-test"
	for _, tt := range []struct {
		name     string
		provider string
		api      string
		want     string // "" means accepted
	}{
		{"responses with openai", "openai", "responses", ""},
		{"chat with openai", "openai", "chat", ""},
		{"default", "openai", "", ""},
		{"responses with echo", "echo", "responses", "openai (chat or responses): it picks the wire, not for --provider echo"},
		{"chat with anthropic", "anthropic", "chat", "openai (chat or responses): it picks the wire, not for --provider anthropic"},
		{"unknown wire", "openai", "completions", `unknown --api "completions"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := harness.Defaults()
			cfg.Provider, cfg.API, cfg.Project = tt.provider, tt.api, w.project
			_, err := harness.New(cfg, harness.Deps{Getenv: w.getenv})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ce *harness.ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v; want a *ConfigError containing %q", err, tt.want)
			}
		})
	}
	if _, err := harness.FromArgs([]string{"--provider", "openai", "--api", "responses"}); err != nil {
		t.Errorf("FromArgs with --api: %v", err)
	}
}

// responsesServer speaks the Responses wire at /v1/responses: each request
// gets the next of replies, rendered by the package's encoder. It keeps
// the request bodies.
type responsesServer struct {
	*httptest.Server
	mu      sync.Mutex
	bodies  [][]byte
	paths   []string
	replies [][]provider.Part
}

func newResponsesServer(t *testing.T, replies ...[]provider.Part) *responsesServer {
	t.Helper()
	s := &responsesServer{replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		k := len(s.bodies)
		s.bodies = append(s.bodies, body)
		s.paths = append(s.paths, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		s.mu.Unlock()
		if k >= len(s.replies) {
			http.Error(w, "no more replies", http.StatusInternalServerError)
			return
		}
		e := responses.NewEncoder("resp_h", "gpt-test", 1767225600)
		out := e.Open()
		for _, p := range s.replies[k] {
			out = append(out, e.Part(p)...)
		}
		out = append(out, e.Close()...)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(out)
	}))
	t.Cleanup(s.Close)
	return s
}

// TestServeOverResponses: --provider openai --api responses against a
// loopback server speaking the wire: the stdio events of a turn (thinking,
// token, usage, message_done, and done with the wire's finish reason,
// completed), the path and key, and on the next turn of
// the continued session the reasoning sent back with its encrypted
// content before the assistant's text.
func TestServeOverResponses(t *testing.T) {
	w := newWorld(t, true)
	w.env["OPENAI_API_KEY"] = "sk-responses-test"
	cached := 3
	srv := newResponsesServer(t,
		[]provider.Part{provider.ThinkingDelta{Text: "Plan the greeting."}, provider.ThinkingDelta{Signature: "ENC-final"},
			provider.TextDelta{Text: "Hel"}, provider.TextDelta{Text: "lo!"},
			provider.Usage{PromptTokens: 11, CompletionTokens: 5, CachedTokens: &cached}, provider.Finish{Reason: "stop"}},
		[]provider.Part{provider.TextDelta{Text: "Again."}, provider.Finish{Reason: "stop"}},
	)
	run := func(mutate func(*harness.Config), text string) string {
		t.Helper()
		h := w.harness(t, func(c *harness.Config) {
			c.Provider, c.API, c.BaseURL, c.Model = "openai", "responses", srv.URL+"/v1", "gpt-test"
			if mutate != nil {
				mutate(c)
			}
		})
		var out bytes.Buffer
		code, err := h.Serve(context.Background(), strings.NewReader(`{"cmd":"user","text":"`+text+`"}`+"\n"), &out)
		if err != nil || code != 0 {
			t.Fatalf("Serve: %d, %v\n%s", code, err, out.String())
		}
		return out.String()
	}

	out := run(func(c *harness.Config) { c.SessionID = "s-resp" }, "hi")
	if got, want := strings.Join(types(t, []byte(out)), " "), "hello budget thinking token token usage message_done done"; got != want {
		t.Fatalf("events %q, want %q\n%s", got, want, out)
	}
	for _, s := range []string{`"type":"token","text":"Hel"`, `"type":"message_done","text":"Hello!"`, `"stop_reason":"completed"`,
		`"prompt_tokens":11`, `"completion_tokens":5`, `"cached_tokens":3`, `"type":"thinking","text":"Plan the greeting."`} {
		if !strings.Contains(out, s) {
			t.Errorf("transcript lacks %s:\n%s", s, out)
		}
	}
	if strings.Contains(out, "sk-responses-test") {
		t.Errorf("the key reached stdout")
	}

	out = run(func(c *harness.Config) { c.Continue = true }, "again")
	if !strings.Contains(out, `"type":"message_done","text":"Again."`) {
		t.Fatalf("second turn:\n%s", out)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.bodies) != 2 {
		t.Fatalf("%d requests, want 2", len(srv.bodies))
	}
	for _, p := range srv.paths {
		if p != "POST /v1/responses Bearer sk-responses-test" {
			t.Errorf("request %s", p)
		}
	}
	var req responses.Request
	if err := json.Unmarshal(srv.bodies[1], &req); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, it := range req.Input {
		k := it.Type + ":" + it.Role
		if it.EncryptedContent != nil {
			k += *it.EncryptedContent
		}
		kinds = append(kinds, k)
	}
	if got, want := strings.Join(kinds, " "), "message:user reasoning:ENC-final message:assistant message:user"; got != want {
		t.Errorf("second request's input %q, want %q\n%s", got, want, srv.bodies[1])
	}
	if req.Store == nil || *req.Store || req.Model != "gpt-test" || !req.Stream {
		t.Errorf("second request %s", srv.bodies[1])
	}
}
