package importer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/openmax/openmax/internal/fixture"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/anthropic"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/openai"
	"github.com/openmax/openmax/provider/sse"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/importer"
	"github.com/openmax/openmax/recorder/replay"
)

// The real recordings of cassettes/real (see its SOURCES.md), with
// their format and the vendor client that replays them.
var fixtures = []struct {
	id, file, format, vendor string
}{
	{"A1", "simonw-llm__test_tool_use_basic.yaml", importer.VCRPy, "openai"},
	{"A2", "simonw-llm-anthropic__test_stream_events_tool_calls.yaml", importer.VCRPy, "anthropic"},
	{"A3", "simonw-llm-anthropic__test_thinking_prompt.yaml", importer.VCRPy, "anthropic"},
	{"A4", "anthropic-sdk-go__tool_runner_streaming_all.yaml", importer.GoVCR1, "anthropic"},
	{"A5", "fantasy__openai-gpt-4o-mini__multi_tool_streaming.yaml", importer.GoVCR4, "openai"},
	{"A6", "langchaingo-openai__TestClient_CreateChatCompletionStream.httprr", importer.HTTPRR, "openai"},
	{"A7", "autogpt-cassettes-206c0689__test_write_file.yaml", importer.VCRPy, "openai"},
}

// responsesFixtures are the OpenAI Responses API recordings (A8–A11),
// checked by this package's own reading of their events
// (TestResponsesFixtures); package responses reconstructs them through its
// client, and cmd/openmax replays them through the engine.
var responsesFixtures = []string{
	"fantasy-responses__openai-gpt-4o-mini__multi_tool_streaming.yaml",
	"pydantic-ai-openai-responses__test_openai_responses_thinking_part_iter.yaml",
	"dd-trace-py__response_stream_incomplete.yaml",
	"pydantic-ai-openai-responses__test_openai_responses_model_http_error.yaml",
}

// vendorFixtures are the recordings of wires whose vendor packages
// reconstruct them (A12, A13: provider/gemini; A14, A15: provider/bedrock);
// cmd/openmax's TestCommandsReadEveryImportFormat imports and replays them.
var vendorFixtures = []string{
	"pydantic-ai-google__test_google_streaming_tool_call_thought_signature.yaml",
	"fantasy__gemini-2.5-flash__thinking-streaming.yaml",
	"pydantic-ai-bedrock__test_bedrock_model_iter_stream.yaml",
	"fantasy__bedrock-anthropic-claude-haiku-4-5__tool_streaming.yaml",
}

// secrets are values in the fixtures that must not survive an import.
var secrets = []string{
	"fake-api-key-for-testing-only", // A4 X-Api-Key
	"test-api-key",                  // A6 Authorization
	"_cfuvid=",                      // A2 Set-Cookie
}

// fixtureDir is the project's copy of the real recordings.
func fixtureDir(t *testing.T) string { t.Helper(); return fixture.RealDir() }

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtureDir(t), name))
	if err != nil {
		t.Fatalf("reading fixture %s: %v", name, err)
	}
	return data
}

// TestFixturesListed keeps the table in step with the folder: every
// recording there is imported below.
func TestFixturesListed(t *testing.T) {
	entries, err := os.ReadDir(fixtureDir(t))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, f := range append(responsesFixtures, vendorFixtures...) {
		listed[f] = true
	}
	for _, f := range fixtures {
		listed[f.file] = true
	}
	seen := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() || e.Name() == "SOURCES.md" {
			continue
		}
		seen[e.Name()] = true
		if !listed[e.Name()] {
			t.Errorf("%s is in the fixtures folder but not in this test's table", e.Name())
		}
	}
	for name := range listed {
		if !seen[name] {
			t.Errorf("%s is in this test's table but not in the fixtures folder", name)
		}
	}
}

func TestFormats(t *testing.T) {
	want := []string{"vcrpy", "govcr1", "govcr4", "httprr"}
	if got := importer.Formats(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Formats() = %v, want %v", got, want)
	}
	if _, err := importer.Import("har", []byte("{}")); !errors.Is(err, importer.ErrUnknownFormat) {
		t.Fatalf("unknown format: %v", err)
	}
}

