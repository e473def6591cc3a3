package importer_test

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/openmax/openmax/internal/fixture"
	"github.com/openmax/openmax/provider/sse"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/importer"
)

// responsesFormats are the formats of responsesFixtures, in its order.
var responsesFormats = []string{importer.GoVCR4, importer.VCRPy, importer.VCRPy, importer.VCRPy}

// TestResponsesFixtures imports the OpenAI Responses API recordings
// (A8–A11) and checks the import is faithful without a Responses client:
// the interactions and status codes, request bodies equal in value to the
// recorded ones (the two pydantic-ai recordings store theirs as
// parsed_body mappings), one chunk per SSE event, and what the chunks
// stream (text, tool call arguments, reasoning summaries, the terminal
// event's id, model, status and usage) against fixture.Expected.
func TestResponsesFixtures(t *testing.T) {
	if len(responsesFormats) != len(responsesFixtures) {
		t.Fatalf("%d formats for %d fixtures", len(responsesFormats), len(responsesFixtures))
	}
	for k, name := range responsesFixtures {
		t.Run(name, func(t *testing.T) {
			data := fixture.ReadReal(t, name)
			if got, err := importer.Detect(data); err != nil || got != responsesFormats[k] {
				t.Fatalf("Detect = %q, %v; want %q", got, err, responsesFormats[k])
			}
			f, err := importer.Import(importer.Auto, data)
			if err != nil {
				t.Fatalf("Import: %v", err)
			}
			named, err := importer.Import(responsesFormats[k], data)
			if err != nil || !reflect.DeepEqual(f, named) {
				t.Fatalf("Import(%s) differs from Import(auto): %v", responsesFormats[k], err)
			}
			checkCassette(t, f)
			checkRoundTrip(t, f)
			checkStockGoVCR(t, f)
			src := sourceBodies(t, data)
			exp := responsesExpectations(t, name)
			if len(f.Interactions) != len(exp) || len(src) != len(exp) {
				t.Fatalf("%d interactions imported, %d in the source, %d expected", len(f.Interactions), len(src), len(exp))
			}
			for i, it := range f.Interactions {
				e := exp[i]
				if it.Response.Code != e.Status {
					t.Errorf("#%d: status %d, expected %d", i, it.Response.Code, e.Status)
				}
				if !equalJSON(t, it.Request.Body, src[i].request) {
					t.Errorf("#%d: the request body is not the recorded value:\n got %s\nwant %s", i, it.Request.Body, src[i].request)
				}
				if e.BodyJSON != nil {
					if !equalJSON(t, it.Response.Body, string(e.BodyJSON)) {
						t.Errorf("#%d: error body %s, expected %s", i, it.Response.Body, e.BodyJSON)
					}
					continue
				}
				if it.Response.Body != src[i].response {
					t.Errorf("#%d: the streamed body is not the recorded text", i)
				}
				if got := replyOf(t, it); !reflect.DeepEqual(got, e.reply()) {
					t.Errorf("#%d: the chunks stream\n%+v\nexpected\n%+v", i, got, e.reply())
				}
			}
		})
	}
}

// TestResponsesRejectionLengths: A11's parsed_body bodies come back at the
// lengths recorded in their Content-Length: compact for the request (the
// client sent compact JSON) and indented by two spaces for OpenAI's error
// body.
func TestResponsesRejectionLengths(t *testing.T) {
	f, err := importer.Import(importer.Auto, fixture.ReadReal(t, responsesFixtures[3]))
	if err != nil {
		t.Fatal(err)
	}
	it := f.Interactions[0]
	if cl := it.Request.Headers.Get("Content-Length"); cl != "136" || len(it.Request.Body) != 136 {
		t.Errorf("request: Content-Length %s, body %d bytes; both recorded as 136", cl, len(it.Request.Body))
	}
	if cl := it.Response.Headers.Get("Content-Length"); cl != "236" || len(it.Response.Body) != 236 || !strings.HasPrefix(it.Response.Body, "{\n  \"error\": {\n") {
		t.Errorf("response: Content-Length %s, body %d bytes %.20q; both recorded as 236, indented", cl, len(it.Response.Body), it.Response.Body)
	}
}

// sourceBody is one exchange's bodies as the source file holds them: the
// request as JSON text (a parsed_body re-encoded by a generic YAML
// decoder, as a reference independent of the importer's encoder), the
// response body string.
type sourceBody struct{ request, response string }

