package drift_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/openmax/openmax/recorder"
	omcassette "github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/drift"
)

const liveKey = "sk-live-drift-secret-0123456789"

// sse is an Anthropic Messages stream of the given text, with an extra
// event when extra is set.
func sse(text, extra string) string {
	s := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"m\",\"usage\":{\"input_tokens\":3}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + text + "\"}}\n\n"
	if extra != "" {
		s += extra
	}
	return s + "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
}

// recorded is a cassette of one Messages exchange with body, its key
// scrubbed as the recorder writes it.
func recorded(url, body string, hdr map[string][]string) *omcassette.File {
	f := omcassette.New()
	if hdr == nil {
		hdr = map[string][]string{"X-Api-Key": {recorder.Scrubbed}, "Anthropic-Version": {"2023-06-01"}, "Content-Type": {"application/json"}}
	}
	f.Interactions = append(f.Interactions, &omcassette.Interaction{
		Request:  cassette.Request{Method: "POST", URL: url, Headers: hdr, Body: `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		Response: cassette.Response{Code: 200, Headers: map[string][]string{"Content-Type": {"text/event-stream"}}, Body: body},
	})
	return f
}

func getenv(k string) string {
	if k == "ANTHROPIC_API_KEY" || k == "GEMINI_API_KEY" {
		return liveKey
	}
	return ""
}

// TestShapeNotWords: a live reply that says other words in the same
// shape is no drift; a new event type and a new field in the live
// stream, a changed status, a new retry header are, each named, and the
// live request carried the key the recording had scrubbed.
func TestShapeNotWords(t *testing.T) {
	tests := []struct {
		name   string
		status int
		header map[string]string
		body   string
		want   []string // each a Change's String, in order; nil for no drift
	}{
		{"other words", 200, nil, sse("Quite different words here", ""), nil},
		{"a new event and field", 200, nil, sse("Hi", "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"citations_delta\",\"citation\":{\"url\":\"u\"}}}\n\nevent: ping\ndata: {\"type\":\"ping\"}\n\n"),
			[]string{"event ping: new (1 event)",
				"field content_block_delta: delta.citation: new (present)",
				"field content_block_delta: delta.citation.url: new (present)",
				"field content_block_delta: delta.type=citations_delta: new (present)"}},
		{"a rate limit", 429, map[string]string{"Retry-After": "7", "Content-Type": "application/json"}, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`,
			nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen http.Header
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen = r.Header.Clone()
				io.Copy(io.Discard, r.Body)
				if tt.header == nil {
					w.Header().Set("Content-Type", "text/event-stream")
				}
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			rep, err := drift.Check(context.Background(), recorded("https://api.anthropic.com/v1/messages", sse("Hi", ""), nil),
				drift.Options{BaseURL: srv.URL, Getenv: getenv})
			if err != nil {
				t.Fatal(err)
			}
			if seen.Get("X-Api-Key") != liveKey || seen.Get("Anthropic-Version") != "2023-06-01" {
				t.Errorf("the live request's headers: %v", seen)
			}
			it := rep.Interactions[0]
			if it.Wire != "anthropic" || it.Skipped != "" {
				t.Fatalf("interaction %+v", it)
			}
			var got []string
			for _, c := range it.Drift {
				got = append(got, c.String())
			}
			if tt.status != 200 {
				joined := strings.Join(got, "\n")
				for _, w := range []string{"status: 200 → 429", "body: a stream → a whole body", "header retry-after: new (present)",
					"header content-type: text/event-stream → application/json", "error: none → an error reported", "finish: end_turn → none"} {
					if !strings.Contains(joined, w) {
						t.Errorf("drift lacks %q:\n%s", w, joined)
					}
				}
				if rep.Drifted != 1 {
					t.Errorf("drifted %d", rep.Drifted)
				}
				return
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("drift:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestCredentials: a scrubbed key goes back in the header or the query
// it was scrubbed from; without the key in the environment, or on a
// SigV4-signed request, the request is not sent and the report says why;
// a URL in an error never shows the query.
func TestCredentials(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("X-Goog-Api-Key")+" "+r.URL.Query().Get("key"))
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"hi\"}],\"role\":\"model\"},\"finishReason\":\"STOP\",\"index\":0}]}\r\n\r\n")
	}))
	defer srv.Close()
	body := "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"yo\"}],\"role\":\"model\"},\"finishReason\":\"STOP\",\"index\":0}]}\r\n\r\n"
	path := "https://generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent?alt=sse&key=" + recorder.Scrubbed
	f := recorded(path, body, map[string][]string{"X-Goog-Api-Key": {recorder.Scrubbed}})
	f.Interactions[0].Request.Body = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	rep, err := drift.Check(context.Background(), f, drift.Options{BaseURL: srv.URL, Getenv: getenv})
	if err != nil || rep.Drifted != 0 || rep.Skipped != 0 {
		t.Fatalf("report %+v, %v", rep, err)
	}
	if len(got) != 1 || got[0] != liveKey+" "+liveKey {
		t.Errorf("the server saw %q", got)
	}

	rep, _ = drift.Check(context.Background(), f, drift.Options{BaseURL: srv.URL})
	if rep.Skipped != 1 || !strings.Contains(rep.Interactions[0].Skipped, "set GEMINI_API_KEY") {
		t.Errorf("without a key: %+v", rep.Interactions[0])
	}

	sig := recorded("https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse-stream", "", map[string][]string{
		"Authorization": {"AWS4-HMAC-SHA256 Credential=" + recorder.Scrubbed + ", SignedHeaders=host, Signature=" + recorder.Scrubbed}})
	sig.Interactions[0].Response.Headers = map[string][]string{"Content-Type": {"application/vnd.amazon.eventstream"}}
	rep, _ = drift.Check(context.Background(), sig, drift.Options{BaseURL: srv.URL, Getenv: func(string) string { return "x" }})
	if rep.Skipped != 1 || !strings.Contains(rep.Interactions[0].Skipped, "a signed request (bedrock, SigV4)") {
		t.Errorf("SigV4: %+v", rep.Interactions[0])
	}

	if _, err := drift.Check(context.Background(), f, drift.Options{BaseURL: "not a url"}); err == nil {
		t.Error("a bad base URL was taken")
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	rep, _ = drift.Check(context.Background(), f, drift.Options{BaseURL: closed.URL, Getenv: getenv})
	if d := rep.Interactions[0].Drift; len(d) != 1 || !strings.Contains(d[0].Live, "no response") || strings.Contains(d[0].Live, liveKey) {
		t.Errorf("unreachable: %+v", d)
	}
}

// TestHeldOpen: a server that holds the stream open after the recorded
// completion signal does not hold the check (the recorded client closed
// it there); one that stops mid-stream and holds is ended by the
// context, and the check returns.
func TestHeldOpen(t *testing.T) {
	started := make(chan struct{}, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.Copy(io.Discard, r.Body) // so the server notices the client closing
		if r.URL.Query().Get("cut") != "" {
			io.WriteString(w, sse("Hi", "")[:200])
		} else {
			io.WriteString(w, sse("Hi", ""))
		}
		w.(http.Flusher).Flush()
		started <- struct{}{}
		<-r.Context().Done()
	}))
	defer srv.Close()
	defer srv.CloseClientConnections()
	rep, err := drift.Check(context.Background(), recorded("https://api.anthropic.com/v1/messages", sse("Hi", ""), nil),
		drift.Options{BaseURL: srv.URL, Getenv: getenv})
	<-started
	if err != nil || rep.Drifted != 0 {
		t.Fatalf("held open after message_stop: %+v, %v", rep, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *drift.Report)
	go func() {
		rep, _ := drift.Check(ctx, recorded("https://api.anthropic.com/v1/messages?cut=1", sse("Hi", ""), nil),
			drift.Options{BaseURL: srv.URL, Getenv: getenv})
		done <- rep
	}()
	<-started
	cancel()
	select {
	case rep := <-done:
		if rep.Drifted != 1 {
			t.Errorf("cut and held: %+v", rep.Interactions)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the check did not end when its context did")
	}
}