// TestRealFixtures imports every real recording, with auto detection and
// with its format named, checks the cassette (round trip, stock go-vcr,
// chunks, scrubbing), then replays it through our vendor clients and
// checks their reconstructions against testdata/expected.
func TestRealFixtures(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx.id, func(t *testing.T) {
			data := readFixture(t, fx.file)
			if got, err := importer.Detect(data); err != nil || got != fx.format {
				t.Fatalf("Detect = %q, %v; want %q", got, err, fx.format)
			}
			auto, err := importer.Import(importer.Auto, data)
			if err != nil {
				t.Fatalf("Import(auto): %v", err)
			}
			named, err := importer.Import(fx.format, data)
			if err != nil {
				t.Fatalf("Import(%s): %v", fx.format, err)
			}
			if !reflect.DeepEqual(auto, named) {
				t.Fatalf("Import(auto) and Import(%s) differ", fx.format)
			}
			for _, other := range importer.Formats() {
				if other == fx.format {
					continue
				}
				if _, err := importer.Import(other, data); err == nil {
					t.Errorf("Import(%s) of a %s recording succeeded", other, fx.format)
				}
			}
			exp := expectations(t, fx.file)
			for _, tc := range []struct {
				name string
				f    *cassette.File
			}{{"auto", auto}, {fx.format, named}} {
				t.Run(tc.name, func(t *testing.T) {
					if len(tc.f.Interactions) != len(exp) {
						t.Fatalf("%d interactions, %d are expected", len(tc.f.Interactions), len(exp))
					}
					checkCassette(t, tc.f)
					checkRoundTrip(t, tc.f)
					checkStockGoVCR(t, tc.f)
					checkReplay(t, fx.vendor, tc.f, exp)
				})
			}
		})
	}
}

// checkCassette checks the shape of an imported cassette: streaming
// members whose chunks add up to the body, one SSE event per chunk,
// decoded bodies with no Content-Encoding left, and no secrets.
func checkCassette(t *testing.T, f *cassette.File) {
	t.Helper()
	if f.Version != cassette.FormatVersion {
		t.Errorf("version %d", f.Version)
	}
	if f.Session != nil {
		t.Errorf("an imported cassette has a session: %+v", f.Session)
	}
	for i, it := range f.Interactions {
		st := it.Stream
		if st == nil {
			t.Fatalf("#%d: no streaming member", i)
		}
		if st.Start != 0 || st.Error != nil {
			t.Errorf("#%d: stream start %v, error %+v", i, st.Start, st.Error)
		}
		var sum strings.Builder
		for k, c := range st.Chunks {
			if c.At != 0 {
				t.Errorf("#%d chunk %d at %v, want 0", i, k, c.At)
			}
			sum.WriteString(c.Data)
		}
		if sum.String() != it.Response.Body || it.Response.Body == "" {
			t.Fatalf("#%d: chunks do not add up to the body (or it is empty)", i)
		}
		if ce := it.Response.Headers.Get("Content-Encoding"); ce != "" {
			t.Errorf("#%d: Content-Encoding %q left on a decoded body", i, ce)
		}
		if cl := it.Response.Headers.Get("Content-Length"); cl != "" && cl != fmt.Sprint(len(it.Response.Body)) {
			t.Errorf("#%d: Content-Length %s, body %d bytes", i, cl, len(it.Response.Body))
		}
		if !json.Valid([]byte(it.Request.Body)) {
			t.Errorf("#%d: the request body is not JSON text: %.80q", i, it.Request.Body)
		}
		if strings.HasPrefix(it.Response.Headers.Get("Content-Type"), "text/event-stream") {
			events := countEvents(t, it.Response.Body)
			if len(st.Chunks) != events {
				t.Errorf("#%d: %d chunks for %d SSE events", i, len(st.Chunks), events)
			}
			for k, c := range st.Chunks {
				if n := countEvents(t, c.Data); n != 1 {
					t.Errorf("#%d chunk %d holds %d events: %.80q", i, k, n, c.Data)
				}
			}
		} else if len(st.Chunks) != 1 {
			t.Errorf("#%d: %d chunks for a non-streamed body", i, len(st.Chunks))
		}
		for _, h := range []http.Header{it.Request.Headers, it.Response.Headers} {
			for _, k := range []string{"Authorization", "X-Api-Key", "Api-Key", "Cookie", "Set-Cookie"} {
				for _, v := range h.Values(k) {
					if v != "[scrubbed]" {
						t.Errorf("#%d: %s: %q not scrubbed", i, k, v)
					}
				}
			}
		}
	}
	out, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if bytes.Contains(out, []byte(s)) {
			t.Errorf("the imported cassette still holds the secret %q", s)
		}
	}
}

