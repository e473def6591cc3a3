// Package drift re-sends a cassette's recorded requests to a live endpoint
// and reports how the wire's shape drifted from the recording: the status,
// the headers that steer clients, the event types, the JSON fields of each
// event or body, the finish reason, an in-stream failure. Words never
// count: a reply that says something else in the same shape is no drift.
//
// Only recorder knows what a cassette is; this package reads one and asks
// the wire registry (provider/codec) what each recorded exchange is.
package drift

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/openmax/openmax/provider/codec"
	_ "github.com/openmax/openmax/provider/vendors" // every built-in wire
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
)

// MaxBody caps the bytes read of one live response.
const MaxBody = 64 << 20

// Options configure a Check.
type Options struct {
	// BaseURL replaces the scheme, host and port of every recorded URL:
	// the recorded path and query are appended to it (with any path it
	// has). Empty sends each request to its recorded URL.
	BaseURL string
	// Getenv reads the credentials the recorded requests had scrubbed
	// (each wire's codec.Info.CredentialEnv); nil reads none.
	Getenv func(string) string
	// Timeout bounds one request and its reply (0: only the context
	// does).
	Timeout time.Duration
	// Client sends the requests; nil is a client of its own (no
	// connection reused between requests, Timeout per request).
	Client *http.Client
}

// Report is what a Check found, one entry per recorded interaction, in
// order.
type Report struct {
	Interactions []Interaction `json:"interactions"`
	// Drifted counts the interactions whose shape drifted.
	Drifted int `json:"drifted"`
	// Skipped counts the interactions not sent (see Interaction.Skipped).
	Skipped int `json:"skipped"`
}

// Interaction is one recorded exchange, re-sent.
type Interaction struct {
	Index  int    `json:"index"`
	Method string `json:"method"`
	Path   string `json:"path"`
	Wire   string `json:"wire,omitempty"`
	// Skipped says why the request was not sent; "" when it was.
	Skipped string `json:"skipped,omitempty"`
	// Status is the recorded and the live HTTP status (0: no response).
	Status [2]int `json:"status"`
	// Drift lists what changed, empty when the shape held.
	Drift []Change `json:"drift"`
}

// Change is one way the live reply's shape differs from the recording.
type Change struct {
	// What names the aspect: status, body (a stream or a whole body),
	// header, event, field, finish, error (what the wire reported
	// failing) or failure (how the transport ended the exchange).
	What string `json:"what"`
	// Name is the header, event type or field path; "" for status and
	// finish.
	Name string `json:"name,omitempty"`
	// Recorded and Live are the two sides ("" where one side has none).
	Recorded string `json:"recorded"`
	Live     string `json:"live"`
}

func (c Change) String() string {
	switch {
	case c.Recorded == "":
		return fmt.Sprintf("%s %s: new (%s)", c.What, c.Name, c.Live)
	case c.Live == "":
		return fmt.Sprintf("%s %s: missing (was %s)", c.What, c.Name, c.Recorded)
	case c.Name == "":
		return fmt.Sprintf("%s: %s → %s", c.What, c.Recorded, c.Live)
	}
	return fmt.Sprintf("%s %s: %s → %s", c.What, c.Name, c.Recorded, c.Live)
}

// Check re-sends every recorded request of f in order and compares each
// live reply's shape with the recorded one. It fails only when it cannot
// start (a bad BaseURL); a request that cannot be sent, or fails on the
// way, is reported in its Interaction.
func Check(ctx context.Context, f *cassette.File, o Options) (*Report, error) {
	var base *url.URL
	if o.BaseURL != "" {
		u, err := url.Parse(strings.TrimRight(o.BaseURL, "/"))
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("--base-url %q: want scheme://host[:port][/prefix]", o.BaseURL)
		}
		base = u
	}
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	hc := o.Client
	if hc == nil {
		hc = &http.Client{Timeout: o.Timeout, Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, DisableKeepAlives: true}}
	}
	r := &Report{}
	for i := range f.Interactions {
		if ctx.Err() != nil {
			return r, ctx.Err()
		}
		it := f.Interactions[i]
		res := check(ctx, hc, base, o.Getenv, i, it)
		switch {
		case res.Skipped != "":
			r.Skipped++
		case len(res.Drift) > 0:
			r.Drifted++
		}
		r.Interactions = append(r.Interactions, res)
	}
	return r, nil
}

