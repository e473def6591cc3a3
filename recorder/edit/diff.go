package edit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
)

// DiffReport is a review of two recordings, A and B: what changed in the
// recorded session and, interaction by interaction (paired by index), in
// the request and in the response. It is the JSON document of `openmax
// cassette diff --json`, and WriteDiff renders it for people; nothing
// else shapes either output.
type DiffReport struct {
	// A and B name the recordings as the caller gave them.
	A string `json:"a"`
	B string `json:"b"`
	// Same reports that nothing differs: Session and Interactions are
	// empty.
	Same bool `json:"same"`
	// Count is how many interactions each recording holds.
	Count Pair `json:"count"`
	// Session are the changes in the recorded harness session (its
	// configuration, the client's commands, the recorded tool results).
	Session []Change `json:"session"`
	// Interactions are the interactions that differ, by index, in order.
	Interactions []InteractionDiff `json:"interactions"`
}

// Pair is a count in A and in B.
type Pair struct {
	A int `json:"a"`
	B int `json:"b"`
}

// InteractionDiff is what differs in one pair of interactions.
type InteractionDiff struct {
	// Index is the interaction's index in both recordings.
	Index int `json:"index"`
	// Only is "a" or "b" when only that recording has an interaction at
	// Index (the other has fewer), "" when both do.
	Only string `json:"only,omitempty"`
	// Endpoint is the request's method and path (as in B, or in the one
	// recording that has it), secret query parameters scrubbed.
	Endpoint string `json:"endpoint"`
	// Request, Response and Timing are the changes, each in a fixed order
	// (see Change.What).
	Request  []Change `json:"request"`
	Response []Change `json:"response"`
	Timing   []Change `json:"timing"`
}

// Change is one thing that differs: What names it, and A and B are its
// values as a person reads them (strings quoted, numbers plain), null
// where that recording has none.
//
// What, in the request: endpoint, wire, model, stream, user text, tool
// NAME (its description or schema, or the whole tool added or removed),
// tool result I, and body PATH for every other member of the JSON body
// that differs (params such as temperature and max_tokens, earlier
// messages, a system prompt), by its JSON path; a body member whose
// difference the wire's reading already names (the model, the tools, the
// last user message) is not listed again. In the response: status,
// header NAME (the ones that steer a client: Content-Type, Retry-After,
// Retry-After-Ms, X-Should-Retry, the injected-fault header, the wire's
// own), wire, model, text, thinking, signatures, refusal, reasoning,
// tool call I (name and arguments; ids, which differ on every live
// recording, are left out), finish, usage, error (an error body's error
// or an in-stream error event), signal, unparsed events, unterminated
// event, end (clean, or the transport failure: truncation shows as a
// missing signal, a reset or a stall as the end), and body for an
// interaction no wire claims. In the timing: start (when the request went
// out), chunks (how many), first chunk, last chunk and end (arrival
// offsets from the request).
type Change struct {
	What string  `json:"what"`
	A    *string `json:"a"`
	B    *string `json:"b"`
}

// DiffOptions tune Diff.
type DiffOptions struct {
	// NoTiming leaves the timing out: a recording made again live always
	// arrives at other times.
	NoTiming bool
}

// Diff compares two cassettes, a and b, named nameA and nameB in the
// report. Every request and body is read by the interaction's wire, as
// the registry (provider/codec) answers it, exactly as Show reads it; an
// interaction no wire claims is compared by its bytes.
func Diff(nameA string, a *cassette.File, nameB string, b *cassette.File, opts DiffOptions) *DiffReport {
	r := &DiffReport{A: nameA, B: nameB, Count: Pair{len(a.Interactions), len(b.Interactions)}, Session: []Change{}, Interactions: []InteractionDiff{}}
	r.Session = diffSession(a.Session, b.Session)
	for i := 0; i < max(len(a.Interactions), len(b.Interactions)); i++ {
		var ia, ib *cassette.Interaction
		if i < len(a.Interactions) {
			ia = a.Interactions[i]
		}
		if i < len(b.Interactions) {
			ib = b.Interactions[i]
		}
		if d, differs := diffInteraction(i, ia, ib, opts); differs {
			r.Interactions = append(r.Interactions, d)
		}
	}
	r.Same = len(r.Session) == 0 && len(r.Interactions) == 0
	return r
}