// countEvents counts the SSE events of s (data-less blocks, such as
// comments, count too: they are blocks a stream delivers).
func countEvents(t *testing.T, s string) int {
	t.Helper()
	r := sse.NewReader(strings.NewReader(s))
	n := 0
	for {
		_, err := r.Next()
		if err == io.EOF {
			return n
		}
		if err != nil {
			t.Fatalf("SSE: %v", err)
		}
		n++
	}
}

// checkRoundTrip: Parse(Marshal(f)) is f again, byte for byte.
func checkRoundTrip(t *testing.T, f *cassette.File) {
	t.Helper()
	out, err := f.Marshal()
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	g, err := cassette.Parse(out)
	if err != nil {
		t.Fatalf("Parse(Marshal()): %v", err)
	}
	again, err := g.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, again) {
		t.Fatalf("Marshal(Parse(Marshal(f))) differs from Marshal(f)")
	}
	for i, it := range g.Interactions {
		w := f.Interactions[i]
		if it.Request.Body != w.Request.Body || it.Response.Body != w.Response.Body || !reflect.DeepEqual(it.Stream, w.Stream) ||
			!reflect.DeepEqual(it.Response.Headers, w.Response.Headers) {
			t.Fatalf("#%d changed in the round trip", i)
		}
	}
}

// checkStockGoVCR: stock go-vcr v2 loads the saved cassette and sees the
// same exchanges.
func checkStockGoVCR(t *testing.T, f *cassette.File) {
	t.Helper()
	name := filepath.Join(t.TempDir(), "imported")
	if err := f.Save(name + ".yaml"); err != nil {
		t.Fatal(err)
	}
	c, err := vcr.Load(name) // Load appends ".yaml"
	if err != nil {
		t.Fatalf("stock go-vcr Load: %v", err)
	}
	if len(c.Interactions) != len(f.Interactions) {
		t.Fatalf("stock go-vcr sees %d interactions, want %d", len(c.Interactions), len(f.Interactions))
	}
	for i, it := range c.Interactions {
		w := f.Interactions[i]
		if it.Request.Method != w.Request.Method || it.Request.URL != w.Request.URL || it.Request.Body != w.Request.Body ||
			it.Response.Code != w.Response.Code || it.Response.Status != w.Response.Status || it.Response.Body != w.Response.Body {
			t.Fatalf("#%d: stock go-vcr reads a different interaction", i)
		}
	}
}

// inOrder is how the vendor clients reach the imported cassette. Our
// clients build their own request bodies (model, messages, tools), which
// are not the bodies the foreign client recorded, so they cannot match
// the recorded requests as they stand. inOrder hands the k-th live
// request to the replayer dressed as the k-th recorded one: the recorded
// method, path, query and body, keeping the live host and headers. The
// imported cassette is thus still served by the real replay.Replayer,
// which also has to match the rewritten request against the imported one
// (proving the imported requests are matchable), and everything after
// matching (status, headers, the chunks one per read) is the replayer's.
// It also counts the non-empty body reads the client made.
type inOrder struct {
	t    *testing.T
	f    *cassette.File
	next http.RoundTripper
	path string // the endpoint the live requests must go to

	mu    sync.Mutex
	k     int
	reads []*int
}

func (o *inOrder) RoundTrip(req *http.Request) (*http.Response, error) {
	o.mu.Lock()
	k := o.k
	o.k++
	o.mu.Unlock()
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	if !strings.HasSuffix(req.URL.Path, o.path) {
		o.t.Errorf("live request %d went to %s, want …%s", k, req.URL.Path, o.path)
	}
	if k >= len(o.f.Interactions) {
		return nil, fmt.Errorf("live request %d: the cassette has %d interactions", k, len(o.f.Interactions))
	}
	rec := o.f.Interactions[k].Request
	u, err := url.Parse(rec.URL)
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Method = rec.Method
	r.URL.Path, r.URL.RawPath, r.URL.RawQuery = u.Path, u.RawPath, u.RawQuery
	r.Body = io.NopCloser(strings.NewReader(rec.Body))
	r.ContentLength = int64(len(rec.Body))
	resp, err := o.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	n := new(int)
	o.mu.Lock()
	o.reads = append(o.reads, n)
	o.mu.Unlock()
	resp.Body = &countingBody{ReadCloser: resp.Body, n: n}
	return resp, nil
}

