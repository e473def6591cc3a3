package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/recorder/cassette"
)

// Handler serves a cassette over real HTTP, for
// `openmax fake-provider --cassette FILE`. It is safe for concurrent use.
type Handler struct {
	m    *matcher
	clk  clock.Clock
	pace Pace
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
// A request no unserved interaction matches gets a 404 whose JSON body
// is {"error": {"type": "replay_miss", "message": ..., "nearest": N,
// "fields": [...]}, "diff": ...}, the message and diff as in MissError.
func NewHandler(f *cassette.File, opts Options) http.Handler {
	clk := opts.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	return &Handler{m: newMatcher(f, opts), clk: clk, pace: opts.Pace}
}

// Unused returns the indices of the interactions never served, ascending.
func (h *Handler) Unused() []int { return h.m.unused() }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := newPacer(h.clk, h.pace)
	ctx := r.Context()
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	q, raw, err := h.m.live(r.Method, scheme+"://"+r.Host+r.URL.RequestURI(), r.Header, r.Body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"type": "replay_bad_request", "message": err.Error()}})
		return
	}
	i, err := h.m.take(q, raw)
	if err != nil {
		writeJSON(w, http.StatusNotFound, missBody(err))
		return
	}
	it := h.m.f.Interactions[i]
	if it.Response.Code == 0 {
		e := noResponse(it)
		if e == nil {
			writeJSON(w, http.StatusInternalServerError, map[string]any{"error": map[string]any{"type": "replay_bad_cassette", "message": fmt.Sprintf("replay: interaction %d has neither a response nor a recorded error", i)}})
			return
		}
		if p.wait(ctx, e.At) != nil {
			return
		}
		switch e.Kind {
		case cassette.KindRefused, cassette.KindDNS, cassette.KindReset:
			reset(w)
		case cassette.KindTimeout, cassette.KindCancel:
			<-ctx.Done()
		default:
			closeConn(w)
		}
		return
	}
	code := it.Response.Code
	if code < 100 || code > 999 {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": map[string]any{"type": "replay_bad_cassette", "message": fmt.Sprintf("replay: interaction %d has status %d", i, code)}})
		return
	}
	chunks, term := planOf(it)
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
	switch term.Kind {
	case cassette.KindReset, cassette.KindRefused, cassette.KindDNS:
		reset(w)
	case cassette.KindTimeout, cassette.KindCancel:
		<-ctx.Done()
	default:
		closeConn(w)
	}
}

// writeJSON writes a JSON response.
func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)+1))
	w.WriteHeader(code)
	w.Write(append(data, '\n')) //nolint:errcheck // the client went away
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

// missBody is the JSON answer to a request the cassette does not hold,
// shaped like a vendor error so clients report its message.
func missBody(err error) map[string]any {
	miss := &MissError{}
	errors.As(err, &miss)
	return map[string]any{
		"error": map[string]any{"type": "replay_miss", "message": err.Error(), "nearest": miss.Nearest, "fields": miss.Fields},
		"diff":  miss.Diff,
	}
}

// missResponse is missBody as an HTTP 404 response to req.
func missResponse(req *http.Request, err error) *http.Response {
	body, _ := json.Marshal(missBody(err))
	return &http.Response{
		Status: "404 Not Found", StatusCode: http.StatusNotFound,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}