// WriteDiff renders a report for people, for a pull request: one
// paragraph per interaction that differs, one line per change,
// "  response finish: "stop" → "length"". A report of two recordings that
// are the same renders as nothing.
func WriteDiff(w io.Writer, r *DiffReport) error {
	if r.Same {
		return nil
	}
	p := &printer{w: w}
	verb := "differ"
	if len(r.Interactions) == 1 {
		verb = "differs"
	}
	p.printf("cassette diff %s %s: %s in A, %d in B; %s %s\n", r.A, r.B, plural(r.Count.A, "interaction"), r.Count.B, plural(len(r.Interactions), "interaction"), verb)
	if r.Count.A != r.Count.B {
		p.printf("the interaction counts differ: %d in A, %d in B (paired by index)\n", r.Count.A, r.Count.B)
	}
	if len(r.Session) > 0 {
		p.printf("\nsession\n")
		writeChanges(p, "", r.Session)
	}
	for _, d := range r.Interactions {
		p.printf("\n#%d: %s", d.Index, d.Endpoint)
		switch d.Only {
		case "a":
			p.printf(" (only in A: B has no interaction %d)\n", d.Index)
			continue
		case "b":
			p.printf(" (only in B: A has no interaction %d)\n", d.Index)
			continue
		}
		p.printf("\n")
		writeChanges(p, "request ", d.Request)
		writeChanges(p, "response ", d.Response)
		writeChanges(p, "timing ", d.Timing)
	}
	return p.err
}

func writeChanges(p *printer, prefix string, cs []Change) {
	show := func(s *string) string {
		if s == nil {
			return "(none)"
		}
		return *s
	}
	for _, c := range cs {
		switch {
		case c.A == nil:
			p.printf("  %s%s: added %s\n", prefix, c.What, show(c.B))
		case c.B == nil:
			p.printf("  %s%s: removed %s\n", prefix, c.What, show(c.A))
		default:
			p.printf("  %s%s: %s → %s\n", prefix, c.What, show(c.A), show(c.B))
		}
	}
}

// facets are named values of one side, in order; a facet one side lacks
// is absent from its map.
type facets struct {
	order []string
	vals  map[string]string
}

func newFacets() *facets { return &facets{vals: map[string]string{}} }

func (f *facets) set(what, v string) {
	if _, ok := f.vals[what]; !ok {
		f.order = append(f.order, what)
	}
	f.vals[what] = v
}

// changes lists the facets that differ between a and b: a's order first,
// then what only b has.
func changes(a, b *facets) []Change {
	out := []Change{}
	seen := map[string]bool{}
	add := func(what string) {
		if seen[what] {
			return
		}
		seen[what] = true
		va, okA := a.vals[what]
		vb, okB := b.vals[what]
		if okA == okB && va == vb {
			return
		}
		c := Change{What: what}
		if okA {
			c.A = &va
		}
		if okB {
			c.B = &vb
		}
		out = append(out, c)
	}
	for _, w := range a.order {
		add(w)
	}
	for _, w := range b.order {
		add(w)
	}
	return out
}

func diffSession(a, b *cassette.Session) []Change {
	side := func(s *cassette.Session) *facets {
		f := newFacets()
		if s == nil {
			return f
		}
		if s.Config != nil {
			f.set("config", configSummary(*s.Config))
		}
		for i, c := range s.Commands {
			f.set(fmt.Sprintf("command %d", i), quote(c.Line))
		}
		for i, t := range s.ToolResults {
			st := "ok"
			if !t.OK {
				st = "failed"
			}
			f.set(fmt.Sprintf("tool result %d", i), fmt.Sprintf("%s %s %s: %s", t.Name, oneLine(t.Args, previewRunes), st, quote(t.Output)))
		}
		return f
	}
	return changes(side(a), side(b))
}

func endpoint(it *cassette.Interaction) string {
	return it.Request.Method + " " + urlPath(recorder.ScrubURL(it.Request.URL))
}

