package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/internal/wirejson"
)

// Encoder writes a reply as the events of a streamGenerateContent?alt=sse
// stream, the way the API sends them: each event one chunk, `data: JSON`
// and a blank line, CRLF line ends, every chunk naming the model version
// and the response id. There is nothing before the first chunk (Open
// writes nothing) and no terminator after the last (Close writes
// nothing): the chunk carrying the finishReason completes the reply.
//
//   - A TextDelta is a chunk with one text part.
//   - A ThinkingDelta is a chunk with a thought part (thought: true); its
//     signature goes where its form says (see SignatureSite): on that
//     thought part; on an empty text part after it; or, for a call's
//     signature, held until the ToolCallPart of that id, whose part then
//     carries it.
//   - A ToolCallPart is a chunk with one function call part: its id, its
//     name and its arguments as they are (no whitespace changed, unless
//     they hold line breaks, which an event cannot; arguments that are
//     not JSON go as a JSON string, none as {}).
//   - A Finish is a chunk whose only part is an empty text (as the API
//     ends its streams) with the finish reason verbatim (see FinishReason
//     for the generic reasons) and the usage known by then; a call
//     signature still held goes out on that chunk's empty text part.
//   - A Usage is kept for the finishing chunk; one that comes after it is
//     a chunk of its own with only the usage.
//   - An Error is an in-stream error event (see ErrorEvent), after which
//     the stream ends: later parts write nothing.
//
// An Encoder is not safe for concurrent use.
type Encoder struct {
	id, model string
	usage     *provider.Usage
	held      map[string]string // call id → its signature, until the call
	finished  bool
	failed    bool // an Error part ended the stream
}

// NewEncoder returns an encoder for one reply with the given response id
// and model version.
func NewEncoder(responseID, modelVersion string) *Encoder {
	return &Encoder{id: responseID, model: modelVersion}
}

// Open is what starts a stream: nothing, the wire has no opening event.
func (e *Encoder) Open() []byte { return nil }

// Close is what ends a stream whose parts ran out: nothing, the wire has
// no terminator.
func (e *Encoder) Close() []byte { return nil }

// Part is the event of one part; nil for what the wire does not carry by
// itself (a usage before the finish, a retry, a phase), and for anything
// after an Error part, which ended the stream.
func (e *Encoder) Part(p provider.Part) []byte {
	if e.failed {
		return nil
	}
	switch p := p.(type) {
	case provider.TextDelta:
		if p.Text == "" {
			return nil
		}
		return e.event(e.chunk(jsonFrags(frag{text: p.Text}), "", false))
	case provider.ThinkingDelta:
		fs := e.thinking(p)
		if len(fs) == 0 {
			return nil
		}
		return e.event(e.chunk(jsonFrags(fs...), "", false))
	case provider.ToolCallPart:
		return e.event(e.chunk(jsonFrags(e.call(p.Call)), "", false))
	case provider.Usage:
		e.usage = &p
		if e.finished {
			return e.event(e.chunk(nil, "", true))
		}
		return nil
	case provider.Finish:
		e.finished = true
		fs := e.unheld()
		if fs == nil {
			fs = []frag{{}}
		}
		return e.event(e.chunk(jsonFrags(fs...), p.Reason, true))
	case provider.Error:
		e.failed = true
		return ErrorEvent(provider.StreamErrorOf(p.Err))
	}
	return nil
}

// frag is one part as the encoder writes it: a function call part
// (call, as written), or a text or thought part.
type frag struct {
	call    []byte
	text    string
	thought bool
	sig     string
}

func (f frag) json() []byte {
	if f.call != nil {
		return f.call
	}
	return wirejson.Marshal(struct {
		Text             string `json:"text"`
		Thought          bool   `json:"thought,omitempty"`
		ThoughtSignature string `json:"thoughtSignature,omitempty"`
	}{f.text, f.thought, f.sig})
}

func jsonFrags(fs ...frag) [][]byte {
	out := make([][]byte, len(fs))
	for i, f := range fs {
		out[i] = f.json()
	}
	return out
}

// thinking is the parts of a ThinkingDelta, holding a call's signature.
func (e *Encoder) thinking(p provider.ThinkingDelta) []frag {
	if p.Signature == "" {
		if p.Text == "" {
			return nil
		}
		return []frag{{text: p.Text, thought: true}}
	}
	site, id, sig := SignatureSite(p.Signature)
	if site == SiteThought {
		return []frag{{text: p.Text, thought: true, sig: sig}}
	}
	var fs []frag
	if p.Text != "" {
		fs = append(fs, frag{text: p.Text, thought: true})
	}
	if site == SiteText {
		return append(fs, frag{sig: sig})
	}
	if e.held == nil {
		e.held = map[string]string{}
	}
	e.held[id] = sig
	return fs
}