type countingBody struct {
	io.ReadCloser
	n *int
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		*b.n++
	}
	return n, err
}

// outcome is what a client reconstructs from one reply.
type outcome struct {
	Text     string
	Thinking []provider.Thinking
	Calls    []provider.ToolCall
	Usage    *[2]int // prompt, completion
	Finish   *string
	Err      error
}

func (o outcome) String() string {
	b, _ := json.MarshalIndent(struct {
		Text     string
		Thinking []provider.Thinking
		Calls    []provider.ToolCall
		Usage    *[2]int
		Finish   *string
		Err      string
	}{o.Text, o.Thinking, o.Calls, o.Usage, o.Finish, fmt.Sprint(o.Err)}, "", "  ")
	return string(b)
}

func collect(t *testing.T, parts func(func(provider.Part) bool)) outcome {
	t.Helper()
	var o outcome
	for p := range parts {
		if o.Finish != nil || o.Err != nil {
			t.Fatalf("part %T after the end of the reply", p)
		}
		switch p := p.(type) {
		case provider.TextDelta:
			o.Text += p.Text
		case provider.ThinkingDelta:
			if n := len(o.Thinking); n == 0 || o.Thinking[n-1].Signature != "" {
				o.Thinking = append(o.Thinking, provider.Thinking{})
			}
			b := &o.Thinking[len(o.Thinking)-1]
			b.Text += p.Text
			b.Signature = p.Signature
		case provider.ToolCallPart:
			o.Calls = append(o.Calls, p.Call)
		case provider.Usage:
			o.Usage = &[2]int{p.PromptTokens, p.CompletionTokens}
		case provider.Finish:
			r := p.Reason
			o.Finish = &r
		case provider.Error:
			o.Err = p.Err
		}
	}
	return o
}

// checkReplay replays f through our vendor client, one reply per
// interaction, and compares each with testdata/expected.
func checkReplay(t *testing.T, vendor string, f *cassette.File, exp []expected) {
	t.Helper()
	rp := replay.New(f, replay.Options{})
	tr := &inOrder{t: t, f: f, next: rp}
	hc := &httpx.Client{HTTP: &http.Client{Transport: tr}}
	const base = "http://replay.invalid"
	var stream func(context.Context, provider.Request) func(func(provider.Part) bool)
	switch vendor {
	case "openai":
		c, err := openai.New(openai.Config{APIKey: "sk-live-key", BaseURL: base + "/v1", Model: "gpt-test", HTTP: hc})
		if err != nil {
			t.Fatal(err)
		}
		tr.path = "/chat/completions"
		stream = func(ctx context.Context, r provider.Request) func(func(provider.Part) bool) { return c.Stream(ctx, r) }
	case "anthropic":
		c, err := anthropic.New(anthropic.Config{APIKey: "sk-live-key", BaseURL: base, Model: "claude-test", HTTP: hc})
		if err != nil {
			t.Fatal(err)
		}
		tr.path = "/v1/messages"
		stream = func(ctx context.Context, r provider.Request) func(func(provider.Part) bool) { return c.Stream(ctx, r) }
	default:
		t.Fatalf("vendor %q", vendor)
	}
	req := provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}}
	for k, e := range exp {
		got := collect(t, stream(context.Background(), req))
		if f.Interactions[k].Response.Code != e.Status {
			t.Fatalf("#%d: imported status %d, expected %d", k, f.Interactions[k].Response.Code, e.Status)
		}
		if e.Status != http.StatusOK {
			checkHTTPError(t, k, got, e)
			continue
		}
		if got.Err != nil {
			t.Fatalf("#%d: %v", k, got.Err)
		}
		if want := e.outcome(t, vendor); !reflect.DeepEqual(got, want) {
			t.Errorf("#%d\n got: %s\nwant: %s", k, got, want)
		}
		it := f.Interactions[k]
		if strings.HasPrefix(it.Response.Headers.Get("Content-Type"), "text/event-stream") {
			if n := *tr.reads[k]; n != len(it.Stream.Chunks) {
				t.Errorf("#%d: the client read %d times for %d events; a replay delivers one event per read", k, n, len(it.Stream.Chunks))
			}
		}
	}
	if u := rp.Unused(); len(u) != 0 {
		t.Errorf("interactions never served: %v", u)
	}
}

