package edit

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/openmax/openmax/core/runconfig"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
	"gopkg.in/yaml.v3"
)

// previewRunes caps a chunk preview.
const previewRunes = codec.PreviewRunes

// Show writes f as a readable timeline. First the recorded session, when
// there is one: its id and seed, flags, tools, each client command with
// the transcript line count it was sent after, and the recorded tool
// results. Then each interaction:
//
//	#1 at +3s: POST /v1/chat/completions
//	  request: 512 B, model gpt-4o-mini, stream, 3 messages, last user "You were cut off."
//	  status: 200 OK
//	  header Content-Type: text/event-stream; charset=utf-8
//	  body: 640 B in 3 chunks
//	  chunk 0 at +0s, 197 B: data: {"id":"chatcmpl-fake-2",...
//	  text: "Record and replay keeps ..."
//	  signal: none (no completion signal)
//	  end: clean
//
// The headers shown are the ones that steer a client: Content-Type, Date,
// Retry-After, Retry-After-Ms, X-Should-Retry, request ids, InjectedHeader
// and those a registered wire names (codec.Info.ShownHeaders:
// x-ratelimit-*, anthropic-ratelimit-*, ...); a secret one
// (recorder.SecretHeader) shows as [scrubbed], and URLs among the session's
// flags without user information or secret query parameters, whoever
// recorded the cassette.
//
// The request and the body are read by the interaction's wire, as the
// registry (provider/codec) answers it from the request's path, query and
// headers, or else from the body (codec.ForRecording): its request summary
// (Wire.ReadRequest: model, stream, the last message or input item,
// tools), and its body's events (Wire.Parse), each chunk previewed by the
// notes of the events that end in it. What the reply says follows: its
// message id and model (a "message:" line), text, the phases of its
// messages, a refusal, reasoning items (their summary parts, text and the
// encrypted content a client sends back), thinking with each signature's
// length, tool calls with their ids ({} for a call whose input never
// streamed), the finish, the usage (cached and reasoning tokens where
// said), the vendor's errors, and for a stream its unparsed events,
// unterminated tail and completion signal. An interaction no wire claims
// says so ("wire: unknown: ...") and shows its chunks as bytes, reading
// nothing into them. The end is "clean" or the recorded transport error;
// an interaction that got no response shows its error as its status.
//
// The output depends only on f. It returns the first write error.
func Show(w io.Writer, f *cassette.File) error {
	if f == nil {
		return errors.New("edit: no cassette to show")
	}
	p := &printer{w: w}
	if s := f.Session; s != nil {
		showSession(p, s)
		p.printf("\n")
	}
	p.printf("%s\n", plural(len(f.Interactions), "interaction"))
	for i, it := range f.Interactions {
		p.printf("\n")
		showInteraction(p, i, it)
	}
	return p.err
}

func showSession(p *printer, s *cassette.Session) {
	p.printf("session %s, seed %d\n", quoteIfNeeded(s.SessionID), s.Seed)
	if len(s.Args) > 0 {
		args := make([]string, len(s.Args))
		for i, a := range s.Args {
			args[i] = quoteIfNeeded(scrubArg(a))
		}
		p.printf("  args: %s\n", strings.Join(args, " "))
	}
	if s.Config != nil {
		p.printf("  config: %s\n", configSummary(*s.Config))
	}
	if len(s.Tools) > 0 {
		names := make([]string, len(s.Tools))
		for i, t := range s.Tools {
			names[i] = t.Name
		}
		p.printf("  tools: %s\n", strings.Join(names, ", "))
	}
	if len(s.Commands) == 0 {
		p.printf("  commands: none\n")
	}
	for i, c := range s.Commands {
		where := c.Anchor.String()
		if c.After == "" {
			where = fmt.Sprintf("after line %d", c.AfterLines)
		}
		p.printf("  command %d %s: %s\n", i, where, oneLine(c.Line, 0))
	}
	for i, r := range s.ToolResults {
		status := "ok"
		if !r.OK {
			status = "failed"
		}
		p.printf("  tool result %d: %s %s %s: %s\n", i, r.Name, oneLine(r.Args, previewRunes), status, oneLine(r.Output, previewRunes))
	}
}

