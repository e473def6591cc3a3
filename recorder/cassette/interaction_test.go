package cassette

import (
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"testing"
	"time"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"
)

// interactions are the shapes an interaction comes in, each with what its
// methods say of it.
var interactions = []struct {
	name       string
	it         Interaction
	responded  bool
	start      time.Duration
	failure    *Error
	detail     bool
	chunks     []Chunk
	body       string
	end        time.Duration
	statusLine string
}{
	{
		name:      "streamed",
		it:        Interaction{Response: vcr.Response{Code: 200, Status: "200 OK", Body: "ab", Duration: 3 * time.Second}, Stream: &Stream{Start: time.Second, Chunks: []Chunk{{At: time.Second, Data: "a"}, {At: 2 * time.Second, Data: "b"}}}},
		responded: true, start: time.Second, detail: true,
		chunks: []Chunk{{At: time.Second, Data: "a"}, {At: 2 * time.Second, Data: "b"}},
		body:   "ab", end: 2 * time.Second, statusLine: "200 OK",
	},
	{
		name:      "an empty chunk is kept",
		it:        Interaction{Response: vcr.Response{Code: 200, Body: "a"}, Stream: &Stream{Chunks: []Chunk{{At: time.Second, Data: "a"}, {At: 2 * time.Second}}}},
		responded: true, detail: true,
		chunks: []Chunk{{At: time.Second, Data: "a"}, {At: 2 * time.Second}},
		body:   "a", end: 2 * time.Second, statusLine: "200 OK",
	},
	{
		name:      "cut by a reset",
		it:        Interaction{Response: vcr.Response{Code: 200, Status: "OK", Body: "a"}, Stream: &Stream{Chunks: []Chunk{{At: time.Second, Data: "a"}}, Error: &Error{Kind: KindReset, Message: "m", At: 5 * time.Second}}},
		responded: true, failure: &Error{Kind: KindReset, Message: "m", At: 5 * time.Second}, detail: true,
		chunks: []Chunk{{At: time.Second, Data: "a"}},
		body:   "a", end: 5 * time.Second, statusLine: "200 OK",
	},
	{
		name:    "no response",
		it:      Interaction{Response: vcr.Response{Duration: time.Second}, Stream: &Stream{Start: 4 * time.Second, Error: &Error{Kind: KindRefused, At: time.Second}}},
		start:   4 * time.Second,
		failure: &Error{Kind: KindRefused, At: time.Second},
		end:     time.Second, statusLine: "0",
	},
	{
		name:      "stock go-vcr: the body arrives after the duration",
		it:        Interaction{Response: vcr.Response{Code: 201, Body: "ab", Duration: 3 * time.Second}},
		responded: true,
		chunks:    []Chunk{{At: 3 * time.Second, Data: "ab"}},
		body:      "ab", end: 3 * time.Second, statusLine: "201 Created",
	},
	{
		name:      "openmax member without chunks: the body arrives at once",
		it:        Interaction{Response: vcr.Response{Code: 529, Body: "ab", Duration: 3 * time.Second}, Stream: &Stream{Start: time.Second}},
		responded: true, start: time.Second,
		chunks: []Chunk{{Data: "ab"}},
		body:   "ab", statusLine: "529",
	},
	{
		name:      "an empty body",
		it:        Interaction{Response: vcr.Response{Code: 204, Status: " 204 No Content ", Duration: time.Second}},
		responded: true, statusLine: "204 No Content",
	},
}

func TestInteractionMethods(t *testing.T) {
	for _, tt := range interactions {
		t.Run(tt.name, func(t *testing.T) {
			it := &tt.it
			if got := it.Responded(); got != tt.responded {
				t.Errorf("Responded() = %v", got)
			}
			if got := it.Start(); got != tt.start {
				t.Errorf("Start() = %v, want %v", got, tt.start)
			}
			if got := it.Failure(); !reflect.DeepEqual(got, tt.failure) {
				t.Errorf("Failure() = %+v, want %+v", got, tt.failure)
			}
			if got := it.ChunkDetail(); got != tt.detail {
				t.Errorf("ChunkDetail() = %v", got)
			}
			if got := it.Chunks(); !reflect.DeepEqual(got, tt.chunks) {
				t.Errorf("Chunks() = %+v, want %+v", got, tt.chunks)
			}
			if got := it.Body(); got != tt.body {
				t.Errorf("Body() = %q, want %q", got, tt.body)
			}
			if got := it.End(); got != tt.end {
				t.Errorf("End() = %v, want %v", got, tt.end)
			}
			if got := it.StatusLine(); got != tt.statusLine {
				t.Errorf("StatusLine() = %q, want %q", got, tt.statusLine)
			}
		})
	}
}

