package providertest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/httpx"
)

// fullReply is a reply with every kind of part, and the parts a client
// must yield for it: the reasoning and text as they stream, then the tool
// calls in order, the usage and the finish.
func fullReply(v Vendor) (sent, want []provider.Part) {
	cached := 7
	usage := provider.Usage{PromptTokens: 17, CompletionTokens: 42, CachedTokens: &cached}
	a := provider.ToolCall{ID: "call_A", Name: "get_weather", Args: json.RawMessage(`{"city": "Paris"}`)}
	b := provider.ToolCall{ID: "call_B", Name: "now", Args: json.RawMessage(`{}`)}
	sent = []provider.Part{
		provider.ThinkingDelta{Text: "Let me think."},
		provider.TextDelta{Text: "Hel"}, provider.TextDelta{Text: "lo"},
		provider.ToolCallPart{Call: a}, provider.ToolCallPart{Call: b},
		usage, provider.Finish{Reason: v.ToolStop},
	}
	want = []provider.Part{
		provider.ThinkingDelta{Text: "Let me think."},
		provider.TextDelta{Text: "Hel"}, provider.TextDelta{Text: "lo"},
		provider.ToolCallPart{Call: a}, provider.ToolCallPart{Call: b},
		usage, provider.Finish{Reason: v.ToolStop},
	}
	return sent, want
}

// testRequest: a request is a POST of JSON to the API root (a trailing
// slash or not) followed by the vendor's path, asking for a stream, with
// the request's model (in the body, or in the path and query of a wire
// with PathFor), carrying the vendor's headers; the key is in those
// headers and nowhere else.
func testRequest(t *testing.T, v Vendor) {
	type captured struct {
		method, path, query string
		header              http.Header
		body                []byte
	}
	got := make(chan captured, 1)
	body := v.encode([]provider.Part{provider.TextDelta{Text: "ok"}, provider.Finish{Reason: v.Stop}}, true)
	srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- captured{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), b}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(body)
	})
	c := v.client(t, srv.URL+"/root/", nil)
	var parts []provider.Part
	for p := range c.Stream(context.Background(), provider.Request{Model: "contract-model", Messages: request.Messages}) {
		parts = append(parts, p)
	}
	if want := []provider.Part{provider.TextDelta{Text: "ok"}, provider.Finish{Reason: v.Stop}}; !reflect.DeepEqual(parts, want) {
		t.Fatalf("parts %#v, want %#v", parts, want)
	}
	cp := <-got
	wantPath := "/root" + v.Path
	if v.PathFor != nil {
		wantPath = "/root" + v.PathFor("contract-model")
		if cp.query != v.Query {
			t.Errorf("query %q, want %q", cp.query, v.Query)
		}
	}
	if cp.method != http.MethodPost || cp.path != wantPath {
		t.Errorf("request %s %s, want POST %s", cp.method, cp.path, wantPath)
	}
	if ct := cp.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	want := v.Headers(Key)
	for k := range want {
		if g, w := cp.header.Values(k), want.Values(k); !slices.Equal(g, w) {
			t.Errorf("header %s = %q, want %q", k, g, w)
		}
	}
	for k, vs := range cp.header {
		if want.Get(k) == "" && strings.Contains(strings.Join(vs, " "), Key) {
			t.Errorf("the key appears in header %s", k)
		}
	}
	if strings.Contains(cp.query, Key) || bytes.Contains(cp.body, []byte(Key)) {
		t.Errorf("the key appears in the URL or the body")
	}
	if v.PathFor != nil {
		// The path names the model and the stream; the body is the rest.
		if !json.Valid(cp.body) {
			t.Errorf("request body %s is not JSON", cp.body)
		}
		return
	}
	var fields struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	var err error
	if v.RequestFields != nil {
		fields.Model, fields.Stream = v.RequestFields(cp.path, cp.body)
	} else {
		err = json.Unmarshal(cp.body, &fields)
	}
	if err != nil || fields.Model != "contract-model" || !fields.Stream {
		t.Errorf("request body %s: model %q stream %v (%v)", cp.body, fields.Model, fields.Stream, err)
	}
}

