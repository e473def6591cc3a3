// Package codectest generates replies for the round-trip properties of the
// vendor codecs (provider/openai, provider/anthropic, provider/gemini, ...):
// a reply as the parts an encoder is given, and the parts the vendor's
// parser must give back; CheckParse checks a registered wire's reading of a
// recording (provider/codec) against them; Flatten and Fold fold parsed
// parts the two ways the tests compare them.
package codectest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"reflect"
	"slices"
	"strings"

	"pgregory.net/rapid"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/codec"
)

// Wire says what a vendor's wire carries.
type Wire struct {
	// Signatures: thinking carries signatures (Anthropic).
	Signatures bool
	// Finishes are the finish reasons the wire uses.
	Finishes []string
}

// Reply is one generated reply.
type Reply struct {
	// Parts are what the encoder is given, in order: text, thinking and
	// tool calls interleaved, a usage somewhere, and a Finish or an Error
	// at the end (a usage may follow a Finish).
	Parts []provider.Part
	// Usage is the reply's usage, nil for none.
	Usage *provider.Usage
	// Want is what parsing the encoded stream gives: the text and thinking
	// in order (a thinking part with a signature as its text, then its
	// signature), then, for a finished reply, the tool calls in order, the
	// usage and the finish; for a failed one, only the error after the
	// text and thinking.
	Want []provider.Part
}

// Draw draws a reply for w.
func Draw(t *rapid.T, w Wire) Reply {
	var r Reply
	var calls []provider.Part
	text := rapid.StringN(1, 12, -1)
	n := rapid.IntRange(0, 8).Draw(t, "parts")
	for i := range n {
		switch rapid.IntRange(0, 2).Draw(t, "kind") {
		case 0:
			p := provider.TextDelta{Text: text.Draw(t, "text")}
			r.Parts = append(r.Parts, p)
			r.Want = append(r.Want, p)
		case 1:
			p := provider.ThinkingDelta{Text: text.Draw(t, "thinking")}
			if w.Signatures && rapid.Bool().Draw(t, "signed") {
				p.Signature = rapid.StringMatching(`[A-Za-z0-9+/=]{1,16}`).Draw(t, "signature")
				if rapid.Bool().Draw(t, "only signature") {
					p.Text = ""
				}
			}
			r.Parts = append(r.Parts, p)
			if p.Text != "" {
				r.Want = append(r.Want, provider.ThinkingDelta{Text: p.Text})
			}
			if p.Signature != "" {
				r.Want = append(r.Want, provider.ThinkingDelta{Signature: p.Signature})
			}
		case 2:
			args := rapid.MapOfN(rapid.StringN(1, 6, -1), rapid.StringN(0, 24, -1), 0, 3).Draw(t, "args")
			raw, err := json.Marshal(args)
			if err != nil {
				t.Fatal(err)
			}
			p := provider.ToolCallPart{Call: provider.ToolCall{ID: fmt.Sprintf("call_%d", i),
				Name: rapid.StringMatching(`[a-z_]{1,12}`).Draw(t, "name"), Args: raw}}
			r.Parts = append(r.Parts, p)
			calls = append(calls, p)
		}
	}
	if rapid.Bool().Draw(t, "usage") {
		prompt := rapid.IntRange(0, 1<<20).Draw(t, "prompt")
		u := provider.Usage{PromptTokens: prompt, CompletionTokens: rapid.IntRange(0, 1<<20).Draw(t, "completion")}
		if rapid.Bool().Draw(t, "cached") {
			c := rapid.IntRange(0, prompt).Draw(t, "cached tokens")
			u.CachedTokens = &c
		}
		r.Usage = &u
		at := rapid.IntRange(0, len(r.Parts)+1).Draw(t, "usage at") // len+1: after the finish
		if at <= len(r.Parts) {
			r.Parts = append(r.Parts[:at], append([]provider.Part{u}, r.Parts[at:]...)...)
		}
	}
	if rapid.IntRange(0, 4).Draw(t, "end") == 0 {
		e := provider.Error{Err: &provider.StreamError{
			Type:    rapid.SampledFrom([]string{"server_error", "overloaded_error", "rate_limit_error"}).Draw(t, "error type"),
			Message: rapid.StringN(0, 20, -1).Draw(t, "error message"),
		}}
		r.Parts = append(r.Parts, e)
		r.Want = append(r.Want, e)
		return r
	}
	f := provider.Finish{Reason: rapid.SampledFrom(w.Finishes).Draw(t, "finish")}
	r.Parts = append(r.Parts, f)
	if r.Usage != nil && !containsUsage(r.Parts) {
		r.Parts = append(r.Parts, *r.Usage) // after the finish
	}
	r.Want = append(r.Want, calls...)
	if r.Usage != nil {
		r.Want = append(r.Want, *r.Usage)
	}
	r.Want = append(r.Want, f)
	return r
}

