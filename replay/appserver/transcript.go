package appserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/openmax/openmax/internal/jsonrpc"
	"github.com/openmax/openmax/provider/codex/transcript"
)

// DefaultMaxLine caps one line from the client when Options give no other
// cap: far above any message of the protocol, the same cap the codex
// client puts on the app-server's lines. A transcript line, which wraps a
// line of up to that size (escaped when it was not JSON), may have up to
// DefaultMaxTranscriptLine bytes.
const (
	DefaultMaxLine           = 64 << 20
	DefaultMaxTranscriptLine = 2 * DefaultMaxLine
)

// kind is what a line's message is (classify).
type kind uint8

const (
	kindOther        kind = iota // a JSON value that is not a JSON-RPC message
	kindRequest                  // "method" and "id"
	kindNotification             // "method", no "id"
	kindResponse                 // "id", no "method"
	kindRaw                      // a line that was not JSON (recorded as a JSON string)
)

// Line is one line of a transcript (provider/codex/transcript's Line: its
// Dir, DirSend or DirRecv, and its Msg as compact JSON, a JSON string for
// a line that was not JSON), with its number and what its message is.
type Line struct {
	Num int // the 1-based line number in the transcript
	transcript.Line

	kind   kind
	id     string // the top-level "id" as matched (matchID), "" when absent
	method string
}

// Transcript is a parsed transcript. It is not changed by Serve, so one
// transcript may be served any number of times, concurrently.
type Transcript struct {
	Lines []Line
}

// ParseError is a transcript line that could not be used.
type ParseError = transcript.ParseError

// ParseFile reads the transcript at path (see Parse).
func ParseFile(path string, maxLine int) (*Transcript, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	defer f.Close()
	t, err := Parse(f, maxLine)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Parse reads a transcript: one {"dir":"send"|"recv","msg":...} object a
// line, as provider/codex records them (provider/codex/transcript reads
// each); blank lines are skipped. A line longer than maxLine bytes (0
// means DefaultMaxTranscriptLine), one that is not such an object, or one
// with another member is a *ParseError naming its line.
func Parse(r io.Reader, maxLine int) (*Transcript, error) {
	if maxLine <= 0 {
		maxLine = DefaultMaxTranscriptLine
	}
	tr := transcript.NewReader(r, maxLine)
	t := &Transcript{}
	for {
		tl, n, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return t, nil
		}
		if err != nil {
			return nil, err
		}
		l := Line{Num: n, Line: tl}
		if err := l.classify(); err != nil {
			return nil, &ParseError{Line: n, Err: err}
		}
		t.Lines = append(t.Lines, l)
	}
}

// classify fills in the line's kind, id and method. A recorded message
// whose method is not a string is refused.
func (l *Line) classify() error {
	k, id, method, err := classify(l.Msg)
	if err != nil {
		var m struct{ Method json.RawMessage }
		if json.Unmarshal(l.Msg, &m) == nil && len(m.Method) > 0 && m.Method[0] != '"' && string(m.Method) != "null" {
			return fmt.Errorf("msg: method is not a string: %s", m.Method)
		}
	}
	l.kind, l.method = k, method
	if id.IsValid() {
		l.id = matchID(id)
	}
	return nil
}

// classify is what the JSON value msg is as a message of codex's
// JSON-RPC (internal/jsonrpc's Bare dialect): its kind, its id as sent and
// its method. A JSON string is kindRaw (a line recorded as not JSON); a
// value jsonrpc refuses is kindOther, with its error when it is an object.
func classify(msg []byte) (kind, jsonrpc.ID, string, error) {
	msg = bytes.TrimSpace(msg)
	switch {
	case len(msg) > 0 && msg[0] == '"':
		return kindRaw, jsonrpc.ID{}, "", nil
	case len(msg) == 0 || msg[0] != '{':
		return kindOther, jsonrpc.ID{}, "", nil
	}
	m, err := jsonrpc.Bare.Decode(msg)
	switch m := m.(type) {
	case *jsonrpc.Request:
		return kindRequest, m.ID, m.Method, nil
	case *jsonrpc.Notification:
		return kindNotification, jsonrpc.ID{}, m.Method, nil
	case *jsonrpc.Response:
		return kindResponse, m.ID, "", nil
	}
	return kindOther, jsonrpc.ID{}, "", err
}

// matchID is an id as lines are matched by, so that two spellings of one
// id compare equal: a string by its value (encoded without escapes it
// does not need), a number or null as sent, any other value as
// encoding/json writes it back (keys sorted).
func matchID(id jsonrpc.ID) string {
	switch id.Kind() {
	case jsonrpc.IDString:
		if s, ok := id.Text(); ok {
			return string(quote(s))
		}
	case jsonrpc.IDOther:
		if v, err := decode(id.Raw()); err == nil {
			if b, err := json.Marshal(v); err == nil {
				return string(b)
			}
		}
	}
	return id.String()
}

// raw is the text of a line recorded as not JSON.
func (l *Line) raw() string {
	var s string
	if err := json.Unmarshal(l.Msg, &s); err != nil {
		return string(l.Msg)
	}
	return s
}

// String names the line for people: its number, direction and message.
func (l *Line) String() string {
	return fmt.Sprintf("line %d (%s %s)", l.Num, l.Dir, describe(l.kind, l.id, l.method))
}

// describe names a message by its kind, id and method.
func describe(k kind, id, method string) string {
	switch k {
	case kindRequest:
		return fmt.Sprintf("request %s id %s", method, id)
	case kindNotification:
		return "notification " + method
	case kindResponse:
		return "response to id " + id
	case kindRaw:
		return "a line that is not JSON"
	}
	return "a JSON value that is not a JSON-RPC message"
}

// summary lists lines for an error message, at most max of them.
func summary(ls []*Line, max int) string {
	var b strings.Builder
	for i, l := range ls {
		if i == max {
			fmt.Fprintf(&b, "\n  ... and %d more", len(ls)-max)
			break
		}
		b.WriteString("\n  ")
		b.WriteString(l.String())
	}
	return b.String()
}
