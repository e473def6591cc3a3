package edit

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/recorder/cassette"
)

// Op kinds.
const (
	KindRateLimit   = "429"          // insert a 429 before an interaction
	KindServerError = "5xx"          // insert a 500, 502, 503, 504 or 529 before an interaction
	KindTruncate    = "truncate"     // end a body cleanly after some chunks
	KindReset       = "reset"        // reset the connection after some bytes of a body
	KindStreamError = "stream_error" // replace a chunk with an in-stream error event
)

// serverErrors are the statuses KindServerError inserts.
var serverErrors = []int{500, 502, 503, 504, 529}

// Op is one fault to inject. Fields that do not apply to its kind must be
// zero.
type Op struct {
	// Kind is one of the Kind constants.
	Kind string
	// Before is, for 429 and 5xx, the interaction (0-based) the error
	// interaction is inserted before: it copies that interaction's
	// request, and the original then serves the client's retry.
	Before int
	// RetryAfter is, for 429 and 5xx, the Retry-After header value
	// (seconds or an HTTP-date), put in verbatim; empty for none.
	RetryAfter string
	// RetryAfterMs is, for 429 and 5xx, the Retry-After-Ms header value
	// (milliseconds, as OpenAI sends it), verbatim; empty for none.
	RetryAfterMs string
	// Status is, for 5xx, the status: 500, 502, 503, 504 or 529. For 429
	// it is 429 or 0.
	Status int
	// Interaction is, for truncate, reset and stream_error, the
	// interaction (0-based) whose body is cut.
	Interaction int
	// Chunk is, for truncate, how many chunks are kept (chunks [0,Chunk));
	// for stream_error, the chunk replaced by the error event. Unused when
	// ByEvent is set.
	Chunk int
	// ByEvent makes truncate and stream_error cut between events instead
	// of chunks: Event is how many whole events of the body are kept (as
	// provider/sse reads them), then the body ends cleanly (truncate) or
	// the error event follows (stream_error). A cut that does not depend on
	// how the recorded bytes happened to be chunked: a fast server's whole
	// stream is often one chunk.
	ByEvent bool
	Event   int
	// Byte is, for reset, how many bytes of the body are kept before the
	// reset.
	Byte int
	// Code is, for stream_error, the error's code (its type on Anthropic's
	// wire), such as server_error or rate_limit_exceeded; empty for the
	// wire's default: server_error on OpenAI's wires, overloaded_error on
	// Anthropic's.
	Code string
	// Recover is, for truncate, reset and stream_error, whether the fault
	// is served once: the cut interaction is inserted before the recorded
	// one, which then answers the client's next identical request (the
	// retry). Without it the cut replaces the recorded reply.
	Recover bool
}

// Inject returns a new cassette: a deep copy of f with op's fault in it.
// f is not modified. See the package documentation for what each kind
// does.
func Inject(f *cassette.File, op Op) (*cassette.File, error) {
	if f == nil {
		return nil, errors.New("edit: no cassette to inject into")
	}
	if op.Kind == KindRateLimit && op.Status == 0 {
		op.Status = http.StatusTooManyRequests
	}
	if err := op.check(); err != nil {
		return nil, err
	}
	out := Clone(f)
	var recorded *cassette.Interaction
	if op.Recover && op.Interaction >= 0 && op.Interaction < len(f.Interactions) {
		recorded = f.Interactions[op.Interaction].Clone()
	}
	var err error
	switch op.Kind {
	case KindRateLimit, KindServerError:
		err = insertError(out, op)
	case KindTruncate:
		err = truncate(out, op)
	case KindReset:
		err = reset(out, op)
	case KindStreamError:
		err = streamError(out, op)
	}
	if err != nil {
		return nil, fmt.Errorf("edit: %s: %w", op, err)
	}
	if recorded != nil {
		out.Interactions = slices.Insert(out.Interactions, op.Interaction+1, recorded)
	}
	return out, nil
}

