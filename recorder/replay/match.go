package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/openmax/openmax/internal/jsonnum"
	"github.com/openmax/openmax/recorder/cassette"
)

// ErrNoMatch is what every miss is (errors.Is): a live request that no
// unserved recorded interaction matches. The error itself is a *MissError.
var ErrNoMatch = errors.New("replay: no recorded interaction matches the request")

// MissError is a live request no unserved recorded interaction matches.
// Its message carries a unified diff between the nearest recorded request
// and the live one (both normalised: ignored fields dropped, JSON bodies
// pretty-printed with sorted keys).
type MissError struct {
	Method string
	URL    string // the live URL, after Scrub
	// Nearest is the index of the most similar recorded interaction, -1
	// when the cassette has none.
	Nearest int
	// Served is set when Nearest matches the request exactly but was
	// already served (each interaction is served once).
	Served bool
	// Fields names what differs from Nearest: "method", "path", "query",
	// "host", or the JSON body paths ("messages[1].content", "model"), or
	// "body" for a body that is not JSON.
	Fields []string
	// Diff is the unified diff, recorded (---) to live (+++).
	Diff string
}

func (e *MissError) Error() string {
	s := e.Summary()
	if e.Nearest < 0 || e.Served {
		return s
	}
	return strings.TrimRight(s+":\n"+e.Diff, "\n")
}

// Summary is the message without the diff: one line naming the request,
// the nearest interaction and the fields that differ.
func (e *MissError) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "replay: no recorded interaction matches %s %s", e.Method, e.URL)
	switch {
	case e.Nearest < 0:
		b.WriteString(": the cassette has no interactions")
	case e.Served:
		fmt.Fprintf(&b, ": it is identical to interaction %d, which was already served (each recorded interaction is served once)", e.Nearest)
	default:
		fmt.Fprintf(&b, "; the nearest is interaction %d", e.Nearest)
		if len(e.Fields) > 0 {
			fmt.Fprintf(&b, ", which differs in %s", strings.Join(e.Fields, ", "))
		}
	}
	return b.String()
}

// Is makes errors.Is(err, ErrNoMatch) hold.
func (e *MissError) Is(target error) bool { return target == ErrNoMatch }

// maxFields caps MissError.Fields.
const maxFields = 12

// request is a request in the normalised form matching compares.
type request struct {
	method string
	host   string // scheme://host, when hosts are matched
	path   string // escaped, "/" when empty
	query  string // canonical: keys sorted
	json   bool
	value  any    // the parsed body with ignored paths dropped, when json
	body   string // canonical: compact JSON with sorted keys, or the raw bytes
	// src, when set, is the request this was normalised from, its value
	// left out (see full); lazy says it was not normalised yet (only
	// method is set, see resolve).
	src  *rawRequest
	lazy bool
}

// full is q with its parsed body, for explaining a miss.
func (m *matcher) full(q *request) *request {
	if q.src == nil || !q.json || q.value != nil {
		return q
	}
	return m.normalise(q.src.method, q.src.url, []byte(q.src.body))
}

func (q *request) sameAs(o *request) bool {
	return q.method == o.method && q.host == o.host && q.path == o.path && q.query == o.query && q.json == o.json && q.body == o.body
}

// target is the request line of the diff text.
func (q *request) target() string {
	s := q.host + q.path
	if q.query != "" {
		s += "?" + q.query
	}
	return s
}

// text is what the diff compares: the request line, then the body.
func (q *request) text() []string {
	lines := []string{q.method + " " + q.target()}
	if q.body == "" {
		return lines
	}
	body := q.body
	switch {
	case q.json:
		body = indent(body)
	case !utf8.ValidString(body):
		body = strconv.Quote(body)
	}
	return append(lines, strings.Split(body, "\n")...)
}

