package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/openai"
	"github.com/openmax/openmax/recorder/cassette"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const recordedBase = "http://127.0.0.1:41234/v1"

// chat is a Chat Completions request body.
func chat(model, prompt string) string {
	return `{"model":"` + model + `","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"` + prompt + `"}],"stream":true,"stream_options":{"include_usage":true}}`
}

// streamed is a recorded POST answered 200 with the chunks and terminal
// error given; the chunks' data make up the body.
func streamed(url, reqBody string, chunks []cassette.Chunk, term *cassette.Error) *cassette.Interaction {
	var body strings.Builder
	for _, c := range chunks {
		body.WriteString(c.Data)
	}
	return &cassette.Interaction{
		Request: vcr.Request{Method: http.MethodPost, URL: url, Body: reqBody, Headers: http.Header{"Content-Type": {"application/json"}}},
		Response: vcr.Response{
			Code: 200, Status: "200 OK", Body: body.String(),
			Headers: http.Header{"Content-Type": {"text/event-stream"}},
		},
		Stream: &cassette.Stream{Chunks: chunks, Error: term},
	}
}

// failed is a recorded POST that got no response.
func failed(url, reqBody string, e *cassette.Error) *cassette.Interaction {
	return &cassette.Interaction{
		Request: vcr.Request{Method: http.MethodPost, URL: url, Body: reqBody},
		Stream:  &cassette.Stream{Error: e},
	}
}

func file(its ...*cassette.Interaction) *cassette.File {
	f := cassette.New()
	f.Interactions = its
	return f
}

func chunks(at time.Duration, step time.Duration, data ...string) []cassette.Chunk {
	var out []cassette.Chunk
	for i, d := range data {
		out = append(out, cassette.Chunk{At: at + time.Duration(i)*step, Data: d})
	}
	return out
}

func post(t *testing.T, ctx context.Context, rt http.RoundTripper, url, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return rt.RoundTrip(req)
}

func mustPost(t *testing.T, rt http.RoundTripper, url, body string) *http.Response {
	t.Helper()
	resp, err := post(t, context.Background(), rt, url, body)
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	return resp
}

// reads reads r with a buffer of n bytes until an error, returning each
// read's data and the error.
func reads(r io.Reader, n int) ([]string, error) {
	var got []string
	buf := make([]byte, n)
	for {
		k, err := r.Read(buf)
		if k > 0 {
			got = append(got, string(buf[:k]))
		}
		if err != nil {
			return got, err
		}
		if k == 0 {
			return got, errors.New("a read returned 0, nil")
		}
	}
}

func TestParsePace(t *testing.T) {
	for in, want := range map[string]Pace{
		"":         {Mode: PaceInstant},
		"instant":  {Mode: PaceInstant},
		"Recorded": {Mode: PaceRecorded, Factor: 1},
		"x2":       {Mode: PaceScaled, Factor: 2},
		"x0.5":     {Mode: PaceScaled, Factor: 0.5},
		" x10 ":    {Mode: PaceScaled, Factor: 10},
	} {
		got, err := ParsePace(in)
		if err != nil || got != want {
			t.Errorf("ParsePace(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if again, err := ParsePace(got.String()); err != nil || again.String() != got.String() {
			t.Errorf("%q does not round-trip: %q, %v", in, got.String(), err)
		}
	}
	for _, bad := range []string{"x0", "x-1", "x", "xNaN", "xInf", "2", "fast", "2x"} {
		if p, err := ParsePace(bad); err == nil {
			t.Errorf("ParsePace(%q) = %+v, want an error", bad, p)
		}
	}
}

func TestChunksOnePerRead(t *testing.T) {
	data := []string{"data: {\"a\":1}\n\n", "data: {\"b\":2}\n\n", "data: [DONE]\n\n"}
	f := file(
		streamed(recordedBase+"/chat/completions", chat("m", "hi"), chunks(0, time.Millisecond, data...), nil),
		streamed(recordedBase+"/chat/completions", chat("m", "hi"), chunks(0, time.Millisecond, data...), nil),
	)
	r := New(f, Options{})

	resp := mustPost(t, r, recordedBase+"/chat/completions", chat("m", "hi"))
	if resp.StatusCode != 200 || resp.Status != "200 OK" || resp.Proto != "HTTP/1.1" || resp.ContentLength != -1 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("response %d %q %s length %d header %v", resp.StatusCode, resp.Status, resp.Proto, resp.ContentLength, resp.Header)
	}
	if resp.Request == nil || resp.Request.URL.Path != "/v1/chat/completions" {
		t.Errorf("resp.Request = %v", resp.Request)
	}
	got, err := reads(resp.Body, 4096)
	if err != io.EOF || !reflect.DeepEqual(got, data) {
		t.Errorf("big buffer: %q, %v; want %q, EOF", got, err, data)
	}
	if n, err := resp.Body.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Errorf("read after EOF: %d, %v", n, err)
	}
	resp.Body.Close()
	if _, err := resp.Body.Read(make([]byte, 10)); err == nil || err == io.EOF {
		t.Errorf("read after Close: %v", err)
	}

	// A short buffer splits a chunk over reads but never joins two.
	resp = mustPost(t, r, recordedBase+"/chat/completions", chat("m", "hi"))
	defer resp.Body.Close()
	got, err = reads(resp.Body, 8)
	want := []string{"data: {\"", "a\":1}\n\n", "data: {\"", "b\":2}\n\n", "data: [D", "ONE]\n\n"}
	if err != io.EOF || !reflect.DeepEqual(got, want) {
		t.Errorf("short buffer: %q, %v; want %q", got, err, want)
	}
}