// call is the part of a call, with the signature held for it.
func (e *Encoder) call(c provider.ToolCall) frag {
	sig := e.held[c.ID]
	delete(e.held, c.ID)
	return frag{call: callPart(c, sig)}
}

// unheld is the signatures held for calls that never came, each on an
// empty text part, in the order of the calls' ids.
func (e *Encoder) unheld() []frag {
	var fs []frag
	for _, id := range slices.Sorted(maps.Keys(e.held)) {
		fs = append(fs, frag{sig: e.held[id]})
	}
	e.held = nil
	return fs
}

// event frames a chunk as one event.
func (e *Encoder) event(chunk []byte) []byte {
	out := make([]byte, 0, len(chunk)+10)
	out = append(out, "data: "...)
	out = append(out, chunk...)
	return append(out, "\r\n\r\n"...)
}

// chunk is a GenerateContentResponse holding parts (none: no candidate)
// and finish (none when empty), with the usage when withUsage.
func (e *Encoder) chunk(parts [][]byte, finish string, withUsage bool) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	sep := ""
	if parts != nil || finish != "" {
		b.WriteString(`"candidates":[{"content":{"parts":[`)
		b.Write(bytes.Join(parts, []byte(",")))
		b.WriteString(`],"role":"model"}`)
		if finish != "" {
			b.WriteString(`,"finishReason":`)
			b.Write(wirejson.String(finish))
		}
		b.WriteString(`,"index":0}]`)
		sep = ","
	}
	if withUsage && e.usage != nil {
		b.WriteString(sep + `"usageMetadata":`)
		b.Write(wirejson.Marshal(WireUsage(*e.usage)))
		sep = ","
	}
	if e.model != "" {
		b.WriteString(sep + `"modelVersion":`)
		b.Write(wirejson.String(e.model))
		sep = ","
	}
	if e.id != "" {
		b.WriteString(sep + `"responseId":`)
		b.Write(wirejson.String(e.id))
	}
	b.WriteByte('}')
	return b.Bytes()
}

// callPart is a function call part, its arguments written as they are.
func callPart(c provider.ToolCall, sig string) []byte {
	var b bytes.Buffer
	b.WriteString(`{"functionCall":{`)
	if c.ID != "" {
		b.WriteString(`"id":`)
		b.Write(wirejson.String(c.ID))
		b.WriteByte(',')
	}
	b.WriteString(`"name":`)
	b.Write(wirejson.String(c.Name))
	b.WriteString(`,"args":`)
	b.Write(ArgsJSON(c.Args))
	b.WriteByte('}')
	if sig != "" {
		b.WriteString(`,"thoughtSignature":`)
		b.Write(wirejson.String(sig))
	}
	b.WriteByte('}')
	return b.Bytes()
}

// ArgsJSON is a call's arguments as a function call part carries them:
// the model's own JSON byte for byte when it is JSON on one line, compacted
// when it spans lines (an event cannot), a JSON string when it is not
// JSON, {} when empty.
func ArgsJSON(args json.RawMessage) []byte {
	t := bytes.TrimSpace(args)
	switch {
	case len(t) == 0:
		return []byte(`{}`)
	case !json.Valid(t):
		return wirejson.String(string(args))
	case bytes.ContainsAny(t, "\r\n"):
		var b bytes.Buffer
		_ = json.Compact(&b, t) // valid, so no error
		return b.Bytes()
	}
	return t
}

// WireUsage is usage as usageMetadata carries it: the candidates count
// leaves out the reasoning tokens, which go in thoughtsTokenCount when the
// usage says them; the cached count only when it says one.
func WireUsage(u provider.Usage) UsageMetadata {
	prompt, cand, total := u.PromptTokens, u.CompletionTokens, u.PromptTokens+u.CompletionTokens
	w := UsageMetadata{PromptTokenCount: &prompt, TotalTokenCount: &total}
	if u.ReasoningTokens != nil {
		r := *u.ReasoningTokens
		cand = max(cand-r, 0)
		w.ThoughtsTokenCount = &r
	}
	w.CandidatesTokenCount = &cand
	if u.CachedTokens != nil {
		c := *u.CachedTokens
		w.CachedContentTokenCount = &c
	}
	return w
}