// matcher finds recorded interactions for live requests.
type matcher struct {
	f         *cassette.File
	ignore    [][]string
	matchHost bool
	inOrder   bool
	scrub     func(method, url string, header http.Header, body []byte) (string, http.Header, []byte)
	// norm is the normaliser, made on first use (a replay whose requests
	// arrive as recorded never needs one, nor its regular expressions'
	// compiling); nil: strings compare as they are.
	norm      func() *normaliser
	onRequest func(Event)
	fallback  bool // a miss goes to Options.Fallback, not to misses

	// raws are the recorded requests as recorded, by interaction index,
	// and byRaw groups them: read-only after newMatcher.
	raws  []rawRequest
	byRaw map[rawRequest]*group
	// bodies holds each recorded request body under itself, so a live
	// body is looked up as bytes and, when it was recorded, the raw key
	// is built from the recorded string instead of a copy of the bytes.
	bodies map[string]string

	// What follows is guarded by mu.
	//
	// Recorded requests are normalised when first needed (see take):
	// recs holds those done, by interaction index (value dropped, see
	// nearest), and known the same by raw request.
	recs  []*request
	known map[rawRequest]*request
	// byKey groups the normalised recorded requests: those swept (below
	// swept, unserved when swept) or, once indexed, all of them. waiting
	// lists the swept indices in order, waitHead skipping served ones.
	byKey    map[requestKey]*group
	byRoute  map[routeKey]*group // InOrder only, once indexed
	indexed  bool
	swept    int
	waiting  []int
	waitHead int

	mu       sync.Mutex
	used     []bool
	requests int    // requests received so far
	served   int    // of which answered from the cassette
	misses   []Miss // in arrival order
	fellBack int    // misses handed to Options.Fallback
}

func newMatcher(f *cassette.File, opts Options) *matcher {
	if f == nil {
		f = cassette.New()
	}
	m := &matcher{f: f, matchHost: opts.MatchHost, inOrder: opts.InOrder, scrub: opts.Scrub, onRequest: opts.OnRequest, fallback: opts.Fallback != nil}
	ignore := opts.Ignore
	if !opts.NoDefaults {
		ignore = append(append([]string(nil), DefaultIgnore...), ignore...)
		m.norm = sync.OnceValue(defaultNormaliser)
	}
	for _, p := range ignore {
		var segs []string
		for _, s := range strings.Split(p, ".") {
			if s != "" {
				segs = append(segs, s)
			}
		}
		if len(segs) > 0 {
			m.ignore = append(m.ignore, segs)
		}
	}
	n := len(f.Interactions)
	m.recs, m.raws, m.used = make([]*request, n), make([]rawRequest, n), make([]bool, n)
	m.byRaw, m.known, m.byKey = map[rawRequest]*group{}, map[rawRequest]*request{}, map[requestKey]*group{}
	m.bodies = map[string]string{}
	for i, it := range f.Interactions {
		if it == nil {
			continue
		}
		raw := rawRequest{it.Request.Method, it.Request.URL, it.Request.Body}
		m.raws[i] = raw
		m.byRaw[raw] = m.byRaw[raw].add(i)
		m.bodies[raw.body] = raw.body
	}
	return m
}

// rawRequest is a request as it was recorded (or arrived, scrubbed).
type rawRequest struct{ method, url, body string }

// requestKey is what an exact match compares (see request.sameAs).
type requestKey struct {
	method, host, path, query string
	json                      bool
	body                      string
}

// routeKey is what an InOrder match compares.
type routeKey struct{ method, path string }

func (q *request) key() requestKey {
	return requestKey{q.method, q.host, q.path, q.query, q.json, q.body}
}

// group is the recorded interactions sharing a key, in recorded order.
// Interactions are claimed in that order, so the ones before head are all
// served: finding the next unserved one is O(1) amortised.
type group struct {
	idx  []int
	head int
}

// next returns the first unserved member, moving head past served ones.
func (g *group) next(used []bool) (int, bool) {
	if g == nil {
		return -1, false
	}
	for g.head < len(g.idx) && used[g.idx[g.head]] {
		g.head++
	}
	if g.head == len(g.idx) {
		return -1, false
	}
	return g.idx[g.head], true
}

// add appends index i to g (made if nil).
func (g *group) add(i int) *group {
	if g == nil {
		g = &group{}
	}
	g.idx = append(g.idx, i)
	return g
}

// normOf is the normalised form of a raw request (value dropped), made
// once. The caller holds m.mu.
func (m *matcher) normOf(raw rawRequest) *request {
	r, ok := m.known[raw]
	if !ok {
		r = m.normalise(raw.method, raw.url, []byte(raw.body))
		r.value = nil // only a miss needs it, and nearest parses it again
		m.known[raw] = r
	}
	return r
}

// rec is recorded request i, normalised. The caller holds m.mu.
func (m *matcher) rec(i int) *request {
	if m.recs[i] == nil && m.f.Interactions[i] != nil {
		m.recs[i] = m.normOf(m.raws[i])
	}
	return m.recs[i]
}