func sourceBodies(t *testing.T, data []byte) []sourceBody {
	t.Helper()
	var doc struct {
		Interactions []struct {
			Request  map[string]any `yaml:"request"`
			Response map[string]any `yaml:"response"`
		} `yaml:"interactions"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var out []sourceBody
	for _, in := range doc.Interactions {
		var s sourceBody
		switch b := in.Request["body"].(type) {
		case string:
			s.request = b
		case nil:
			j, err := json.Marshal(in.Request["parsed_body"])
			if err != nil {
				t.Fatal(err)
			}
			s.request = string(j)
		default:
			t.Fatalf("request body %T", b)
		}
		switch b := in.Response["body"].(type) {
		case string:
			s.response = b
		case map[string]any:
			s.response, _ = b["string"].(string)
		}
		out = append(out, s)
	}
	return out
}

func equalJSON(t *testing.T, a, b string) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal([]byte(a), &va); err != nil {
		t.Errorf("not JSON: %v: %.80q", err, a)
		return false
	}
	if err := json.Unmarshal([]byte(b), &vb); err != nil {
		t.Errorf("not JSON: %v: %.80q", err, b)
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// respItem is one output item of a Responses reply.
type respItem struct {
	Index                   int
	Type, ID, Status        string
	Text                    string   // message
	Name, CallID, Arguments string   // function_call
	Summary                 []string // reasoning
}

// respReply is what a Responses stream says.
type respReply struct {
	ResponseID, Model, Terminal, Status string
	Incomplete                          string // incomplete_details as JSON
	Usage                               string // as JSON
	Output                              []respItem
}

// replyOf reads the Responses stream in it's chunks, one SSE event each,
// building text, arguments and summaries from their deltas.
func replyOf(t *testing.T, it *cassette.Interaction) respReply {
	t.Helper()
	var r respReply
	items := map[string]*respItem{}
	item := func(id string) *respItem {
		if items[id] == nil {
			items[id] = &respItem{ID: id}
		}
		return items[id]
	}
	for k, c := range it.Stream.Chunks {
		ev, err := sse.NewReader(strings.NewReader(c.Data)).Next()
		if err != nil {
			t.Fatalf("chunk %d: %v", k, err)
		}
		var d struct {
			Type         string `json:"type"`
			ItemID       string `json:"item_id"`
			OutputIndex  int    `json:"output_index"`
			SummaryIndex int    `json:"summary_index"`
			Delta        string `json:"delta"`
			Item         *struct {
				ID     string `json:"id"`
				Type   string `json:"type"`
				Status string `json:"status"`
				Name   string `json:"name"`
				CallID string `json:"call_id"`
			} `json:"item"`
			Response *struct {
				ID         string          `json:"id"`
				Model      string          `json:"model"`
				Status     string          `json:"status"`
				Incomplete json.RawMessage `json:"incomplete_details"`
				Usage      json.RawMessage `json:"usage"`
			} `json:"response"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &d); err != nil {
			t.Fatalf("chunk %d: %v", k, err)
		}
		switch d.Type {
		case "response.output_item.added", "response.output_item.done":
			x := item(d.Item.ID)
			x.Index, x.Type, x.Status, x.Name, x.CallID = d.OutputIndex, d.Item.Type, d.Item.Status, d.Item.Name, d.Item.CallID
		case "response.output_text.delta":
			item(d.ItemID).Text += d.Delta
		case "response.function_call_arguments.delta":
			item(d.ItemID).Arguments += d.Delta
		case "response.reasoning_summary_text.delta":
			x := item(d.ItemID)
			for len(x.Summary) <= d.SummaryIndex {
				x.Summary = append(x.Summary, "")
			}
			x.Summary[d.SummaryIndex] += d.Delta
		case "response.completed", "response.incomplete", "response.failed":
			r.Terminal, r.ResponseID, r.Model, r.Status = d.Type, d.Response.ID, d.Response.Model, d.Response.Status
			r.Incomplete, r.Usage = compactJSON(t, d.Response.Incomplete), compactJSON(t, d.Response.Usage)
		}
	}
	for _, x := range items {
		if x.Type == "reasoning" {
			x.Status = "" // the expectations leave a reasoning item's status out
		}
		r.Output = append(r.Output, *x)
	}
	sort.Slice(r.Output, func(i, j int) bool { return r.Output[i].Index < r.Output[j].Index })
	return r
}

func compactJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	if len(raw) == 0 {
		return "null"
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	// Key order: compare as values.
	var v any
	json.Unmarshal(b.Bytes(), &v)
	out, _ := json.Marshal(v)
	return string(out)
}

