// Package importer converts HTTP recordings made by other tools into
// openmax cassettes (recorder/cassette), so traffic recorded by a Python
// or Go test suite replays through package replay like one of ours.
//
// # Formats
//
//   - "vcrpy": vcrpy (Python) YAML cassettes, `version: 1`, with
//     request.uri, response.body.string and response.status {code,
//     message}. vcrpy's JSON serializer writes the same structure, and is
//     read too (YAML is a superset of JSON).
//   - "govcr1": go-vcr v1, v2 and v3 cassettes (`version: 1`, request.url,
//     response.body as a string, status "200 OK" beside code, duration "",
//     a Go duration or nanoseconds). Our own cassettes are of this shape;
//     importing one re-derives its streaming member from the body.
//   - "govcr4": go-vcr v4 cassettes, which say `version: 2` (id, proto,
//     content_length, ... are ignored).
//   - "httprr": httprr traces ("httprr trace v1\n", then per exchange
//     "<reqlen> <resplen>\n", the raw request and the raw response), read
//     with net/http's ReadRequest and ReadResponse. A request or header
//     line ending in a bare "\n" (httprr's scrubbers write them) is
//     accepted; an origin-form request line gets "https://" + Host.
//   - "auto": detected from the content (see Detect).
//
// # What an imported cassette holds
//
// One interaction per recorded exchange, in recorded order, with the
// request (method, URL, headers, body) and the response (code, status
// text "200 OK", headers, body), and a streaming member whose chunks
// concatenate to the body: one chunk per SSE event block when the
// response's Content-Type is text/event-stream (so a replay delivers the
// events one by one, as a live stream would), otherwise the whole body as
// one chunk. Every chunk is at offset 0 and the stream starts at 0: the
// formats record no arrival times (go-vcr's duration, when present, is
// kept as Response.Duration only). Imported traffic has no harness
// session, so the cassette Import returns has none; Session makes one up,
// and Load, which every command taking a cassette reads through, does
// both.
//
// Header names are canonicalised (vcrpy often writes them in lower case),
// which is what lets a replay's resp.Header.Get find them.
//
// # Bodies
//
// Bodies are stored decoded, as text wherever they are text: YAML
// !!binary bodies are base64-decoded and YAML folded, literal and quoted
// scalars are read as a YAML parser (gopkg.in/yaml.v3) reads them. A body
// whose Content-Encoding is gzip (or x-gzip, or deflate) is decompressed,
// and the Content-Encoding and Content-Length headers are dropped from
// that message, so the cassette replays self-consistently: a client
// reading the replay gets plain bytes with no header telling it to
// gunzip them (this is also what our recorder does when the transport
// decoded a body). A body that claims gzip but is not gzip (the recording
// tool had already decoded it) is kept as is and its Content-Encoding
// dropped likewise. An encoding the standard library cannot undo (br,
// zstd), or a gzip body that does not decode, is kept encoded with its
// headers. A Content-Length is otherwise kept as recorded (some tools
// rewrote bodies without updating it) and only shifted when scrubbing
// changed the body's length.
//
// A body stored as a YAML structure rather than as text (pydantic-ai's
// vcrpy serializer writes JSON bodies as a parsed_body mapping) becomes
// JSON text of the same value; what of the recorded text that keeps and
// what it cannot is said at parsedBody. A body with no text form (a value
// JSON cannot hold, a vcrpy body mapping without its string member, a
// member such as json_body the importer does not read) fails the import
// with an error naming the interaction and the member: nothing is
// imported as an empty body.
//
// # Secrets
//
// Each exchange is scrubbed as our recorder scrubs, with its own helper
// (recorder.ScrubFunc, no user patterns): the Authorization,
// Proxy-Authorization, X-Api-Key, Api-Key, Cookie and Set-Cookie header
// values become "[scrubbed]", on requests and responses alike; secret URL
// query parameters (key, api_key, token, ...) are replaced; and the values
// of the request's secret headers and parameters (8 characters or longer)
// are replaced wherever else they appear verbatim (the request body, the
// response body and headers). A replay can therefore match live requests
// scrubbed with recorder.ScrubFunc(nil) against the imported ones.
package importer

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
)

// Format names.
const (
	Auto   = "auto"
	VCRPy  = "vcrpy"
	GoVCR1 = "govcr1"
	GoVCR4 = "govcr4"
	HTTPRR = "httprr"
)

// Formats returns the names of the formats Import reads, in a fixed order.
// Import also takes Auto, which detects one of them.
func Formats() []string { return []string{VCRPy, GoVCR1, GoVCR4, HTTPRR} }

// ErrUnknownFormat is returned (wrapped) for a format name Import does
// not know, and for content Detect does not recognise.
var ErrUnknownFormat = errors.New("importer: unknown format")