// resolve is q normalised, for a request live left as it arrived.
func (m *matcher) resolve(q *request) *request {
	if !q.lazy {
		return q
	}
	c := *m.normOf(*q.src)
	c.src = q.src
	return &c
}

// sweep indexes the unserved recorded requests below i.
func (m *matcher) sweep(i int) {
	for ; m.swept < i; m.swept++ {
		j := m.swept
		if m.f.Interactions[j] == nil || m.used[j] {
			continue
		}
		k := m.rec(j).key()
		m.byKey[k] = m.byKey[k].add(j)
		m.waiting = append(m.waiting, j)
	}
}

// firstWaiting is the first swept index not served yet.
func (m *matcher) firstWaiting() (int, bool) {
	for m.waitHead < len(m.waiting) && m.used[m.waiting[m.waitHead]] {
		m.waitHead++
	}
	if m.waitHead == len(m.waiting) {
		return -1, false
	}
	return m.waiting[m.waitHead], true
}

// index normalises every recorded request and groups them all.
func (m *matcher) index() {
	if m.indexed {
		return
	}
	m.indexed = true
	m.byKey = map[requestKey]*group{}
	if m.inOrder {
		m.byRoute = map[routeKey]*group{}
	}
	for i := range m.recs {
		r := m.rec(i)
		if r == nil {
			continue
		}
		k := r.key()
		m.byKey[k] = m.byKey[k].add(i)
		if m.inOrder {
			rk := routeKey{r.method, r.path}
			m.byRoute[rk] = m.byRoute[rk].add(i)
		}
	}
}

// recorded is interaction i's request in normalised form, its parsed body
// included.
func (m *matcher) recorded(i int) *request {
	it := m.f.Interactions[i]
	return m.full(&request{json: true, src: &rawRequest{it.Request.Method, it.Request.URL, it.Request.Body}})
}

// normalise puts a request in the form matching compares.
func (m *matcher) normalise(method, rawURL string, body []byte) *request {
	q := &request{method: strings.ToUpper(method)}
	if u, err := url.Parse(rawURL); err == nil {
		if m.matchHost {
			q.host = strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
		}
		q.path = u.EscapedPath()
		q.query = u.RawQuery
		if v, err := url.ParseQuery(u.RawQuery); err == nil {
			q.query = v.Encode()
		}
	} else {
		q.path = rawURL
	}
	if q.path == "" {
		q.path = "/"
	}
	if v, ok := parseJSON(body); ok {
		for _, p := range m.ignore {
			v = drop(v, p)
		}
		if m.norm != nil {
			v = m.norm().value(v)
		}
		q.json, q.value, q.body = true, v, compact(v)
	} else {
		q.body = string(body)
	}
	return q
}

// live reads, scrubs and normalises a live request. It closes body;
// size is its length when known (the request's ContentLength), else -1.
func (m *matcher) live(method, rawURL string, header http.Header, body io.ReadCloser, size int64) (*request, string, error) {
	var data []byte
	if body != nil {
		var err error
		data, err = readAll(body, size)
		body.Close()
		if err != nil {
			return nil, "", fmt.Errorf("replay: reading the request body: %w", err)
		}
	}
	if m.scrub != nil {
		rawURL, _, data = m.scrub(method, rawURL, header.Clone(), data)
	}
	if recorded, ok := m.bodies[string(data)]; ok {
		if raw := (rawRequest{method, rawURL, recorded}); m.byRaw[raw] != nil {
			// Arrived as recorded: its normal form is the recorded one,
			// made only if take needs it (see resolve).
			return &request{method: strings.ToUpper(method), src: &raw, lazy: true}, rawURL, nil
		}
	}
	return m.normalise(method, rawURL, data), rawURL, nil
}

// maxPresize bounds the buffer readAll allocates up front from a stated
// length: past it the body grows as it arrives, as io.ReadAll grows it.
const maxPresize = 16 << 20

// readAll is io.ReadAll with the buffer allocated once when the length is
// known (a request body of a few KiB read into one allocation, not a
// doubling series from 512 B). The stated size is a hint: a body longer
// or shorter than it is still read whole.
func readAll(r io.Reader, size int64) ([]byte, error) {
	if size < 0 || size > maxPresize {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, size+1) // +1: room for the read that finds the end
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // longer than stated: grow as io.ReadAll does
		}
	}
}

