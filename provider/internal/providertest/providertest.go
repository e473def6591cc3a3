// Package providertest is the contract every vendor client (provider/openai,
// provider/anthropic, and the next wire) must keep, written once: Run drives
// one client over loopback HTTP through every behaviour the engine and the
// retry policy rely on — the request, a complete reply, truncation, a reset
// connection, the idle, header and reply timeouts on the injected clock,
// cancellation, HTTP and in-stream error mapping, the API key never leaking,
// gzip bodies and the reply byte cap — with replies written by the vendor's
// own encoder. A vendor's test file keeps only what is specific to its wire.
package providertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/internal/codectest"
)

// Key is the API key of every client the suite builds; no part, no error
// and nothing of a request but the vendor's own headers may ever show it.
const Key = "sk-contract-7e1f-KEY-that-must-never-leak-90ab"

// guard bounds a wait for something the test itself triggers, so a bug
// fails the test instead of hanging it; a passing run never waits it out.
const guard = 10 * time.Second

// Vendor describes one vendor client to the suite: how to build it, and
// how its wire writes replies and errors.
type Vendor struct {
	// Name is the vendor package's name, as its errors say it ("openai").
	Name string
	// New builds a client whose requests go to base (an API root that may
	// end in a slash) followed by Path, through hc, with key.
	New func(base string, hc *httpx.Client, key string) (provider.Provider, error)
	// Path is the request path below the API root.
	Path string
	// PathFor, when set, is the request path below the API root for a
	// model, for a wire that names the model (and streaming) in the path
	// rather than in the body (Gemini, Bedrock); Path is then the path of
	// any model, for the record. Query is the query such a request
	// carries ("alt=sse"), "" for none.
	PathFor func(model string) string
	Query   string
	// Headers are the headers every request carries for key: the key's
	// own header and any fixed ones (an API version).
	Headers func(key string) http.Header
	// Encoder starts the vendor's encoder for one reply whose usage is u
	// (nil: none). The suite also gives it the usage as a part.
	Encoder func(u *provider.Usage) codectest.Encoder
	// HTTPErrorBody is the body the vendor answers an error status with.
	HTTPErrorBody func(status int, code, message string) []byte
	// HTTPErrorHeader, when set, is the headers the vendor sends with
	// that body (AWS names the error's type in x-amzn-ErrorType, not in
	// the body); nil means none.
	HTTPErrorHeader func(status int, code string) http.Header
	// RequestFields, when set, reads the model a request names and
	// whether it asks for a stream from its path and body (Bedrock names
	// both in the path); nil reads the body's model and stream fields.
	RequestFields func(path string, body []byte) (model string, stream bool)
	// Binary says the wire's events are binary frames, not SSE: the
	// endless bodies made of SSE lines, comments and blank lines do not
	// apply to it, only those made of the encoder's own events and
	// Endless.
	Binary bool
	// Endless are more bodies that never end, the wire's own, run by the
	// endless-bodies test besides the common ones.
	Endless []Endless
	// ErrorEvent is the vendor's in-stream error event.
	ErrorEvent func(*provider.StreamError) []byte
	// Ping is a keep-alive event of the wire (Anthropic's ping); nil when
	// it has none beyond SSE comments.
	Ping []byte
	// Stop and ToolStop are the finish reasons of a reply that ended its
	// turn and of one that called tools.
	Stop, ToolStop string
	// FinishEndsReply says the events of the Finish part complete a reply
	// (OpenAI's finish_reason: what follows is only the usage and [DONE]);
	// false means only the encoder's Close does (Anthropic's message_stop).
	FinishEndsReply bool
	// Truncated is what the error of a stream that ended before the event
	// completing the reply says ("stream ended before finish_reason").
	Truncated string
	// NoEvents is what the error of an empty 200 body says.
	NoEvents string
	// Malformed is what the error of an event that is not JSON says.
	Malformed string
}

// Endless is a body that never ends: Head, then Unit over and over,
// gzip-compressed when Zip (decoded by the client rather than the
// transport when DecodeSelf), read under a reply byte cap of Max (0:
// none). The reply must end with a client limit naming Want, after some
// text when Text.
type Endless struct {
	Name, Head, Unit string
	Zip, DecodeSelf  bool
	Max              int64
	Want             string
	Text             bool
}