// check validates op by itself, before it meets a cassette.
func (op Op) check() error {
	var unused []string
	zero := func(set bool, name string) {
		if set {
			unused = append(unused, name)
		}
	}
	switch op.Kind {
	case KindRateLimit, KindServerError:
		if op.Kind == KindRateLimit && op.Status != http.StatusTooManyRequests {
			return fmt.Errorf("edit: a 429 op has status 429, not %d", op.Status)
		}
		if op.Kind == KindServerError && !isServerError(op.Status) {
			if op.Status == 0 {
				return fmt.Errorf("edit: a 5xx op needs its status: one of %s", statusList())
			}
			return fmt.Errorf("edit: a 5xx op cannot insert status %d: use one of %s", op.Status, statusList())
		}
		if op.Before < 0 {
			return fmt.Errorf("edit: %s op: before %d is negative", op.Kind, op.Before)
		}
		for _, h := range []struct{ name, v string }{{"Retry-After", op.RetryAfter}, {"Retry-After-Ms", op.RetryAfterMs}} {
			if strings.ContainsFunc(h.v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				return fmt.Errorf("edit: %s op: the %s value %q holds a control character", op.Kind, h.name, h.v)
			}
		}
		zero(op.Interaction != 0, "Interaction")
		zero(op.Chunk != 0, "Chunk")
		zero(op.Byte != 0, "Byte")
		zero(op.Code != "", "Code")
		zero(op.Recover, "Recover") // an inserted error is always served once
	case KindTruncate, KindReset, KindStreamError:
		if op.Interaction < 0 {
			return fmt.Errorf("edit: %s op: interaction %d is negative", op.Kind, op.Interaction)
		}
		if op.Chunk < 0 {
			return fmt.Errorf("edit: %s op: chunk %d is negative", op.Kind, op.Chunk)
		}
		if op.Byte < 0 {
			return fmt.Errorf("edit: %s op: byte %d is negative", op.Kind, op.Byte)
		}
		zero(op.Before != 0, "Before")
		zero(op.Status != 0, "Status")
		zero(op.RetryAfter != "", "RetryAfter")
		zero(op.RetryAfterMs != "", "RetryAfterMs")
		if op.Kind == KindReset {
			zero(op.Chunk != 0, "Chunk")
		} else {
			zero(op.Byte != 0, "Byte")
		}
		if op.Kind != KindStreamError {
			zero(op.Code != "", "Code")
		} else if op.Code != "" && !validCode(op.Code) {
			return fmt.Errorf("edit: stream_error op: code %q is not a code: letters, digits, '_', '-' and '.' only", op.Code)
		}
	default:
		return fmt.Errorf("edit: unknown op kind %q: want %s, %s, %s, %s or %s",
			op.Kind, KindRateLimit, KindServerError, KindTruncate, KindReset, KindStreamError)
	}
	if len(unused) > 0 {
		return fmt.Errorf("edit: a %s op does not use %s (set to a non-zero value)", op.Kind, strings.Join(unused, ", "))
	}
	return nil
}

func isServerError(status int) bool {
	for _, s := range serverErrors {
		if s == status {
			return true
		}
	}
	return false
}

