package httpx

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"
	"strings"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/sse"
)

// DecodeBody returns the body of a 2xx response with its Content-Encoding
// undone, for a vendor client to parse. Go's transport only decompresses
// by itself when it asked for gzip on its own (then resp.Uncompressed is
// set and the header is gone); a caller-set Accept-Encoding,
// DisableCompression or a recording transport leaves the encoded bytes to
// the client. A gzip body is then decoded as it is read, capped at
// maxBytes once decoded (0: no cap) so a small body cannot expand without
// bound, and its header is read on the first Read, so a broken one fails
// in the client's read loop like any other read. An encoding other than
// gzip or identity is an error naming it.
func DecodeBody(resp *http.Response, maxBytes int64) (io.Reader, error) {
	if resp.Uncompressed {
		return resp.Body, nil
	}
	switch enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
		return resp.Body, nil
	case "gzip", "x-gzip":
		return Cap(&lazyGzip{r: resp.Body}, maxBytes), nil
	default:
		return nil, fmt.Errorf("the response has an unsupported Content-Encoding %q", enc)
	}
}

// lazyGzip reads the gzip header on the first Read.
type lazyGzip struct {
	r io.Reader
	z *gzip.Reader
}

func (l *lazyGzip) Read(p []byte) (int, error) {
	if l.z == nil {
		z, err := gzip.NewReader(l.r)
		if err != nil {
			if errors.Is(err, io.EOF) {
				// An empty body: no header at all is no reply at all.
				return 0, io.EOF
			}
			return 0, fmt.Errorf("reading the gzip header: %w", err)
		}
		l.z = z
	}
	return l.z.Read(p)
}

// ReadFailure classifies a failed read of a reply body, before the reply
// completed, as an incomplete stream (retryable before any text), keeping
// the cause; what says where the read was. A failure that already is
// incomplete (the idle watchdog, a client limit) is returned as it is.
func ReadFailure(err error, what string) error {
	if errors.Is(err, provider.ErrIncomplete) {
		return err
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %s: connection closed mid-response (%w)", provider.ErrIncomplete, what, err)
	}
	return fmt.Errorf("%w: %s: %w", provider.ErrIncomplete, what, err)
}

// IsJSON reports whether a Content-Type names JSON (application/json or a
// +json type): a whole reply or an error object rather than an event
// stream.
func IsJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// MaxWholeReply caps a whole (non-streamed) JSON reply body.
const MaxWholeReply = 64 << 20

// ReadReply reads the body of a 2xx reply: it undoes its encoding
// (DecodeBody) and, when its Content-Type names JSON (a server that
// ignored stream:true, or an error object sent with a 2xx), reads it whole
// (up to MaxWholeReply) for whole; otherwise it hands the body to stream.
// A body that cannot be decoded or read ends the reply with one Error
// part, a decoding error prefixed by vendor.
func ReadReply(ctx context.Context, resp *http.Response, maxBytes int64, vendor string, whole WholeFunc, stream StreamFunc,
	yield func(provider.Part) bool) {
	body, err := DecodeBody(resp, maxBytes)
	if err != nil {
		yield(provider.Error{Err: fmt.Errorf("%s: %w", vendor, err)})
		return
	}
	ct := resp.Header.Get("Content-Type")
	if !IsJSON(ct) {
		stream(ctx, body, ct, yield)
		return
	}
	data, err := io.ReadAll(io.LimitReader(body, MaxWholeReply))
	if err != nil {
		if ctx.Err() == nil {
			yield(provider.Error{Err: ReadFailure(err, "response body broke")})
		}
		return
	}
	whole(ctx, data, yield)
}

// WholeFunc parses a whole JSON reply body; StreamFunc an event stream.
// Each yields the reply's parts; ReadReply picks one by Content-Type.
type (
	WholeFunc  = func(ctx context.Context, data []byte, yield func(provider.Part) bool)
	StreamFunc = func(ctx context.Context, body io.Reader, contentType string, yield func(provider.Part) bool)
)

// Reply yields the reply of one attempt whose Post returned resp and err:
// a failed Post is one Error part (nothing when ctx was cancelled), a 2xx
// body is read as ReadReply reads it, capped at c.MaxReplyBytes, and
// closed. Every Error part's error goes through scrub (the vendor client
// removing its key) first.
func (c *Client) Reply(ctx context.Context, resp *http.Response, err error, vendor string, whole WholeFunc, stream StreamFunc,
	scrub func(error) error, yield func(provider.Part) bool) {
	if err != nil {
		if ctx.Err() == nil {
			yield(provider.Error{Err: scrub(err)})
		}
		return
	}
	defer resp.Body.Close()
	ReadReply(ctx, resp, c.MaxReplyBytes, vendor, whole, stream, func(p provider.Part) bool {
		if e, ok := p.(provider.Error); ok {
			p = provider.Error{Err: scrub(e.Err)}
		}
		return yield(p)
	})
}

// ParseWhole reads a whole recorded reply body (up to MaxWholeReply) and
// yields what whole makes of it; a body that breaks is one Error part.
func ParseWhole(body io.Reader, whole WholeFunc) iter.Seq[provider.Part] {
	return func(yield func(provider.Part) bool) {
		data, err := io.ReadAll(io.LimitReader(body, MaxWholeReply))
		if err != nil {
			yield(provider.Error{Err: ReadFailure(err, "response body broke")})
			return
		}
		whole(context.Background(), data, yield)
	}
}

// ParseStream yields what stream makes of a recorded event stream body.
func ParseStream(body io.Reader, stream StreamFunc) iter.Seq[provider.Part] {
	return func(yield func(provider.Part) bool) {
		stream(context.Background(), body, "text/event-stream", yield)
	}
}

// EventReader is a vendor client's reading of one event stream, event by
// event: the state its parser keeps. The same reader serves the live
// client (ReadEvents) and the reading of a recorded body (the wire's
// Parse), so both make the same parts of the same bytes.
type EventReader interface {
	// Event folds one event in, yielding its parts; false once the reply
	// is over (its end, a failure, or yield returned false).
	Event(ev sse.Event, yield func(provider.Part) bool) bool
	// End ends a stream whose events stopped with err (io.EOF at the end
	// of the body) while the reply was not over.
	End(err error, yield func(provider.Part) bool)
}

// ReadEvents feeds the Server-Sent Events of body to r until r says the
// reply is over, the body ends (r.End then says how) or ctx is done
// (nothing more is yielded then).
func ReadEvents(ctx context.Context, body io.Reader, r EventReader, yield func(provider.Part) bool) {
	events := sse.NewReader(body)
	for {
		if ctx.Err() != nil {
			return
		}
		ev, err := events.Next()
		if err != nil {
			if ctx.Err() == nil {
				r.End(err, yield)
			}
			return
		}
		if !r.Event(ev, yield) {
			return
		}
	}
}