func showInteraction(p *printer, i int, it *cassette.Interaction) {
	if it == nil {
		p.printf("#%d: empty\n", i)
		return
	}
	var start string
	if it.Stream != nil {
		start = " at +" + it.Stream.Start.String()
	}
	in := Inspect(it)
	p.printf("#%d%s: %s %s\n", i, start, it.Request.Method, in.Target)
	if in.Request != "" {
		p.printf("  request: %s\n", in.Request)
	}
	if in.WireError != nil {
		p.printf("  wire: unknown: %s\n", oneLine(in.WireError.Error(), 0))
	}
	if !it.Responded() {
		p.printf("  status: %s\n", in.End)
		return
	}
	p.printf("  status: %s\n", in.Status)
	for _, h := range in.Headers {
		p.printf("  header %s: %s\n", h[0], h[1])
	}
	size := 0
	for _, c := range in.Chunks {
		size += len(c.Data)
	}
	detail := ""
	if !it.ChunkDetail() && size > 0 {
		detail = " (recorded without chunk detail)"
	}
	p.printf("  body: %d B in %s%s\n", size, plural(len(in.Chunks), "chunk"), detail)
	for j, c := range in.Chunks {
		p.printf("  chunk %d at +%s, %d B: %s\n", j, c.At, len(c.Data), in.Previews[j])
	}
	showReading(p, in.Reading)
	p.printf("  end: %s\n", in.End)
}

// showReading writes what a body says, as its wire read it: the
// message's id and model, text, phases, refusal, reasoning items,
// thinking, tool calls, finish, usage, errors, and for a stream its
// unparsed events, unterminated tail and completion signal.
func showReading(p *printer, r *codec.Reading) {
	if r.MessageID != "" || r.Model != "" {
		var parts []string
		if r.MessageID != "" {
			parts = append(parts, r.MessageID)
		}
		if r.Model != "" {
			parts = append(parts, "model "+r.Model)
		}
		p.printf("  message: %s\n", strings.Join(parts, ", "))
	}
	if r.Text != "" {
		p.printf("  text: %s\n", quote(r.Text))
	}
	if len(r.Phases) > 0 {
		p.printf("  phase: %s\n", strings.Join(r.Phases, ", "))
	}
	if r.Refusal != "" {
		p.printf("  refusal: %s\n", quote(r.Refusal))
	}
	for i := range r.Reasoning {
		ri := &r.Reasoning[i]
		p.printf("  %s\n", describeReasoning(ri))
		for k, s := range ri.Summary {
			p.printf("  reasoning %d summary %d: %s\n", ri.Index, k, quote(s))
		}
		if ri.Text != "" {
			p.printf("  reasoning %d text: %s\n", ri.Index, quote(ri.Text))
		}
	}
	if r.Thinking != "" || r.Signatures > 0 {
		sig := ""
		if r.Signatures > 0 {
			sig = plural(r.Signatures, "signature")
			if len(r.SignatureBytes) > 0 {
				lens := make([]string, len(r.SignatureBytes))
				for k, n := range r.SignatureBytes {
					lens[k] = fmt.Sprintf("%d B", n)
				}
				sig += ": " + strings.Join(lens, ", ")
			}
			sig = " (" + sig + ")"
		}
		p.printf("  thinking: %s%s\n", quote(r.Thinking), sig)
	}
	for j, t := range r.Tools {
		id := ""
		if t.ID != "" {
			id = " (" + t.ID + ")"
		}
		args := t.Args
		if strings.TrimSpace(args) == "" {
			args = "{}" // no input streamed: the call's input is the empty object
		}
		p.printf("  tool call %d: %s %s%s\n", j, t.Name, oneLine(args, 0), id)
	}
	if r.Finish != "" {
		p.printf("  finish: %s\n", r.Finish)
	}
	if r.Usage != nil {
		p.printf("  usage: %s\n", describeUsage(r.Usage))
	}
	for _, e := range r.Errors {
		if r.Stream {
			p.printf("  error event: %s\n", oneLine(e, 0))
		} else {
			p.printf("  error: %s\n", oneLine(e, 0))
		}
	}
	if r.Stream {
		if n := r.Unparsed(); n > 0 {
			p.printf("  unparsed events: %d\n", n)
		}
		if r.Tail > 0 {
			p.printf("  unterminated event: %d B\n", r.Tail)
		}
		if r.Signal != "" {
			p.printf("  signal: %s\n", r.Signal)
		} else {
			p.printf("  signal: none (no completion signal)\n")
		}
	}
}