func statusList() string {
	s := make([]string, len(serverErrors))
	for i, c := range serverErrors {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// insertError inserts the error interaction of a 429 or 5xx op.
func insertError(f *cassette.File, op Op) error {
	if op.Before >= len(f.Interactions) {
		return fmt.Errorf("before=%d: the cassette has %s (0..%d)", op.Before, plural(len(f.Interactions), "interaction"), len(f.Interactions)-1)
	}
	orig := f.Interactions[op.Before]
	if orig == nil {
		return fmt.Errorf("interaction %d is empty", op.Before)
	}
	w, err := wireOf(orig)
	if err != nil {
		return fmt.Errorf("interaction %d: %w", op.Before, err)
	}
	// The error the vendor answers the status with, with its message.
	b, extra := w.HTTPError(codec.Failure{Status: op.Status, Message: w.StatusMessage(op.Status)})
	body := string(b)
	h := http.Header{}
	for k, v := range extra {
		h[k] = append([]string(nil), v...)
	}
	h["Content-Type"] = []string{"application/json"}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	h[InjectedHeader] = []string{op.String()}
	if d, ok := header(orig.Response.Headers, "Date"); ok {
		h["Date"] = []string{d}
	}
	if op.RetryAfter != "" {
		h["Retry-After"] = []string{op.RetryAfter}
	}
	if op.RetryAfterMs != "" {
		h["Retry-After-Ms"] = []string{op.RetryAfterMs}
	}
	it := orig.Clone()
	it.Response.Body = body
	it.Response.Headers = h
	it.Response.Status = strconv.Itoa(op.Status) + " " + provider.StatusText(op.Status)
	it.Response.Code = op.Status
	it.Response.Duration = 0
	s := &cassette.Stream{Chunks: []cassette.Chunk{{Data: body}}}
	if orig.Stream != nil {
		s.Start = orig.Stream.Start
	}
	it.Stream = s
	f.Interactions = append(f.Interactions[:op.Before], append([]*cassette.Interaction{it}, f.Interactions[op.Before:]...)...)
	return nil
}

// target is the interaction a body op cuts: one that got a response.
func target(f *cassette.File, n int) (*cassette.Interaction, error) {
	if n >= len(f.Interactions) {
		return nil, fmt.Errorf("interaction %d: the cassette has %s (0..%d)", n, plural(len(f.Interactions), "interaction"), len(f.Interactions)-1)
	}
	it := f.Interactions[n]
	if it == nil {
		return nil, fmt.Errorf("interaction %d is empty", n)
	}
	if it.Response.Code == 0 {
		why := ""
		if it.Stream != nil && it.Stream.Error != nil {
			why = " (" + it.Stream.Error.Kind + ")"
		}
		return nil, fmt.Errorf("interaction %d got no response%s, so it has no body to cut", n, why)
	}
	return it, nil
}

// chunkRange checks that chunk k exists in an interaction's body.
func chunkRange(it *cassette.Interaction, n, k int) ([]cassette.Chunk, error) {
	chunks := it.Chunks()
	if len(chunks) == 0 {
		return nil, fmt.Errorf("interaction %d has an empty body, so it has no chunk %d", n, k)
	}
	if k >= len(chunks) {
		return nil, fmt.Errorf("chunk=%d: interaction %d has %s (0..%d)", k, n, plural(len(chunks), "chunk"), len(chunks)-1)
	}
	return chunks, nil
}

// setBody gives an interaction a new body, its chunks and its end, and
// marks it as changed by op.
func setBody(it *cassette.Interaction, chunks []cassette.Chunk, term *cassette.Error, op Op) {
	if it.Stream == nil {
		it.Stream = &cassette.Stream{}
	}
	var body strings.Builder
	for _, c := range chunks {
		body.WriteString(c.Data)
	}
	if len(chunks) == 0 {
		chunks = nil
	}
	it.Stream.Chunks = chunks
	it.Stream.Error = term
	it.Response.Body = body.String()
	if it.Response.Headers == nil {
		it.Response.Headers = http.Header{}
	}
	if term == nil {
		for k := range it.Response.Headers {
			if strings.EqualFold(k, "Content-Length") {
				it.Response.Headers[k] = []string{strconv.Itoa(body.Len())}
			}
		}
	}
	it.Response.Headers[InjectedHeader] = []string{op.String()}
}

func truncate(f *cassette.File, op Op) error {
	it, err := target(f, op.Interaction)
	if err != nil {
		return err
	}
	if op.ByEvent {
		_, r, err := read(it)
		if err != nil {
			return fmt.Errorf("interaction %d: %w", op.Interaction, err)
		}
		at, err := eventOffset(r, op)
		if err != nil {
			return err
		}
		kept, _, _ := cutChunks(it.Chunks(), at)
		setBody(it, kept, nil, op)
		return nil
	}
	chunks, err := chunkRange(it, op.Interaction, op.Chunk)
	if err != nil {
		return err
	}
	setBody(it, append([]cassette.Chunk(nil), chunks[:op.Chunk]...), nil, op)
	return nil
}

// eventOffset is the offset in a body (as its wire read it, r) just past
// its first op.Event events.
func eventOffset(r *codec.Reading, op Op) (int, error) {
	if op.Event > len(r.Events) {
		return 0, fmt.Errorf("event=%d: interaction %d's body has %s", op.Event, op.Interaction, plural(len(r.Events), "event"))
	}
	if op.Event == 0 {
		return 0, nil
	}
	return r.Events[op.Event-1].End, nil
}

// cutChunks keeps the first n bytes of chunks, splitting the chunk that
// straddles the cut (its kept part arrives when the chunk did). at is when
// the first dropped byte would have arrived; cut is false when nothing was
// dropped.
func cutChunks(chunks []cassette.Chunk, n int) (kept []cassette.Chunk, at time.Duration, cut bool) {
	got := 0
	for _, c := range chunks {
		if got+len(c.Data) <= n {
			kept = append(kept, c)
			got += len(c.Data)
			continue
		}
		if got < n {
			kept = append(kept, cassette.Chunk{At: c.At, Data: c.Data[:n-got]})
		}
		return kept, c.At, true
	}
	return kept, 0, false
}

func reset(f *cassette.File, op Op) error {
	it, err := target(f, op.Interaction)
	if err != nil {
		return err
	}
	chunks := it.Chunks()
	total := 0
	for _, c := range chunks {
		total += len(c.Data)
	}
	if op.Byte > total {
		return fmt.Errorf("byte=%d is past the end of interaction %d's body (%d B)", op.Byte, op.Interaction, total)
	}
	// A chunk straddling the cut or lying past it: the reset comes when
	// it would have arrived.
	kept, at, cut := cutChunks(chunks, op.Byte)
	if !cut {
		at = it.End()
	}
	setBody(it, kept, &cassette.Error{
		Kind:    cassette.KindReset,
		Message: fmt.Sprintf("read: connection reset by peer (injected after %d B)", op.Byte),
		At:      at,
	}, op)
	return nil
}

func streamError(f *cassette.File, op Op) error {
	it, err := target(f, op.Interaction)
	if err != nil {
		return err
	}
	w, r, err := read(it)
	if err != nil {
		return fmt.Errorf("interaction %d: %w", op.Interaction, err)
	}
	ct, _ := header(it.Response.Headers, "Content-Type")
	// A stream, or an empty body its Content-Type says is one.
	if !r.Stream && (it.Body() != "" || !isStreamType(w, ct)) {
		if ct == "" {
			ct = "none"
		}
		return fmt.Errorf("interaction %d is not an event stream (Content-Type %s), so it takes no in-stream error", op.Interaction, ct)
	}
	failure, ok := w.StreamFailure(op.Code)
	if !ok {
		failure = &provider.StreamError{Type: op.Code, Message: "Injected in-stream failure: " + op.Code}
	}
	body := it.Body()
	errorEvent := func(kept string) string { return string(w.ErrorEvent([]byte(kept), []byte(body), failure)) }
	if op.ByEvent {
		off, err := eventOffset(r, op)
		if err != nil {
			return err
		}
		kept, at, cut := cutChunks(it.Chunks(), off)
		if !cut {
			at = it.End()
		}
		kept = append(kept, cassette.Chunk{At: at, Data: errorEvent(body[:off])})
		setBody(it, kept, nil, op)
		return nil
	}
	chunks, err := chunkRange(it, op.Interaction, op.Chunk)
	if err != nil {
		return err
	}
	kept := append([]cassette.Chunk(nil), chunks[:op.Chunk]...)
	var prefix, rest strings.Builder
	for _, c := range kept {
		prefix.WriteString(c.Data)
	}
	for _, c := range chunks[op.Chunk:] {
		rest.WriteString(c.Data)
	}
	// Finish the event the kept chunks leave open, so that the error
	// event is an event of its own.
	lead := openRest(w, r, prefix.String(), rest.String())
	kept = append(kept, cassette.Chunk{At: chunks[op.Chunk].At, Data: lead + errorEvent(prefix.String()+lead)})
	setBody(it, kept, nil, op)
	return nil
}

// isStreamType reports whether a Content-Type is the media type of w's
// streams.
func isStreamType(w codec.Wire, ct string) bool {
	mt, _, _ := strings.Cut(w.Info().StreamType, ";")
	return ct != "" && strings.Contains(strings.ToLower(ct), strings.ToLower(strings.TrimSpace(mt)))
}

// validCode reports whether s may be an error code: a non-empty run of
// ASCII letters, digits, '_', '-' and '.'.
func validCode(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.')
	})
}

