package edit

import (
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
)

// Inspection is what Show reads in one interaction, as values, for
// renderings other than its text (openmax report draws them on a
// timeline). Everything in it comes from the interaction's wire, as Show
// reads it: no second reading of the stream.
type Inspection struct {
	// Target is the request's path and query, secret parameters scrubbed.
	Target string
	// Wire is the registered name of the interaction's wire; "" with
	// WireError set when no wire claims it.
	Wire      string
	WireError error
	// Call is the request as the wire reads it (model, tools, the last
	// user text, a summary), nil when it could not be read; Request is
	// Show's one-line summary of it ("512 B, model gpt-4o, stream, ...").
	Call    *codec.Call
	Request string
	// Status is the status line ("429 Too Many Requests"), "" when the
	// request got no response.
	Status string
	// Headers are the response headers that steer a client, in Show's
	// order, a secret one scrubbed: name and value.
	Headers [][2]string
	// Reading is what the body says (never nil; empty for an unknown
	// wire).
	Reading *codec.Reading
	// Chunks is the body as it arrived (cassette.Interaction.Chunks), and
	// Previews one line on each chunk: what the events that end in it say,
	// or its first bytes. Notes are those events' notes, chunk by chunk
	// (nil for a body not read as a stream).
	Chunks   []cassette.Chunk
	Previews []string
	Notes    [][]codec.Note
	// Usage is the reply's usage as Show says it ("12 in, 3 out, 15
	// total"), "" when it states none.
	Usage string
	// End is how the body ended, as Show's "end:" line says it ("clean",
	// "reset at +1.2s: ...").
	End string
}

// Inspect reads one interaction as Show does.
func Inspect(it *cassette.Interaction) Inspection {
	in := Inspection{Target: urlPath(recorder.ScrubURL(it.Request.URL))}
	w, werr := wireOf(it)
	in.WireError = werr
	if w != nil {
		in.Wire = w.Info().Name
		if body := it.Request.Body; body != "" {
			if c, err := w.ReadRequest(recordedRequest(it), []byte(body)); err == nil {
				in.Call = c
			}
		}
	}
	in.Request = requestSummary(w, it)
	in.Reading = &codec.Reading{}
	if !it.Responded() {
		if e := it.Failure(); e != nil {
			in.End = "no response: " + describeError(e)
		} else {
			in.End = "no response, and no recorded error"
		}
		return in
	}
	in.Status = statusLine(it)
	h := it.Response.Headers
	for _, k := range shownHeaders(h) {
		for _, v := range h[k] {
			if recorder.SecretHeader(k) {
				v = recorder.Scrubbed
			}
			in.Headers = append(in.Headers, [2]string{k, oneLine(v, 0)})
		}
	}
	in.Chunks = it.Chunks()
	if w != nil {
		ct, _ := header(h, "Content-Type")
		in.Reading = w.Parse(ct, []byte(it.Body()))
	}
	if u := in.Reading.Usage; u != nil {
		in.Usage = describeUsage(u)
	}
	var rest []int
	if in.Reading.Stream {
		in.Notes, rest = chunkNotes(in.Reading.Events, in.Chunks)
	}
	in.Previews = make([]string, len(in.Chunks))
	for j, c := range in.Chunks {
		in.Previews[j] = chunkPreview(in.Notes, rest, j, c.Data)
	}
	in.End = describeEnd(it, in.Reading)
	return in
}

// describeEnd is how a responded interaction's body ended, as Show's
// "end:" line says it.
func describeEnd(it *cassette.Interaction, r *codec.Reading) string {
	switch e := it.Failure(); {
	case e != nil && e.Kind == cassette.KindCancel && r.Stream && r.Signal != "":
		// The response was whole: a client that has its completion signal
		// hangs up (codex does), which the recorder sees as a cancel.
		return "clean (the client closed the stream after " + r.Signal + ")"
	case e != nil:
		return describeError(e)
	}
	return "clean"
}