func TestStatusLine(t *testing.T) {
	for _, tt := range []struct {
		code     int
		recorded string
		want     string
	}{
		{200, "200 OK", "200 OK"},
		{200, "OK", "200 OK"},
		{200, "", "200 OK"},
		{429, "429", "429"},
		{429, "  429 Too Many Requests ", "429 Too Many Requests"},
		{429, "4290 x", "429 4290 x"},
		{529, "", "529"},
		{529, "529 Overloaded", "529 Overloaded"},
	} {
		it := &Interaction{Response: vcr.Response{Code: tt.code, Status: tt.recorded}}
		if got := it.StatusLine(); got != tt.want {
			t.Errorf("%d %q: %q, want %q", tt.code, tt.recorded, got, tt.want)
		}
	}
}

// TestBodyAgreesWithParse: for a cassette Parse accepts, the chunks give
// the recorded body.
func TestBodyAgreesWithParse(t *testing.T) {
	f, err := Parse([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	it := f.Interactions[0]
	if it.Body() != it.Response.Body || len(it.Chunks()) != 2 {
		t.Errorf("Body() %q, Response.Body %q, chunks %+v", it.Body(), it.Response.Body, it.Chunks())
	}
}

func TestClone(t *testing.T) {
	if (*Interaction)(nil).Clone() != nil {
		t.Error("a nil interaction cloned to one")
	}
	orig := &Interaction{
		Request:  vcr.Request{Method: "POST", URL: "http://h/", Headers: http.Header{"A": {"1"}}, Form: url.Values{"f": {"x"}}},
		Response: vcr.Response{Code: 200, Headers: http.Header{"B": {"2"}}, Body: "ab"},
		Stream: &Stream{
			Chunks: []Chunk{{At: time.Second, Data: "a"}, {At: 2 * time.Second, Data: "b"}},
			Error:  &Error{Kind: KindEOF, At: 3 * time.Second},
		},
	}
	keep := &Interaction{
		Request:  vcr.Request{Method: "POST", URL: "http://h/", Headers: http.Header{"A": {"1"}}, Form: url.Values{"f": {"x"}}},
		Response: vcr.Response{Code: 200, Headers: http.Header{"B": {"2"}}, Body: "ab"},
		Stream: &Stream{
			Chunks: []Chunk{{At: time.Second, Data: "a"}, {At: 2 * time.Second, Data: "b"}},
			Error:  &Error{Kind: KindEOF, At: 3 * time.Second},
		},
	}
	c := orig.Clone()
	if !reflect.DeepEqual(c, orig) {
		t.Fatalf("clone %+v differs from %+v", c, orig)
	}
	c.Request.Headers["A"][0] = "changed"
	c.Request.Form["f"][0] = "changed"
	c.Response.Headers.Set("B", "changed")
	c.Stream.Chunks[0].Data = "changed"
	c.Stream.Error.Kind = KindReset
	c.Stream.Start = time.Hour
	if !reflect.DeepEqual(orig, keep) {
		t.Errorf("changing the clone changed the original: %+v", orig)
	}
}

func TestEnding(t *testing.T) {
	want := map[string]Ending{
		KindRefused: EndReset, KindDNS: EndReset, KindReset: EndReset,
		KindTimeout: EndSilent, KindCancel: EndSilent,
		KindEOF: EndClose, KindOther: EndClose, "": EndClose, "brand-new": EndClose,
	}
	for _, k := range append(Kinds(), "", "brand-new") {
		w, ok := want[k]
		if !ok {
			t.Errorf("kind %q: no ending expected", k)
			continue
		}
		if got := (&Error{Kind: k}).Ending(); got != w {
			t.Errorf("kind %q ends %v, want %v", k, got, w)
		}
	}
	if !slices.Contains(Kinds(), KindOther) {
		t.Error("no KindOther")
	}
}
