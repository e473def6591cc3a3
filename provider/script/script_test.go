package script

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
)

func TestParseErrorsNameTheProblem(t *testing.T) {
	tests := map[string]string{
		"":                       "empty scenario",
		"replies:\n  - txt: a\n": "field txt not found",
		"replies:\n  - text: a\n    chunks: [{text: b}]\n":                       "not both",
		"replies:\n  - chunks: [{text: a, finish: stop}]\n":                      "set exactly one of",
		"replies:\n  - chunks: [{}]\n":                                           "got 0",
		"replies:\n  - tool_calls: [{id: x}]\n":                                  "name is required",
		"replies:\n  - tool_calls: [{name: t, args: {a: 1}, args_json: '{}'}]\n": "not both",
		"replies:\n  - chunks: [{delay: -1s}]\n":                                 "negative delay",
		"replies:\n  - chunks: [{delay: soon}]\n":                                "soon",
		"replies: 3\n":                                                 "cannot unmarshal",
		"replies:\n  - {status: 42}\n":                                 "reply 1: status 42 is not an HTTP status",
		"replies:\n  - {text: ok}\n  - {status: 600}\n":                "reply 2: status 600",
		"replies:\n  - {status: 429, text: a}\n":                       "takes no chunks or shorthand",
		"replies:\n  - {status: 429, chunks: [{text: a}]}\n":           "takes no chunks or shorthand",
		"replies:\n  - {status: 429, body: x, code: c}\n":              "set body or code/message, not both",
		"replies:\n  - {status: 429, reset_after_bytes: 3}\n":          "do not combine",
		"replies:\n  - {code: insufficient_quota}\n":                   "need a status",
		"replies:\n  - {body: x}\n":                                    "need a status",
		"replies:\n  - {refuse: true, text: a}\n":                      "refuse drops the connection",
		"replies:\n  - {refuse: true, status: 500}\n":                  "refuse drops the connection",
		"replies:\n  - {reset_after_bytes: -1, text: a}\n":             "negative reset_after_bytes",
		"replies:\n  - {status: 500, headers: {\"a b\": x}}\n":         "not a header name",
		"replies:\n  - chunks: [{stream_error: {}}]\n":                 "needs a type or a message",
		"replies:\n  - chunks: [{stream_error: {type: t}, text: a}]\n": "stream_error",
		"replies:\n  - chunks: [{stream_error: {kind: t}}]\n":          "field kind not found",
	}
	for in, want := range tests {
		_, err := Parse([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error containing %q", in, err, want)
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file: %v", err)
	}
}

func collect(p *Provider, ctx context.Context) []provider.Part {
	var out []provider.Part
	for part := range p.Stream(ctx, provider.Request{}) {
		out = append(out, part)
	}
	return out
}

func TestShorthandAndChunks(t *testing.T) {
	sc, err := Parse([]byte(`
replies:
  - thinking: hmm
    text: hi
    tool_calls: [{name: t, args: {a: [1, x]}}, {id: c9, name: u, args_json: '{"bad'}]
    usage: {prompt_tokens: 3, completion_tokens: 1, cached_tokens: 2}
  - text: plain
    usage: {prompt_tokens: 9, completion_tokens: 5, reasoning_tokens: 4}
  - chunks:
      - signature: s1
      - retry: {attempt: 2, max_attempts: 4, reason: r}
      - died: reset
  - chunks:
      - error: boom
`))
	if err != nil {
		t.Fatal(err)
	}
	p := New(sc, nil)
	cached, reasoning := 2, 4
	want := [][]provider.Part{
		{provider.ThinkingDelta{Text: "hmm"}, provider.TextDelta{Text: "hi"},
			provider.ToolCallPart{Call: provider.ToolCall{ID: "call_1_1", Name: "t", Args: []byte(`{"a":[1,"x"]}`)}},
			provider.ToolCallPart{Call: provider.ToolCall{ID: "c9", Name: "u", Args: []byte(`{"bad`)}},
			provider.Usage{PromptTokens: 3, CompletionTokens: 1, CachedTokens: &cached},
			provider.Finish{Reason: "tool_calls"}},
		{provider.TextDelta{Text: "plain"}, provider.Usage{PromptTokens: 9, CompletionTokens: 5, ReasoningTokens: &reasoning},
			provider.Finish{Reason: "stop"}},
	}
	for i, w := range want {
		if got := collect(p, context.Background()); !reflect.DeepEqual(got, w) {
			t.Errorf("reply %d:\n got %#v\nwant %#v", i+1, got, w)
		}
	}
	got := collect(p, context.Background())
	if len(got) != 3 || got[0] != (provider.ThinkingDelta{Signature: "s1"}) || got[1] != (provider.Retry{Attempt: 2, MaxAttempts: 4, Reason: "r"}) {
		t.Fatalf("reply 3: %#v", got)
	}
	if e := got[2].(provider.Error); !errors.Is(e.Err, provider.ErrIncomplete) || !strings.Contains(e.Err.Error(), "reset") {
		t.Errorf("died chunk: %v", e.Err)
	}
	got = collect(p, context.Background())
	var se *provider.StreamError
	if e := got[0].(provider.Error); errors.Is(e.Err, provider.ErrIncomplete) || !errors.As(e.Err, &se) || *se != (provider.StreamError{Message: "boom"}) || e.Err.Error() != "boom" {
		t.Errorf("error chunk: %v", e.Err)
	}
	got = collect(p, context.Background())
	if e, ok := got[0].(provider.Error); !ok || !strings.Contains(e.Err.Error(), "no reply left for request 5") {
		t.Errorf("exhausted: %#v", got)
	}
	if n := len(p.Requests()); n != 5 {
		t.Errorf("%d requests recorded", n)
	}
}

func TestDelayUsesTheClockAndStallWaitsForCancel(t *testing.T) {
	sc, err := Parse([]byte("replies:\n  - chunks: [{text: a}, {delay: 1h}, {text: b}, {stall: true}, {text: never}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	fake := clock.NewFake(time.Unix(0, 0))
	p := New(sc, fake)
	ctx, cancel := context.WithCancel(context.Background())
	parts := make(chan provider.Part)
	go func() {
		for part := range p.Stream(ctx, provider.Request{}) {
			parts <- part
		}
		close(parts)
	}()
	if got := <-parts; got != (provider.TextDelta{Text: "a"}) {
		t.Fatalf("first part %#v", got)
	}
	wait, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if err := fake.BlockUntil(wait, 1); err != nil {
		t.Fatal(err)
	}
	fake.Advance(time.Hour)
	if got := <-parts; got != (provider.TextDelta{Text: "b"}) {
		t.Fatalf("second part %#v", got)
	}
	cancel()
	if got, ok := <-parts; ok {
		t.Errorf("part %#v after cancelling a stall", got)
	}
}

func TestHTTPFaultsInProcess(t *testing.T) {
	sc, err := Parse([]byte(`
replies:
  - {status: 429, headers: {Retry-After: "2"}}
  - {status: 429, headers: {Retry-After: "Thu, 01 Jan 2026 00:00:30 GMT"}, code: rate_limit_error, message: slow down}
  - {status: 429, headers: {retry-after-ms: "1500", Retry-After: "9"}, code: insufficient_quota}
  - {status: 529, body: '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'}
  - {status: 502, body: "bad gateway\n"}
  - {refuse: true}
  - chunks: [{text: a}, {stream_error: {type: overloaded_error, message: Overloaded}}, {text: never}]
  - {reset_after_bytes: 10, text: partial, usage: {prompt_tokens: 1, completion_tokens: 1}}
  - {reset_after_bytes: 0, chunks: [{text: a}, {delay: 1s}, {text: b}]}
  - {headers: {x-request-id: r1}, text: fine}
`))
	if err != nil {
		t.Fatal(err)
	}
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	p := New(sc, fake)
	httpErrs := []provider.HTTPError{
		{Status: 429, RetryAfter: 2 * time.Second, HasRetryAfter: true},
		{Status: 429, Code: "rate_limit_error", Message: "slow down", RetryAfter: 30 * time.Second, HasRetryAfter: true},
		{Status: 429, Code: "insufficient_quota", RetryAfter: 1500 * time.Millisecond, HasRetryAfter: true},
		{Status: 529, Code: "overloaded_error", Message: "Overloaded"},
		{Status: 502, Message: "bad gateway"},
	}
	for i, want := range httpErrs {
		got := collect(p, context.Background())
		var he *provider.HTTPError
		if len(got) != 1 || !errors.As(got[0].(provider.Error).Err, &he) || *he != want {
			t.Errorf("reply %d: %#v, want %#v", i+1, got, want)
		}
	}
	got := collect(p, context.Background())
	var te *provider.TransportError
	if len(got) != 1 || !errors.As(got[0].(provider.Error).Err, &te) || !te.Unreachable || !strings.Contains(te.Error(), "connection refused (scripted)") {
		t.Errorf("refuse: %#v", got)
	}
	got = collect(p, context.Background())
	var se *provider.StreamError
	if len(got) != 2 || got[0] != (provider.TextDelta{Text: "a"}) || !errors.As(got[1].(provider.Error).Err, &se) ||
		*se != (provider.StreamError{Type: "overloaded_error", Message: "Overloaded"}) {
		t.Errorf("stream_error: %#v", got)
	}
	// A reset plays the reply up to its completion signal, then fails as
	// an incomplete stream.
	got = collect(p, context.Background())
	if len(got) != 3 || got[0] != (provider.TextDelta{Text: "partial"}) || !errors.Is(got[2].(provider.Error).Err, provider.ErrIncomplete) ||
		!strings.Contains(got[2].(provider.Error).Err.Error(), "connection reset (scripted)") {
		t.Errorf("reset_after_bytes: %#v", got)
	}
	done := make(chan []provider.Part)
	go func() { done <- collect(p, context.Background()) }()
	wait, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if err := fake.BlockUntil(wait, 1); err != nil {
		t.Fatal(err)
	}
	fake.Advance(time.Second)
	got = <-done
	if len(got) != 3 || got[1] != (provider.TextDelta{Text: "b"}) || !errors.Is(got[2].(provider.Error).Err, provider.ErrIncomplete) {
		t.Errorf("reset without a finish: %#v", got)
	}
	if got = collect(p, context.Background()); len(got) != 2 || got[1] != (provider.Finish{Reason: "stop"}) {
		t.Errorf("headers on a plain reply: %#v", got)
	}
}

func TestStepsMarkImpliedFinishes(t *testing.T) {
	sc, err := Parse([]byte(`
replies:
  - text: a
  - tool_calls: [{name: t}]
  - {text: a, finish: stop}
  - chunks: [{finish: stop}, {died: x}]
  - {status: 500}
`))
	if err != nil {
		t.Fatal(err)
	}
	last := func(i int) Step {
		s := sc.Replies[i].Steps(i)
		return s[len(s)-1]
	}
	if s := last(0); !s.Implied || s.Part != (provider.Finish{Reason: "stop"}) {
		t.Errorf("shorthand text: %#v", s)
	}
	if s := last(1); !s.Implied || s.Part != (provider.Finish{Reason: "tool_calls"}) {
		t.Errorf("shorthand tool call: %#v", s)
	}
	if s := last(2); s.Implied {
		t.Errorf("named finish: %#v", s)
	}
	if s := sc.Replies[3].Steps(3); s[0].Implied || !s[1].Died {
		t.Errorf("chunks: %#v", s)
	}
	if s := sc.Replies[4].Steps(4); len(s) != 0 {
		t.Errorf("status reply steps: %#v", s)
	}
}

// The example in docs/scripts.md is a valid scenario.
func TestDocsExampleParses(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "scripts.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```yaml\n")
	example, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("no yaml example in docs/scripts.md")
	}
	sc, err := Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Replies) < 10 {
		t.Errorf("%d replies", len(sc.Replies))
	}
}

// TestResetChunk: a reset chunk ends the reply, in process, with an Error
// wrapping provider.ErrIncomplete that names a reset (what a vendor client
// reports for a connection reset mid-body); the chunks after it never
// play, and it takes no other key.
func TestResetChunk(t *testing.T) {
	sc, err := Parse([]byte("replies:\n  - chunks: [{text: a}, {reset: true}, {text: b}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := collect(New(sc, nil), context.Background())
	if len(got) != 2 || got[0] != (provider.TextDelta{Text: "a"}) {
		t.Fatalf("parts %#v", got)
	}
	if e, ok := got[1].(provider.Error); !ok || !errors.Is(e.Err, provider.ErrIncomplete) || !strings.Contains(e.Err.Error(), "reset") {
		t.Errorf("the reset chunk: %#v", got[1])
	}
	if _, err := Parse([]byte("replies:\n  - chunks: [{reset: true, text: a}]\n")); err == nil || !strings.Contains(err.Error(), "reset") {
		t.Errorf("a reset chunk with another key: %v", err)
	}
}

// TestTextChunksPlayTheirText: a text chunk plays its text, as parsed, or
// as changed after parsing (the part made at parse time is not replayed
// for a chunk whose text changed since), or as built without Parse.
func TestTextChunksPlayTheirText(t *testing.T) {
	parsed := func(t *testing.T) *Scenario {
		sc, err := Parse([]byte("replies:\n  - chunks: [{text: one}, {text: two}, {finish: stop}]\n"))
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	three, four := "three", "four"
	tests := []struct {
		name string
		sc   func(t *testing.T) *Scenario
		want []string
	}{
		{"as parsed", parsed, []string{"one", "two"}},
		{"changed after parsing", func(t *testing.T) *Scenario {
			sc := parsed(t)
			sc.Replies[0].Chunks[0].Text = &three
			*sc.Replies[0].Chunks[1].Text = "four"
			return sc
		}, []string{"three", "four"}},
		{"built without Parse", func(*testing.T) *Scenario {
			return &Scenario{Replies: []Reply{{Chunks: []Chunk{{Text: &three}, {Text: &four}}}}}
		}, []string{"three", "four"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range collect(New(tt.sc(t), nil), context.Background()) {
				if d, ok := p.(provider.TextDelta); ok {
					got = append(got, d.Text)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("played %q, want %q", got, tt.want)
			}
		})
	}
}
