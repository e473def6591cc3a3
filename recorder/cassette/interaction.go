package cassette

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// What an interaction means, read from its raw fields: the recorder,
// replay and the cassette tools read an interaction only through these.

// Responded reports whether the request got a response (Response.Code is
// not 0). One that did not ended with its Failure instead.
func (it *Interaction) Responded() bool { return it.Response.Code != 0 }

// Start is when the request went out, as an offset from the start of the
// recording; 0 for an interaction without the openmax member (stock go-vcr).
func (it *Interaction) Start() time.Duration {
	if it.Stream == nil {
		return 0
	}
	return it.Stream.Start
}

// Failure is how the exchange ended when it did not end cleanly: for a
// response, the error that ended its body after its chunks; for a request
// that got no response (not Responded), the error it got instead. Nil for
// a clean end, and for an interaction without the openmax member. The
// error is the interaction's own.
func (it *Interaction) Failure() *Error {
	if it.Stream == nil {
		return nil
	}
	return it.Stream.Error
}

// ChunkDetail reports whether the body's chunks were recorded. Without
// them (stock go-vcr, or an empty body) Chunks makes the body one chunk.
func (it *Interaction) ChunkDetail() bool {
	return it.Stream != nil && len(it.Stream.Chunks) > 0
}

// Chunks is the body as it arrived, each chunk with its arrival offset
// from when the request went out: the recorded chunks (empty ones
// included) or, recorded without chunk detail, the whole body as one
// chunk, arriving after Response.Duration for an interaction without the
// openmax member (stock go-vcr) and at 0 otherwise. Nil for an empty body.
// The slice is the interaction's own: a caller that changes it copies it
// first.
func (it *Interaction) Chunks() []Chunk {
	if it.ChunkDetail() {
		return it.Stream.Chunks
	}
	if it.Response.Body == "" {
		return nil
	}
	at := it.Response.Duration
	if it.Stream != nil {
		at = 0
	}
	return []Chunk{{At: at, Data: it.Response.Body}}
}

// Body is the body as its chunks give it; the same as Response.Body in a
// cassette Parse accepted.
func (it *Interaction) Body() string {
	chunks := it.Chunks()
	if len(chunks) == 1 {
		return chunks[0].Data
	}
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString(c.Data)
	}
	return b.String()
}

// End is when the body ended as recorded, from when the request went out:
// at its Failure, else at its last chunk; 0 for an empty body that ended
// cleanly.
func (it *Interaction) End() time.Duration {
	if e := it.Failure(); e != nil {
		return e.At
	}
	if chunks := it.Chunks(); len(chunks) > 0 {
		return chunks[len(chunks)-1].At
	}
	return 0
}

// StatusLine is the status line text of the recorded response, its code
// first: the recorded Response.Status when it starts with the code, the
// code and the recorded text otherwise, and the code with net/http's text
// for it when none was recorded ("200 OK"; just "529" for a code net/http
// has no text for).
func (it *Interaction) StatusLine() string {
	code := it.Response.Code
	recorded := strings.TrimSpace(it.Response.Status)
	prefix := strconv.Itoa(code)
	switch {
	case strings.HasPrefix(recorded, prefix+" ") || recorded == prefix:
		return recorded
	case recorded != "":
		return prefix + " " + recorded
	}
	return strings.TrimSpace(prefix + " " + http.StatusText(code))
}

// Clone is a deep copy of the interaction: changing the copy (headers,
// form, chunks, failure) leaves the original as it was.
func (it *Interaction) Clone() *Interaction {
	if it == nil {
		return nil
	}
	c := *it
	c.Request.Headers = it.Request.Headers.Clone()
	c.Request.Form = cloneValues(it.Request.Form)
	c.Response.Headers = it.Response.Headers.Clone()
	if it.Stream != nil {
		s := *it.Stream
		s.Chunks = slices.Clone(it.Stream.Chunks)
		if it.Stream.Error != nil {
			e := *it.Stream.Error
			s.Error = &e
		}
		c.Stream = &s
	}
	return &c
}

func cloneValues(v url.Values) url.Values {
	if v == nil {
		return nil
	}
	return url.Values(http.Header(v).Clone())
}
