package sweep

import (
	"net/http"
	"slices"
	"testing"

	"github.com/openmax/openmax/recorder/cassette"
)

// sse is an event-stream interaction whose body arrives in the given
// chunks.
func sse(chunks ...string) *cassette.Interaction {
	it := &cassette.Interaction{Stream: &cassette.Stream{}}
	it.Request.Method, it.Request.URL = "POST", "http://127.0.0.1/v1/chat/completions"
	it.Request.Body = `{"model":"m","stream":true,"messages":[]}`
	it.Response.Code, it.Response.Status = 200, "200 OK"
	it.Response.Headers = http.Header{"Content-Type": {"text/event-stream"}}
	for _, c := range chunks {
		it.Stream.Chunks = append(it.Stream.Chunks, cassette.Chunk{Data: c})
		it.Response.Body += c
	}
	return it
}

// plain is a JSON interaction with a body of one piece (no chunks).
func plain(body string) *cassette.Interaction {
	it := &cassette.Interaction{}
	it.Request.Method, it.Request.URL = "POST", "http://127.0.0.1/v1/chat/completions"
	it.Request.Body = `{}`
	it.Response.Code, it.Response.Status = 200, "200 OK"
	it.Response.Headers = http.Header{"Content-Type": {"application/json"}}
	it.Response.Body = body
	return it
}

// refused is an interaction that got no response.
func refused() *cassette.Interaction {
	it := &cassette.Interaction{Stream: &cassette.Stream{Error: &cassette.Error{Kind: cassette.KindRefused, Message: "refused"}}}
	it.Request.Method, it.Request.URL = "POST", "http://127.0.0.1/v1/chat/completions"
	return it
}

func testFile(its ...*cassette.Interaction) *cassette.File {
	f := cassette.New()
	f.Interactions = its
	f.Session = &cassette.Session{SessionID: "s1", Commands: []cassette.Command{{AfterLines: 1, Line: `{"cmd":"user","text":"hi"}`}}}
	return f
}

func names(vs []Variant) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Name())
	}
	return out
}

func TestEnumerate(t *testing.T) {
	// Interaction 0: two chunks, the first holding two events.
	two := sse("data: {\"a\":1}\n\ndata: {\"b\":2}\n\n", "data: [DONE]\n\n")
	tests := []struct {
		name string
		f    *cassette.File
		kind string
		want []string
	}{
		{"429 before every interaction", testFile(two, plain(`{}`)), "429", []string{"429@0", "429@1"}},
		{"503 before a refused one too", testFile(refused()), "503", []string{"503@0"}},
		{"truncate at every chunk", testFile(two, plain(`{}`)), "truncate",
			[]string{"truncate@0:chunk=0", "truncate@0:chunk=1", "truncate@1:chunk=0"}},
		{"reset at every chunk and event boundary", testFile(two), "reset",
			[]string{"reset@0:byte=0", "reset@0:byte=15", "reset@0:byte=30", "reset@0:byte=44"}},
		{"stream-error only on event streams", testFile(two, plain(`{}`)), "stream-error",
			[]string{"stream-error@0:chunk=0", "stream-error@0:chunk=1"}},
		{"no cut of an interaction without a response", testFile(refused()), "truncate", nil},
		{"no body, no reset", testFile(plain("")), "reset", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, v := range Enumerate(tt.f, Kinds) {
				if v.Kind == tt.kind {
					got = append(got, v.Name())
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("%s variants = %q, want %q", tt.kind, got, tt.want)
			}
		})
	}
}

func TestEnumerateCoversEveryKind(t *testing.T) {
	vs := Enumerate(testFile(sse("data: {}\n\n", "data: [DONE]\n\n"), sse("data: {}\n\n")), Kinds)
	seen := map[string]bool{}
	for _, v := range vs {
		seen[v.Kind] = true
	}
	for _, k := range Kinds {
		if !seen[k.Name] {
			t.Errorf("no variant of kind %s", k.Name)
		}
	}
	// Kind-major, then interaction, then place: the order rows print in.
	if !slices.Equal(names(vs[:2]), []string{"429@0", "429@1"}) {
		t.Errorf("first variants %q, want 429@0 then 429@1", names(vs[:2]))
	}
}

func TestSelect(t *testing.T) {
	var all []Variant
	for _, k := range []string{"a", "b", "c"} {
		n := map[string]int{"a": 10, "b": 2, "c": 7}[k]
		for range n {
			all = append(all, Variant{Kind: k})
		}
	}
	tests := []struct {
		max  int
		want map[string]int // variants kept per kind
	}{
		{0, map[string]int{"a": 10, "b": 2, "c": 7}},
		{19, map[string]int{"a": 10, "b": 2, "c": 7}},
		{100, map[string]int{"a": 10, "b": 2, "c": 7}},
		{3, map[string]int{"a": 1, "b": 1, "c": 1}},
		{2, map[string]int{"a": 1, "b": 1}},
		{8, map[string]int{"a": 3, "b": 2, "c": 3}},
		{12, map[string]int{"a": 5, "b": 2, "c": 5}},
		{18, map[string]int{"a": 9, "b": 2, "c": 7}},
	}
	for _, tt := range tests {
		got := Select(all, tt.max)
		count := map[string]int{}
		for _, v := range got {
			count[v.Kind]++
		}
		for _, k := range []string{"a", "b", "c"} {
			if count[k] != tt.want[k] {
				t.Errorf("Select(max=%d): %d of kind %s, want %d (all: %v)", tt.max, count[k], k, tt.want[k], count)
			}
		}
		if !slices.EqualFunc(got, Select(all, tt.max), func(a, b Variant) bool { return a == b }) {
			t.Errorf("Select(max=%d) is not deterministic", tt.max)
		}
	}
}

func TestSpread(t *testing.T) {
	tests := []struct {
		c, m int
		want []int
	}{
		{10, 0, nil},
		{10, 1, []int{5}},
		{10, 2, []int{0, 9}},
		{10, 3, []int{0, 4, 9}},
		{10, 4, []int{0, 3, 6, 9}},
		{5, 5, []int{0, 1, 2, 3, 4}},
		{3, 7, []int{0, 1, 2}},
	}
	for _, tt := range tests {
		if got := spread(tt.c, tt.m); !slices.Equal(got, tt.want) {
			t.Errorf("spread(%d, %d) = %v, want %v", tt.c, tt.m, got, tt.want)
		}
	}
}

// Select keeps the enumeration order, so a bounded table reads like the
// full one with rows left out.
func TestSelectKeepsOrder(t *testing.T) {
	f := testFile(sse("data: 1\n\n", "data: 2\n\n", "data: 3\n\n"), sse("data: 4\n\n", "data: [DONE]\n\n"))
	all := Enumerate(f, Kinds)
	got := Select(all, 15)
	if len(got) != 15 {
		t.Fatalf("%d variants, want 15", len(got))
	}
	pos := map[string]int{}
	for i, v := range all {
		pos[v.Name()] = i
	}
	for i := 1; i < len(got); i++ {
		if pos[got[i].Name()] <= pos[got[i-1].Name()] {
			t.Errorf("%s comes after %s", got[i].Name(), got[i-1].Name())
		}
	}
}
