package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/codec"
	_ "github.com/openmax/openmax/provider/vendors" // every built-in wire
	"github.com/openmax/openmax/recorder/cassette"
)

// Handler serves a cassette over real HTTP, for
// `openmax fake-provider --cassette FILE`. It is safe for concurrent use.
type Handler struct {
	m        *matcher
	clk      clock.Clock
	pace     Pace
	fallback func(*http.Request, *MissError) (*http.Response, error)
}

// NewHandler returns an http.Handler (a *Handler) serving f: each request
// is matched as RoundTrip matches it (the scheme is taken as http, or
// https under TLS, and the host from the Host header, which matter only
// with Options.MatchHost); the recorded status and headers are written,
// then each chunk, flushed on its own, paced as Options.Pace says from when
// the request arrived. How a recorded failure is reproduced:
//
//   - refused, dns or reset before any response: the connection is taken
//     over and reset (SO_LINGER 0) before anything is written, so the
//     client sees a reset where it saw a refusal or a failed lookup;
//   - reset after some of the body: the written chunks are flushed, then
//     the connection is reset;
//   - eof or other: the connection is closed without a response, or in
//     the middle of the body (the chunked encoding never ends, so the
//     client reads io.ErrUnexpectedEOF);
//   - timeout or cancel: the server goes silent and holds the connection
//     until the client gives up, as the recorded client did.
//
// A request no unserved interaction matches gets an HTTP 400 (MissStatus)
// in the error shape of the wire it was meant for, as the registry
// (provider/codec) answers it, so that a client prints its message: the
// wire's error for a 400 with the code replay_miss where its error has a
// code (OpenAI's {"error": {"message": ..., "type":
// "invalid_request_error", "param": null, "code": "replay_miss"}}, also
// the Responses API's; Anthropic's {"type": "error", "error": {"type":
// "invalid_request_error", "message": ...}} for a request to a /messages
// path, one below it, or one carrying an anthropic-version header). The
// message is MissError.Summary; every shape adds a "replay" member holding
// the request number, the nearest interaction, whether it was already
// served, the differing fields and the diff. A request no wire claims gets
// no vendor's shape: {"code", "message", "unknown_wire", "replay"}, the
// unknown_wire member saying that no wire claims it.
func NewHandler(f *cassette.File, opts Options) http.Handler {
	clk := opts.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	return &Handler{m: newMatcher(f, opts), clk: clk, pace: opts.Pace, fallback: opts.Fallback}
}

// Unused returns the indices of the interactions never served, ascending.
func (h *Handler) Unused() []int { return h.m.unused() }

// Misses returns the requests no interaction answered so far, in arrival
// order.
func (h *Handler) Misses() []Miss { return h.m.missed() }

// Summary is a one-line account of what was served so far: requests
// served and missed, interactions never requested.
func (h *Handler) Summary() string { return h.m.summary() }

