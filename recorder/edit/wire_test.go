package edit

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/recorder/cassette"
)

// unknownWire is a cassette of one interaction no registered wire claims:
// a request to /v2/foo with no vendor header, whose body no wire claims
// either.
func unknownWire() *cassette.File {
	it := &cassette.Interaction{}
	it.Request.Method, it.Request.URL, it.Request.Body = "POST", "http://127.0.0.1:9/v2/foo", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	it.Response.Code, it.Response.Status = 200, "200 OK"
	it.Response.Headers = http.Header{"Content-Type": {"text/event-stream"}}
	it.Response.Body = "data: {\"say\":\"hi\"}\n\ndata: {\"say\":\"bye\"}\n\n"
	it.Stream = &cassette.Stream{Chunks: []cassette.Chunk{{Data: "data: {\"say\":\"hi\"}\n\n"}, {Data: "data: {\"say\":\"bye\"}\n\n"}}}
	f := cassette.New()
	f.Interactions = []*cassette.Interaction{it}
	return f
}

// TestUnknownWireShow: show says that no wire claims the interaction and
// shows its chunks as bytes, reading nothing into them: no OpenAI reading
// by default.
func TestUnknownWireShow(t *testing.T) {
	out := show(t, unknownWire())
	hasLines(t, out, []string{
		"#0 at +0s: POST /v2/foo",
		"  request: 57 B",
		`  chunk 0 at +0s, 20 B: data: {"say":"hi"}\n\n`,
		"  end: clean",
	})
	if !strings.Contains(out, "\n  wire: unknown: POST /v2/foo (nor its recorded body): "+codec.ErrUnknownWire.Error()+" (known: ") {
		t.Errorf("show does not say that no wire claims it:\n%s", out)
	}
	for _, no := range []string{"signal:", "unparsed", "text:", "model m"} {
		if strings.Contains(out, no) {
			t.Errorf("show reads %q into an unknown wire:\n%s", no, out)
		}
	}
}

// TestUnknownWireInject: every op that writes the wire's bytes (an HTTP
// error, an in-stream error event) or reads its events refuses an
// interaction no wire claims, with an error saying so; the byte and chunk
// cuts, which need no wire, still apply.
func TestUnknownWireInject(t *testing.T) {
	tests := []struct {
		op      Op
		refused bool
	}{
		{Op{Kind: KindRateLimit, Before: 0}, true},
		{Op{Kind: KindServerError, Status: 503, Before: 0}, true},
		{Op{Kind: KindStreamError, Chunk: 1}, true},
		{Op{Kind: KindStreamError, ByEvent: true, Event: 1}, true},
		{Op{Kind: KindTruncate, ByEvent: true, Event: 1}, true},
		{Op{Kind: KindTruncate, Chunk: 1}, false},
		{Op{Kind: KindReset, Byte: 5}, false},
	}
	for _, tt := range tests {
		t.Run(tt.op.String(), func(t *testing.T) {
			out, err := Inject(unknownWire(), tt.op)
			if !tt.refused {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, codec.ErrUnknownWire) || out != nil || !strings.Contains(err.Error(), "interaction 0") {
				t.Fatalf("got %v, %v; want an error wrapping codec.ErrUnknownWire naming interaction 0", out, err)
			}
		})
	}
}

// TestStreamErrorOnAnEmptyStream: an interaction whose Content-Type is
// its wire's stream type takes an in-stream error though its body is
// empty (a reset before the first byte): the error event becomes its
// body.
func TestStreamErrorOnAnEmptyStream(t *testing.T) {
	it := &cassette.Interaction{}
	it.Request.Method, it.Request.URL = "POST", "https://api.anthropic.com/v1/messages"
	it.Response.Code, it.Response.Status = 200, "200 OK"
	it.Response.Headers = http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}}
	it.Stream = &cassette.Stream{Error: &cassette.Error{Kind: cassette.KindReset}}
	f := cassette.New()
	f.Interactions = []*cassette.Interaction{it}
	out, err := Inject(f, Op{Kind: KindStreamError, ByEvent: true, Event: 0})
	if err != nil {
		t.Fatal(err)
	}
	want := "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	if got := out.Interactions[0].Body(); got != want {
		t.Errorf("body %q, want %q", got, want)
	}
	it.Response.Headers = http.Header{"Content-Type": {"application/json"}}
	if _, err := Inject(f, Op{Kind: KindStreamError, ByEvent: true, Event: 0}); err == nil || !strings.Contains(err.Error(), "not an event stream (Content-Type application/json)") {
		t.Errorf("a JSON body: %v", err)
	}
}
