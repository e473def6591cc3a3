package openai

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/internal/codectest"
)

// TestRoundTrip: parsing what the Encoder wrote gives the reply back, for
// random replies of text, reasoning, tool calls (arguments split across
// chunks), usage, and a finish or an in-stream error.
func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := codectest.Draw(t, codectest.Wire{Finishes: []string{"stop", "tool_calls", "length", "content_filter"}})
		e := NewEncoder("chatcmpl-1", "m", 1767225600)
		e.ArgChunk = rapid.IntRange(0, 8).Draw(t, "arg chunk")
		body := codectest.Encode(e, r.Parts)
		got := slices.Collect(ParseStream(bytes.NewReader(body)))
		if !reflect.DeepEqual(got, r.Want) {
			t.Fatalf("parts %#v\nencoded:\n%s\nparsed %#v\nwant   %#v", r.Parts, body, got, r.Want)
		}
	})
}

// TestRoundTripCompletion: parsing the whole completion Completion wrote
// (the reply to a request without stream) gives the reply back joined:
// the reasoning in one part, the text in one, then the tool calls, usage
// and finish.
func TestRoundTripCompletion(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := codectest.Draw(t, codectest.Wire{Finishes: []string{"stop", "tool_calls", "length", "content_filter"}})
		body, ok := Completion("chatcmpl-1", "m", 1767225600, r.Parts)
		var want []provider.Part
		var text, thinking string
		finished := false
		for _, p := range r.Want {
			switch p := p.(type) {
			case provider.TextDelta:
				text += p.Text
			case provider.ThinkingDelta:
				thinking += p.Text
			case provider.Error:
			default:
				_, isFinish := p.(provider.Finish)
				finished = finished || isFinish
				want = append(want, p)
			}
		}
		if ok != finished {
			t.Fatalf("Completion ok=%v for a reply that finished=%v", ok, finished)
		}
		if !ok {
			return
		}
		if text != "" {
			want = append([]provider.Part{provider.TextDelta{Text: text}}, want...)
		}
		if thinking != "" {
			want = append([]provider.Part{provider.ThinkingDelta{Text: thinking}}, want...)
		}
		var got []provider.Part
		readWhole(context.Background(), body, func(p provider.Part) bool {
			got = append(got, p)
			return true
		})
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("parts %#v\nencoded: %s\nparsed %#v\nwant   %#v", r.Parts, body, got, want)
		}
	})
}

// TestErrorBodyRoundTrip: the client reads back the code and message of
// every error body HTTPErrorBody writes (an empty code is the type OpenAI
// uses for the status, an empty message the status text).
func TestErrorBodyRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		status := rapid.IntRange(400, 599).Draw(t, "status")
		code := rapid.SampledFrom([]string{"", "insufficient_quota", "server_error", "context_length_exceeded"}).Draw(t, "code")
		msg := rapid.StringN(0, 20, -1).Draw(t, "message")
		gotCode, gotMsg := provider.ParseErrorBody(HTTPErrorBody(status, code, msg))
		wantCode, wantMsg := code, msg
		switch {
		case code != "":
		case status == 429:
			wantCode = "rate_limit_exceeded"
		case status >= 500:
			wantCode = "server_error"
		default:
			wantCode = "invalid_request_error"
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
		codectest.CheckParse(t, Wire{}, codectest.Draw(t, codectest.Wire{Finishes: []string{"stop", "tool_calls", "length", "content_filter"}}))
	})
}