// MaxRequestBody is the largest request body the handler reads (32 MiB; a
// model request with a long conversation is a few MiB). A request that
// declares a longer Content-Length is answered 413 without its body being
// read, and one that sends more (chunked) is cut off there and answered
// 413.
const MaxRequestBody = 32 << 20

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := newPacer(h.clk, h.pace)
	ctx := r.Context()
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	rawURL := scheme + "://" + r.Host + r.URL.RequestURI()
	req := codec.NewRequest(r)
	if r.ContentLength > MaxRequestBody {
		// Refused unread: a declared size over the cap is never buffered.
		err := fmt.Errorf("replay: the request body is %d bytes, over the limit of %d (%d MiB)", r.ContentLength, MaxRequestBody, MaxRequestBody>>20)
		n := h.m.unreadable(r.Method, rawURL, err)
		writeBody(w, http.StatusRequestEntityTooLarge, vendorError(req, "request_too_large", err.Error(), map[string]any{"request": n}))
		return
	}
	var body io.ReadCloser = http.MaxBytesReader(w, r.Body, MaxRequestBody)
	var sent []byte // the body as it arrived, for Fallback
	if h.fallback != nil {
		data, rerr := io.ReadAll(body)
		body.Close()
		sent = data
		var rest io.Reader = bytes.NewReader(data)
		if rerr != nil {
			rest = io.MultiReader(rest, errReader{rerr})
		}
		body = io.NopCloser(rest)
	}
	// -1: a peer's stated length is not taken as a size to allocate.
	q, raw, err := h.m.live(r.Method, rawURL, r.Header, body, -1)
	if err != nil {
		n := h.m.unreadable(r.Method, rawURL, err)
		status, code := http.StatusBadRequest, "replay_bad_request"
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			status, code = http.StatusRequestEntityTooLarge, "request_too_large"
			err = fmt.Errorf("replay: the request body is over the limit of %d bytes (%d MiB)", MaxRequestBody, MaxRequestBody>>20)
		}
		writeBody(w, status, vendorError(req, code, err.Error(), map[string]any{"request": n}))
		return
	}
	n, i, err := h.m.serve(q, raw)
	if err != nil && h.fallback != nil {
		h.forward(w, r, rawURL, sent, err.(*MissError))
		return
	}
	if err != nil {
		writeBody(w, MissStatus, missBody(req, n, err))
		return
	}
	it := h.m.f.Interactions[i]
	if !it.Responded() {
		e := it.Failure()
		if e == nil {
			writeBody(w, http.StatusInternalServerError, vendorError(req, "replay_bad_cassette",
				fmt.Sprintf("replay: interaction %d has neither a response nor a recorded error", i), map[string]any{"request": n}))
			return
		}
		if p.wait(ctx, e.At) != nil {
			return
		}
		end(ctx, w, e)
		return
	}
	code := it.Response.Code
	if code < 100 || code > 999 {
		writeBody(w, http.StatusInternalServerError, vendorError(req, "replay_bad_cassette",
			fmt.Sprintf("replay: interaction %d has status %d", i, code), map[string]any{"request": n}))
		return
	}
	chunks, term := servedChunks(it), it.Failure()
	hdr := w.Header()
	for k, vs := range it.Response.Headers {
		hdr[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
	}
	// The body is written as it was recorded: a Content-Length stays only
	// when it is true of a body that ends cleanly; otherwise the body goes
	// out chunked, so a recorded early end is one on the wire too.
	hdr.Del("Transfer-Encoding")
	hdr.Del("Connection")
	if n, err := strconv.Atoi(strings.TrimSpace(hdr.Get("Content-Length"))); err != nil || n != len(it.Response.Body) || term != nil {
		hdr.Del("Content-Length")
	}
	if _, ok := hdr["Content-Type"]; !ok {
		hdr["Content-Type"] = nil // no sniffing: send none, as recorded
	}
	w.WriteHeader(code)
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		return
	}
	for _, c := range chunks {
		if p.wait(ctx, c.At) != nil {
			return
		}
		if _, err := w.Write([]byte(c.Data)); err != nil {
			return
		}
		if rc.Flush() != nil {
			return
		}
	}
	if term == nil {
		return
	}
	if p.wait(ctx, term.At) != nil {
		return
	}
	end(ctx, w, term)
}

// end ends the connection as the recorded failure e says (see
// cassette.Ending).
func end(ctx context.Context, w http.ResponseWriter, e *cassette.Error) {
	switch e.Ending() {
	case cassette.EndReset:
		reset(w)
	case cassette.EndSilent:
		<-ctx.Done()
	default:
		closeConn(w)
	}
}

// writeBody writes a JSON response.
func writeBody(w http.ResponseWriter, code int, b errorBody) {
	for k, v := range b.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b.data)))
	w.WriteHeader(code)
	w.Write(b.data) //nolint:errcheck // the client went away
}

// reset takes the connection over and closes it so that the peer sees a
// reset (SO_LINGER 0), after whatever was already flushed. Where the
// connection cannot be taken over (HTTP/2) the handler aborts instead.
func reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(interface{ SetLinger(int) error }); ok {
		tc.SetLinger(0) //nolint:errcheck // closing anyway
	}
	conn.Close()
}

// closeConn takes the connection over and closes it cleanly: a server
// that died before answering, or mid-body.
func closeConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	conn.Close()
}

// MissStatus is the HTTP status a miss is answered with. Vendor SDKs
// retry 408, 409, 429 and 5xx (claude-code keeps retrying those for
// minutes), and clients read a 404 as an unknown model ("There's an issue
// with the selected model"); a 400 is neither retried nor reinterpreted, so
// the client shows the error's message and stops.
const MissStatus = http.StatusBadRequest

