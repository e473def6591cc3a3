package edit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/openmax/openmax/core/runconfig"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
	"gopkg.in/yaml.v3"
)

// previewRunes caps a chunk preview.
const previewRunes = 72

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
// Retry-After, Retry-After-Ms, X-Should-Retry, x-ratelimit-*,
// anthropic-ratelimit-*, request ids, and InjectedHeader; a secret one
// (recorder.SecretHeader) shows as [scrubbed], and URLs among the session's
// flags without user information or secret query parameters, whoever
// recorded the cassette. The body is put
// together from its SSE events (OpenAI delta.content and Anthropic
// text_delta as text; reasoning and thinking_delta as thinking; tool calls
// with their name and arguments; the finish or stop reason; the completion
// signal; in-stream error events), or read as a complete JSON response or
// error body. An OpenAI Responses API stream (a request to a /responses
// path, or a body of response.* events) is read in the responses
// package's shapes: the output_text deltas as text, each reasoning item's
// summary parts and the encrypted content it would send back (that of its
// output_item.done), function calls with their call ids, the terminal
// event as the finish (completed, incomplete with its reason, failed with
// its error) and the signal, and the usage with cached and reasoning
// tokens; its request is summed up by model, instructions, input items and
// tools. On every wire the reply's message id and model (a "message:"
// line), its usage, each Anthropic signature's length, a Responses
// message's phase and a tool call's input ({} when none streamed) are
// shown. The end is "clean" or the recorded transport error; an
// interaction that got no response shows its error as its status.
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
	p.printf("#%d%s: %s %s\n", i, start, it.Request.Method, urlPath(recorder.ScrubURL(it.Request.URL)))
	if s := requestSummary(wireOf(it), it.Request.Body); s != "" {
		p.printf("  request: %s\n", s)
	}
	if it.Response.Code == 0 {
		if it.Stream != nil && it.Stream.Error != nil {
			p.printf("  status: no response: %s\n", describeError(it.Stream.Error))
		} else {
			p.printf("  status: no response, and no recorded error\n")
		}
		return
	}
	p.printf("  status: %s\n", statusLine(it))
	h := it.Response.Headers
	for _, k := range shownHeaders(h) {
		for _, v := range h[k] {
			if recorder.SecretHeader(k) {
				v = recorder.Scrubbed // a cassette recorded by another tool may hold it
			}
			p.printf("  header %s: %s\n", k, oneLine(v, 0))
		}
	}
	chunks := it.Chunks()
	size := 0
	for _, c := range chunks {
		size += len(c.Data)
	}
	detail := ""
	if it.Stream == nil || len(it.Stream.Chunks) == 0 {
		if size > 0 {
			detail = " (recorded without chunk detail)"
		}
	}
	p.printf("  body: %d B in %s%s\n", size, plural(len(chunks), "chunk"), detail)
	r := reconstruct(it)
	for j, c := range chunks {
		p.printf("  chunk %d at +%s, %d B: %s\n", j, c.At, len(c.Data), chunkPreview(r, j, c.Data))
	}
	if r.msgID != "" || r.model != "" {
		var parts []string
		if r.msgID != "" {
			parts = append(parts, r.msgID)
		}
		if r.model != "" {
			parts = append(parts, "model "+r.model)
		}
		p.printf("  message: %s\n", strings.Join(parts, ", "))
	}
	if r.text.Len() > 0 {
		p.printf("  text: %s\n", quote(r.text.String()))
	}
	if len(r.phases) > 0 {
		p.printf("  phase: %s\n", strings.Join(r.phases, ", "))
	}
	if r.refusal.Len() > 0 {
		p.printf("  refusal: %s\n", quote(r.refusal.String()))
	}
	for _, ri := range r.reasoning {
		p.printf("  %s\n", describeReasoning(ri))
		for k, s := range ri.summary {
			p.printf("  reasoning %d summary %d: %s\n", ri.index, k, quote(s.String()))
		}
		if ri.text.Len() > 0 {
			p.printf("  reasoning %d text: %s\n", ri.index, quote(ri.text.String()))
		}
	}
	if r.thinking.Len() > 0 || r.signatures > 0 {
		sig := ""
		if r.signatures > 0 {
			sig = plural(r.signatures, "signature")
			if len(r.sigBytes) > 0 {
				lens := make([]string, len(r.sigBytes))
				for k, n := range r.sigBytes {
					lens[k] = fmt.Sprintf("%d B", n)
				}
				sig += ": " + strings.Join(lens, ", ")
			}
			sig = " (" + sig + ")"
		}
		p.printf("  thinking: %s%s\n", quote(r.thinking.String()), sig)
	}
	for j, t := range r.tools {
		id := ""
		if t.id != "" {
			id = " (" + t.id + ")"
		}
		args := t.args.String()
		if strings.TrimSpace(args) == "" {
			args = "{}" // no input streamed: the call's input is the empty object
		}
		p.printf("  tool call %d: %s %s%s\n", j, t.name, oneLine(args, 0), id)
	}
	if r.finish != "" {
		p.printf("  finish: %s\n", r.finish)
	}
	if r.usage != nil {
		p.printf("  usage: %s\n", describeUsage(r.usage))
	}
	for _, e := range r.errs {
		if r.stream {
			p.printf("  error event: %s\n", oneLine(e, 0))
		} else {
			p.printf("  error: %s\n", oneLine(e, 0))
		}
	}
	if r.stream {
		if r.unparsed > 0 {
			p.printf("  unparsed events: %d\n", r.unparsed)
		}
		if r.partial > 0 {
			p.printf("  unterminated event: %d B\n", r.partial)
		}
		if r.signal != "" {
			p.printf("  signal: %s\n", r.signal)
		} else {
			p.printf("  signal: none (no completion signal)\n")
		}
	}
	switch {
	case it.Stream != nil && it.Stream.Error != nil && it.Stream.Error.Kind == cassette.KindCancel && r.stream && r.signal != "":
		// The response was whole: a client that has its completion signal
		// hangs up (codex does), which the recorder sees as a cancel.
		p.printf("  end: clean (the client closed the stream after %s)\n", r.signal)
	case it.Stream != nil && it.Stream.Error != nil:
		p.printf("  end: %s\n", describeError(it.Stream.Error))
	default:
		p.printf("  end: clean\n")
	}
}

