package anthropic

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/internal/codectest"
)

// roundTripWire is what the Messages wire carries.
var roundTripWire = codectest.Wire{Signatures: true, Finishes: []string{"end_turn", "tool_use", "max_tokens", "stop_sequence"}}

// TestRoundTrip: parsing what the Encoder wrote gives the reply back, for
// random replies of text, thinking with signatures, tool calls (input split
// across events), usage, and a finish or an in-stream error.
func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := codectest.Draw(t, roundTripWire)
		e := NewEncoder("msg_1", "m", r.Usage)
		e.ArgChunk = rapid.IntRange(0, 8).Draw(t, "arg chunk")
		body := codectest.Encode(e, r.Parts)
		got := slices.Collect(ParseStream(bytes.NewReader(body)))
		if !reflect.DeepEqual(got, r.Want) {
			t.Fatalf("parts %#v\nencoded:\n%s\nparsed %#v\nwant   %#v", r.Parts, body, got, r.Want)
		}
	})
}

// TestErrorBodyRoundTrip: the client reads back the type and message of
// every error body HTTPErrorBody writes (an empty type is ErrorType's for
// the status, an empty message the status text).
func TestErrorBodyRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		status := rapid.IntRange(400, 599).Draw(t, "status")
		code := rapid.SampledFrom([]string{"", "overloaded_error", "rate_limit_error", "invalid_request_error"}).Draw(t, "code")
		msg := rapid.StringN(0, 20, -1).Draw(t, "message")
		gotCode, gotMsg := provider.ParseErrorBody(HTTPErrorBody(status, code, msg))
		wantCode, wantMsg := code, msg
		if code == "" {
			wantCode = ErrorType(status)
		}
		if msg == "" {
			wantMsg = provider.StatusText(status)
			if wantMsg == "" {
				wantMsg = fmt.Sprintf("HTTP %d", status)
			}
		}
		if gotCode != wantCode || gotMsg != wantMsg {
			t.Fatalf("HTTPErrorBody(%d, %q, %q) reads back as (%q, %q), want (%q, %q)", status, code, msg, gotCode, gotMsg, wantCode, wantMsg)
		}
	})
}

// TestParseRecorded: the registered wire reads its own encoding back
// event by event, whole and cut anywhere (codectest.CheckParse).
func TestParseRecorded(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		codectest.CheckParse(t, Wire{}, codectest.Draw(t, roundTripWire))
	})
}