// errorHeader writes the headers the vendor sends with an error body.
func (v Vendor) errorHeader(w http.ResponseWriter, status int, code string) {
	if v.HTTPErrorHeader == nil {
		return
	}
	for k, vs := range v.HTTPErrorHeader(status, code) {
		w.Header()[k] = vs
	}
}

// Run runs every behaviour of the contract against v as a subtest.
func Run(t *testing.T, v Vendor) {
	t.Helper()
	if v.New == nil || v.Headers == nil || v.Encoder == nil || v.HTTPErrorBody == nil || v.ErrorEvent == nil ||
		v.Name == "" || v.Path == "" || v.Stop == "" || v.ToolStop == "" || v.Truncated == "" || v.NoEvents == "" || v.Malformed == "" {
		t.Fatalf("providertest: incomplete Vendor %+v", v)
	}
	for _, c := range []struct {
		name string
		run  func(*testing.T, Vendor)
	}{
		{"request", testRequest},
		{"missing key", testMissingKey},
		{"printing hides the key", testPrinting},
		{"complete reply", testComplete},
		{"truncation", testTruncation},
		{"connection reset", testReset},
		{"idle timeout", testIdleTimeout},
		{"cancel", testCancel},
		{"HTTP errors", testHTTPErrors},
		{"unreachable", testUnreachable},
		{"in-stream errors", testStreamErrors},
		{"malformed event", testMalformed},
		{"key never leaks", testKeyNeverLeaks},
		{"gzip", testGzip},
		{"header timeout", testHeaderTimeout},
		{"reply timeout", testReplyTimeout},
		{"max reply bytes", testMaxReplyBytes},
		{"endless bodies", testEndless},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, v) })
	}
}

// request is the request every test sends.
var request = provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}}

// client builds v's client against base with Key.
func (v Vendor) client(t *testing.T, base string, hc *httpx.Client) provider.Provider {
	t.Helper()
	c, err := v.New(base, hc, Key)
	if err != nil {
		t.Fatalf("%s: New: %v", v.Name, err)
	}
	return c
}

// encode writes parts as the vendor's server would: the opening, each
// part, and the closing when end is set. The encoder is given the first
// Usage among parts.
func (v Vendor) encode(parts []provider.Part, end bool) []byte {
	e := v.start(parts)
	if end {
		return codectest.Encode(e, parts)
	}
	out := e.Open()
	for _, p := range parts {
		out = append(out, e.Part(p)...)
	}
	return out
}

// start is a fresh encoder for a reply of parts, given the first Usage
// among them.
func (v Vendor) start(parts []provider.Part) codectest.Encoder {
	for _, p := range parts {
		if u, ok := p.(provider.Usage); ok {
			return v.Encoder(&u)
		}
	}
	return v.Encoder(nil)
}

// reply is a stream folded the way the engine folds it.
type reply struct {
	parts    []provider.Part
	text     string
	thinking string
	calls    []provider.ToolCall
	usage    *provider.Usage
	finish   *provider.Finish
	err      error
}

func (r reply) String() string {
	return fmt.Sprintf("text %q thinking %q calls %v usage %s finish %v err %v", r.text, r.thinking, r.calls, usageString(r.usage), r.finish, r.err)
}

func usageString(u *provider.Usage) string {
	if u == nil {
		return "<none>"
	}
	c := "nil"
	if u.CachedTokens != nil {
		c = fmt.Sprint(*u.CachedTokens)
	}
	return fmt.Sprintf("{%d %d %s}", u.PromptTokens, u.CompletionTokens, c)
}