// vendorError is an error body in the shape of the wire the request was
// meant for (provider/codec: ForRequest, a hint such as an
// anthropic-version header enough), with code as the wire's error code
// where its error has a field for one (OpenAI's code; Anthropic has none)
// and extra as the "replay" member when it is not nil. The body is the
// wire's error for a 400 (its type invalid_request_error on OpenAI's and
// Anthropic's wires), whatever status it goes out with: the request is one
// the replay could not serve. header holds the headers beyond
// Content-Type that the wire's errors carry. A request no wire claims
// gets no vendor's shape but one of its own, {"code", "message",
// "unknown_wire", "replay"}, unknown_wire saying why.
func vendorError(req *codec.Request, code, message string, extra map[string]any) errorBody {
	var v map[string]any
	var header http.Header
	if w, _, err := codec.ForRequest(req); err != nil {
		v = map[string]any{"code": code, "message": message, "unknown_wire": err.Error()}
	} else {
		var b []byte
		b, header = w.HTTPError(codec.Failure{Status: http.StatusBadRequest, Code: code, Message: message})
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if dec.Decode(&v) != nil || v == nil {
			return errorBody{b, header} // not an object: nowhere to add the replay member
		}
	}
	if extra != nil {
		v["replay"] = extra
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // maps of strings, ints and slices always encode
	}
	return errorBody{buf.Bytes(), header}
}

// errorBody is an error response's body and the headers beyond
// Content-Type it goes out with.
type errorBody struct {
	data   []byte
	header http.Header
}

// missBody is the answer to request n, which the cassette does not hold.
func missBody(req *codec.Request, n int, err error) errorBody {
	miss := &MissError{Nearest: -1}
	errors.As(err, &miss)
	msg := miss.Summary()
	if miss.Diff != "" {
		msg += ` (the diff is in this response's "replay" member)`
	}
	fields := miss.Fields
	if fields == nil {
		fields = []string{}
	}
	return vendorError(req, "replay_miss", msg, map[string]any{
		"request": n, "nearest": miss.Nearest, "served": miss.Served, "fields": fields, "diff": miss.Diff,
	})
}

// missResponse is missBody as the response to req.
func missResponse(req *http.Request, n int, err error) *http.Response {
	miss := missBody(codec.NewRequest(req), n, err)
	body := miss.data
	h := http.Header{"Content-Type": {"application/json"}}
	for k, v := range miss.header {
		h[k] = v
	}
	return &http.Response{
		Status: "400 Bad Request", StatusCode: MissStatus,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// errReader fails every read with err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// forward answers a request the cassette does not hold through
// Options.Fallback, passing its response on as it arrives (each read
// flushed), or a 502 in the wire's error shape when the fallback failed.
func (h *Handler) forward(w http.ResponseWriter, r *http.Request, rawURL string, sent []byte, miss *MissError) {
	out, err := http.NewRequestWithContext(r.Context(), r.Method, rawURL, bytes.NewReader(sent))
	if err == nil {
		out.Header = r.Header.Clone()
		for _, k := range []string{"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade"} {
			out.Header.Del(k)
		}
		var resp *http.Response
		if resp, err = h.fallback(out, miss); err == nil {
			defer resp.Body.Close()
			for k, vs := range resp.Header {
				if k == "Content-Length" && resp.Uncompressed {
					continue
				}
				w.Header()[k] = vs
			}
			w.WriteHeader(resp.StatusCode)
			fl, _ := w.(http.Flusher)
			buf := make([]byte, 32<<10)
			for {
				n, rerr := resp.Body.Read(buf)
				if n > 0 {
					if _, werr := w.Write(buf[:n]); werr != nil {
						return
					}
					if fl != nil {
						fl.Flush()
					}
				}
				if rerr != nil {
					return
				}
			}
		}
	}
	req := codec.NewRequest(r)
	writeBody(w, http.StatusBadGateway, vendorError(req, "replay_fallback_failed", fmt.Sprintf("replay: sending a request the cassette does not hold live failed: %v", err), nil))
}