// Whole renders parts as one whole GenerateContentResponse, the reply to
// generateContent: the parts the stream would carry, adjacent text (or
// thought) parts joined into one as long as the earlier has no signature,
// then the finish reason and the usage. ok is false when the parts carry
// no Finish. Error and retry parts are skipped.
func Whole(responseID, modelVersion string, parts []provider.Part) (body []byte, ok bool) {
	e := NewEncoder(responseID, modelVersion)
	var fs []frag
	finish := ""
	for _, p := range parts {
		switch p := p.(type) {
		case provider.TextDelta:
			if p.Text != "" {
				fs = append(fs, frag{text: p.Text})
			}
		case provider.ThinkingDelta:
			fs = append(fs, e.thinking(p)...)
		case provider.ToolCallPart:
			fs = append(fs, e.call(p.Call))
		case provider.Usage:
			e.usage = &p
		case provider.Finish:
			finish, ok = p.Reason, true
		}
	}
	if !ok {
		return nil, false
	}
	fs = append(fs, e.unheld()...)
	var joined []frag
	for _, f := range fs {
		if n := len(joined); n > 0 {
			last := &joined[n-1]
			if f.call == nil && last.call == nil && last.sig == "" && last.thought == f.thought {
				last.text += f.text
				last.sig = f.sig
				continue
			}
		}
		joined = append(joined, f)
	}
	if joined == nil {
		joined = []frag{{}}
	}
	return e.chunk(jsonFrags(joined...), finish, true), true
}

// FinishReason says a finish reason of the generic vocabulary (OpenAI's,
// Anthropic's) the Gemini way: stop, end_turn, tool_calls and tool_use
// are STOP (the wire has no tool-use reason), length, max_tokens and
// max_output_tokens are MAX_TOKENS, content_filter is SAFETY; any other
// reason is returned as is.
func FinishReason(reason string) string {
	switch reason {
	case "stop", "end_turn", "tool_calls", "tool_use":
		return FinishStop
	case "length", "max_tokens", "max_output_tokens":
		return FinishMaxTokens
	case "content_filter":
		return "SAFETY"
	}
	return reason
}

// Status names: the canonical google.rpc codes the API answers each HTTP
// status with.
var statusNames = map[int]string{
	400: "INVALID_ARGUMENT",
	401: "UNAUTHENTICATED",
	403: "PERMISSION_DENIED",
	404: "NOT_FOUND",
	409: "ABORTED",
	429: "RESOURCE_EXHAUSTED",
	499: "CANCELLED",
	500: "INTERNAL",
	501: "UNIMPLEMENTED",
	503: "UNAVAILABLE",
	504: "DEADLINE_EXCEEDED",
}