// respExpected is one entry of a Responses recording's expectations.
type respExpected struct {
	Interaction int             `json:"interaction"`
	Status      int             `json:"status"`
	BodyJSON    json.RawMessage `json:"body_json"`
	ResponseID  string          `json:"response_id"`
	Model       string          `json:"model"`
	Terminal    string          `json:"terminal_event"`
	RespStatus  string          `json:"response_status"`
	Incomplete  json.RawMessage `json:"incomplete_details"`
	Usage       json.RawMessage `json:"usage"`
	Output      []struct {
		Index     int      `json:"output_index"`
		Type      string   `json:"type"`
		ID        string   `json:"id"`
		Status    string   `json:"status"`
		Text      string   `json:"text"`
		Name      string   `json:"name"`
		CallID    string   `json:"call_id"`
		Arguments string   `json:"arguments"`
		Summary   []string `json:"summary"`
	} `json:"output"`
	t *testing.T
}

func (e respExpected) reply() respReply {
	r := respReply{ResponseID: e.ResponseID, Model: e.Model, Terminal: e.Terminal, Status: e.RespStatus,
		Incomplete: compactJSON(e.t, e.Incomplete), Usage: compactJSON(e.t, e.Usage)}
	for _, o := range e.Output {
		r.Output = append(r.Output, respItem{Index: o.Index, Type: o.Type, ID: o.ID, Status: o.Status, Text: o.Text,
			Name: o.Name, CallID: o.CallID, Arguments: o.Arguments, Summary: o.Summary})
	}
	return r
}

func responsesExpectations(t *testing.T, name string) []respExpected {
	t.Helper()
	var exp []respExpected
	dec := json.NewDecoder(bytes.NewReader(fixture.Expected(t, name)))
	if err := dec.Decode(&exp); err != nil && err != io.EOF {
		t.Fatalf("expected values for %s: %v", name, err)
	}
	for k := range exp {
		if exp[k].Interaction != k {
			t.Fatalf("expected values for %s: entry %d is interaction %s", name, k, strconv.Itoa(exp[k].Interaction))
		}
		exp[k].t = t
	}
	return exp
}

// TestResponsesSessions: each of A8–A11 gets a session for the harness's
// Responses client (provider openai, api responses) with the user text of
// its first request, its model, its tools, and (A8) the function call
// outputs its second request sent back as the tool results, named after
// their calls.
func TestResponsesSessions(t *testing.T) {
	tests := []struct {
		model, text string
		tools       []string
		results     []cassette.ToolResult
	}{
		{"gpt-4o-mini", "Add and multiply the number 2 and 3", []string{"add", "multiply"},
			[]cassette.ToolResult{{Name: "add", OK: true, Output: "5"}, {Name: "multiply", OK: true, Output: "6"}}},
		{"o3-mini", "How do I cross the street?", nil, nil},
		{"gpt-4o", "Give me a multi paragraph narrative on the life of a car", nil, nil},
		{"gpt-4o", "What is the capital of France?", nil, nil},
	}
	for k, name := range responsesFixtures {
		t.Run(name, func(t *testing.T) {
			tt := tests[k]
			f, err := importer.Import(importer.Auto, fixture.ReadReal(t, name))
			if err != nil {
				t.Fatal(err)
			}
			s, err := importer.Session(f)
			if err != nil {
				t.Fatalf("Session: %v", err)
			}
			c := s.Config
			if c == nil || c.Provider != "openai" || c.API != "responses" || c.Model != tt.model || c.MaxIterations != len(f.Interactions) || !s.Imported {
				t.Fatalf("session config %+v", c)
			}
			line, _ := json.Marshal(map[string]string{"cmd": "user", "text": tt.text})
			if len(s.Commands) != 1 || s.Commands[0].Line != string(line) {
				t.Errorf("commands %+v, want one: %s", s.Commands, line)
			}
			var tools []string
			for _, tl := range s.Tools {
				tools = append(tools, tl.Name)
				var schema map[string]any
				if err := json.Unmarshal([]byte(tl.Schema), &schema); err != nil || schema["type"] != "object" {
					t.Errorf("tool %s: schema %s (%v)", tl.Name, tl.Schema, err)
				}
			}
			if !reflect.DeepEqual(tools, tt.tools) || !reflect.DeepEqual(s.ToolResults, tt.results) {
				t.Errorf("tools %v, results %+v; want %v, %+v", tools, s.ToolResults, tt.tools, tt.results)
			}
		})
	}
}