// check re-sends one interaction.
func check(ctx context.Context, hc *http.Client, base *url.URL, getenv func(string) string, i int, it *cassette.Interaction) Interaction {
	res := Interaction{Index: i, Method: it.Request.Method, Path: pathOf(it.Request.URL), Status: [2]int{it.Response.Code, 0}}
	ct := first(it.Response.Headers, "Content-Type")
	w, err := codec.ForRecording(codec.RecordedRequest(it.Request.Method, it.Request.URL, it.Request.Headers), ct, []byte(it.Body()))
	if err != nil {
		res.Skipped = err.Error()
		return res
	}
	res.Wire = w.Info().Name
	req, why := liveRequest(ctx, it, w.Info(), base, getenv)
	if why != "" {
		res.Skipped = why
		return res
	}
	rec := shapeOf(w, it.Response.Code, it.Response.Headers, []byte(it.Body()))
	if f := it.Failure(); f != nil && it.Responded() {
		rec.failure = ended(f.Kind)
	}
	resp, err := hc.Do(req)
	if err != nil {
		// No response. A recording without one (refused, reset before
		// the headers) failed the same way, whatever the kind.
		if it.Responded() {
			res.Drift = append(res.Drift, Change{What: "status", Recorded: fmt.Sprint(rec.status), Live: "no response: " + scrubErr(err)})
		}
		return res
	}
	if !it.Responded() {
		res.Drift = append(res.Drift, Change{What: "status", Recorded: "no response (" + it.Failure().Kind + ")", Live: fmt.Sprint(resp.StatusCode)})
		resp.Body.Close()
		return res
	}
	defer resp.Body.Close()
	recReading := w.Parse(ct, []byte(it.Body()))
	body, err := readBody(resp.Body, recReading.Signal, func(b []byte) bool {
		rd := w.Parse(resp.Header.Get("Content-Type"), b)
		return rd.Signal == recReading.Signal && rd.Tail == 0
	})
	res.Status[1] = resp.StatusCode
	if len(body) > MaxBody {
		res.Drift = append(res.Drift, Change{What: "body", Recorded: "a body", Live: fmt.Sprintf("a body over %d MiB (not read further)", MaxBody>>20)})
		body = body[:MaxBody]
	}
	live := shapeOf(w, resp.StatusCode, resp.Header, body)
	if err != nil {
		live.failure = ended(cassette.KindOf(err))
	}
	res.Drift = append(res.Drift, compare(rec, live)...)
	return res
}

// readBody reads a live body to its end, to MaxBody+1 bytes, or until
// it holds the recorded completion signal: a recording may show a client
// that closed the stream after the signal while the server still held it
// open, and such a server would hold this read too. The body is parsed
// (done) only after a read that brought the signal's text, so a long
// stream costs one scan of each read, not a parse.
func readBody(r io.Reader, signal string, done func([]byte) bool) ([]byte, error) {
	var body []byte
	buf := make([]byte, 32<<10)
	for len(body) <= MaxBody {
		n, err := r.Read(buf)
		if n > 0 {
			from := max(len(body)-len(signal), 0)
			body = append(body, buf[:n]...)
			if signal != "" && bytes.Contains(body[from:], []byte(signal)) && done(body) {
				return body, nil
			}
		}
		if err == io.EOF {
			return body, nil
		}
		if err != nil {
			return body, err
		}
	}
	return body, nil
}

// ended says how the server ended a body, by the kind of the transport
// failure that ended it (cassette.KindOf): a reset, an early close or
// another failure; a stall the client gave up on (timeout). A client's
// own cancel, as when it closed a stream after its completion signal, is
// no ending of the server's ("").
func ended(kind string) string {
	switch kind {
	case cassette.KindCancel, "":
		return ""
	case cassette.KindTimeout:
		return "the body stalled (the client gave up)"
	}
	return "the body ended with " + kind
}