// testMissingKey: a client without a key is refused with ErrMissingKey.
func testMissingKey(t *testing.T, v Vendor) {
	if _, err := v.New("http://127.0.0.1:9", nil, ""); !errors.Is(err, provider.ErrMissingKey) {
		t.Fatalf("New without a key: %v, want ErrMissingKey", err)
	}
}

// testPrinting: printing a client, however it is printed (a log line, a
// %+v in a test failure), never shows its key.
func testPrinting(t *testing.T, v Vendor) {
	c, err := v.New("http://127.0.0.1:9", nil, Key)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c)} {
		if strings.Contains(s, Key) {
			t.Errorf("printing the client shows the key: %s", s)
		}
	}
}

// testComplete: a whole reply the vendor's encoder wrote comes back part
// for part over HTTP.
func testComplete(t *testing.T, v Vendor) {
	sent, want := fullReply(v)
	srv := sseServer(t, v.encode(sent, true))
	r := collect(t, context.Background(), v.client(t, srv.URL, nil), nil)
	checkParts(t, r, want)
}

// testTruncation: a stream that ends without the event that completes the
// reply is incomplete (retryable, the engine reports it truncated): what
// streamed before is kept, and no tool call, usage or finish is made up.
func testTruncation(t *testing.T, v Vendor) {
	call := provider.ToolCallPart{Call: provider.ToolCall{ID: "c", Name: "f", Args: json.RawMessage(`{"a":1}`)}}
	usage := provider.Usage{PromptTokens: 2, CompletionTokens: 3}
	t.Run("ends before the finish", func(t *testing.T) {
		srv := sseServer(t, v.encode([]provider.Part{provider.TextDelta{Text: "Calling"}, call}, false))
		r := collect(t, context.Background(), v.client(t, srv.URL, nil), nil)
		checkIncomplete(t, r.err, v.Truncated)
		checkParts(t, r, []provider.Part{provider.TextDelta{Text: "Calling"}, provider.Error{Err: r.err}})
	})
	t.Run("ends after the finish, before the end of the stream", func(t *testing.T) {
		srv := sseServer(t, v.encode([]provider.Part{provider.TextDelta{Text: "Calling"}, call, usage, provider.Finish{Reason: v.ToolStop}}, false))
		r := collect(t, context.Background(), v.client(t, srv.URL, nil), nil)
		if v.FinishEndsReply {
			checkParts(t, r, []provider.Part{provider.TextDelta{Text: "Calling"}, call, usage, provider.Finish{Reason: v.ToolStop}})
			return
		}
		checkIncomplete(t, r.err, v.Truncated)
		checkParts(t, r, []provider.Part{provider.TextDelta{Text: "Calling"}, provider.Error{Err: r.err}})
	})
	t.Run("unterminated last event", func(t *testing.T) {
		// The event that completes the reply lacks its closing blank line,
		// so it is no event at all.
		parts := []provider.Part{provider.TextDelta{Text: "a"}, provider.Finish{Reason: v.Stop}}
		body := unterminate(v.encode(parts, !v.FinishEndsReply))
		srv := sseServer(t, body)
		r := collect(t, context.Background(), v.client(t, srv.URL, nil), nil)
		checkIncomplete(t, r.err, v.Truncated)
		checkParts(t, r, []provider.Part{provider.TextDelta{Text: "a"}, provider.Error{Err: r.err}})
	})
	t.Run("empty body", func(t *testing.T) {
		srv := sseServer(t, nil)
		r := collect(t, context.Background(), v.client(t, srv.URL, nil), nil)
		checkIncomplete(t, r.err, v.NoEvents)
		checkParts(t, r, []provider.Part{provider.Error{Err: r.err}})
	})
}