// Import converts a recording in format (one of Formats, or Auto) into a
// cassette. It fails when data is not a valid recording of that format.
func Import(format string, data []byte) (*cassette.File, error) {
	f, _, err := ImportNotes(format, data)
	return f, err
}

// ImportNotes is Import, also returning what the import changed of what
// was recorded, one line each naming the interaction: a Content-Length
// rewritten to fit the JSON text of a parsed_body (see parsedBody).
func ImportNotes(format string, data []byte) (*cassette.File, []string, error) {
	var doc *yamlDoc
	if format == Auto {
		f, d, err := detect(data, nil)
		if err != nil {
			return nil, nil, err
		}
		format, doc = f, d
	}
	return convert(format, data, doc)
}

// convert is ImportNotes of a recording in format (not Auto), whose YAML
// document is doc when it has been decoded already (nil: decode data).
func convert(format string, data []byte, doc *yamlDoc) (*cassette.File, []string, error) {
	var (
		exs   []exchange
		notes []string
		err   error
	)
	switch format {
	case VCRPy, GoVCR1, GoVCR4:
		if doc == nil {
			if doc, err = decodeYAML(data, nil); err != nil {
				err = fmt.Errorf("not a YAML cassette: %w", err)
				break
			}
		}
		exs, err = parseYAML(format, doc)
	case HTTPRR:
		exs, err = parseHTTPRR(data)
	default:
		return nil, nil, fmt.Errorf("%w %q (want %s or %s)", ErrUnknownFormat, format, strings.Join(Formats(), ", "), Auto)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("importer: %s: %w", format, err)
	}
	f := cassette.New()
	f.Interactions = make([]*cassette.Interaction, 0, len(exs))
	for i := range exs {
		it, err := exs[i].interaction()
		if err == nil {
			err = it.CheckTiming() // a recorded duration of centuries would stall a paced replay
		}
		if err != nil {
			return nil, nil, fmt.Errorf("importer: %s: interaction %d: %w", format, i, err)
		}
		f.Interactions = append(f.Interactions, it)
		notes = append(notes, exs[i].notes...)
	}
	return f, notes, nil
}

// Detect names the format of data: HTTPRR when it starts with the httprr
// header line; for a YAML (or JSON) cassette, GoVCR4 when it says
// `version: 2`, and for `version: 1` VCRPy when its interactions have the
// vcrpy shape (request.uri, a status mapping, a body mapping) and GoVCR1
// when they have go-vcr's (request.url). A version 1 cassette without
// interactions is reported as GoVCR1 (either reads it the same).
func Detect(data []byte) (string, error) {
	format, _, err := detect(data, nil)
	return format, err
}

// detect is Detect, also returning the YAML document it decoded (nil for
// httprr). pre is what yaml.v3 made of data when it has read it already
// (see decodeYAML).
func detect(data []byte, pre *cassette.Foreign) (string, *yamlDoc, error) {
	if bytes.HasPrefix(data, []byte(httprrMagic)) {
		return HTTPRR, nil, nil
	}
	doc, err := decodeYAML(data, pre)
	if err != nil {
		return "", nil, fmt.Errorf("%w: not an httprr trace, and not a YAML cassette: %w", ErrUnknownFormat, err)
	}
	switch doc.Version {
	case 2:
		return GoVCR4, doc, nil
	case 1:
		for _, in := range doc.Interactions {
			switch {
			case in.Request.URI != "" || in.Response.Status.Kind == mappingKind || in.Response.Body.Kind == mappingKind:
				return VCRPy, doc, nil
			case in.Request.URL != "":
				return GoVCR1, doc, nil
			}
		}
		if len(doc.Interactions) > 0 {
			return "", nil, fmt.Errorf("%w: a version 1 cassette whose requests have neither uri (vcrpy) nor url (go-vcr)", ErrUnknownFormat)
		}
		return GoVCR1, doc, nil
	}
	return "", nil, fmt.Errorf("%w: not an httprr trace, and the YAML has no cassette version 1 or 2 (version: %d)", ErrUnknownFormat, doc.Version)
}

// exchange is one recorded exchange as read, before normalising.
type exchange struct {
	method   string
	url      string
	reqHdr   http.Header
	reqBody  []byte
	code     int
	status   string // "OK" or "200 OK" or ""
	respHdr  http.Header
	respBody []byte
	duration time.Duration
	// notes say what the import changed of what was recorded (a
	// Content-Length rewritten), each naming the interaction.
	notes []string
}