// chunkPreview is one line on chunk j: for a stream, what the events
// that end in it say (and how much of it is an event that ends later, or
// never); otherwise its first bytes.
func chunkPreview(notes [][]codec.Note, rest []int, j int, data string) string {
	if j >= len(notes) || len(notes[j]) == 0 {
		return oneLine(data, previewRunes)
	}
	s := clip(describeNotes(notes[j]), 2*previewRunes)
	if n := rest[j]; n > 0 {
		s += fmt.Sprintf(" + %d B of an open event: %s", n, oneLine(data[len(data)-n:], previewRunes/2))
	}
	return s
}

// describeError renders a recorded transport error.
func describeError(e *cassette.Error) string {
	s := fmt.Sprintf("%s at +%s", e.Kind, e.At)
	if e.Message != "" {
		s += ": " + oneLine(e.Message, 0)
	}
	return s
}

// statusLine is the status of a recorded response, its code first: the
// cassette's StatusLine when a status text was recorded, and otherwise the
// code with the text a vendor sends for it (provider.StatusText: "529
// Overloaded", where StatusLine, going by net/http, has just "529").
func statusLine(it *cassette.Interaction) string {
	if strings.TrimSpace(it.Response.Status) != "" {
		return it.StatusLine()
	}
	code := it.Response.Code
	return strings.TrimSpace(strconv.Itoa(code) + " " + provider.StatusText(code))
}

// scrubArg is a recorded harness flag as shown: a URL (--base-url=URL or
// the value after --base-url) without its user information or secret
// query parameters, for cassettes recorded before they were scrubbed.
// configSummary lists the settings of cfg that differ from the defaults,
// by their names in the cassette, in the cassette's order: "provider
// openai, project /, idle_timeout 0s". It is derived from the Config's
// YAML form, so a new setting shows up without code here.
func configSummary(cfg runconfig.Config) string {
	fields := func(c runconfig.Config) [][2]string {
		var n yaml.Node
		if err := n.Encode(c); err != nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var out [][2]string
		for i := 0; i+1 < len(n.Content); i += 2 {
			out = append(out, [2]string{n.Content[i].Value, n.Content[i+1].Value})
		}
		return out
	}
	defaults := map[string]string{}
	for _, f := range fields(runconfig.Defaults()) {
		defaults[f[0]] = f[1]
	}
	var parts []string
	for _, f := range fields(cfg) {
		if d, ok := defaults[f[0]]; ok && d == f[1] {
			continue
		}
		v := f[1]
		if f[0] == "base_url" {
			v = recorder.ScrubURL(v)
		}
		parts = append(parts, f[0]+" "+quoteIfNeeded(v))
	}
	if len(parts) == 0 {
		return "the defaults"
	}
	return strings.Join(parts, ", ")
}

func scrubArg(a string) string {
	if name, val, ok := strings.Cut(a, "="); ok && strings.HasPrefix(name, "-") {
		return name + "=" + recorder.ScrubURL(val)
	}
	return recorder.ScrubURL(a)
}

// shownHeaders are the names of the headers that matter to a client, in
// order.
func shownHeaders(h http.Header) []string {
	var names []string
	for k := range h {
		l := strings.ToLower(k)
		switch {
		case l == "content-type", l == "date", l == "retry-after", l == "retry-after-ms", l == "x-should-retry",
			strings.Contains(l, "request-id"), strings.Contains(l, "requestid"),
			l == strings.ToLower(InjectedHeader), codec.IsShownHeader(l):
			names = append(names, k)
		}
	}
	sort.Slice(names, func(a, b int) bool {
		la, lb := strings.ToLower(names[a]), strings.ToLower(names[b])
		if la != lb {
			return la < lb
		}
		return names[a] < names[b]
	})
	return names
}

// requestSummary describes an interaction's request body: its size, and
// what its wire reads in it (model, stream, the last message or input
// item, ...; see codec.Call.Summary).
func requestSummary(w codec.Wire, it *cassette.Interaction) string {
	body := it.Request.Body
	if body == "" {
		return ""
	}
	parts := []string{fmt.Sprintf("%d B", len(body))}
	if w != nil {
		if c, err := w.ReadRequest(recordedRequest(it), []byte(body)); err == nil {
			parts = append(parts, c.Summary...)
		}
	}
	return strings.Join(parts, ", ")
}

// quoteIfNeeded quotes s when it is empty or holds space or quotes.
func quoteIfNeeded(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\r\n\"'\\") {
		return quote(s)
	}
	return s
}

// printer writes formatted lines, keeping the first error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err != nil {
		return
	}
	_, p.err = fmt.Fprintf(p.w, format, args...)
}