func TestTerminalErrors(t *testing.T) {
	for _, tc := range []struct {
		kind  string
		check func(error) bool
	}{
		{cassette.KindReset, func(err error) bool {
			var op *net.OpError
			return errors.Is(err, syscall.ECONNRESET) && errors.As(err, &op) && op.Op == "read"
		}},
		{cassette.KindEOF, func(err error) bool { return err == io.ErrUnexpectedEOF }},
		{cassette.KindTimeout, func(err error) bool {
			var ne net.Error
			return errors.As(err, &ne) && ne.Timeout() && err.Error() == "recorded message"
		}},
		{cassette.KindCancel, func(err error) bool { return err == context.Canceled }},
		{cassette.KindOther, func(err error) bool { return err.Error() == "recorded message" }},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			f := file(streamed(recordedBase+"/chat/completions", chat("m", "hi"),
				chunks(0, 0, "data: 1\n\n", "data: 2\n\n"),
				&cassette.Error{Kind: tc.kind, Message: "recorded message", At: time.Second}))
			resp := mustPost(t, New(f, Options{}), recordedBase+"/chat/completions", chat("m", "hi"))
			defer resp.Body.Close()
			got, err := reads(resp.Body, 100)
			if want := []string{"data: 1\n\n", "data: 2\n\n"}; !reflect.DeepEqual(got, want) {
				t.Errorf("chunks %q, want %q", got, want)
			}
			if !tc.check(err) {
				t.Errorf("terminal error %T %v", err, err)
			}
			if _, again := resp.Body.Read(make([]byte, 10)); again != err {
				t.Errorf("the next read: %v, want %v again", again, err)
			}
		})
	}
}

// TestVendorReadsTheRecordedFailure runs the OpenAI client over the
// replayer: the stream's text arrives, then the recorded reset ends it
// as an incomplete stream, as the live failure did.
func TestVendorReadsTheRecordedFailure(t *testing.T) {
	body := `{"model":"m1","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`
	f := file(streamed(recordedBase+"/chat/completions", body, []cassette.Chunk{
		{At: 10 * time.Millisecond, Data: `data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}` + "\n\n"},
		{At: 20 * time.Millisecond, Data: `data: {"choices":[{"index":0,"delta":{"content":"lo"}}]}` + "\n\n"},
	}, &cassette.Error{Kind: cassette.KindReset, Message: "read tcp: connection reset by peer", At: 30 * time.Millisecond}))
	r := New(f, Options{})
	c, err := openai.New(openai.Config{APIKey: "k", BaseURL: "https://api.example.com/v1", Model: "m1", HTTP: &httpx.Client{HTTP: &http.Client{Transport: r}}})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	var failure error
	for p := range c.Stream(context.Background(), provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}}) {
		switch p := p.(type) {
		case provider.TextDelta:
			text.WriteString(p.Text)
		case provider.Error:
			failure = p.Err
		}
	}
	if text.String() != "Hello" || !errors.Is(failure, provider.ErrIncomplete) || !errors.Is(failure, syscall.ECONNRESET) {
		t.Errorf("text %q, failure %v", text.String(), failure)
	}
	if u := r.Unused(); len(u) != 0 {
		t.Errorf("unused %v", u)
	}
}

