package report

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/edit"
)

// StallMS is the shortest wait between two chunks a timeline calls a
// stall.
const StallMS = 1000

// maxBody caps the request body a page shows.
const maxBody = 64 << 10

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// NewInteraction reads one recorded interaction into its timeline.
func NewInteraction(i int, it *cassette.Interaction) *Interaction {
	out := &Interaction{Index: i, Marks: []Mark{}, Stride: 1}
	if it == nil {
		out.End = "empty"
		return out
	}
	in := edit.Inspect(it)
	out.StartMS = ms(it.Start())
	out.Method = it.Request.Method
	out.Path = in.Target
	out.Wire = in.Wire
	out.Request = in.Request
	if c := in.Call; c != nil {
		out.Model = c.Model
		for _, t := range c.Tools {
			out.Tools = append(out.Tools, t.Name)
		}
	}
	out.Body = showBody(it.Request.Body)
	out.Status, out.Code = in.Status, it.Response.Code
	for _, h := range in.Headers {
		out.Headers = append(out.Headers, Header{Name: h[0], Value: h[1]})
	}
	r := in.Reading
	out.Text, out.Thinking, out.Finish, out.Usage, out.Errors, out.Signal = r.Text, r.Thinking, r.Finish, in.Usage, r.Errors, r.Signal
	for _, t := range r.Tools {
		out.ToolCalls = append(out.ToolCalls, ToolCall{Name: t.Name, ID: t.ID, Args: t.Args})
	}
	out.End = in.End
	if e := it.Failure(); e != nil && !strings.HasPrefix(in.End, "clean") {
		out.Failure = &Failure{Kind: e.Kind, Message: codec.OneLine(e.Message, 0), AtMS: ms(e.At)}
	}
	out.Truncated = r.Stream && r.Signal == "" && out.Failure == nil
	out.Chunks = len(in.Chunks)
	marks := make([]Mark, len(in.Chunks))
	prev := 0.0
	for j, c := range in.Chunks {
		at := ms(c.At)
		out.Bytes += len(c.Data)
		var notes []codec.Note
		if j < len(in.Notes) {
			notes = in.Notes[j]
		}
		marks[j] = Mark{Chunk: j, Count: 1, AtMS: at, Bytes: len(c.Data), Kind: kindOf(notes, r, c.Data), Note: in.Previews[j]}
		if g := (Gap{FromMS: prev, ToMS: at, Chunk: j}); out.Gap == nil || g.MS() > out.Gap.MS() {
			out.Gap = &g
		}
		if at-prev >= StallMS {
			out.Stalls = append(out.Stalls, Gap{FromMS: prev, ToMS: at, Chunk: j})
		}
		if out.TTFTMS == nil && content(marks[j].Kind) {
			t := at
			out.TTFTMS = &t
		}
		prev = at
	}
	out.Marks = downsample(marks, MaxMarks)
	if len(out.Marks) < len(marks) {
		out.Downsampled, out.Stride = true, out.Marks[0].Count
	}
	out.EndMS = ms(it.End())
	out.ScaleMS = out.EndMS
	if it.Responded() {
		// A date without the response's own Date is read against the
		// zero time: far too long, and not drawn.
		if wait, ok := provider.ParseRetryAfter(http.Header(it.Response.Headers), time.Time{}); ok && wait <= 24*time.Hour {
			w := ms(wait)
			out.RetryAfterMS = &w
			out.ScaleMS = max(out.ScaleMS, out.EndMS+w)
		}
	}
	if out.ScaleMS <= 0 {
		out.ScaleMS = 1 // an instant exchange still has a width
	}
	return out
}

// content reports whether a mark's kind is reply content.
func content(kind string) bool { return kind == "text" || kind == "thinking" || kind == "tool" }

// kindOf is what a chunk carries, from the notes of the events that end in
// it; a body not read as a stream is classed by what the whole reply says.
func kindOf(notes []codec.Note, r *codec.Reading, data string) string {
	if !r.Stream {
		switch {
		case len(r.Errors) > 0:
			return "error"
		case len(r.Tools) > 0:
			return "tool"
		case r.Text != "":
			return "text"
		case r.Thinking != "":
			return "thinking"
		}
		return "other"
	}
	has := map[string]bool{}
	for _, n := range notes {
		switch k := n.Kind; {
		case strings.HasPrefix(k, "error"):
			has["error"] = true
		case k == codec.NoteArgs || strings.HasPrefix(k, "tool"):
			has["tool"] = true
		case k == codec.NoteThinking || k == codec.NoteSummary || strings.HasPrefix(k, "thinking") || strings.HasPrefix(k, "reasoning"):
			has["thinking"] = true
		case k == codec.NoteText || k == codec.NoteRefusal:
			has["text"] = true
		}
	}
	for _, k := range []string{"error", "tool", "thinking", "text"} {
		if has[k] {
			return k
		}
	}
	return "other"
}

// downsample merges runs of consecutive marks so that at most limit
// remain: each stands for stride chunks, at the first one's arrival, its
// bytes summed and its kind the run's most telling.
func downsample(marks []Mark, limit int) []Mark {
	if len(marks) <= limit {
		return marks
	}
	stride := (len(marks) + limit - 1) / limit
	out := make([]Mark, 0, limit)
	rank := map[string]int{"other": 0, "text": 1, "thinking": 2, "tool": 3, "error": 4}
	for i := 0; i < len(marks); i += stride {
		m := marks[i]
		end := min(i+stride, len(marks))
		m.Count = end - i
		for _, n := range marks[i+1 : end] {
			m.Bytes += n.Bytes
			if rank[n.Kind] > rank[m.Kind] {
				m.Kind = n.Kind
			}
		}
		if m.Count > 1 {
			m.Note = codec.Plural(m.Count, "chunk") + " from " + m.Note
		}
		out = append(out, m)
	}
	return out
}

// showBody is a request body for a page: indented when it is JSON, cut at
// maxBody.
func showBody(body string) string {
	if body == "" {
		return ""
	}
	var b bytes.Buffer
	if json.Indent(&b, []byte(body), "", "  ") == nil {
		body = b.String()
	}
	if len(body) > maxBody {
		body = strings.ToValidUTF8(body[:maxBody], "") + "\n… (cut at 64 KiB)"
	}
	return body
}
