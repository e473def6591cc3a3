package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/replay"
	"github.com/openmax/openmax/replay/report"
)

// sse is a Chat Completions stream of n text deltas, each its own event,
// and the [DONE] line when done.
func sse(n int, done bool) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w%d \"}}]}\n\n", i))
	}
	if done {
		out = append(out, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n", "data: [DONE]\n\n")
	}
	return out
}

// streamed is an interaction whose body arrives as data, chunk j at ats[j].
func streamed(data []string, ats []time.Duration, status int, header http.Header, fail *cassette.Error) *cassette.Interaction {
	if header == nil {
		header = http.Header{}
	}
	if header.Get("Content-Type") == "" {
		header.Set("Content-Type", "text/event-stream")
	}
	it := &cassette.Interaction{
		Request:  vcr.Request{Method: "POST", URL: "https://api.openai.com/v1/chat/completions", Body: `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		Response: vcr.Response{Code: status, Headers: header, Body: strings.Join(data, "")},
		Stream:   &cassette.Stream{Error: fail},
	}
	for j, d := range data {
		it.Stream.Chunks = append(it.Stream.Chunks, cassette.Chunk{At: ats[j], Data: d})
	}
	return it
}

func msp(v float64) *float64 { return &v }

func TestNewInteraction(t *testing.T) {
	ms := time.Millisecond
	for _, tt := range []struct {
		name string
		it   *cassette.Interaction
		want report.Interaction // the fields compared
		gap  *report.Gap
	}{
		{
			name: "a stall and the completion signal",
			it:   streamed(sse(2, true), []time.Duration{120 * ms, 130 * ms, 1800 * ms, 1810 * ms}, 200, nil, nil),
			want: report.Interaction{Chunks: 4, TTFTMS: msp(120), EndMS: 1810, ScaleMS: 1810, Finish: "stop", Signal: "[DONE]", End: "clean",
				Stalls: []report.Gap{{FromMS: 130, ToMS: 1800, Chunk: 2}}},
			gap: &report.Gap{FromMS: 130, ToMS: 1800, Chunk: 2},
		},
		{
			name: "cut without a signal: truncated",
			it:   streamed(sse(2, false), []time.Duration{50 * ms, 90 * ms}, 200, nil, nil),
			want: report.Interaction{Chunks: 2, TTFTMS: msp(50), EndMS: 90, ScaleMS: 90, Truncated: true, End: "clean"},
			gap:  &report.Gap{FromMS: 0, ToMS: 50, Chunk: 0},
		},
		{
			name: "reset after text",
			it: streamed(sse(1, false), []time.Duration{40 * ms}, 200, nil,
				&cassette.Error{Kind: cassette.KindReset, Message: "connection reset by peer", At: 300 * ms}),
			want: report.Interaction{Chunks: 1, TTFTMS: msp(40), EndMS: 300, ScaleMS: 300, End: "reset at +300ms: connection reset by peer",
				Failure: &report.Failure{Kind: cassette.KindReset, Message: "connection reset by peer", AtMS: 300}},
			gap: &report.Gap{FromMS: 0, ToMS: 40, Chunk: 0},
		},
		{
			name: "429 asking for 2.5 s",
			it: streamed([]string{`{"error":{"message":"slow down","type":"rate_limit_exceeded"}}`}, []time.Duration{10 * ms}, 429,
				http.Header{"Content-Type": {"application/json"}, "Retry-After-Ms": {"2500"}}, nil),
			want: report.Interaction{Chunks: 1, EndMS: 10, ScaleMS: 2510, RetryAfterMS: msp(2500), End: "clean",
				Errors: []string{"rate_limit_exceeded: slow down"}},
			gap: &report.Gap{FromMS: 0, ToMS: 10, Chunk: 0},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := report.NewInteraction(0, tt.it)
			type shown struct {
				Chunks                  int
				TTFT, RetryAfter        string
				End, Scale              float64
				Truncated               bool
				Finish, Signal, EndLine string
				Failure                 *report.Failure
				Errors                  []string
				Stalls                  []report.Gap
				Gap                     *report.Gap
			}
			str := func(p *float64) string {
				if p == nil {
					return "none"
				}
				return fmt.Sprint(*p)
			}
			g := shown{got.Chunks, str(got.TTFTMS), str(got.RetryAfterMS), got.EndMS, got.ScaleMS, got.Truncated, got.Finish, got.Signal, got.End, got.Failure, got.Errors, got.Stalls, got.Gap}
			w := tt.want
			want := shown{w.Chunks, str(w.TTFTMS), str(w.RetryAfterMS), w.EndMS, w.ScaleMS, w.Truncated, w.Finish, w.Signal, w.End, w.Failure, w.Errors, w.Stalls, tt.gap}
			gj, _ := json.Marshal(g)
			wj, _ := json.Marshal(want)
			if !bytes.Equal(gj, wj) {
				t.Errorf("got  %s\nwant %s", gj, wj)
			}
			if len(got.Marks) != got.Chunks {
				t.Errorf("%d marks for %d chunks", len(got.Marks), got.Chunks)
			}
		})
	}
}

// TestDownsample: above MaxMarks chunks an interaction draws at most
// MaxMarks marks, which together stand for every chunk, and says so.
func TestDownsample(t *testing.T) {
	for _, n := range []int{report.MaxMarks - 1, report.MaxMarks, report.MaxMarks + 1, 3*report.MaxMarks + 7} {
		data := sse(n, false)
		ats := make([]time.Duration, n)
		for i := range ats {
			ats[i] = time.Duration(i) * time.Millisecond
		}
		got := report.NewInteraction(0, streamed(data, ats, 200, nil, nil))
		sum := 0
		for _, m := range got.Marks {
			sum += m.Count
		}
		if sum != n || len(got.Marks) > report.MaxMarks || got.Downsampled != (n > report.MaxMarks) {
			t.Errorf("%d chunks: %d marks standing for %d chunks, downsampled %v", n, len(got.Marks), sum, got.Downsampled)
		}
	}
}

// sitePage writes the report of one cassette of n chunks and returns the
// size of its page.
func sitePage(t testing.TB, n int) int {
	src, err := cassette.Load(filepath.Join(library, "openai_plain.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	it := src.Interactions[0]
	data := sse(n, true)
	ats := make([]time.Duration, len(data))
	for i := range ats {
		ats[i] = time.Duration(i) * 3 * time.Millisecond
	}
	body := streamed(data, ats, 200, nil, nil)
	it.Response, it.Stream.Chunks = body.Response, body.Stream.Chunks
	dir := t.TempDir()
	path := filepath.Join(dir, "long.yaml")
	if err := src.Save(path); err != nil {
		t.Fatal(err)
	}
	site, err := report.Build(context.Background(), path, report.Options{Serving: replay.Options{Ignore: []string{"tools"}}})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "site")
	if err := site.Write(out); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(out, "cassettes/long.html"))
	if err != nil {
		t.Fatal(err)
	}
	return int(fi.Size())
}

// TestSizeLinear: a page grows linearly with the chunks, and stops
// growing once they are downsampled.
func TestSizeLinear(t *testing.T) {
	small, large := sitePage(t, 200), sitePage(t, 800)
	defer func() { t.Logf("page of 200 chunks: %d B, of 800: %d B", small, large) }()
	per := float64(large-small) / 600
	huge := sitePage(t, 4*report.MaxMarks)
	t.Logf("page of %d chunks (downsampled): %d B", 4*report.MaxMarks, huge)
	if float64(huge) > float64(large)+per*float64(report.MaxMarks)*1.3 {
		t.Errorf("%d chunks: %d B; 800 chunks: %d B (%.0f B a chunk): past MaxMarks the page should stop growing", 4*report.MaxMarks, huge, large, per)
	}
	if ratio := float64(large) / float64(small); ratio > 4.4 {
		t.Errorf("page of 200 chunks %d B, of 800 chunks %d B: grows faster than the chunks", small, large)
	}
}

// TestTurns: the story's interactions sit in the turns their requests
// were made in, and the JSON says what the page says.
func TestTurns(t *testing.T) {
	site, err := report.Build(context.Background(), filepath.Join(library, "story.yaml"), report.Options{Serving: replay.Options{Ignore: []string{"tools"}}})
	if err != nil {
		t.Fatal(err)
	}
	c := site.Cassettes[0]
	var got []string
	for _, turn := range c.Turns {
		var ids []string
		for _, it := range turn.Interactions {
			ids = append(ids, fmt.Sprint(it.Index))
		}
		got = append(got, fmt.Sprintf("%d:[%s]", turn.Number, strings.Join(ids, " ")))
	}
	if want := "0:[] 1:[0 1] 2:[2]"; strings.Join(got, " ") != want {
		t.Errorf("turns %s, want %s", strings.Join(got, " "), want)
	}
	if len(c.Unused) != 0 || c.ReplayError != "" || len(c.Problems) != 0 {
		t.Errorf("unused %d, replay error %q, problems %q", len(c.Unused), c.ReplayError, c.Problems)
	}
	dir := t.TempDir()
	if err := site.Write(dir); err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(filepath.Join(dir, c.Page))
	var doc struct {
		Cassettes []struct {
			Turns []struct {
				Interactions []struct {
					Index        int      `json:"index"`
					Chunks       int      `json:"chunks"`
					RetryAfterMS *float64 `json:"retry_after_ms"`
				} `json:"interactions"`
			} `json:"turns"`
		} `json:"cassettes"`
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, turn := range doc.Cassettes[0].Turns {
		for _, it := range turn.Interactions {
			n++
			if !regexp.MustCompile(fmt.Sprintf(`data-interaction="%d" data-chunks="%d"`, it.Index, it.Chunks)).Match(page) {
				t.Errorf("interaction %d: the JSON says %d chunks, the page does not", it.Index, it.Chunks)
			}
			if it.RetryAfterMS != nil && !bytes.Contains(page, []byte(fmt.Sprintf(`data-ms="%v"`, *it.RetryAfterMS))) {
				t.Errorf("interaction %d: the JSON's Retry-After %v ms is not on the page", it.Index, *it.RetryAfterMS)
			}
		}
	}
	if n != 3 {
		t.Errorf("the JSON holds %d interactions, want 3", n)
	}
	for _, want := range []string{"Turn 1", "Turn 2", "What does record and replay give me?", "Retry-After 3s", "the stream ended without its completion signal"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("the story's page lacks %q", want)
		}
	}
}

// BenchmarkLibrary reports the whole library: every cassette replayed and
// its page written. The bound is 2 s an op.
func BenchmarkLibrary(b *testing.B) {
	for b.Loop() {
		site, err := report.Build(context.Background(), library, report.Options{Serving: replay.Options{Ignore: []string{"tools"}}})
		if err != nil {
			b.Fatal(err)
		}
		if err := site.Write(b.TempDir()); err != nil {
			b.Fatal(err)
		}
	}
}