func TestNoResponse(t *testing.T) {
	url := recordedBase + "/chat/completions"
	f := file(
		failed(url, chat("m", "refused"), &cassette.Error{Kind: cassette.KindRefused, Message: "dial tcp 127.0.0.1:41234: connect: connection refused"}),
		failed(url, chat("m", "dns"), &cassette.Error{Kind: cassette.KindDNS, Message: "lookup nowhere: no such host"}),
		failed(url, chat("m", "reset"), &cassette.Error{Kind: cassette.KindReset, Message: "connection reset"}),
		failed(url, chat("m", "timeout"), &cassette.Error{Kind: cassette.KindTimeout, Message: "timeout awaiting response headers"}),
		failed(url, chat("m", "other"), &cassette.Error{Kind: cassette.KindOther, Message: "tls: bad certificate"}),
		failed(url, chat("m", "cancel"), &cassette.Error{Kind: cassette.KindCancel, Message: "context canceled"}),
	)
	r := New(f, Options{})
	hc := &httpx.Client{HTTP: &http.Client{Transport: r}}
	do := func(prompt string) *provider.TransportError {
		t.Helper()
		resp, err := hc.Post(context.Background(), "http://replayed.example:9999/v1/chat/completions", nil, []byte(chat("m", prompt)))
		if err == nil {
			resp.Body.Close()
			t.Fatalf("%s: got a response", prompt)
		}
		var te *provider.TransportError
		if !errors.As(err, &te) {
			t.Fatalf("%s: %T %v, want a *provider.TransportError", prompt, err, err)
		}
		return te
	}

	te := do("refused")
	var op *net.OpError
	if !te.Unreachable || !errors.As(te, &op) || op.Op != "dial" || !errors.Is(te, syscall.ECONNREFUSED) {
		t.Errorf("refused: %v (unreachable %v)", te, te.Unreachable)
	}
	te = do("dns")
	var dns *net.DNSError
	if !te.Unreachable || !errors.As(te, &dns) || !dns.IsNotFound || dns.Name != "replayed.example" {
		t.Errorf("dns: %v (unreachable %v)", te, te.Unreachable)
	}
	te = do("reset")
	if te.Unreachable || !errors.Is(te, syscall.ECONNRESET) {
		t.Errorf("reset: %v (unreachable %v)", te, te.Unreachable)
	}
	te = do("timeout")
	var ne net.Error
	if te.Unreachable || !errors.As(te, &ne) || !ne.Timeout() || !strings.Contains(te.Error(), "timeout awaiting response headers") {
		t.Errorf("timeout: %v (unreachable %v)", te, te.Unreachable)
	}
	te = do("other")
	if te.Unreachable || !strings.Contains(te.Error(), "tls: bad certificate") {
		t.Errorf("other: %v", te)
	}
	te = do("cancel")
	if !errors.Is(te, context.Canceled) {
		t.Errorf("cancel: %v", te)
	}
}