func diffInteraction(i int, a, b *cassette.Interaction, opts DiffOptions) (InteractionDiff, bool) {
	d := InteractionDiff{Index: i, Request: []Change{}, Response: []Change{}, Timing: []Change{}}
	switch {
	case a == nil && b == nil:
		return d, false
	case a == nil:
		d.Only, d.Endpoint = "b", endpoint(b)
		return d, true
	case b == nil:
		d.Only, d.Endpoint = "a", endpoint(a)
		return d, true
	}
	d.Endpoint = endpoint(b)
	wa, _ := wireOf(a)
	wb, _ := wireOf(b)
	d.Request = diffRequest(wa, a, wb, b)
	d.Response = changes(responseFacets(wa, a), responseFacets(wb, b))
	if !opts.NoTiming {
		d.Timing = changes(timingFacets(a), timingFacets(b))
	}
	return d, len(d.Request)+len(d.Response)+len(d.Timing) > 0
}

// callFacets are what the wire reads in a request body: model, stream,
// the last user text, each tool, each tool result.
func callFacets(w codec.Wire, it *cassette.Interaction, body []byte) *facets {
	f := newFacets()
	if w == nil {
		return f
	}
	c, err := w.ReadRequest(recordedRequest(it), body)
	if err != nil {
		return f
	}
	if c.Model != "" {
		f.set("model", quote(c.Model))
	}
	f.set("stream", strconv.FormatBool(c.Stream))
	if c.HasUser {
		f.set("user text", quote(c.UserText))
	}
	for _, t := range c.Tools {
		f.set("tool "+t.Name, fmt.Sprintf("description %s, schema %s", quote(oneLine(t.Description, previewRunes)), oneLine(canonicalJSON(t.Schema), previewRunes*2)))
	}
	for k, r := range c.Results {
		st := "ok"
		if !r.OK {
			st = "error"
		}
		f.set(fmt.Sprintf("tool result %d", k), fmt.Sprintf("%s %s: %s", r.Name, st, quote(oneLine(r.Output, previewRunes))))
	}
	return f
}

func diffRequest(wa codec.Wire, a *cassette.Interaction, wb codec.Wire, b *cassette.Interaction) []Change {
	head := func(w codec.Wire, it *cassette.Interaction) *facets {
		f := newFacets()
		f.set("endpoint", endpoint(it))
		if w != nil {
			f.set("wire", w.Info().Name)
		} else {
			f.set("wire", "unknown")
		}
		return f
	}
	out := changes(head(wa, a), head(wb, b))
	ba, bb := []byte(a.Request.Body), []byte(b.Request.Body)
	fa, fb := callFacets(wa, a, ba), callFacets(wb, b, bb)
	named := changes(fa, fb)
	out = append(out, named...)
	if wa != wb {
		return out // other wires: their bodies' members have nothing to pair
	}
	var ja, jb any
	if !decodeJSON(ba, &ja) || !decodeJSON(bb, &jb) {
		if !bytes.Equal(ba, bb) {
			out = append(out, Change{What: "body", A: strp(bodyPreview(ba)), B: strp(bodyPreview(bb))})
		}
		return out
	}
	// The body's own members, by JSON path, leaving out a unit (a
	// top-level member, or an element of a top-level list) whose change
	// the reading above already names: put back as in A, it makes one of
	// those named changes go away.
	checks := 0
	explained := func(unit []any) bool {
		if len(named) == 0 || wb == nil || checks == maxRevertChecks {
			return false
		}
		checks++
		reverted, ok := revert(ja, jb, unit)
		if !ok {
			return false
		}
		rb := []byte(jsonText(reverted))
		return len(changes(fa, callFacets(wb, b, rb))) < len(named)
	}
	var leaves []Change
	jsonDiff(nil, ja, jb, &leaves, explained)
	return append(out, leaves...)
}

// maxRevertChecks bounds the units of one request body put back to see
// whether a named change explains them (each is a read of the whole
// body): past it, the rest are listed by their JSON paths.
const maxRevertChecks = 64