// chunkPreview is one line on a chunk: for a stream, what the events
// that end in it say (and how much of it is an event that ends later, or
// never); otherwise its first bytes.
func chunkPreview(r *reconstruction, j int, data string) string {
	if !r.stream || j >= len(r.chunkGists) || len(r.chunkGists[j]) == 0 {
		return oneLine(data, previewRunes)
	}
	s := clip(describeGists(r.chunkGists[j]), 2*previewRunes)
	if rest := r.chunkRest[j]; rest > 0 {
		s += fmt.Sprintf(" + %d B of an open event: %s", rest, oneLine(data[len(data)-rest:], previewRunes/2))
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
			strings.HasPrefix(l, "x-ratelimit-"), strings.HasPrefix(l, "anthropic-ratelimit-"),
			strings.Contains(l, "request-id"), strings.Contains(l, "requestid"),
			l == strings.ToLower(InjectedHeader):
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

// requestSummary describes a model request body of a wire: its size,
// model, whether it streams, and its last message (for the Responses API,
// see responsesRequestSummary).
func requestSummary(wire, body string) string {
	if body == "" {
		return ""
	}
	parts := []string{fmt.Sprintf("%d B", len(body))}
	if wire == wireResponses {
		more, _ := responsesRequestSummary(body)
		return strings.Join(append(parts, more...), ", ")
	}
	var v struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal([]byte(body), &v) != nil {
		return parts[0]
	}
	if v.Model != "" {
		parts = append(parts, "model "+v.Model)
	}
	if v.Stream {
		parts = append(parts, "stream")
	}
	if n := len(v.Messages); n > 0 {
		parts = append(parts, plural(n, "message"))
		last := v.Messages[n-1]
		parts = append(parts, fmt.Sprintf("last %s %s", last.Role, quote(clip(contentText(last.Content), previewRunes))))
	}
	return strings.Join(parts, ", ")
}

// contentText is the text of a message's content: a string, or the text
// of its blocks (a block without text by its type, in brackets).
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type    string          `json:"type"`
		Text    string          `json:"text"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var out []string
	for _, b := range blocks {
		switch {
		case b.Text != "":
			out = append(out, b.Text)
		case b.Type == "tool_result" && len(b.Content) > 0:
			out = append(out, "[tool_result] "+contentText(b.Content))
		default:
			out = append(out, "["+b.Type+"]")
		}
	}
	return strings.Join(out, " ")
}

// oneLine renders s on one line, control characters and invalid UTF-8
// escaped, clipped to max runes (0 for no limit) with the size of what
// was left off.
func oneLine(s string, max int) string {
	var b strings.Builder
	runes := 0
	for i := 0; i < len(s); {
		if max > 0 && runes == max {
			fmt.Fprintf(&b, "… (+%d B)", len(s)-i)
			break
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
		runes++
	}
	return b.String()
}

// clip cuts s to max runes, marking a cut with "…".
func clip(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max]) + "…"
}

// quoteIfNeeded quotes s when it is empty or holds space or quotes.
func quoteIfNeeded(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\r\n\"'\\") {
		return quote(s)
	}
	return s
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
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