// serve numbers a request in arrival order and claims the first unserved
// interaction that matches it, or explains the miss; a miss is kept for
// Misses unless it goes to Options.Fallback. The event goes to
// Options.OnRequest (outside the lock).
func (m *matcher) serve(q *request, rawURL string) (n, i int, err error) {
	m.mu.Lock()
	n = m.requests
	m.requests++
	i, err = m.take(q, rawURL)
	ev := Event{Request: n, Method: q.method, URL: rawURL, Interaction: i}
	if err != nil {
		ev.Miss = err.(*MissError)
		if m.fallback {
			ev.Fallback = true
			m.fellBack++
		} else {
			m.misses = append(m.misses, Miss{Request: n, MissError: ev.Miss})
		}
	} else {
		m.served++
		if it := m.f.Interactions[i]; it != nil {
			ev.Status = it.Response.Code
		}
	}
	m.mu.Unlock()
	if m.onRequest != nil {
		m.onRequest(ev)
	}
	return n, i, err
}

// unreadable numbers a request whose body could not be read and reports it.
func (m *matcher) unreadable(method, rawURL string, err error) int {
	m.mu.Lock()
	n := m.requests
	m.requests++
	m.mu.Unlock()
	if m.onRequest != nil {
		m.onRequest(Event{Request: n, Method: strings.ToUpper(method), URL: rawURL, Interaction: -1, Err: err})
	}
	return n
}

// take claims the first unserved interaction that matches q, or explains
// the miss with a *MissError. The caller holds m.mu.
//
// Matching is a map lookup, not a scan of the cassette. A request that
// arrives byte for byte as one recorded (the usual case, after Scrub)
// is answered by the first unserved recording of those bytes, unless an
// earlier unserved recording normalises to the same form: only the
// recordings passed over unserved are normalised to find out (sweep),
// so a replay that runs as recorded parses no request body at all. Any
// other request, and every request after a miss, is normalised and looked
// up among all the recordings grouped by normal form (by method and path
// alone for InOrder), each group in recorded order with a cursor past its
// served members. Only a miss scans (for the nearest interaction).
func (m *matcher) take(q *request, rawURL string) (int, error) {
	if q.lazy && !m.indexed && !m.inOrder {
		if i, ok := m.byRaw[*q.src].next(m.used); ok {
			m.sweep(i)
			if w, ok := m.firstWaiting(); ok && w < i {
				if j, ok := m.byKey[m.rec(i).key()].next(m.used); ok && j < i {
					i = j
				}
			}
			m.used[i] = true
			return i, nil
		}
	}
	m.index()
	q = m.resolve(q)
	if m.inOrder {
		if i, ok := m.byRoute[routeKey{q.method, q.path}].next(m.used); ok {
			m.used[i] = true
			return i, nil
		}
	}
	same := m.byKey[q.key()]
	if !m.inOrder {
		if i, ok := same.next(m.used); ok {
			m.used[i] = true
			return i, nil
		}
	}
	miss := &MissError{Method: q.method, URL: rawURL, Nearest: -1}
	if same != nil {
		// Every identical recording was served: name the first.
		miss.Nearest, miss.Served = same.idx[0], true
		return -1, miss
	}
	m.nearest(q, miss)
	return -1, miss
}

// nearest fills in the most similar recorded interaction: one with the
// same method and path if any, then the one with the fewest differing
// lines, then an unserved one, then the earliest.
func (m *matcher) nearest(q *request, miss *MissError) {
	q = m.full(q)
	best, bestSize, bestUsed := -1, 0, false
	var bestOps []edit
	tierOf := func(r *request) int {
		t := 0
		if r.method == q.method {
			t++
		}
		if r.path == q.path {
			t += 2
		}
		return t
	}
	top := -1
	for _, r := range m.recs {
		if r != nil {
			top = max(top, tierOf(r))
		}
	}
	qt := q.text()
	for i, r := range m.recs {
		if r == nil || tierOf(r) != top {
			continue
		}
		ops := diffLines(r.text(), qt)
		size := changes(ops)
		better := best < 0 || size < bestSize || (size == bestSize && bestUsed && !m.used[i])
		if better {
			best, bestSize, bestUsed, bestOps = i, size, m.used[i], ops
		}
	}
	if best < 0 {
		return
	}
	r := m.recorded(best)
	miss.Nearest = best
	miss.Fields = fields(r, q)
	miss.Diff = unified(bestOps, fmt.Sprintf("recorded interaction %d", best), "live request", 3)
}