// decodeJSON decodes a JSON document, numbers kept as written.
func decodeJSON(b []byte, v *any) bool {
	if len(bytes.TrimSpace(b)) == 0 {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if dec.Decode(v) != nil {
		return false
	}
	_, err := dec.Token()
	return err == io.EOF
}

// jsonDiff lists the leaves that differ between a and b under path, each
// as "body PATH". A unit (a top-level member, or an element of a
// top-level list) that skip says is explained elsewhere is left out.
func jsonDiff(path []any, a, b any, out *[]Change, skip func([]any) bool) {
	if len(path) > 0 && len(path) <= 2 && isUnit(path) && skip(path) {
		return
	}
	oa, aObj := a.(map[string]any)
	ob, bObj := b.(map[string]any)
	if aObj && bObj {
		keys := make([]string, 0, len(oa)+len(ob))
		for k := range oa {
			keys = append(keys, k)
		}
		for k := range ob {
			if _, ok := oa[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			va, okA := oa[k]
			vb, okB := ob[k]
			p := append(slices.Clone(path), k)
			switch {
			case !okA:
				*out = appendLeaf(*out, p, nil, vb, skip)
			case !okB:
				*out = appendLeaf(*out, p, va, nil, skip)
			default:
				jsonDiff(p, va, vb, out, skip)
			}
		}
		return
	}
	la, aList := a.([]any)
	lb, bList := b.([]any)
	if aList && bList {
		for i := 0; i < max(len(la), len(lb)); i++ {
			p := append(slices.Clone(path), i)
			switch {
			case i >= len(la):
				*out = appendLeaf(*out, p, nil, lb[i], skip)
			case i >= len(lb):
				*out = appendLeaf(*out, p, la[i], nil, skip)
			default:
				jsonDiff(p, la[i], lb[i], out, skip)
			}
		}
		return
	}
	if jsonText(a) != jsonText(b) {
		*out = appendLeaf(*out, path, a, b, skip)
	}
}

// isUnit reports whether path names a unit: a top-level member, or an
// element of a top-level list.
func isUnit(path []any) bool {
	if len(path) == 1 {
		return true
	}
	_, isIndex := path[1].(int)
	return isIndex
}

func appendLeaf(out []Change, path []any, a, b any, skip func([]any) bool) []Change {
	if len(path) > 0 && len(path) <= 2 && isUnit(path) && skip(path) {
		return out
	}
	c := Change{What: "body " + jsonPath(path)}
	if a != nil {
		c.A = strp(oneLine(jsonText(a), previewRunes*2))
	}
	if b != nil {
		c.B = strp(oneLine(jsonText(b), previewRunes*2))
	}
	return append(out, c)
}

// revert is b with the unit at path put back as a has it (removed when a
// has none).
func revert(a, b any, path []any) (any, bool) {
	ob, ok := b.(map[string]any)
	if !ok {
		return nil, false
	}
	oa, _ := a.(map[string]any)
	k, _ := path[0].(string)
	out := make(map[string]any, len(ob))
	for key, v := range ob {
		out[key] = v
	}
	if len(path) == 1 {
		if va, ok := oa[k]; ok {
			out[k] = va
		} else {
			delete(out, k)
		}
		return out, true
	}
	i := path[1].(int)
	lb, _ := ob[k].([]any)
	la, _ := oa[k].([]any)
	list := slices.Clone(lb)
	switch {
	case i < len(la) && i < len(list):
		list[i] = la[i]
	case i < len(list):
		list = slices.Delete(list, i, i+1)
	case i < len(la):
		list = append(list, la[i])
	default:
		return nil, false
	}
	out[k] = list
	return out, true
}

// jsonPath renders a path: messages[1].content.
func jsonPath(path []any) string {
	var b strings.Builder
	for _, p := range path {
		switch p := p.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", p)
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(p)
		}
	}
	if b.Len() == 0 {
		return "(the whole body)"
	}
	return b.String()
}

// jsonText is a value as compact JSON.
func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// canonicalJSON is raw as compact JSON with its members sorted, so the
// same schema written two ways reads the same.
func canonicalJSON(raw []byte) string {
	var v any
	if !decodeJSON(raw, &v) {
		return string(raw)
	}
	return jsonText(v)
}

func bodyPreview(b []byte) string {
	return fmt.Sprintf("%d B %s", len(b), quote(clip(string(b), previewRunes)))
}

func strp(s string) *string { return &s }

// responseFacets are what a response says, as its wire reads the body.
func responseFacets(w codec.Wire, it *cassette.Interaction) *facets {
	f := newFacets()
	if !it.Responded() {
		f.set("status", "no response")
	} else {
		f.set("status", statusLine(it))
	}
	for _, k := range shownHeaders(it.Response.Headers) {
		l := strings.ToLower(k)
		if l == "date" || strings.Contains(l, "request-id") || strings.Contains(l, "requestid") {
			continue // differs on every recording
		}
		vals := it.Response.Headers[k]
		if recorder.SecretHeader(k) {
			vals = []string{recorder.Scrubbed}
		}
		f.set("header "+strings.ToLower(k), oneLine(strings.Join(vals, ", "), 0))
	}
	body := []byte(it.Body())
	if w == nil {
		f.set("wire", "unknown")
		if len(body) > 0 {
			f.set("body", bodyPreview(body))
		}
	} else {
		f.set("wire", w.Info().Name)
		ct, _ := header(it.Response.Headers, "Content-Type")
		readingFacets(f, w.Parse(ct, body))
	}
	f.set("end", endOf(it, w))
	return f
}

func readingFacets(f *facets, r *codec.Reading) {
	if r.Model != "" {
		f.set("model", quote(r.Model))
	}
	if r.Text != "" {
		f.set("text", quote(r.Text))
	}
	if len(r.Phases) > 0 {
		f.set("phase", strings.Join(r.Phases, ", "))
	}
	if r.Refusal != "" {
		f.set("refusal", quote(r.Refusal))
	}
	for _, ri := range r.Reasoning {
		enc := "no encrypted content"
		if ri.HasEncrypted {
			enc = fmt.Sprintf("encrypted content %d B", len(ri.Encrypted))
		}
		f.set(fmt.Sprintf("reasoning %d", ri.Index), fmt.Sprintf("summary %s, text %s, %s", quote(strings.Join(ri.Summary, "\n\n")), quote(ri.Text), enc))
	}
	if r.Thinking != "" {
		f.set("thinking", quote(r.Thinking))
	}
	if r.Signatures > 0 {
		f.set("signatures", strconv.Itoa(r.Signatures))
	}
	for j, t := range r.Tools {
		args := t.Args
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		f.set(fmt.Sprintf("tool call %d", j), t.Name+" "+oneLine(args, 0))
	}
	if r.Finish != "" {
		f.set("finish", quote(r.Finish))
	}
	if r.Usage != nil {
		f.set("usage", describeUsage(r.Usage))
	}
	for j, e := range r.Errors {
		what := "error"
		if r.Stream {
			what = "error event"
		}
		if j > 0 {
			what += " " + strconv.Itoa(j)
		}
		f.set(what, quote(e))
	}
	if r.Stream {
		sig := "none"
		if r.Signal != "" {
			sig = r.Signal
		}
		f.set("signal", sig)
		if n := r.Unparsed(); n > 0 {
			f.set("unparsed events", strconv.Itoa(n))
		}
		if r.Tail > 0 {
			f.set("unterminated event", fmt.Sprintf("%d B", r.Tail))
		}
	}
}

// endOf is how the exchange ended: clean, or the kind of its recorded
// failure (its message, which names ports and addresses, left out).
func endOf(it *cassette.Interaction, w codec.Wire) string {
	e := it.Failure()
	if e == nil {
		return "clean"
	}
	if e.Kind == cassette.KindCancel && w != nil {
		ct, _ := header(it.Response.Headers, "Content-Type")
		if r := w.Parse(ct, []byte(it.Body())); r.Stream && r.Signal != "" {
			return "clean (the client closed the stream after " + r.Signal + ")"
		}
	}
	return e.Kind
}

func timingFacets(it *cassette.Interaction) *facets {
	f := newFacets()
	f.set("start", "+"+it.Start().String())
	chunks := it.Chunks()
	f.set("chunks", strconv.Itoa(len(chunks)))
	if len(chunks) > 0 {
		f.set("first chunk", "+"+chunks[0].At.String())
		f.set("last chunk", "+"+chunks[len(chunks)-1].At.String())
	}
	f.set("end", "+"+it.End().String())
	return f
}