// testReset resets the TCP connection (linger 0) once the client has seen
// the last event sent. Before the reply completed that is an incomplete
// stream naming the reset, with no tool call, usage or finish; after the
// finish it depends on the wire (FinishEndsReply).
func testReset(t *testing.T, v Vendor) {
	call := provider.ToolCallPart{Call: provider.ToolCall{ID: "c", Name: "f", Args: json.RawMessage(`{}`)}}
	tests := []struct {
		name  string
		parts []provider.Part
		last  string // the text after which the server resets
		text  string
		whole bool // the reply is complete despite the reset
	}{
		{"before the finish", []provider.Part{provider.TextDelta{Text: "Before the reset"}, call}, "Before the reset", "Before the reset", false},
		{"after the finish", []provider.Part{provider.TextDelta{Text: "Hi"}, call, provider.Finish{Reason: v.ToolStop}, provider.TextDelta{Text: "."}}, ".", "Hi.", v.FinishEndsReply},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			payload := v.encode(tt.parts, false)
			seen := make(chan struct{})
			srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				conn, buf, err := w.(http.Hijacker).Hijack()
				if err != nil {
					t.Errorf("hijack: %v", err)
					return
				}
				defer conn.Close()
				fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(payload), payload)
				buf.Flush()
				waitFor(t, seen, "the client seeing the last event")
				if tc, ok := conn.(*net.TCPConn); ok {
					tc.SetLinger(0)
				}
			})
			once := false
			r := collect(t, context.Background(), v.client(t, srv.URL, nil), func(p provider.Part) bool {
				if isText(p, tt.last) && !once {
					once = true
					close(seen)
				}
				return true
			})
			if r.text != tt.text {
				t.Errorf("text %q, want %q", r.text, tt.text)
			}
			if tt.whole {
				if r.err != nil || r.finish == nil || r.finish.Reason != v.ToolStop || !reflect.DeepEqual(r.calls, []provider.ToolCall{call.Call}) {
					t.Fatalf("a reset after the finish: %s, want the complete reply", r)
				}
				return
			}
			checkIncomplete(t, r.err, "reset")
			if !errors.Is(r.err, syscall.ECONNRESET) {
				t.Errorf("error %v does not wrap ECONNRESET", r.err)
			}
			if r.finish != nil || len(r.calls) > 0 || r.usage != nil {
				t.Errorf("a reset stream yielded %s", r)
			}
		})
	}
}

// testIdleTimeout stalls the body after the first text; the idle watchdog,
// on a fake clock, ends the stream as incomplete and leaves no clock wait
// behind.
func testIdleTimeout(t *testing.T, v Vendor) {
	srv, _ := serve(t, stall(v.encode([]provider.Part{provider.TextDelta{Text: "stalled"}}, false), nil))
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	hc := &httpx.Client{Clock: fake, IdleTimeout: 30 * time.Second}
	r := collect(t, context.Background(), v.client(t, srv.URL, hc), func(p provider.Part) bool {
		if _, ok := p.(provider.TextDelta); ok {
			ctx, cancel := context.WithTimeout(context.Background(), guard)
			defer cancel()
			if err := fake.BlockUntil(ctx, 1); err != nil {
				t.Errorf("the watchdog never waited: %v", err)
			}
			fake.Advance(29 * time.Second)
			if fake.Waiters() != 1 {
				t.Errorf("the watchdog fired before the idle timeout")
			}
			fake.Advance(time.Second)
		}
		return true
	})
	if r.text != "stalled" {
		t.Errorf("text %q", r.text)
	}
	checkIncomplete(t, r.err, "idle timeout")
	if n := fake.Waiters(); n != 0 {
		t.Errorf("%d clock waits left after the stream ended", n)
	}
}

// testCancel: a cancelled context and a consumer that stops both end the
// exchange at once: the body is closed (the server sees the client go)
// and no Error part is made up. A context cancelled before the request
// yields nothing and sends nothing.
func testCancel(t *testing.T, v Vendor) {
	head := v.encode([]provider.Part{provider.TextDelta{Text: "one"}, provider.TextDelta{Text: "two"}}, false)
	for _, mode := range []string{"context cancelled", "consumer stops"} {
		t.Run(mode, func(t *testing.T) {
			gone := make(chan struct{})
			srv, _ := serve(t, stall(head, gone))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r := collect(t, ctx, v.client(t, srv.URL, nil), func(p provider.Part) bool {
				if mode == "consumer stops" {
					return false
				}
				cancel()
				return true
			})
			checkParts(t, r, []provider.Part{provider.TextDelta{Text: "one"}})
			waitFor(t, gone, "the response body closing")
		})
	}
	t.Run("cancelled before the request", func(t *testing.T) {
		srv, n := serve(t, stall(head, nil))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		for p := range v.client(t, srv.URL, nil).Stream(ctx, request) {
			t.Errorf("part %#v from a cancelled stream", p)
		}
		if n.Load() != 0 {
			t.Errorf("%d requests sent under a cancelled context", n.Load())
		}
	})
}