// openRest is the part of rest that completes the event prefix leaves
// open, "" when prefix ends at an event boundary (or is empty). On an SSE
// wire the boundaries are textual: a blank line written as LF LF, CRLF
// CRLF or CR CR, and an event rest never finishes is finished with a
// blank line. (sse.Split, which a wire's Parse follows, also ends an
// event at a blank line of mixed line ends and counts comments between
// events as outside them; going by it would move the cut in those
// corners.) On any other framing (eventstream frames) they are the ends
// of the events the wire read, r, and an event the body never finishes
// takes all of rest.
func openRest(w codec.Wire, r *codec.Reading, prefix, rest string) string {
	if prefix == "" {
		return ""
	}
	if strings.Contains(w.Info().StreamType, "text/event-stream") {
		if endsEvent(prefix) {
			return ""
		}
		if i := nextEventEnd(rest); i >= 0 {
			return rest[:i]
		}
		return rest + "\n\n"
	}
	n := len(prefix)
	for _, e := range r.Events {
		switch {
		case e.End == n:
			return ""
		case e.End > n:
			return rest[:e.End-n]
		}
	}
	return rest
}

// eventEnd is the length of the prefix of s that ends at the last event
// boundary of an SSE stream, 0 when there is none.
func eventEnd(s string) int {
	end := 0
	for _, sep := range []string{"\n\n", "\r\n\r\n", "\r\r"} {
		if i := strings.LastIndex(s, sep); i >= 0 && i+len(sep) > end {
			end = i + len(sep)
		}
	}
	return end
}

// endsEvent reports whether s (non-empty) ends at an SSE event boundary.
func endsEvent(s string) bool { return eventEnd(s) == len(s) }

// nextEventEnd is the length of the prefix of s that completes the SSE
// event in progress, -1 when s never completes it.
func nextEventEnd(s string) int {
	best := -1
	for _, sep := range []string{"\n\n", "\r\n\r\n", "\r\r"} {
		if i := strings.Index(s, sep); i >= 0 && (best < 0 || i+len(sep) < best) {
			best = i + len(sep)
		}
	}
	return best
}
