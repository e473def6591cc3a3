package replay

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openmax/openmax/internal/fixture"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/openai/responses"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/importer"
)

// responsesClient is the harness's Responses client pointed at a served
// cassette.
func responsesClient(t *testing.T, base string, c *http.Client) *responses.Client {
	t.Helper()
	cl, err := responses.New(responses.Config{APIKey: "sk-test", BaseURL: base + "/v1", Model: "gpt-4o", HTTP: &httpx.Client{HTTP: c}})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// collect streams one request and gathers what came back.
type collected struct {
	text   string
	deltas int
	finish string
	calls  []provider.ToolCall
	err    error
}

func collect(cl *responses.Client, text string) collected {
	var c collected
	req := provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: text}}}
	for p := range cl.Stream(context.Background(), req) {
		switch p := p.(type) {
		case provider.TextDelta:
			c.text += p.Text
			c.deltas++
		case provider.Finish:
			c.finish = p.Reason
		case provider.ToolCallPart:
			c.calls = append(c.calls, p.Call)
		case provider.Error:
			c.err = p.Err
		}
	}
	return c
}

// importReal imports a real recording (cassettes/real) as `openmax
// cassette import` does.
func importReal(t *testing.T, name string) *cassette.File {
	t.Helper()
	f, err := importer.Import(importer.Auto, fixture.ReadReal(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestHandlerServesResponses: the real Responses recordings, served over
// loopback as `fake-provider --cassette` serves them, reach the harness's
// Responses client as they reached the recording's: A10's 16 deltas and
// its incomplete end, A8's parallel calls, and A11's recorded 400 as an
// HTTP error with OpenAI's code and message.
func TestHandlerServesResponses(t *testing.T) {
	t.Run("A10 incomplete", func(t *testing.T) {
		base, h, c := serve(t, importReal(t, "dd-trace-py__response_stream_incomplete.yaml"), Options{InOrder: true})
		got := collect(responsesClient(t, base, c), "Give me a multi paragraph narrative on the life of a car")
		if got.err != nil || got.deltas != 16 || got.text != "In the bustling city of Detroit, a sleek, metallic blue sedan rolled off the" || got.finish != "max_output_tokens" {
			t.Errorf("%+v", got)
		}
		if u := h.Unused(); len(u) != 0 {
			t.Errorf("unused %v", u)
		}
	})
	t.Run("A8 parallel calls", func(t *testing.T) {
		base, _, c := serve(t, importReal(t, "fantasy-responses__openai-gpt-4o-mini__multi_tool_streaming.yaml"), Options{InOrder: true})
		got := collect(responsesClient(t, base, c), "Add and multiply the number 2 and 3")
		if got.err != nil || got.finish != "completed" || len(got.calls) != 2 ||
			got.calls[0].Name != "add" || got.calls[1].Name != "multiply" ||
			string(got.calls[0].Args) != `{"a":2,"b":3}` || got.calls[1].ID != "call_M9h2AZgoLEv6q5gkex1QMtm2" {
			t.Errorf("%+v", got)
		}
	})
	t.Run("A11 rejection", func(t *testing.T) {
		base, _, c := serve(t, importReal(t, "pydantic-ai-openai-responses__test_openai_responses_model_http_error.yaml"), Options{InOrder: true})
		got := collect(responsesClient(t, base, c), "What is the capital of France?")
		var he *provider.HTTPError
		if !errors.As(got.err, &he) || he.Status != 400 || he.Code != "decimal_below_min_value" || !strings.Contains(he.Message, "Invalid 'temperature'") {
			t.Errorf("%+v (%T)", got, got.err)
		}
	})
}

// TestHandlerResponsesMiss: a Responses request the cassette does not
// hold gets OpenAI's error body (the Responses API's) even when it
// carries an anthropic-version header, and the Responses client reads it
// as a 400 with code replay_miss and the miss's summary, not retried.
func TestHandlerResponsesMiss(t *testing.T) {
	f := file(streamed(recordedBase+"/responses", `{"model":"a","input":"hi","stream":true}`, chunks(0, 0, "event: response.completed\ndata: {}\n\n"), nil))
	base, h, c := serve(t, f, Options{})
	for _, hdr := range []http.Header{nil, {"Anthropic-Version": {"2023-06-01"}}} {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/responses", strings.NewReader(`{"model":"b","input":"hi","stream":true}`))
		for k, v := range hdr {
			req.Header[k] = v
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Type  *string `json:"type"`
			Error struct {
				Type, Message string
				Code          *string
			} `json:"error"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != MissStatus || body.Type != nil || body.Error.Type != "invalid_request_error" ||
			body.Error.Code == nil || *body.Error.Code != "replay_miss" || !strings.Contains(body.Error.Message, "differs in model") {
			t.Errorf("headers %v: %d %+v (%v)", hdr, resp.StatusCode, body, err)
		}
	}
	got := collect(responsesClient(t, base, c), "something else")
	var he *provider.HTTPError
	if !errors.As(got.err, &he) || he.Status != MissStatus || he.Code != "replay_miss" || !strings.Contains(he.Message, "no recorded interaction") {
		t.Errorf("%+v (%T)", got, got.err)
	}
	if m := h.Misses(); len(m) != 3 {
		t.Errorf("%d misses, want 3", len(m))
	}
}