// missed lists the misses so far.
func (m *matcher) missed() []Miss {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Miss(nil), m.misses...)
}

// summary is the one-line account of the replay so far.
func (m *matcher) summary() string {
	unused := m.unused()
	m.mu.Lock()
	defer m.mu.Unlock()
	return summary(m.requests, m.served, len(m.misses), m.fellBack, unused, len(m.used))
}

// unused lists the interactions never served.
func (m *matcher) unused() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int
	for i, u := range m.used {
		if !u {
			out = append(out, i)
		}
	}
	return out
}

// fields names what differs between a recorded request and a live one.
func fields(r, q *request) []string {
	var out []string
	if r.method != q.method {
		out = append(out, "method")
	}
	if r.host != q.host {
		out = append(out, "host")
	}
	if r.path != q.path {
		out = append(out, "path")
	}
	if r.query != q.query {
		out = append(out, "query")
	}
	switch {
	case r.json && q.json:
		diffPaths(r.value, q.value, "", &out)
	case r.json != q.json || r.body != q.body:
		out = append(out, "body")
	}
	if len(out) > maxFields {
		out = append(out[:maxFields], fmt.Sprintf("… (%d more)", len(out)-maxFields))
	}
	return out
}

// diffPaths appends the JSON paths where a and b differ.
func diffPaths(a, b any, path string, out *[]string) {
	if len(*out) > maxFields {
		return
	}
	name := path
	if name == "" {
		name = "body"
	}
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			*out = append(*out, name)
			return
		}
		keys := make([]string, 0, len(av)+len(bv))
		for k := range av {
			keys = append(keys, k)
		}
		for k := range bv {
			if _, ok := av[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			x, inA := av[k]
			y, inB := bv[k]
			if !inA || !inB {
				*out = append(*out, p)
				continue
			}
			diffPaths(x, y, p, out)
		}
	case []any:
		bv, ok := b.([]any)
		if !ok {
			*out = append(*out, name)
			return
		}
		for i := 0; i < max(len(av), len(bv)); i++ {
			p := fmt.Sprintf("%s[%d]", path, i)
			if i >= len(av) || i >= len(bv) {
				*out = append(*out, p)
				continue
			}
			diffPaths(av[i], bv[i], p, out)
		}
	default:
		if pretty(a) != pretty(b) {
			*out = append(*out, name)
		}
	}
}

// parseJSON parses a body that is exactly one JSON value, its numbers in
// canonical spelling (see jsonnum.All).
func parseJSON(body []byte) (any, bool) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return jsonnum.All(v), true
}

// pretty renders a parsed JSON value indented, with sorted keys and
// without HTML escaping.
func pretty(v any) string { return indent(compact(v)) }

// compact renders a parsed JSON value on one line, with sorted keys and
// without HTML escaping: the canonical form matching compares (two values
// have the same compact form exactly when they have the same pretty one,
// which is its indentation).
func compact(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// indent is a compact JSON text indented by two spaces, as pretty prints.
func indent(s string) string {
	var buf bytes.Buffer
	if json.Indent(&buf, []byte(s), "", "  ") != nil {
		return s
	}
	return buf.String()
}

// drop removes the field at path from v. A segment names an object member;
// "*" stands for every member or element; a number picks an array element;
// any other segment on an array applies to each of its elements.
func drop(v any, path []string) any {
	if len(path) == 0 {
		return v
	}
	seg, rest := path[0], path[1:]
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if seg != "*" && k != seg {
				continue
			}
			if len(rest) == 0 {
				delete(x, k)
			} else {
				x[k] = drop(e, rest)
			}
		}
		return x
	case []any:
		if seg == "*" {
			if len(rest) == 0 {
				return []any{}
			}
			for i := range x {
				x[i] = drop(x[i], rest)
			}
			return x
		}
		if n, err := strconv.Atoi(seg); err == nil {
			if n < 0 || n >= len(x) {
				return x
			}
			if len(rest) == 0 {
				return append(x[:n:n], x[n+1:]...)
			}
			x[n] = drop(x[n], rest)
			return x
		}
		for i := range x {
			x[i] = drop(x[i], path)
		}
		return x
	}
	return v
}