func containsUsage(parts []provider.Part) bool {
	for _, p := range parts {
		if _, ok := p.(provider.Usage); ok {
			return true
		}
	}
	return false
}

// Encoder is what a vendor package's stream encoder offers.
type Encoder interface {
	Open() []byte
	Part(provider.Part) []byte
	Close() []byte
}

// Encode writes parts through e as a server would: the opening, each part,
// and the closing unless a part was an in-stream error (which ends the
// stream there).
func Encode(e Encoder, parts []provider.Part) []byte {
	var body bytes.Buffer
	body.Write(e.Open())
	for _, p := range parts {
		body.Write(e.Part(p))
		if _, failed := p.(provider.Error); failed {
			return body.Bytes()
		}
	}
	body.Write(e.Close())
	return body.Bytes()
}

// Flat is a reply reduced to what a whole (non-streamed) response keeps of
// it: the text and the reasoning text each joined, the signatures in
// order, and the other parts (calls, usage, finish) in order; errors are
// left out.
type Flat struct {
	Text, Thinking string
	Signatures     []string
	Rest           []provider.Part
}

// Flatten reduces parts to a Flat.
func Flatten(parts []provider.Part) Flat {
	var f Flat
	var text, thinking strings.Builder
	for _, p := range parts {
		switch p := p.(type) {
		case provider.TextDelta:
			text.WriteString(p.Text)
		case provider.ThinkingDelta:
			thinking.WriteString(p.Text)
			if p.Signature != "" {
				f.Signatures = append(f.Signatures, p.Signature)
			}
		case provider.Error:
		default:
			f.Rest = append(f.Rest, p)
		}
	}
	f.Text, f.Thinking = text.String(), thinking.String()
	return f
}

// Folded is a reply folded the way the engine folds it: the text joined,
// the reasoning in blocks (a signature closes a block), the calls, the
// calls not to run, the usage, the finish and the failure.
type Folded struct {
	Text     string
	Thinking []provider.Thinking
	Calls    []provider.ToolCall
	Unrun    []provider.UnrunCall
	Usage    *provider.Usage
	Finish   *provider.Finish
	Err      error
}

// Fold folds parts as the engine does.
func Fold(parts []provider.Part) Folded {
	var r Folded
	for _, p := range parts {
		switch p := p.(type) {
		case provider.TextDelta:
			r.Text += p.Text
		case provider.ThinkingDelta:
			if n := len(r.Thinking); n == 0 || r.Thinking[n-1].Signature != "" {
				r.Thinking = append(r.Thinking, provider.Thinking{})
			}
			b := &r.Thinking[len(r.Thinking)-1]
			b.Text += p.Text
			b.Signature = p.Signature
		case provider.ToolCallPart:
			r.Calls = append(r.Calls, p.Call)
		case provider.UnrunCall:
			r.Unrun = append(r.Unrun, p)
		case provider.Usage:
			u := p
			r.Usage = &u
		case provider.Finish:
			f := p
			r.Finish = &f
		case provider.Error:
			r.Err = p.Err
		}
	}
	return r
}

// CheckWhole is the property of a wire's whole (non-streamed) reply: the
// body whole renders for r's parts parses back (parse) to what streaming
// them does, flattened (see Flatten); a reply with no finish renders no
// body at all.
func CheckWhole(t *rapid.T, r Reply, whole func([]provider.Part) ([]byte, bool), parse func(io.Reader) iter.Seq[provider.Part]) {
	body, ok := whole(r.Parts)
	_, finished := r.Want[len(r.Want)-1].(provider.Finish)
	if ok != finished {
		t.Fatalf("the whole reply ok=%v for a reply that finished=%v", ok, finished)
	}
	if !ok {
		return
	}
	got := Flatten(slices.Collect(parse(bytes.NewReader(body))))
	if want := Flatten(r.Want); !reflect.DeepEqual(got, want) {
		t.Fatalf("parts %#v\nencoded: %s\nparsed %#v\nwant   %#v", r.Parts, body, got, want)
	}
}