// collect runs one stream to its end, or until onPart (when not nil)
// returns false, and checks the shape the Provider contract gives every
// reply: nothing after its Finish or Error; text and reasoning before the
// tool calls, usage and finish; a failed reply without tool calls, usage
// or finish; an Error part with an error; and the key in no part.
func collect(t *testing.T, ctx context.Context, c provider.Provider, onPart func(provider.Part) bool) reply {
	t.Helper()
	var r reply
	ended, tail := false, false
	for p := range c.Stream(ctx, request) {
		if ended {
			t.Errorf("part after the end of the reply: %#v", p)
		}
		r.parts = append(r.parts, p)
		if s := fmt.Sprintf("%#v", p); strings.Contains(s, Key) {
			t.Errorf("the API key appears in a part: %s", s)
		}
		switch p := p.(type) {
		case provider.TextDelta:
			if tail {
				t.Errorf("text after the tool calls or usage: %q", p.Text)
			}
			r.text += p.Text
		case provider.ThinkingDelta:
			if tail {
				t.Errorf("reasoning after the tool calls or usage: %q", p.Text)
			}
			r.thinking += p.Text
		case provider.ToolCallPart:
			if r.usage != nil {
				t.Errorf("tool call after the usage")
			}
			tail = true
			r.calls = append(r.calls, p.Call)
		case provider.Usage:
			if r.usage != nil {
				t.Errorf("two Usage parts")
			}
			tail = true
			u := p
			r.usage = &u
		case provider.Retry:
			// provider/retry's announcement: the attempt before failed.
		case provider.Finish:
			f := p
			r.finish = &f
			ended = true
		case provider.Error:
			ended = true
			r.err = p.Err
			if p.Err == nil {
				t.Errorf("Error part without an error")
			} else if strings.Contains(p.Err.Error(), Key) {
				t.Errorf("the API key appears in an error: %v", p.Err)
			}
		default:
			t.Errorf("unexpected part %#v", p)
		}
		if onPart != nil && !onPart(p) {
			break
		}
	}
	if r.err != nil && (len(r.calls) > 0 || r.usage != nil) {
		t.Errorf("a failed reply yielded tool calls or usage: %s", r)
	}
	return r
}

// serve starts a loopback server for h that closes when the test ends, and
// counts the requests it took.
func serve(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// sseServer answers every request with status 200 and body as an event
// stream.
func sseServer(t *testing.T, body []byte) *httptest.Server {
	t.Helper()
	srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.Write(body)
	})
	return srv
}

// stall sends head as an event stream, flushed, then holds the response
// open until the client goes; gone (when not nil) is closed then.
func stall(head []byte, gone chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(head)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		if gone != nil {
			close(gone)
		}
	}
}

// silent takes the request and never answers. It reads the body first:
// the server notices a client hanging up only once the body is consumed.
func silent(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

// waitFor fails the test unless ch closes within guard.
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(guard):
		t.Errorf("%s never happened", what)
	}
}

// isText reports whether p is the text s.
func isText(p provider.Part, s string) bool {
	td, ok := p.(provider.TextDelta)
	return ok && td.Text == s
}

// checkIncomplete fails unless err is an incomplete stream (not a client
// limit, not a reported error) whose text says each of says.
func checkIncomplete(t *testing.T, err error, says ...string) {
	t.Helper()
	if !errors.Is(err, provider.ErrIncomplete) || errors.Is(err, provider.ErrLimit) {
		t.Fatalf("error %v (%T), want an incomplete stream", err, err)
	}
	var se *provider.StreamError
	if errors.As(err, &se) {
		t.Fatalf("error %v is a reported StreamError, want an incomplete stream", err)
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("error %q does not say %q", err, s)
		}
	}
	if n := strings.Count(err.Error(), provider.ErrIncomplete.Error()); n != 1 {
		t.Errorf("the incomplete marker appears %d times: %v", n, err)
	}
}

// checkLimit fails unless err is a client limit naming limit.
func checkLimit(t *testing.T, err error, limit string) {
	t.Helper()
	var le *provider.LimitError
	if !errors.As(err, &le) || !errors.Is(err, provider.ErrLimit) || !errors.Is(err, provider.ErrIncomplete) || !strings.Contains(err.Error(), limit) {
		t.Fatalf("error %v (%T), want a client limit naming %q", err, err, limit)
	}
}

// checkParts fails unless r's parts are want.
func checkParts(t *testing.T, r reply, want []provider.Part) {
	t.Helper()
	if !reflect.DeepEqual(r.parts, want) {
		t.Fatalf("parts\n got %#v\nwant %#v", r.parts, want)
	}
}

// unterminate drops the line end of b's last line (LF, CRLF or CR): the
// blank line that ended its last event, which is then no event at all.
func unterminate(b []byte) []byte {
	n := 1
	if bytes.HasSuffix(b, []byte("\r\n")) {
		n = 2
	}
	return bytes.Clone(b[:len(b)-n])
}
