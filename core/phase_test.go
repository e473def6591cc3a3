package core_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/provider/openai/responses"
)

// responsesSSE is a Responses stream: each event a JSON object whose type
// names the SSE event.
func responsesSSE(events ...string) string {
	var b strings.Builder
	for _, ev := range events {
		var head struct{ Type string }
		_ = json.Unmarshal([]byte(ev), &head)
		b.WriteString("event: " + head.Type + "\ndata: " + ev + "\n\n")
	}
	return b.String()
}

// TestResponsesPhaseGoesBack: a Responses message item's phase
// (commentary, final_answer) goes back on the assistant item of the next
// request, as OpenAI asks clients to send it, through a tool round and
// into the next turn.
func TestResponsesPhaseGoesBack(t *testing.T) {
	replies := []string{
		responsesSSE(
			`{"type":"response.output_item.added","output_index":0,"item":{"id":"msg_1","type":"message","role":"assistant","phase":"commentary","content":[]}}`,
			`{"type":"response.output_text.delta","output_index":0,"content_index":0,"item_id":"msg_1","delta":"Looking."}`,
			`{"type":"response.output_item.done","output_index":0,"item":{"id":"msg_1","type":"message","role":"assistant","phase":"commentary","status":"completed","content":[{"type":"output_text","text":"Looking.","annotations":[]}]}}`,
			`{"type":"response.output_item.done","output_index":1,"item":{"id":"fc_1","type":"function_call","call_id":"c1","name":"echo_args","arguments":"{}","status":"completed"}}`,
			`{"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[{"id":"fc_1","type":"function_call","call_id":"c1","name":"echo_args","arguments":"{}"}]}}`),
		responsesSSE(
			`{"type":"response.output_item.done","output_index":0,"item":{"id":"msg_2","type":"message","role":"assistant","phase":"final_answer","status":"completed","content":[{"type":"output_text","text":"Done.","annotations":[]}]}}`,
			`{"type":"response.completed","response":{"id":"resp_2","status":"completed","output":[]}}`),
		responsesSSE(
			`{"type":"response.output_item.done","output_index":0,"item":{"id":"msg_3","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Again.","annotations":[]}]}}`,
			`{"type":"response.completed","response":{"id":"resp_3","status":"completed","output":[]}}`),
	}
	var (
		mu     sync.Mutex
		bodies []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		n := len(bodies)
		bodies = append(bodies, string(b))
		mu.Unlock()
		if n >= len(replies) {
			http.Error(w, "no more replies", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, replies[n])
	}))
	defer srv.Close()
	client, err := responses.New(responses.Config{APIKey: "k", BaseURL: srv.URL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, client, echoTool())
	s := core.NewSession("s")
	var rec recorder
	if stop := e.RunTurn(context.Background(), s, "go", rec.emit); stop != "completed" {
		t.Fatalf("first turn stop %q: %s", stop, rec.types())
	}
	if stop := e.RunTurn(context.Background(), s, "again", rec.emit); stop != "completed" {
		t.Fatalf("second turn stop %q: %s", stop, rec.types())
	}
	if len(bodies) != 3 {
		t.Fatalf("%d requests, want 3", len(bodies))
	}
	// phases are the phase of each assistant message item sent, in order.
	phases := func(body string) []string {
		var req struct {
			Input []map[string]any `json:"input"`
		}
		if err := json.Unmarshal([]byte(body), &req); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, it := range req.Input {
			if it["type"] == "message" && it["role"] == "assistant" {
				p, _ := it["phase"].(string)
				out = append(out, p)
			}
		}
		return out
	}
	for i, want := range [][]string{{"commentary"}, {"commentary", "final_answer"}} {
		if got := phases(bodies[i+1]); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("request %d: assistant phases %q, want %q\n%s", i+1, got, want, bodies[i+1])
		}
	}
	// A message item with no phase goes back with none.
	if strings.Count(bodies[2], `"phase"`) != 2 {
		t.Errorf("request 2 sends a phase the reply did not have: %s", bodies[2])
	}
}