// CheckParse checks a registered wire's reading of its own encoding
// (codec.Wire.Parse of what codec.Wire.NewEncoder wrote for r), whole and
// cut at a byte it draws:
//
//   - the whole body is a stream of events that tile it: the first starts
//     at 0, each starts where the one before ended, the last ends at the
//     end, none is unparsed and nothing is left unterminated; read without
//     its Content-Type (by how it starts) it reads the same;
//   - the parts of its events, then its EndParts, are r.Want: what the
//     vendor's client yields for the body;
//   - the wire claims the body (codec.Wire.ClaimBody);
//   - the body cut short reads as the events of the whole body that end
//     by the cut, with the same offsets and notes, the rest its Tail (a
//     cut between the CR and the LF of a CRLF moves past the LF).
//
// It returns the whole body.
func CheckParse(t *rapid.T, w codec.Wire, r Reply) []byte {
	e := w.NewEncoder(codec.Reply{Seq: 1, Model: "m", Created: 1767225600, Parts: r.Parts})
	body := Encode(e, r.Parts)
	ct := w.Info().StreamType
	rd := w.Parse(ct, body)
	if !rd.Stream || rd.Tail != 0 || rd.Unparsed() != 0 {
		t.Fatalf("%s: stream %v, tail %d, %d unparsed in\n%s", w.Info().Name, rd.Stream, rd.Tail, rd.Unparsed(), body)
	}
	end := 0
	var parts []provider.Part
	for i, ev := range rd.Events {
		if ev.Start != end || ev.End <= ev.Start {
			t.Fatalf("%s: event %d spans [%d, %d) after %d", w.Info().Name, i, ev.Start, ev.End, end)
		}
		end = ev.End
		parts = append(parts, ev.Parts...)
	}
	if end != len(body) {
		t.Fatalf("%s: the events end at %d of %d bytes", w.Info().Name, end, len(body))
	}
	parts = append(parts, rd.EndParts...)
	if !reflect.DeepEqual(parts, r.Want) {
		t.Fatalf("%s: parts %#v\nencoded:\n%s\nread   %#v\nwant   %#v", w.Info().Name, r.Parts, body, parts, r.Want)
	}
	if bare := w.Parse("", body); !reflect.DeepEqual(bare, rd) {
		t.Fatalf("%s: read without a Content-Type: %#v\nwith: %#v", w.Info().Name, bare, rd)
	}
	if !w.ClaimBody(ct, body) {
		t.Fatalf("%s: does not claim its own body\n%s", w.Info().Name, body)
	}
	cut := rapid.IntRange(0, len(body)).Draw(t, "cut")
	if cut > 0 && cut < len(body) && body[cut-1] == '\r' && body[cut] == '\n' {
		// SSE ends a line at a lone CR, so a body cut between the CR and
		// the LF of a CRLF ends its event a byte early: the event is
		// whole either way, and the cut moves past the LF.
		cut++
	}
	short := w.Parse(ct, body[:cut])
	var whole []codec.Event
	last := 0
	for _, ev := range rd.Events {
		if ev.End <= cut {
			whole = append(whole, ev)
			last = ev.End
		}
	}
	if len(short.Events) != len(whole) || short.Tail != cut-last {
		t.Fatalf("%s: cut at %d of %d: %d events and a %d B tail, want %d and %d", w.Info().Name, cut, len(body), len(short.Events), short.Tail, len(whole), cut-last)
	}
	for i, ev := range short.Events {
		if ev.Start != whole[i].Start || ev.End != whole[i].End || !reflect.DeepEqual(ev.Notes, whole[i].Notes) {
			t.Fatalf("%s: cut at %d: event %d is %+v, want %+v", w.Info().Name, cut, i, ev, whole[i])
		}
	}
	return body
}