// interaction builds the cassette form of e: bodies decoded, secrets
// scrubbed, the response body cut into chunks.
func (e *exchange) interaction() (*cassette.Interaction, error) {
	if e.code < 100 || e.code > 999 {
		return nil, fmt.Errorf("response status code %d", e.code)
	}
	reqHdr, reqBody, err := decodeBody(e.reqHdr, e.reqBody)
	if err != nil {
		return nil, fmt.Errorf("request body: %w", err)
	}
	respHdr, respBody, err := decodeBody(e.respHdr, e.respBody)
	if err != nil {
		return nil, fmt.Errorf("response body: %w", err)
	}

	scrub := recorder.ScrubFunc(nil)
	// The request's literal secrets (its secret header values) are found
	// in the unscrubbed request; scrubText replaces them in any text.
	scrubText := func(s string) string {
		_, _, b := scrub(e.method, e.url, reqHdr, []byte(s))
		return string(b)
	}
	u, h, b := scrub(e.method, e.url, reqHdr, reqBody)
	req := vcr.Request{Method: e.method, URL: u, Headers: h, Body: string(b)}
	if req.Method == "" {
		req.Method = http.MethodGet
	}
	if ct, _, err := mime.ParseMediaType(req.Headers.Get("Content-Type")); err == nil && ct == "application/x-www-form-urlencoded" {
		if form, err := url.ParseQuery(req.Body); err == nil {
			req.Form = form
		}
	}

	// As the recorder does: the response's secret headers (Set-Cookie) go
	// by name, the request's secrets by value.
	var rh http.Header
	if respHdr != nil {
		rh = make(http.Header, len(respHdr))
		for k, vs := range respHdr {
			secret := isSecretHeader(scrub, k)
			nv := make([]string, len(vs))
			for i, v := range vs {
				if secret {
					nv[i] = recorder.Scrubbed
				} else {
					nv[i] = scrubText(v)
				}
			}
			rh[k] = nv
		}
	}
	body := scrubText(string(respBody))
	if d := len(body) - len(respBody); d != 0 {
		shiftLength(rh, d)
	}

	resp := vcr.Response{
		Body:     body,
		Headers:  rh,
		Status:   statusText(e.code, e.status),
		Code:     e.code,
		Duration: e.duration,
	}
	st := &cassette.Stream{}
	if body != "" {
		pieces := []string{body}
		if mt, _, err := mime.ParseMediaType(rh.Get("Content-Type")); err == nil && mt == "text/event-stream" {
			pieces = splitEvents(body)
		}
		for _, p := range pieces {
			st.Chunks = append(st.Chunks, cassette.Chunk{Data: p})
		}
	}
	return &cassette.Interaction{Request: req, Response: resp, Stream: st}, nil
}

// isSecretHeader reports whether the recorder's scrub replaces every
// value of the header name k, whatever it is (a value too short to be
// scrubbed as a literal tells).
func isSecretHeader(scrub func(string, string, http.Header, []byte) (string, http.Header, []byte), k string) bool {
	_, h, _ := scrub(http.MethodGet, "", http.Header{k: {"x"}}, nil)
	return len(h[k]) == 1 && h[k][0] == recorder.Scrubbed
}

// statusText is the status as Go writes it: "200 OK".
func statusText(code int, recorded string) string {
	recorded = strings.TrimSpace(recorded)
	prefix := strconv.Itoa(code)
	switch {
	case recorded == prefix || strings.HasPrefix(recorded, prefix+" "):
		return recorded
	case recorded != "":
		return prefix + " " + recorded
	case http.StatusText(code) != "":
		return prefix + " " + http.StatusText(code)
	}
	return prefix
}

// shiftLength shifts a Content-Length by delta, as the recorder does when
// scrubbing changed a body's length.
func shiftLength(h http.Header, delta int) {
	v := h.Get("Content-Length")
	if v == "" {
		return
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n+delta < 0 {
		return
	}
	h.Set("Content-Length", strconv.Itoa(n+delta))
}

// splitEvents cuts an SSE body into event blocks: each piece runs up to
// and including the blank line that ends an event (LF, CRLF or CR line
// ends). Blank lines before an event go with it, blank lines after the
// last one with the last piece, and an unterminated tail is a piece of
// its own. The pieces concatenate to body.
func splitEvents(body string) []string {
	var out []string
	start, i := 0, 0
	content := false // the current piece has a non-blank line
	for i < len(body) {
		j := i
		for j < len(body) && body[j] != '\n' && body[j] != '\r' {
			j++
		}
		blank := j == i
		if j == len(body) { // an unterminated last line
			content = content || !blank
			i = j
			break
		}
		if body[j] == '\r' && j+1 < len(body) && body[j+1] == '\n' {
			j++
		}
		j++
		if !blank {
			content = true
		} else if content {
			out = append(out, body[start:j])
			start, content = j, false
		}
		i = j
	}
	if start < len(body) {
		if len(out) > 0 && !content {
			out[len(out)-1] += body[start:]
		} else {
			out = append(out, body[start:])
		}
	}
	return out
}