// checkHTTPError: A7's 429 comes back as an HTTPError with the body's
// error type and message, and no Retry-After (the response had none).
func checkHTTPError(t *testing.T, k int, got outcome, e expected) {
	t.Helper()
	var he *provider.HTTPError
	if !errors.As(got.Err, &he) {
		t.Fatalf("#%d: %v (%T), want a *provider.HTTPError", k, got.Err, got.Err)
	}
	if e.BodyJSON == nil {
		t.Fatalf("#%d: no error body is expected", k)
	}
	want := provider.HTTPError{Status: e.Status, Code: e.BodyJSON.Error.Type, Message: e.BodyJSON.Error.Message}
	if *he != want {
		t.Fatalf("#%d: HTTPError %+v, want %+v", k, *he, want)
	}
	if got.Text != "" || got.Finish != nil {
		t.Fatalf("#%d: parts beside the error: %s", k, got)
	}
}

// expected is one interaction of testdata/expected/<name>.json, for
// either vendor.
type expected struct {
	Interaction    int             `json:"interaction"`
	Status         int             `json:"status"`
	FinishReason   string          `json:"finish_reason"` // OpenAI
	StopReason     string          `json:"stop_reason"`   // Anthropic
	Content        json.RawMessage `json:"content"`       // OpenAI: a string; Anthropic: blocks
	MessageContent *string         `json:"message_content"`
	ToolCalls      []struct {
		ID        string `json:"id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"tool_calls"`
	Usage    map[string]int `json:"usage"`
	BodyJSON *struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	} `json:"body_json"`
}

// outcome is what a client should reconstruct from e.
func (e expected) outcome(t *testing.T, vendor string) outcome {
	t.Helper()
	var o outcome
	switch vendor {
	case "openai":
		if e.MessageContent != nil {
			o.Text = *e.MessageContent
		} else if err := json.Unmarshal(e.Content, &o.Text); err != nil {
			t.Fatalf("expected #%d content: %v", e.Interaction, err)
		}
		for _, tc := range e.ToolCalls {
			o.Calls = append(o.Calls, provider.ToolCall{ID: tc.ID, Name: tc.Name, Args: json.RawMessage(tc.Arguments)})
		}
		o.Usage = &[2]int{e.Usage["prompt_tokens"], e.Usage["completion_tokens"]}
		o.Finish = &e.FinishReason
	case "anthropic":
		var blocks []struct {
			Type      string  `json:"type"`
			Text      string  `json:"text"`
			Thinking  string  `json:"thinking"`
			Signature string  `json:"signature"`
			ID        string  `json:"id"`
			Name      string  `json:"name"`
			Partial   *string `json:"streamed_partial_json_concat"`
		}
		if err := json.Unmarshal(e.Content, &blocks); err != nil {
			t.Fatalf("expected #%d content: %v", e.Interaction, err)
		}
		for _, b := range blocks {
			switch b.Type {
			case "text":
				o.Text += b.Text
			case "thinking":
				o.Thinking = append(o.Thinking, provider.Thinking{Text: b.Thinking, Signature: b.Signature})
			case "tool_use":
				args := "{}" // an empty streamed input means {}
				if b.Partial != nil && *b.Partial != "" {
					args = *b.Partial
				}
				o.Calls = append(o.Calls, provider.ToolCall{ID: b.ID, Name: b.Name, Args: json.RawMessage(args)})
			default:
				t.Fatalf("expected #%d: block type %q", e.Interaction, b.Type)
			}
		}
		o.Usage = &[2]int{e.Usage["input_tokens"], e.Usage["output_tokens"]}
		o.Finish = &e.StopReason
	}
	return o
}

// expectations reads what a correct client reconstructs from the real
// recording name: testdata/expected/<name>.json, one entry per interaction,
// read off the bodies when the recording was copied in.
func expectations(t *testing.T, name string) []expected {
	t.Helper()
	data := fixture.Expected(t, name)
	var exp []expected
	if err := json.Unmarshal(data, &exp); err != nil {
		t.Fatalf("expected values for %s: %v", name, err)
	}
	for k, e := range exp {
		if e.Interaction != k {
			t.Fatalf("expected values for %s: entry %d is interaction %d", name, k, e.Interaction)
		}
	}
	return exp
}