// liveRequest is the recorded request as it goes out again: to base, with
// the credentials the recorder scrubbed put back from the environment.
// why says why it cannot be sent.
func liveRequest(ctx context.Context, it *cassette.Interaction, in codec.Info, base *url.URL, getenv func(string) string) (req *http.Request, why string) {
	u, err := url.Parse(it.Request.URL)
	if err != nil {
		return nil, fmt.Sprintf("the recorded URL does not parse: %v", err)
	}
	if base != nil {
		nu := *base
		nu.Path = base.Path + u.Path
		nu.RawPath = ""
		if base.RawPath != "" || u.RawPath != "" {
			nu.RawPath = base.EscapedPath() + u.EscapedPath()
		}
		nu.RawQuery = u.RawQuery
		u = &nu
	}
	if in.Signed {
		return nil, "a signed request (" + in.Name + ", SigV4) cannot be sent again without signing it afresh, and verify --live does not sign"
	}
	key := ""
	for _, env := range in.CredentialEnv {
		if v := strings.TrimSpace(getenv(env)); v != "" {
			key = v
			break
		}
	}
	needKey := false
	q := u.Query()
	for name, vs := range q {
		for j, v := range vs {
			if strings.Contains(v, recorder.Scrubbed) {
				needKey = true
				vs[j] = strings.ReplaceAll(v, recorder.Scrubbed, key)
			}
		}
		q[name] = vs
	}
	if needKey {
		u.RawQuery = q.Encode()
	}
	req, err = http.NewRequestWithContext(ctx, it.Request.Method, u.String(), strings.NewReader(it.Request.Body))
	if err != nil {
		return nil, fmt.Sprintf("the recorded request cannot be sent again: %v", scrubErr(err))
	}
	for name, vs := range it.Request.Headers {
		switch strings.ToLower(name) {
		case "content-length", "host", "accept-encoding", "connection", "transfer-encoding":
			continue // the transport sets these (and decompresses what it asked to be compressed)
		}
		for _, v := range vs {
			if strings.Contains(v, recorder.Scrubbed) {
				needKey = true
				v = strings.ReplaceAll(v, recorder.Scrubbed, key)
			}
			req.Header.Add(name, v)
		}
	}
	if needKey && key == "" {
		return nil, "the recorded request carried a credential and none is set: set " + strings.Join(in.CredentialEnv, " or ")
	}
	return req, ""
}

// shape is what a reply's wire shape is made of.
type shape struct {
	status  int
	headers map[string]string // the lower-cased names that matter → a value where it matters
	events  map[string]int    // event type → how many
	fields  map[string]bool   // "event type: path" of every JSON member
	finish  string
	errors  string // what the wire reported failing, "" for nothing
	failure string // how the transport ended the body, "" for cleanly
	stream  bool
}

// shapeOf reads a reply's shape: the wire's reading (events, finish,
// errors) and the JSON members of each event's data or of the body.
func shapeOf(w codec.Wire, status int, h http.Header, body []byte) shape {
	s := shape{status: status, headers: map[string]string{}, events: map[string]int{}, fields: map[string]bool{}}
	for name, vs := range h {
		l := strings.ToLower(name)
		switch {
		case l == "content-type":
			mt, _, _ := mime.ParseMediaType(strings.Join(vs, ","))
			s.headers[l] = mt
		case l == "retry-after" || l == "retry-after-ms" || strings.Contains(l, "ratelimit") || codec.IsShownHeader(l):
			s.headers[l] = "present"
		}
	}
	rd := w.Parse(s.headers["content-type"], body)
	s.stream, s.finish = rd.Stream, rd.Finish
	if len(rd.Errors) > 0 {
		s.errors = "an error reported"
	}
	if !rd.Stream {
		addFields(s.fields, "body", body)
		return s
	}
	for _, ev := range rd.Events {
		if ev.Unparsed {
			s.events["(unparsed)"]++
			continue
		}
		name, datas := sseData(body[ev.Start:ev.End])
		if ev.Name != "" {
			name = ev.Name
		}
		for _, d := range datas {
			if name == "" {
				name = typeOf(d)
			}
		}
		if name == "" {
			name = "(unnamed)"
		}
		s.events[name]++
		for _, d := range datas {
			addFields(s.fields, name, d)
		}
	}
	if rd.Tail > 0 {
		s.errors = "the stream ended mid-event"
	}
	return s
}

// sseData is the event field and the data of an SSE event's bytes; an
// event that is not SSE (a binary frame) has neither.
func sseData(ev []byte) (name string, data [][]byte) {
	var cur []byte
	have := false
	for line := range bytes.Lines(ev) {
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case bytes.HasPrefix(line, []byte("event:")):
			name = strings.TrimSpace(string(line[len("event:"):]))
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
			if have {
				cur = append(cur, '\n')
			}
			cur, have = append(cur, d...), true
		}
	}
	if have {
		data = append(data, cur)
	}
	return name, data
}