// StatusName is the google.rpc status name Google gives an HTTP status:
// the table above, else INTERNAL for a server error and
// FAILED_PRECONDITION for any other.
func StatusName(status int) string {
	if n, ok := statusNames[status]; ok {
		return n
	}
	if status >= 500 {
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
}

// StatusCode is the HTTP status of a google.rpc status name; 500 for a
// name it does not know (a failure is a server's unless it says else).
func StatusCode(name string) int {
	for code, n := range statusNames {
		if n == name {
			return code
		}
	}
	switch name {
	case "FAILED_PRECONDITION", "OUT_OF_RANGE":
		return 400
	case "ALREADY_EXISTS":
		return 409
	}
	return 500
}

// StatusMessage is the message the Gemini API sends with an error status,
// where it has one of its own; empty otherwise.
func StatusMessage(status int) string {
	switch status {
	case 400:
		return "Request contains an invalid argument."
	case 403:
		return "The caller does not have permission"
	case 429:
		return "Resource has been exhausted (e.g. check quota)."
	case 500:
		return "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"
	case 503:
		return "The model is overloaded. Please try again later."
	case 504:
		return "Deadline expired before operation could complete."
	}
	return ""
}

// DefaultFailure is the wire's usual in-stream failure: the model is
// overloaded.
const DefaultFailure = "UNAVAILABLE"

// StreamFailure is the failure an in-stream error event carries for a
// google.rpc status name, with the message the API sends with its HTTP
// status; code "" is DefaultFailure. ok is false for a status the API has
// no message of its own for (the failure then has none).
func StreamFailure(code string) (f *provider.StreamError, ok bool) {
	if code == "" {
		code = DefaultFailure
	}
	msg := StatusMessage(StatusCode(code))
	if _, known := statusCodes()[code]; !known {
		msg = ""
	}
	return &provider.StreamError{Type: code, Message: msg}, msg != ""
}

// statusCodes maps every status name of the table to its HTTP status.
func statusCodes() map[string]int {
	m := map[string]int{}
	for code, name := range statusNames {
		m[name] = code
	}
	return m
}

// errorStatus is the error object of an error status.
func errorStatus(status int, code, message string) *Status {
	if message == "" {
		message = StatusMessage(status)
	}
	if message == "" {
		message = provider.StatusText(status)
	}
	if message == "" {
		message = fmt.Sprintf("HTTP %d", status)
	}
	if code == "" {
		code = StatusName(status)
	}
	return &Status{Code: status, Message: message, Status: code}
}

// HTTPErrorBody is the JSON body the API answers an error status with: a
// google.rpc.Status whose status is code (empty: the status's name, see
// StatusName) and whose message is message (empty: StatusMessage, else
// the status text). It carries no details; see RetryErrorBody.
func HTTPErrorBody(status int, code, message string) []byte {
	return wirejson.Marshal(ErrorBody{Error: errorStatus(status, code, message)})
}

// RetryErrorBody is HTTPErrorBody with a RetryInfo detail asking for a
// wait of delay, as the API sends a 429.
func RetryErrorBody(status int, code, message string, delay time.Duration) []byte {
	s := errorStatus(status, code, message)
	s.Details = []json.RawMessage{wirejson.Marshal(RetryInfo{Type: RetryInfoType, RetryDelay: FormatDelay(delay)})}
	return wirejson.Marshal(ErrorBody{Error: s})
}

// ErrorEvent is an in-stream error event: the error object with the
// failure's type as its status and that status's HTTP code.
func ErrorEvent(se *provider.StreamError) []byte {
	s := &Status{Code: StatusCode(se.Type), Message: se.Message, Status: se.Type}
	return []byte("data: " + string(wirejson.Marshal(ErrorBody{Error: s})) + "\r\n\r\n")
}

// FormatDelay is a wait as a google.protobuf.Duration in JSON: whole
// seconds, the nanoseconds as a fraction when there are any, and "s".
func FormatDelay(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	sec, nano := int64(d/time.Second), int64(d%time.Second)
	if nano == 0 {
		return strconv.FormatInt(sec, 10) + "s"
	}
	return strconv.FormatInt(sec, 10) + "." + strings.TrimRight(fmt.Sprintf("%09d", nano), "0") + "s"
}

// ParseDelay reads a google.protobuf.Duration in JSON ("7s", "1.5s", at
// most nine fraction digits), exactly. A wait too long for a
// time.Duration is provider.MaxWait; a negative one, or one that is not a
// duration, is none.
func ParseDelay(s string) (time.Duration, bool) {
	v, ok := strings.CutSuffix(strings.TrimSpace(s), "s")
	if !ok {
		return 0, false
	}
	whole, frac, _ := strings.Cut(v, ".")
	if whole == "" || len(frac) > 9 || strings.TrimLeft(whole+frac, "0123456789") != "" {
		return 0, false
	}
	sec, err := strconv.ParseUint(whole, 10, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	nano := int64(0)
	if frac != "" {
		n, _ := strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
		nano = n
	}
	if err != nil || sec > uint64(provider.MaxWait/time.Second) {
		return provider.MaxWait, true
	}
	d := time.Duration(sec) * time.Second
	if d > provider.MaxWait-time.Duration(nano) {
		return provider.MaxWait, true
	}
	return d + time.Duration(nano), true
}

// ReadErrorBody reads an error body of the wire: the error object (or the
// first of a JSON array of them, as streamGenerateContent without alt=sse
// answers) and the wait its RetryInfo asks for. ok is false when the body
// holds no error object.
func ReadErrorBody(body []byte) (s *Status, wait time.Duration, hasWait, ok bool) {
	var one ErrorBody
	t := bytes.TrimSpace(body)
	if len(t) > 0 && t[0] == '[' {
		var many []ErrorBody
		if json.Unmarshal(t, &many) != nil || len(many) == 0 {
			return nil, 0, false, false
		}
		one = many[0]
	} else if json.Unmarshal(t, &one) != nil {
		return nil, 0, false, false
	}
	if one.Error == nil {
		return nil, 0, false, false
	}
	for _, d := range one.Error.Details {
		var ri RetryInfo
		if json.Unmarshal(d, &ri) == nil && ri.Type == RetryInfoType {
			if w, ok := ParseDelay(ri.RetryDelay); ok {
				wait, hasWait = w, true
			}
		}
	}
	return one.Error, wait, hasWait, true
}

// readHTTPError completes the HTTPError of an error response from the
// wire's error object: its status name as the code, its message, and the
// wait of its RetryInfo when no Retry-After header asked for one (a
// header, when there is one, is what every wire's clients read first).
func readHTTPError(he *provider.HTTPError, _ http.Header, body []byte) {
	he.Code, he.Message = provider.ParseErrorBody(body)
	s, wait, hasWait, ok := ReadErrorBody(body)
	if !ok {
		return
	}
	if s.Status != "" {
		he.Code = s.Status
	} else if he.Code == "" && s.Code != 0 {
		he.Code = StatusName(s.Code)
	}
	if s.Message != "" {
		he.Message = s.Message
	}
	if hasWait && !he.HasRetryAfter {
		he.RetryAfter, he.HasRetryAfter = wait, true
	}
}