// testMalformed: an event whose JSON is cut is the vendor's own error, not
// an incomplete stream (resending would get the same garbage), after the
// text that came before it.
func testMalformed(t *testing.T, v Vendor) {
	e := v.Encoder(nil)
	body := append(e.Open(), e.Part(provider.TextDelta{Text: "ok"})...)
	ev := e.Part(provider.TextDelta{Text: "lost"})
	i := bytes.Index(ev, []byte("data: ")) + len("data: ")
	data := bytes.TrimRight(ev[i:], "\n")
	body = append(body, ev[:i]...)
	body = append(body, data[:len(data)/2]...)
	body = append(body, "\n\n"...)
	body = append(body, e.Part(provider.Finish{Reason: v.Stop})...)
	body = append(body, e.Close()...)
	srv := sseServer(t, body)
	r := collect(t, context.Background(), v.client(t, srv.URL, nil), nil)
	if r.err == nil || errors.Is(r.err, provider.ErrIncomplete) || !strings.Contains(r.err.Error(), v.Malformed) {
		t.Fatalf("error %v, want a plain error saying %q", r.err, v.Malformed)
	}
	checkParts(t, r, []provider.Part{provider.TextDelta{Text: "ok"}, provider.Error{Err: r.err}})
}

// testGzip: a gzip body reads the same whether Go's transport undoes it
// (it asked for gzip) or the client must (the transport was told not to),
// and it streams: the first text comes through before the server sends
// the rest.
func testGzip(t *testing.T, v Vendor) {
	sent, want := fullReply(v)
	whole := v.encode(sent, true)
	// first is the part of the body that carries the first text.
	e := v.start(sent)
	first := append(e.Open(), e.Part(sent[0])...)
	first = append(first, e.Part(sent[1])...)
	if !bytes.HasPrefix(whole, first) {
		t.Fatalf("the encoder wrote the start of the same reply two ways")
	}
	for _, tt := range []struct {
		name   string
		hc     *httpx.Client
		accept string // the Accept-Encoding the server must see
	}{
		{"decoded by the transport", nil, "gzip"},
		{"decoded by the client", &httpx.Client{HTTP: &http.Client{Transport: &http.Transport{DisableCompression: true}}}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var zb bytes.Buffer
			zw := gzip.NewWriter(&zb)
			zw.Write(whole)
			zw.Close()
			srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
				if a := r.Header.Get("Accept-Encoding"); a != tt.accept {
					t.Errorf("Accept-Encoding %q, want %q", a, tt.accept)
				}
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("Content-Encoding", "gzip")
				w.Write(zb.Bytes())
			})
			r := collect(t, context.Background(), v.client(t, srv.URL, tt.hc), nil)
			checkParts(t, r, want)
		})
		t.Run(tt.name+", incrementally", func(t *testing.T) {
			sawText := make(chan struct{})
			srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("Content-Encoding", "gzip")
				zw := gzip.NewWriter(w)
				zw.Write(first)
				zw.Flush() // a sync flush, as the APIs do per event
				w.(http.Flusher).Flush()
				waitFor(t, sawText, "the first text coming through before the rest was sent")
				zw.Write(whole[len(first):])
				zw.Close()
			})
			once := false
			r := collect(t, context.Background(), v.client(t, srv.URL, tt.hc), func(p provider.Part) bool {
				if _, ok := p.(provider.TextDelta); ok && !once {
					once = true
					close(sawText)
				}
				return true
			})
			checkParts(t, r, want)
		})
	}
}