// typeOf names an event by its data: the "type" (else "object") member
// of a JSON object, [DONE] as itself, "" otherwise.
func typeOf(data []byte) string {
	if string(bytes.TrimSpace(data)) == "[DONE]" {
		return "[DONE]"
	}
	var v struct {
		Type   string `json:"type"`
		Object string `json:"object"`
	}
	if json.Unmarshal(data, &v) != nil {
		return ""
	}
	if v.Type != "" {
		return v.Type
	}
	return v.Object
}

// addFields adds the path of every member of the JSON value data under
// prefix: objects' members by name, arrays' elements as []. The string
// value of a "type" or "object" member is part of the shape (a new block
// or delta type is a new kind of thing), so it is in the path too. Data
// that is not JSON adds nothing.
func addFields(into map[string]bool, prefix string, data []byte) {
	var v any
	if len(bytes.TrimSpace(data)) == 0 || json.Unmarshal(data, &v) != nil {
		return
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				p := path + "." + k
				if s, ok := e.(string); ok && (k == "type" || k == "object") {
					p += "=" + s
				}
				into[prefix+": "+strings.TrimPrefix(p, ".")] = true
				walk(p, e)
			}
		case []any:
			for _, e := range x {
				walk(path+"[]", e)
			}
		}
	}
	walk("", v)
}

// compare lists how live differs from rec.
func compare(rec, live shape) []Change {
	var out []Change
	if rec.status != live.status {
		out = append(out, Change{What: "status", Recorded: fmt.Sprint(rec.status), Live: fmt.Sprint(live.status)})
	}
	if rec.stream != live.stream {
		out = append(out, Change{What: "body", Recorded: streamWord(rec.stream), Live: streamWord(live.stream)})
	}
	for _, k := range union(rec.headers, live.headers) {
		if rec.headers[k] != live.headers[k] {
			out = append(out, Change{What: "header", Name: k, Recorded: rec.headers[k], Live: live.headers[k]})
		}
	}
	for _, k := range union(rec.events, live.events) {
		if (rec.events[k] > 0) != (live.events[k] > 0) {
			out = append(out, Change{What: "event", Name: k, Recorded: count(rec.events[k]), Live: count(live.events[k])})
		}
	}
	// The members of an event type only one side has are said by that
	// event's change alone.
	both := func(field string) bool {
		prefix, _, _ := strings.Cut(field, ": ")
		if prefix == "body" {
			return !rec.stream && !live.stream
		}
		return rec.events[prefix] > 0 && live.events[prefix] > 0
	}
	for _, k := range union(rec.fields, live.fields) {
		if rec.fields[k] != live.fields[k] && both(k) {
			out = append(out, Change{What: "field", Name: k, Recorded: present(rec.fields[k]), Live: present(live.fields[k])})
		}
	}
	if rec.finish != live.finish {
		out = append(out, Change{What: "finish", Recorded: orNone(rec.finish), Live: orNone(live.finish)})
	}
	if rec.errors != live.errors {
		out = append(out, Change{What: "error", Recorded: orNone(rec.errors), Live: orNone(live.errors)})
	}
	if rec.failure != live.failure {
		out = append(out, Change{What: "failure", Recorded: orNone(rec.failure), Live: orNone(live.failure)})
	}
	return out
}

func union[V any](a, b map[string]V) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

func count(n int) string {
	if n == 0 {
		return ""
	}
	return codec.Plural(n, "event")
}

func present(b bool) string {
	if b {
		return "present"
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func streamWord(stream bool) string {
	if stream {
		return "a stream"
	}
	return "a whole body"
}

// pathOf is a recorded URL's path and query, its secrets as recorded
// (scrubbed).
func pathOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.RequestURI()
}

// first is the first value of a header, its name in any case.
func first(h map[string][]string, name string) string {
	for k, vs := range h {
		if strings.EqualFold(k, name) && len(vs) > 0 {
			return vs[0]
		}
	}
	return ""
}

// scrubErr renders an error without the query of any URL in it (where a
// key may be).
func scrubErr(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			u.RawQuery, u.User = "", nil
			return fmt.Sprintf("%s %s: %v", ue.Op, u.String(), ue.Err)
		}
	}
	return err.Error()
}