func TestIdenticalRequestsInRecordedOrder(t *testing.T) {
	url := recordedBase + "/chat/completions"
	f := file(
		streamed(url, chat("m", "hi"), chunks(0, 0, "first"), nil),
		streamed(url, chat("m", "other"), chunks(0, 0, "other"), nil),
		streamed(url, chat("m", "hi"), chunks(0, 0, "second"), nil),
		streamed(url, chat("m", "unused"), chunks(0, 0, "never"), nil),
	)
	r := New(f, Options{})
	for _, want := range []string{"first", "second"} {
		resp := mustPost(t, r, url, chat("m", "hi"))
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	_, err := post(t, context.Background(), r, url, chat("m", "hi"))
	var miss *MissError
	if !errors.As(err, &miss) || !errors.Is(err, ErrNoMatch) || !miss.Served || miss.Nearest != 0 ||
		!strings.Contains(err.Error(), "identical to interaction 0, which was already served") {
		t.Errorf("a third identical request: %v", err)
	}
	if u := r.Unused(); !reflect.DeepEqual(u, []int{1, 3}) {
		t.Errorf("Unused = %v, want [1 3]", u)
	}
}

func TestMissDiff(t *testing.T) {
	url := recordedBase + "/chat/completions"
	f := file(
		&cassette.Interaction{Request: vcr.Request{Method: "GET", URL: recordedBase + "/models"}, Response: vcr.Response{Code: 200, Body: "{}"}},
		streamed(url, chat("gpt-a", "hello there"), chunks(0, 0, "a"), nil),
		streamed(url, chat("gpt-b", "hello there"), chunks(0, 0, "b"), nil),
		streamed(recordedBase+"/messages", chat("gpt-c", "hello there"), chunks(0, 0, "c"), nil),
	)
	r := New(f, Options{})
	_, err := post(t, context.Background(), r, "https://api.example.com/v1/chat/completions", chat("gpt-c", "hello there"))
	var miss *MissError
	if !errors.As(err, &miss) || !errors.Is(err, ErrNoMatch) {
		t.Fatalf("err = %v, want a *MissError", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"no recorded interaction matches POST https://api.example.com/v1/chat/completions",
		"the nearest is interaction 1, which differs in model",
		"--- recorded interaction 1\n+++ live request\n",
		"\n-  \"model\": \"gpt-a\",\n+  \"model\": \"gpt-c\",\n",
		"\n@@ -10,7 +10,7 @@\n",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the miss does not contain %q:\n%s", want, msg)
		}
	}
	if miss.Nearest != 1 || !reflect.DeepEqual(miss.Fields, []string{"model"}) {
		t.Errorf("nearest %d fields %v", miss.Nearest, miss.Fields)
	}

	// A nested difference is named by its path.
	_, err = post(t, context.Background(), r, url, chat("gpt-b", "hello you"))
	if !errors.As(err, &miss) || miss.Nearest != 2 || !reflect.DeepEqual(miss.Fields, []string{"messages[1].content"}) ||
		!strings.Contains(err.Error(), "-      \"content\": \"hello there\",\n+      \"content\": \"hello you\",") {
		t.Errorf("nested: %v (fields %v)", err, miss.Fields)
	}

	// The nearest has the same method and path, even when another body
	// is closer.
	req, _ := http.NewRequest("GET", recordedBase+"/models", nil)
	resp, err := r.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	req, _ = http.NewRequest("GET", recordedBase+"/models?limit=5", nil)
	_, err = r.RoundTrip(req)
	if !errors.As(err, &miss) || miss.Nearest != 0 || miss.Served || !reflect.DeepEqual(miss.Fields, []string{"query"}) {
		t.Errorf("query: %v", err)
	}
	_, err = post(t, context.Background(), r, recordedBase+"/models", chat("gpt-a", "hello there"))
	if !errors.As(err, &miss) || miss.Nearest != 0 || !reflect.DeepEqual(miss.Fields, []string{"method", "body"}) {
		t.Errorf("method: %v (fields %v)", err, miss.Fields)
	}

	// A non-JSON body is compared, and shown, as text.
	_, err = post(t, context.Background(), r, recordedBase+"/messages", "not json")
	if !errors.As(err, &miss) || miss.Nearest != 3 || !reflect.DeepEqual(miss.Fields, []string{"body"}) || !strings.HasSuffix(err.Error(), "\n-}\n+not json") {
		t.Errorf("text body: %v", err)
	}

	if _, err := post(t, context.Background(), New(cassette.New(), Options{}), url, "{}"); err == nil || !strings.Contains(err.Error(), "the cassette has no interactions") {
		t.Errorf("empty cassette: %v", err)
	}
}

func TestBodiesCompareAsJSON(t *testing.T) {
	url := recordedBase + "/chat/completions"
	f := file(streamed(url, `{"a":1,"b":[1,2,{"x":"<y>"}]}`, chunks(0, 0, "ok"), nil))
	r := New(f, Options{})
	resp := mustPost(t, r, url, "{\n  \"b\": [1, 2, {\"x\": \"\\u003cy\\u003e\"}],\n  \"a\": 1\n}\n")
	resp.Body.Close()
}

// TestNumbersCompareByValue: a JSON number matches by its value, not its
// spelling (1.0 recorded, 1 sent), and numbers that differ in value, however
// far out the difference, still miss.
func TestNumbersCompareByValue(t *testing.T) {
	url := recordedBase + "/chat/completions"
	for _, c := range []struct {
		recorded, live string
		match          bool
	}{
		{"1.0", "1", true},
		{"1", "1.0", true},
		{"1", "1e0", true},
		{"100", "1E+2", true},
		{"0.10", "0.1", true},
		{"0.5", "5e-1", true},
		{"-0", "0", true},
		{"-0.0", "0", true},
		{"1.50e3", "1500", true},
		{"12345678901234567890", "12345678901234567890.000", true},
		{"1e400", "10e399", true},
		{"1", "1.01", false},
		{"0.1", "0.10000000000000001", false},
		{"12345678901234567890", "12345678901234567891", false},
		{"-1", "1", false},
		{"1e400", "1e401", false},
	} {
		rec := `{"model":"m","temperature":` + c.recorded + `,"n":[` + c.recorded + `]}`
		live := `{"model":"m","temperature":` + c.live + `,"n":[` + c.live + `]}`
		resp, err := post(t, context.Background(), New(file(streamed(url, rec, chunks(0, 0, "ok"), nil)), Options{}), url, live)
		if resp != nil {
			resp.Body.Close()
		}
		if c.match && err != nil {
			t.Errorf("recorded %s, sent %s: %v", c.recorded, c.live, err)
		}
		var miss *MissError
		if !c.match && (!errors.As(err, &miss) || !reflect.DeepEqual(miss.Fields, []string{"n[0]", "temperature"})) {
			t.Errorf("recorded %s, sent %s: want a miss in n[0] and temperature, got %v", c.recorded, c.live, err)
		}
	}
}

func TestIgnore(t *testing.T) {
	url := recordedBase + "/messages"
	rec := `{"model":"claude","metadata":{"user_id":"u-1","tag":"t"},"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi","cache_control":{"type":"ephemeral"}}]}`
	live := `{"model":"claude","metadata":{"user_id":"u-2","tag":"t"},"messages":[{"role":"user","content":"hi"}]}`
	f := file(streamed(url, rec, chunks(0, 0, "ok"), nil))

	_, err := post(t, context.Background(), New(f, Options{NoDefaults: true}), url, live)
	var miss *MissError
	if !errors.As(err, &miss) || !reflect.DeepEqual(miss.Fields, []string{"messages[0].cache_control", "metadata.user_id", "stream_options"}) {
		t.Fatalf("without Ignore: %v (fields %v)", err, miss.Fields)
	}
	// metadata.user_id is on the built-in list.
	_, err = post(t, context.Background(), New(f, Options{}), url, live)
	if !errors.As(err, &miss) || !reflect.DeepEqual(miss.Fields, []string{"messages[0].cache_control", "stream_options"}) {
		t.Fatalf("with the defaults: %v (fields %v)", err, miss.Fields)
	}
	r := New(f, Options{Ignore: []string{"metadata.user_id", "stream_options", "messages.cache_control"}})
	resp := mustPost(t, r, url, live)
	resp.Body.Close()

	// An ignored field does not hide a difference beside it.
	r = New(f, Options{Ignore: []string{"metadata.user_id", "stream_options", "messages.cache_control"}})
	_, err = post(t, context.Background(), r, url, strings.Replace(live, `"tag":"t"`, `"tag":"u"`, 1))
	if !errors.As(err, &miss) || !reflect.DeepEqual(miss.Fields, []string{"metadata.tag"}) {
		t.Errorf("beside an ignored field: %v", err)
	}
}

func TestHostInsensitiveByDefault(t *testing.T) {
	f := file(streamed("http://127.0.0.1:41234/v1/chat/completions?api-version=1&b=2", "{}", chunks(0, 0, "ok"), nil))
	resp := mustPost(t, New(f, Options{}), "https://api.example.com/v1/chat/completions?b=2&api-version=1", "{}")
	resp.Body.Close()

	_, err := post(t, context.Background(), New(f, Options{MatchHost: true}), "https://api.example.com/v1/chat/completions?api-version=1&b=2", "{}")
	var miss *MissError
	if !errors.As(err, &miss) || !reflect.DeepEqual(miss.Fields, []string{"host"}) || !strings.Contains(err.Error(), "-POST http://127.0.0.1:41234/v1/chat/completions") {
		t.Errorf("MatchHost: %v", err)
	}
	resp = mustPost(t, New(f, Options{MatchHost: true}), "http://127.0.0.1:41234/v1/chat/completions?api-version=1&b=2", "{}")
	resp.Body.Close()
}

func TestScrub(t *testing.T) {
	f := file(streamed(recordedBase+"/chat/completions?key=REDACTED", `{"user":"REDACTED"}`, chunks(0, 0, "ok"), nil))
	var sawAuth atomic.Bool
	r := New(f, Options{Scrub: func(method, rawURL string, h http.Header, body []byte) (string, http.Header, []byte) {
		sawAuth.Store(h.Get("Authorization") == "Bearer secret")
		h.Del("Authorization")
		u, _ := url.Parse(rawURL)
		q := u.Query()
		q.Set("key", "REDACTED")
		u.RawQuery = q.Encode()
		return u.String(), h, bytes.ReplaceAll(body, []byte("alice"), []byte("REDACTED"))
	}})
	req, _ := http.NewRequest("POST", "http://x/v1/chat/completions?key=sk-123", strings.NewReader(`{"user":"alice"}`))
	req.Header.Set("Authorization", "Bearer secret")
	resp, err := r.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !sawAuth.Load() || req.Header.Get("Authorization") != "Bearer secret" {
		t.Errorf("the scrub saw the headers %v; the request's are now %v", sawAuth.Load(), req.Header)
	}
}

func TestStockInteraction(t *testing.T) {
	f := file(&cassette.Interaction{
		Request:  vcr.Request{Method: "POST", URL: recordedBase + "/chat/completions", Body: "{}"},
		Response: vcr.Response{Code: 429, Status: "429 Too Many Requests", Body: `{"error":{"message":"slow down"}}`, Headers: http.Header{"Content-Length": {"33"}, "Retry-After": {"2"}}, Duration: time.Second},
	})
	fake := clock.NewFake(epoch)
	r := New(f, Options{Clock: fake, Pace: Pace{Mode: PaceRecorded}})
	resp := mustPost(t, r, recordedBase+"/chat/completions", "{}")
	defer resp.Body.Close()
	if resp.StatusCode != 429 || resp.Status != "429 Too Many Requests" || resp.ContentLength != 33 {
		t.Errorf("%d %q length %d", resp.StatusCode, resp.Status, resp.ContentLength)
	}
	type result struct {
		got []string
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, err := reads(resp.Body, 1000)
		done <- result{got, err}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fake.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	fake.Advance(time.Second)
	res := <-done
	if res.err != io.EOF || !reflect.DeepEqual(res.got, []string{`{"error":{"message":"slow down"}}`}) {
		t.Errorf("%q, %v", res.got, res.err)
	}
}

// readAsync reads body in the background, one read per request on the
// returned channel.
type asyncReader struct {
	body io.Reader
	req  chan struct{}
	out  chan readResult
}

type readResult struct {
	data string
	err  error
}

func readAsync(body io.Reader) *asyncReader {
	a := &asyncReader{body: body, req: make(chan struct{}), out: make(chan readResult, 1)}
	go func() {
		buf := make([]byte, 1024)
		for range a.req {
			n, err := a.body.Read(buf)
			a.out <- readResult{string(buf[:n]), err}
		}
	}()
	return a
}

func TestRecordedPacing(t *testing.T) {
	for _, tc := range []struct {
		pace  string
		waits []time.Duration // between reads
	}{
		{"recorded", []time.Duration{100 * time.Millisecond, 150 * time.Millisecond, time.Second, 750 * time.Millisecond}},
		{"x2", []time.Duration{50 * time.Millisecond, 75 * time.Millisecond, 500 * time.Millisecond, 375 * time.Millisecond}},
	} {
		t.Run(tc.pace, func(t *testing.T) {
			f := file(streamed(recordedBase+"/chat/completions", "{}", []cassette.Chunk{
				{At: 100 * time.Millisecond, Data: "a"},
				{At: 250 * time.Millisecond, Data: "b"},
				{At: 1250 * time.Millisecond, Data: "c"},
			}, &cassette.Error{Kind: cassette.KindReset, At: 2 * time.Second}))
			pace, err := ParsePace(tc.pace)
			if err != nil {
				t.Fatal(err)
			}
			fake := clock.NewFake(epoch)
			r := New(f, Options{Clock: fake, Pace: pace})
			resp := mustPost(t, r, recordedBase+"/chat/completions", "{}")
			defer resp.Body.Close()
			if fake.Waiters() != 0 {
				t.Fatalf("RoundTrip left %d waits", fake.Waiters())
			}
			a := readAsync(resp.Body)
			defer close(a.req)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for i, wait := range tc.waits {
				a.req <- struct{}{}
				if err := fake.BlockUntil(ctx, 1); err != nil {
					t.Fatalf("read %d never waited", i)
				}
				fake.Advance(wait - time.Millisecond)
				if fake.Waiters() != 1 {
					t.Fatalf("read %d: the wait ended a millisecond early", i)
				}
				select {
				case res := <-a.out:
					t.Fatalf("read %d returned %q, %v early", i, res.data, res.err)
				default:
				}
				fake.Advance(time.Millisecond)
				res := <-a.out
				switch {
				case i < 3 && (res.data != "abc"[i:i+1] || res.err != nil):
					t.Errorf("read %d: %q, %v", i, res.data, res.err)
				case i == 3 && !errors.Is(res.err, syscall.ECONNRESET):
					t.Errorf("the terminal read: %q, %v", res.data, res.err)
				}
			}
		})
	}
}

func TestRecordedPacingOfNoResponse(t *testing.T) {
	f := file(failed(recordedBase+"/chat/completions", "{}", &cassette.Error{Kind: cassette.KindTimeout, Message: "deadline", At: 30 * time.Second}))
	fake := clock.NewFake(epoch)
	r := New(f, Options{Clock: fake, Pace: Pace{Mode: PaceRecorded}})
	done := make(chan error, 1)
	go func() {
		_, err := post(t, context.Background(), r, recordedBase+"/chat/completions", "{}")
		done <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fake.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	fake.Advance(30*time.Second - 1)
	select {
	case err := <-done:
		t.Fatalf("returned early: %v", err)
	default:
	}
	fake.Advance(1)
	var ne net.Error
	if err := <-done; !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("%v", err)
	}
}

// countingClock counts the calls made to it.
type countingClock struct {
	now, after atomic.Int32
}

func (c *countingClock) Now() time.Time { c.now.Add(1); return epoch }
func (c *countingClock) After(d time.Duration) <-chan time.Time {
	c.after.Add(1)
	ch := make(chan time.Time, 1)
	ch <- epoch
	return ch
}

func TestInstantTakesNoWaits(t *testing.T) {
	f := file(
		streamed(recordedBase+"/chat/completions", "{}", chunks(time.Hour, time.Hour, "a", "b", "c"), &cassette.Error{Kind: cassette.KindEOF, At: 10 * time.Hour}),
		failed(recordedBase+"/chat/completions", "{}", &cassette.Error{Kind: cassette.KindRefused, At: time.Hour}),
	)
	var clk countingClock
	r := New(f, Options{Clock: &clk})
	resp := mustPost(t, r, recordedBase+"/chat/completions", "{}")
	got, err := reads(resp.Body, 10)
	resp.Body.Close()
	if !reflect.DeepEqual(got, []string{"a", "b", "c"}) || err != io.ErrUnexpectedEOF {
		t.Errorf("%q, %v", got, err)
	}
	if _, err := post(t, context.Background(), r, recordedBase+"/chat/completions", "{}"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("refused: %v", err)
	}
	if clk.now.Load() != 0 || clk.after.Load() != 0 {
		t.Errorf("instant pace used the clock: %d Now, %d After", clk.now.Load(), clk.after.Load())
	}
}

func TestCancelDuringPacedWait(t *testing.T) {
	f := file(
		streamed(recordedBase+"/chat/completions", "{}", []cassette.Chunk{{At: 0, Data: "a"}, {At: time.Hour, Data: "b"}}, nil),
		failed(recordedBase+"/chat/completions", "{}", &cassette.Error{Kind: cassette.KindReset, At: time.Hour}),
		streamed(recordedBase+"/chat/completions", "{}", []cassette.Chunk{{At: time.Hour, Data: "a"}}, nil),
	)
	fake := clock.NewFake(epoch)
	r := New(f, Options{Clock: fake, Pace: Pace{Mode: PaceRecorded}})
	wait, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()

	// In the body.
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := post(t, ctx, r, recordedBase+"/chat/completions", "{}")
	if err != nil {
		t.Fatal(err)
	}
	a := readAsync(resp.Body)
	defer close(a.req)
	a.req <- struct{}{}
	if res := <-a.out; res.data != "a" || res.err != nil {
		t.Fatalf("first read %q, %v", res.data, res.err)
	}
	a.req <- struct{}{}
	if err := fake.BlockUntil(wait, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if res := <-a.out; res.err != context.Canceled {
		t.Errorf("read after cancel: %q, %v", res.data, res.err)
	}
	if fake.Waiters() != 0 {
		t.Errorf("the cancelled wait is still pending")
	}
	resp.Body.Close()

	// Before a recorded failure.
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := post(t, ctx, r, recordedBase+"/chat/completions", "{}")
		done <- err
	}()
	if err := fake.BlockUntil(wait, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("RoundTrip after cancel: %v", err)
	}

	// Close ends a pending wait too.
	resp = mustPost(t, r, recordedBase+"/chat/completions", "{}")
	b := readAsync(resp.Body)
	defer close(b.req)
	b.req <- struct{}{}
	if err := fake.BlockUntil(wait, 1); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if res := <-b.out; res.err == nil || res.err == io.EOF {
		t.Errorf("read after Close: %q, %v", res.data, res.err)
	}
}

func TestConcurrentUse(t *testing.T) {
	const n = 32
	var its []*cassette.Interaction
	for i := range n {
		its = append(its, streamed(recordedBase+"/chat/completions", chat("m", "same"), chunks(0, 0, "x", string(rune('A'+i))), nil))
	}
	r := New(file(its...), Options{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[string]bool{}
	for range n {
		wg.Go(func() {
			resp, err := post(t, context.Background(), r, recordedBase+"/chat/completions", chat("m", "same"))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			seen[string(got)] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(seen) != n || len(r.Unused()) != 0 {
		t.Errorf("%d distinct replies, unused %v", len(seen), r.Unused())
	}
}

// serve starts the handler on loopback.
func serve(t *testing.T, f *cassette.File, opts Options) (string, *Handler, *http.Client) {
	t.Helper()
	h := NewHandler(f, opts)
	srv := httptest.NewServer(h)
	tr := &http.Transport{}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.Close()
	})
	return srv.URL, h.(*Handler), &http.Client{Transport: tr}
}

func TestHandlerServesAStream(t *testing.T) {
	data := []string{"data: 1\n\n", "data: 2\n\n", "data: [DONE]\n\n"}
	f := file(streamed(recordedBase+"/chat/completions", chat("m", "hi"), []cassette.Chunk{
		{At: 0, Data: data[0]}, {At: time.Second, Data: data[1]}, {At: 2 * time.Second, Data: data[2]},
	}, nil))
	fake := clock.NewFake(epoch)
	base, h, client := serve(t, f, Options{Clock: fake, Pace: Pace{Mode: PaceRecorded}})
	resp, err := post(t, context.Background(), client.Transport, base+"/v1/chat/completions", chat("m", "hi"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("%d %v", resp.StatusCode, resp.Header)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Each chunk arrives flushed on its own, only once its time has come.
	for i, d := range data {
		if i > 0 {
			if err := fake.BlockUntil(ctx, 1); err != nil {
				t.Fatal(err)
			}
			fake.Advance(time.Second)
		}
		buf := make([]byte, len(d))
		if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != d {
			t.Fatalf("chunk %d: %q, %v", i, buf, err)
		}
	}
	if rest, err := io.ReadAll(resp.Body); err != nil || len(rest) != 0 {
		t.Errorf("after the chunks: %q, %v", rest, err)
	}
	if u := h.Unused(); len(u) != 0 {
		t.Errorf("unused %v", u)
	}
}

func TestHandlerReset(t *testing.T) {
	url := recordedBase + "/chat/completions"
	f := file(
		streamed(url, chat("m", "cut"), []cassette.Chunk{{At: 0, Data: "data: 1\n\n"}}, &cassette.Error{Kind: cassette.KindReset, At: time.Second}),
		failed(url, chat("m", "refused"), &cassette.Error{Kind: cassette.KindRefused}),
		streamed(url, chat("m", "eof"), []cassette.Chunk{{At: 0, Data: "data: 1\n\n"}}, &cassette.Error{Kind: cassette.KindEOF, At: time.Second}),
		streamed(url, chat("m", "after"), chunks(0, 0, "ok"), nil),
	)
	fake := clock.NewFake(epoch)
	base, _, client := serve(t, f, Options{Clock: fake, Pace: Pace{Mode: PaceRecorded}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	for _, tc := range []struct {
		prompt string
		check  func(error) bool
	}{
		{"cut", func(err error) bool { return errors.Is(err, syscall.ECONNRESET) }},
		{"eof", func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
	} {
		resp, err := post(t, context.Background(), client.Transport, base+"/v1/chat/completions", chat("m", tc.prompt))
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 9)
		if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "data: 1\n\n" {
			t.Fatalf("%s: the chunk before the failure: %q, %v", tc.prompt, buf, err)
		}
		if err := fake.BlockUntil(ctx, 1); err != nil {
			t.Fatal(err)
		}
		fake.Advance(time.Second)
		rest, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if len(rest) != 0 || !tc.check(err) {
			t.Errorf("%s: after the chunk: %q, %v", tc.prompt, rest, err)
		}
		if tc.prompt == "cut" {
			// Refused: the connection resets before any response.
			_, err = post(t, context.Background(), client.Transport, base+"/v1/chat/completions", chat("m", "refused"))
			if err == nil || !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("refused: %v", err)
			}
		}
	}

	resp, err := post(t, context.Background(), client.Transport, base+"/v1/chat/completions", chat("m", "after"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != "ok" || err != nil {
		t.Errorf("after the failures: %q, %v", got, err)
	}
}

func TestHandlerMiss(t *testing.T) {
	f := file(streamed(recordedBase+"/chat/completions", chat("gpt-a", "hi"), chunks(0, 0, "ok"), nil))
	var events []Event
	var mu sync.Mutex
	base, h, client := serve(t, f, Options{OnRequest: func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}})
	resp, err := post(t, context.Background(), client.Transport, base+"/v1/chat/completions", chat("gpt-b", "hi"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Error struct {
			Type    string  `json:"type"`
			Message string  `json:"message"`
			Code    *string `json:"code"`
		} `json:"error"`
		Replay struct {
			Request int      `json:"request"`
			Nearest int      `json:"nearest"`
			Fields  []string `json:"fields"`
			Diff    string   `json:"diff"`
		} `json:"replay"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 400 || body.Error.Type != "invalid_request_error" || body.Error.Code == nil || *body.Error.Code != "replay_miss" ||
		body.Replay.Nearest != 0 || !reflect.DeepEqual(body.Replay.Fields, []string{"model"}) ||
		!strings.Contains(body.Replay.Diff, "-  \"model\": \"gpt-a\",\n+  \"model\": \"gpt-b\",") || !strings.Contains(body.Error.Message, "the nearest is interaction 0, which differs in model") {
		t.Errorf("%d %+v", resp.StatusCode, body)
	}
	if u := h.Unused(); !reflect.DeepEqual(u, []int{0}) {
		t.Errorf("unused %v", u)
	}
	if m := h.Misses(); len(m) != 1 || m[0].Request != 0 || m[0].Nearest != 0 {
		t.Errorf("misses %+v", m)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 1 || events[0].String() != "request 0: POST /v1/chat/completions: MISS, nearest interaction 0 differs in model" {
		t.Errorf("events %v", events)
	}
}

func TestDiffHunks(t *testing.T) {
	a := strings.Split("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20", " ")
	b := append([]string(nil), a...)
	b[1] = "two"
	b[17] = "eighteen"
	b = append(b[:10], b[11:]...) // drop 11
	got := unified(diffLines(a, b), "a", "b", 3)
	want := `--- a
+++ b
@@ -1,5 +1,5 @@
 1
-2
+two
 3
 4
 5
@@ -8,13 +8,12 @@
 8
 9
 10
-11
 12
 13
 14
 15
 16
 17
-18
+eighteen
 19
 20
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
