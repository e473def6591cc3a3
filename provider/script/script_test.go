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
		"replies: 3\n": "cannot unmarshal",
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
	cached := 2
	want := [][]provider.Part{
		{provider.ThinkingDelta{Text: "hmm"}, provider.TextDelta{Text: "hi"},
			provider.ToolCallPart{Call: provider.ToolCall{ID: "call_1_1", Name: "t", Args: []byte(`{"a":[1,"x"]}`)}},
			provider.ToolCallPart{Call: provider.ToolCall{ID: "c9", Name: "u", Args: []byte(`{"bad`)}},
			provider.Usage{PromptTokens: 3, CompletionTokens: 1, CachedTokens: &cached},
			provider.Finish{Reason: "tool_calls"}},
		{provider.TextDelta{Text: "plain"}, provider.Finish{Reason: "stop"}},
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
	if e := got[0].(provider.Error); errors.Is(e.Err, provider.ErrIncomplete) || e.Err.Error() != "boom" {
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
